"""The write path's cosines: the calibrated cosine of a new vector with the store's embedded active insights, for
the diff label, the semantic builder and the semantic candidates. A store large enough to keep an ANN index
answers with its `ANN_COSINE_TOP` nearest instead of a scan of every vector (every write-path consumer takes at
most the best 5), so remember and import stay sub-linear at a million insights."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..store import Store
from .constants import ANN_COSINE_TOP

if TYPE_CHECKING:
    from ..embed import Calibration
    from ..recall.pipeline import AnnSearch


def cosines(
    store: Store, model: str, calibration: Calibration, vector: np.ndarray, index: AnnSearch | None, *,
    floor: float,
) -> dict[str, float]:
    """{id: calibrated cosine ≥ floor} over the vectors of `model` (of the vector's dimension): from `index`, the
    store's ANN index when it keeps one, else from the whole vector matrix."""
    if index is not None:
        keys, raw = index.search(vector.astype(np.float32), ANN_COSINE_TOP)
        cal = calibration(np.asarray(raw, dtype=np.float32))
        return {i: float(c) for i, c in zip(index.ids(keys), cal) if i is not None and c >= floor}
    ids, mat = store.vector_matrix(model, int(vector.shape[0]))
    if not ids:
        return {}
    cal = calibration(mat @ vector.astype(np.float32))
    keep = np.flatnonzero(cal >= floor)
    return {ids[i]: float(cal[i]) for i in keep}
