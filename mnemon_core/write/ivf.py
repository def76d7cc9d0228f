"""The import's coarse quantizer: an inverted file (IVF) over spherical k-means centroids, so that an import batch
finds the stored insights whose cosine reaches the write path's floor from a few lists instead of the product with
every stored vector (quadratic over a large import: every batch × every vector so far).

The lists hold the vectors themselves (one contiguous array per list, grown by doubling), so a search is one
product with the centroids and, per list probed, one product of the list with the batch's queries that probe it;
the cosines are exact, only the lists not probed are missed. Used by `similarity.BatchCosines` through an
`ImportQuantizer`, which one import keeps across its batches: it decides whether the quantizer pays, trains it,
appends what each batch wrote (read back from the store's vector matrix, so later batches see it) and retrains
once the store has grown (`IVF_REGROW`). numpy only."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from .constants import (
    IVF_ITERATIONS,
    IVF_LISTS_PER_ROOT,
    IVF_MAX_LISTS,
    IVF_MIN_ROWS,
    IVF_NEAR_COSINE,
    IVF_NPROBE,
    IVF_PAYBACK,
    IVF_REGROW,
    IVF_SAMPLE_PER_LIST,
    IVF_SEED,
)

__all__ = ["CoarseIndex", "ImportQuantizer", "lists_for"]

# For unit q, x and any unit centroid c, |q·c − x·c| ≤ |q − x| = √(2 − 2 cos(q, x)) =: δ; x sits in the list of its
# best centroid l, and the query's best centroid b has q·c_b ≤ x·c_b + δ ≤ x·c_l + δ ≤ q·c_l + 2δ. So probing every
# list within 2δ of the query's best finds every row at cosine ≥ IVF_NEAR_COSINE (a near-duplicate) exactly.
NEAR_MARGIN = 2.0 * math.sqrt(2.0 - 2.0 * IVF_NEAR_COSINE) + 1e-5  # + float32 rounding of the products

# Rows multiplied at once with the centroids while assigning (bounds the product's memory: rows × lists floats).
_ROWS_PER_ASSIGN = 16_384


def lists_for(n: int) -> int:
    """The centroid count for a store of n vectors (≈ IVF_LISTS_PER_ROOT × √n, at least 1, at most n)."""
    return max(1, min(n, IVF_MAX_LISTS, round(IVF_LISTS_PER_ROOT * math.sqrt(n))))


def _nearest(mat: np.ndarray, cent: np.ndarray) -> np.ndarray:
    """Each row's best centroid by inner product, a block of rows at a time."""
    out = np.empty(mat.shape[0], dtype=np.int64)
    for lo in range(0, mat.shape[0], _ROWS_PER_ASSIGN):
        out[lo : lo + _ROWS_PER_ASSIGN] = np.argmax(mat[lo : lo + _ROWS_PER_ASSIGN] @ cent.T, axis=1)
    return out


