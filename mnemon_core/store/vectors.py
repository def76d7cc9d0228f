"""An in-memory float32 matrix of a store's vectors, kept in step with writes.

A long-lived process must not read every blob on every query. The store gives each vector write or delete a
growing sequence number (`vec_seq`); `refresh` reads only rows changed since the last high-water mark, so
writes from another process are seen on the next query at the cost of the changed rows alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .base import Vectors


def encode(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype="<f4").tobytes()


def decode(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


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

    def apply(self, rows: list[tuple[str, bytes | None, str | None, bool]], high_water: int) -> None:
        """rows: (id, blob, model, active). A row of another model/dim or inactive is removed."""
        if rows:
            self._snapshot = None
        for id_, blob, model, active in rows:
            vec = None
            if active and blob is not None and model == self.model:
                v = decode(blob)
                if v.shape[0] == self.dim:
                    vec = normalise(v)
            r = self._row.get(id_)
            if vec is None:
                if r is not None:
                    self._live[r] = False
                    self._mat[r] = 0.0
                continue
            if r is None:
                r = self._append(id_)
            self._mat[r] = vec
            self._live[r] = True
        self.high_water = max(self.high_water, high_water)

    def _append(self, id_: str) -> int:
        if self._n == self._mat.shape[0]:
            cap = max(64, self._n * 2)
            mat = np.zeros((cap, self.dim), dtype=np.float32)
            mat[: self._n] = self._mat[: self._n]
            live = np.zeros(cap, dtype=bool)
            live[: self._n] = self._live[: self._n]
            self._mat, self._live = mat, live
        r = self._n
        self._n += 1
        self._ids.append(id_)
        self._row[id_] = r
        return r

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


def nearest(store: Vectors, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """`Vectors.nearest` from the store's ANN index where one serves, else exactly from its matrix."""
    vec = np.asarray(vector, dtype=np.float32)
    index = store.ann_index(model, int(vec.shape[0]))
    if index is not None:
        keys, cos = index.search(vec, k)
        return [(i, float(c)) for i, c in zip(index.ids(keys), cos) if i is not None]
    ids, mat = store.vector_matrix(model, int(vec.shape[0]))
    cos = mat @ normalise(vec)
    best = sorted(range(len(ids)), key=lambda r: (-cos[r], ids[r]))[:k]
    return [(ids[r], float(cos[r])) for r in best]
