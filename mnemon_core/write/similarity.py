"""The write path's cosines: the calibrated cosine of a new vector with the store's embedded active insights, for
the diff label, the semantic builder and the semantic candidates. A store large enough to keep an ANN index
answers with its `ANN_COSINE_TOP` nearest instead of a scan of every vector (every write-path consumer takes at
most the best 5), so remember and import stay sub-linear at a million insights; without one, a large import's
batches search the lists of a coarse quantizer (`ivf.py`) instead of the product with every stored vector."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..store import Store
from .constants import ANN_COSINE_TOP

if TYPE_CHECKING:
    from ..embed import Calibration
    from ..recall.pipeline import AnnSearch
    from .ivf import ImportQuantizer


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
    raw = mat @ vector.astype(np.float32)
    near = np.flatnonzero(raw >= calibration.raw_floor(floor))  # calibrated, only these can reach the floor
    cal = calibration(raw[near])
    keep = cal >= floor
    return dict(zip([ids[i] for i in near[keep].tolist()], cal[keep].tolist()))


# Matrix rows multiplied at once by a batch's vectors (bounds the product's memory: rows × batch floats).
_ROWS_PER_PRODUCT = 32_768


class BatchCosines:
    """`cosines` for every insight of one import batch, computed before the batch writes, not a scan per insight.

    Insight i of the batch is compared with the store's embedded active insights as of the batch's start and
    with the batch's insights written before it (as the per-insight scan inside the batch's transaction would
    see them). The first comes from the product of the store's matrix with the batch's vectors (only the
    cosines ≥ floor are kept), or, in a store that keeps an ANN index, from one index search per insight made
    before the batch writes (so the index's exact delta is read once per batch, not once per write), or, when the
    import's `quantizer` (`ivf.py`) says it pays (a large store, a large import), from the lists of its coarse
    quantizer nearest to each vector (exact cosines, approximate in which rows are compared); the second from
    the batch's own Gram matrix. `left`: the vectors the import has still to write, this batch's included."""

    def __init__(
        self, store: Store, model: str, calibration: Calibration, vectors: dict[int, np.ndarray], *, floor: float,
        quantizer: ImportQuantizer | None = None, left: int = 0,
    ) -> None:
        self._floor = floor
        self._col = {i: c for c, i in enumerate(sorted(vectors))}
        self._written_cols: list[int] = []  # the columns of the batch's insights written so far
        self._written_ids: list[str] = []  # and their ids
        self._found: dict[int, dict[str, float]] = {c: {} for c in self._col.values()}
        if not vectors:
            return
        batch = np.stack([vectors[i] for i in sorted(vectors)]).astype(np.float32)
        self._gram = np.asarray(calibration(batch @ batch.T))
        dim = int(batch.shape[1])
        index = store.ann_index(model, dim)
        if index is not None:
            for c, v in enumerate(batch):
                self._found[c] = cosines(store, model, calibration, v, index, floor=floor)
            return
        ids, mat = store.vector_matrix(model, dim)
        least = calibration.raw_floor(floor)
        coarse = (quantizer.for_batch((model, dim), ids, mat, max(left, len(vectors)))
                  if quantizer is not None and math.isfinite(least) else None)
        if coarse is not None:
            cols, rows, raw = coarse.search(batch, least)
            cal = np.asarray(calibration(raw))
            keep = cal >= floor
            held = coarse.ids
            for c, r, v in zip(cols[keep].tolist(), rows[keep].tolist(), cal[keep].tolist()):
                self._found[c][held[r]] = v
            return
        for lo in range(0, len(ids), _ROWS_PER_PRODUCT):
            raw = mat[lo : lo + _ROWS_PER_PRODUCT] @ batch.T
            rows, cols = np.nonzero(raw >= least)
            cal = np.asarray(calibration(raw[rows, cols]))
            keep = cal >= floor
            for r, c, v in zip(rows[keep].tolist(), cols[keep].tolist(), cal[keep].tolist()):
                self._found[c][ids[lo + r]] = v

    def of(self, i: int) -> dict[str, float]:
        """{id: calibrated cosine ≥ floor} for the batch's insight i (its draft index)."""
        c = self._col[i]
        out = dict(self._found[c])
        if self._written_cols:
            # One column read for the batch's writes so far (a loop over them was O(batch²) in Python, 4 % of an
            # import's CPU); compared in float64, as float() of each was.
            v = self._gram[np.asarray(self._written_cols), c].astype(np.float64)
            for k in np.flatnonzero(v >= self._floor).tolist():
                out[self._written_ids[k]] = float(v[k])
        return out

    def wrote(self, i: int, id_: str) -> None:
        """The batch's insight i was written as id_ (later insights of the batch see it)."""
        if i in self._col:
            self._written_cols.append(self._col[i])
            self._written_ids.append(id_)

    def forget_written(self) -> None:
        """The batch's writes so far were rolled back."""
        self._written_cols.clear()
        self._written_ids.clear()
