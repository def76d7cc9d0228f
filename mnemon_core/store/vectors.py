"""An in-memory float32 matrix of a store's vectors, kept in step with writes.

A long-lived process must not read every blob on every query. The store gives each vector write or delete a
growing sequence number (`vec_seq`); `refresh` reads only rows changed since the last high-water mark, so
writes from another process are seen on the next query at the cost of the changed rows alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .base import Vectors


def encode(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype="<f4").tobytes()


def decode(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


def normalise_rows(mat: np.ndarray) -> np.ndarray:
    """`normalise` of each row, to the bit: each length is the row's own float32 dot product (as
    `np.linalg.norm` takes it; a vectorised sum adds in another order), the division one array operation."""
    m = np.asarray(mat, dtype=np.float32)
    norms = np.sqrt(np.fromiter((r.dot(r) for r in m), dtype=np.float32, count=m.shape[0]))
    return m / np.where(norms > 0, norms, np.float32(1.0))[:, None]


def normalise(vec: np.ndarray) -> np.ndarray:
    v = np.asarray(vec, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


class VectorCache:
    """Rows of unit vectors for one (model, dim); deleted rows are zeroed and reused lazily."""

    def __init__(self, model: str, dim: int) -> None:
        self.model = model
        self.dim = dim
        self.high_water = -1
        self._mat = np.zeros((0, dim), dtype=np.float32)
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._live = np.zeros(0, dtype=bool)
        self._n = 0
        self._snapshot: tuple[list[str], np.ndarray] | None = None  # until the next change

    @classmethod
    def mapped(cls, model: str, dim: int, ids: list[str], rows: np.ndarray, high_water: int) -> VectorCache:
        """A cache whose first len(ids) rows of `rows` (writable, more rows as room to grow) are live."""
        cache = cls(model, dim)
        cache._mat = rows
        cache._live = np.zeros(rows.shape[0], dtype=bool)
        cache._live[: len(ids)] = True
        cache._n = len(ids)
        cache._ids = ids
        cache._row = dict(zip(ids, range(len(ids))))
        cache.high_water = high_water
        return cache

    def apply(self, rows: list[tuple[str, bytes | None, str | None, bool]], high_water: int) -> None:
        """rows: (id, blob, model, active). A row of another model/dim or inactive is removed; of one id
        named twice the later row wins. The rows are decoded, normalised and placed as one array (a first
        load of 100k rows one by one cost about two CPU seconds)."""
        if rows:
            self._snapshot = None
            last = {r[0]: k for k, r in enumerate(rows)}
            if len(last) < len(rows):
                rows = [rows[k] for k in sorted(last.values())]
            width = 4 * self.dim
            keep = [r for r in rows if r[3] and r[1] is not None and r[2] == self.model and len(r[1]) == width]
            if len(keep) < len(rows):
                gone = [r[0] for r in rows if not (r[3] and r[1] is not None and r[2] == self.model
                                                   and len(r[1]) == width)]
                at = [self._row[i] for i in gone if i in self._row]
                self._live[at] = False
                self._mat[at] = 0.0
            if keep:
                vecs = normalise_rows(np.frombuffer(b"".join(r[1] for r in keep), dtype="<f4").reshape(-1, self.dim))  # type: ignore[misc]
                at = np.fromiter((self._row.get(r[0], -1) for r in keep), dtype=np.int64, count=len(keep))
                new = np.flatnonzero(at < 0)
                if new.size:
                    at[new] = self._append([keep[k][0] for k in new.tolist()])
                self._mat[at] = vecs
                self._live[at] = True
        self.high_water = max(self.high_water, high_water)

    def _append(self, ids: list[str]) -> np.ndarray:
        """Rows for new ids (the matrix grows by doubling)."""
        need = self._n + len(ids)
        if need > self._mat.shape[0]:
            cap = max(64, self._n * 2, need)
            mat = np.zeros((cap, self.dim), dtype=np.float32)
            mat[: self._n] = self._mat[: self._n]
            live = np.zeros(cap, dtype=bool)
            live[: self._n] = self._live[: self._n]
            self._mat, self._live = mat, live
        first = self._n
        self._n = need
        self._ids.extend(ids)
        self._row.update(zip(ids, range(first, need)))
        return np.arange(first, need, dtype=np.int64)

    def rows(self) -> int:
        """Rows held, deleted ones included until reused."""
        return self._n

    def snapshot(self) -> tuple[list[str], np.ndarray]:
        """(ids, matrix) of the live rows, made once per change and shared by the callers until the next one
        (they read it, never change it): with a deleted row it is a copy of the whole matrix, which a warm
        process must not make on every query. The matrix is a view when nothing was deleted."""
        if self._snapshot is None:
            live = self._live[: self._n]
            if live.all():
                self._snapshot = self._ids[:], self._mat[: self._n]
            else:
                idx = np.flatnonzero(live)
                self._snapshot = [self._ids[i] for i in idx.tolist()], self._mat[idx]
        return self._snapshot


class AnsweredAnn:
    """Recall's view (`store.base.AnnSearch`) of a database's own nearest-neighbour index (pgvector, Kùzu,
    Milvus): keys are positions in the answers this object has given. It asks the store's `nearest` ((id,
    cosine) pairs, best first) unless a backend says otherwise (`_nearest`); each reads exact cosines its way."""

    def __init__(self, store: Any, model: str, dim: int) -> None:
        self.store, self.model, self.dim = store, model, dim
        self._ids: list[str] = []

    def _nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        return self.store.nearest(self.model, query, k)  # type: ignore[no-any-return]

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self._nearest(query, k)
        start = len(self._ids)
        self._ids.extend(r[0] for r in rows)
        return np.arange(start, start + len(rows), dtype=np.int64), np.array([r[1] for r in rows], dtype=np.float32)

    def ids(self, keys: np.ndarray) -> list[str | None]:
        return [self._ids[int(k)] if 0 <= int(k) < len(self._ids) else None for k in keys.tolist()]

    def stale(self) -> bool:
        return False  # the database indexes every write


def nearest(store: Vectors, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """`Vectors.nearest` from the store's ANN index where one serves, else exactly from its matrix."""
    vec = np.asarray(vector, dtype=np.float32)
    index = store.ann_index(model, int(vec.shape[0]))
    if index is not None:
        keys, cos = index.search(vec, k)
        return [(i, float(c)) for i, c in zip(index.ids(keys), cos) if i is not None]
    return scan(store, model, vec, k)


def scan(store: Any, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k nearest exactly, from the store's matrix (`vector_matrix`)."""
    vec = np.asarray(vector, dtype=np.float32)
    ids, mat = store.vector_matrix(model, int(vec.shape[0]))
    cos = mat @ normalise(vec)
    best = sorted(range(len(ids)), key=lambda r: (-cos[r], ids[r]))[:k]
    return [(ids[r], float(cos[r])) for r in best]