def train(mat: np.ndarray, lists: int, *, seed: int = IVF_SEED, iterations: int = IVF_ITERATIONS,
          sample_per_list: int = IVF_SAMPLE_PER_LIST) -> np.ndarray:
    """Spherical k-means centroids (unit rows, float32) of a sample of `mat`'s rows: Lloyd iterations on the
    inner product, each centroid the normalised sum of its members; an emptied centroid restarts at a random
    sample row. Deterministic for a given matrix and seed."""
    rng = np.random.default_rng(seed)
    n = mat.shape[0]
    lists = max(1, min(lists, n))
    take = min(n, lists * sample_per_list)
    sample = mat[np.sort(rng.choice(n, size=take, replace=False))] if take < n else np.asarray(mat)
    sample = np.ascontiguousarray(sample, dtype=np.float32)
    cent = sample[rng.choice(take, size=lists, replace=False)].copy()
    for _ in range(iterations):
        assign = _nearest(sample, cent)
        order = np.argsort(assign, kind="stable")
        counts = np.bincount(assign, minlength=lists)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        full = np.flatnonzero(counts)
        sums = np.zeros_like(cent)
        sums[full] = np.add.reduceat(sample[order], starts[full], axis=0)
        empty = np.flatnonzero(counts == 0)
        if empty.size:
            sums[empty] = sample[rng.choice(take, size=empty.size, replace=False)]
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        cent = (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return cent


class CoarseIndex:
    """Stored vectors in lists by their nearest centroid. `search` returns, for each query, the rows of its
    `nprobe` nearest lists whose inner product with it is ≥ a raw floor; with nprobe = the list count it is the
    exact answer."""

    def __init__(self, key: Hashable, ids: Sequence[str], mat: np.ndarray, *, lists: int | None = None,
                 nprobe: int = IVF_NPROBE, seed: int = IVF_SEED) -> None:
        n, dim = mat.shape
        self.key = key
        self.dim = dim
        self.nprobe = nprobe
        self.trained_on = n
        self.centroids = train(mat, lists if lists is not None else lists_for(n), seed=seed)
        count = self.centroids.shape[0]
        self.ids: list[str] = list(ids)
        assign = _nearest(mat, self.centroids)
        order = np.argsort(assign, kind="stable")
        sizes = np.bincount(assign, minlength=count)
        self._vecs: list[np.ndarray] = []
        self._pos: list[np.ndarray] = []
        self._len = sizes.astype(np.int64)
        at = 0
        for size in sizes.tolist():
            rows = order[at : at + size]
            at += size
            cap = max(8, size + size // 4)  # room for the import's own rows before the first doubling
            v = np.empty((cap, dim), dtype=np.float32)
            v[:size] = mat[rows]
            p = np.empty(cap, dtype=np.int64)
            p[:size] = rows
            self._vecs.append(v)
            self._pos.append(p)

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def lists(self) -> int:
        return int(self.centroids.shape[0])

    def in_step(self, ids: Sequence[str]) -> bool:
        """Whether `ids` (the store's vector matrix now) extends the rows held: nothing held was removed or
        moved, only rows appended (a deletion shifts every later row of the matrix)."""
        n = self.size
        return len(ids) >= n and (n == 0 or (ids[n - 1] == self.ids[n - 1] and ids[0] == self.ids[0]))

    def add(self, ids: Sequence[str], mat: np.ndarray) -> None:
        """Append rows (unit vectors) to their nearest lists."""
        if not len(ids):
            return
        first = self.size
        self.ids.extend(ids)
        assign = _nearest(np.asarray(mat, dtype=np.float32), self.centroids)
        for lst in np.unique(assign).tolist():
            rows = np.flatnonzero(assign == lst)
            have, need = int(self._len[lst]), int(self._len[lst]) + rows.size
            if need > self._vecs[lst].shape[0]:
                cap = max(need, 2 * self._vecs[lst].shape[0])
                v = np.empty((cap, self.dim), dtype=np.float32)
                v[:have] = self._vecs[lst][:have]
                p = np.empty(cap, dtype=np.int64)
                p[:have] = self._pos[lst][:have]
                self._vecs[lst], self._pos[lst] = v, p
            self._vecs[lst][have:need] = mat[rows]
            self._pos[lst][have:need] = first + rows
            self._len[lst] = need

    def extend_to(self, ids: Sequence[str], mat: np.ndarray) -> None:
        """Append the rows of the store's matrix past those held (`in_step` must hold)."""
        self.add(ids[self.size :], mat[self.size :])

    def search(self, queries: np.ndarray, least: float, nprobe: int | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query row, held row, raw inner product) of every held row ≥ `least` in the query's `nprobe` nearest
        lists and in any list within NEAR_MARGIN of its nearest; the lists are visited once each, with all the
        queries that probe them."""
        q = np.asarray(queries, dtype=np.float32)
        count = self.lists
        probe_n = max(1, min(count, nprobe if nprobe is not None else self.nprobe))
        coarse = q @ self.centroids.T
        if probe_n < count:
            # The nprobe best lists, and every list within NEAR_MARGIN of the best: a stored row at cosine ≥
            # IVF_NEAR_COSINE from the query has its own (nearest) centroid there, whatever the data.
            mask = coarse >= (coarse.max(axis=1) - NEAR_MARGIN)[:, None]
            top = np.argpartition(-coarse, probe_n - 1, axis=1)[:, :probe_n]
            mask[np.arange(q.shape[0])[:, None], top] = True
            who, flat = np.nonzero(mask)
        else:
            flat = np.tile(np.arange(count), q.shape[0])
            who = np.repeat(np.arange(q.shape[0]), count)
        order = np.argsort(flat, kind="stable")
        flat, who = flat[order], who[order]
        cuts = np.flatnonzero(np.diff(flat)) + 1
        out_q: list[np.ndarray] = []
        out_r: list[np.ndarray] = []
        out_v: list[np.ndarray] = []
        for lo, hi in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [flat.size])).tolist()):
            lst = int(flat[lo])
            n = int(self._len[lst])
            if n == 0:
                continue
            qs = who[lo:hi]
            raw = self._vecs[lst][:n] @ q[qs].T
            r, c = np.nonzero(raw >= least)
            if r.size:
                out_q.append(qs[c])
                out_r.append(self._pos[lst][r])
                out_v.append(raw[r, c])
        if not out_q:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0, dtype=np.float32)
        return np.concatenate(out_q), np.concatenate(out_r), np.concatenate(out_v)


class ImportQuantizer:
    """One import's coarse quantizer across its batches: `for_batch` answers the index to search with (None: the
    exact product). It is built once the store holds `min_rows` vectors and the vectors the import has still to
    write repay its training (`IVF_PAYBACK`), extended with each batch's rows, retrained once the store has grown
    `IVF_REGROW`-fold."""

    def __init__(self, *, min_rows: int = IVF_MIN_ROWS, payback: float = IVF_PAYBACK, nprobe: int = IVF_NPROBE,
                 lists: int | None = None) -> None:
        self.min_rows = min_rows
        self.payback = payback
        self.nprobe = nprobe
        self.lists = lists
        self.index: CoarseIndex | None = None
        self.builds = 0  # trainings so far (a test and the benchmark read it)

    def pays(self, n: int, left: int) -> bool:
        """Whether training for n stored vectors costs less than the exact products of `left` insights: the
        training and assignment are about (L + iterations × sample) products with every stored row, one
        exact insight one."""
        lists = self.lists if self.lists is not None else lists_for(n)
        cost = lists + IVF_ITERATIONS * min(n, lists * IVF_SAMPLE_PER_LIST) * lists / max(n, 1)
        return n >= self.min_rows and left >= self.payback * cost

    def for_batch(self, key: Hashable, ids: Sequence[str], mat: np.ndarray, left: int) -> CoarseIndex | None:
        """The index for a batch whose store matrix is (ids, mat) and after which `left` vectors remain to be
        written, this batch's included."""
        n = len(ids)
        idx = self.index
        if idx is not None and (idx.key != key or not idx.in_step(ids)):
            idx = self.index = None  # another model, or rows removed under us: start again
        if n < self.min_rows:
            self.index = None
            return None
        if idx is not None and n < IVF_REGROW * idx.trained_on:
            idx.extend_to(ids, mat)
            return idx
        if self.pays(n, left):
            self.index = CoarseIndex(key, ids, mat, lists=self.lists, nprobe=self.nprobe)
            self.builds += 1
            return self.index
        if idx is not None:  # grown, but too little left to retrain: the old lists still beat the product
            idx.extend_to(ids, mat)
        return idx
