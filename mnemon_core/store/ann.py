"""An approximate nearest-neighbour index beside a SQLite store (optional: `usearch`, an HNSW file).

Above `ANN_MIN_ROWS` (`store/base.py`) vectors of one model, an exact scan of the float32 matrix costs more than
recall's budget (1M × 384 floats is 1.5 GB read per query) and holding the matrix costs its size in memory. The
index lives in a file beside the database (`mnemon.vec.<model>.usearch`, keys = SQLite rowids, cosine metric,
float32 so the cosines it returns are the exact ones) with a sidecar JSON naming the `vec_seq` high-water mark it
covers. A reader memory-maps it (`Index.restore(view=True)`), so a fresh process reads only the graph nodes a
search visits, and scans exactly the few rows whose vector changed since the file was written (added, replaced,
deleted: all move `vec_seq`); those rowids are dropped from the index's answers. When that delta passes
`ANN_DELTA_MAX` rows (`stale`), the next remember or import folds it into the file (`refresh`, through
`maintain_vector_index`), written to a temporary name and renamed, so readers holding the old mapping keep a
consistent file.

Without usearch, or below the threshold, callers use the exact scan; `available()` says which.
The index is approximate: its top-k can miss a true neighbour (recall@20 against the exact scan is measured in
benchmarks/scale.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from .sql import in_chunks
from .vectors import decode, normalise

ANN_DELTA_MAX = 20_000  # changed rows a reader scans exactly before the file is worth rewriting
ANN_CONNECTIVITY = 16  # HNSW M
ANN_EXPANSION_ADD = 128  # ef_construction
ANN_EXPANSION_SEARCH = 128  # ef at query time (≥ the k asked for)
_READ_CHUNK = 20_000  # rows per fetch while building, so a million blobs are never in memory at once


def available() -> bool:
    """usearch is installed (the `ann` extra)."""
    return importlib.util.find_spec("usearch") is not None


def index_path(db_path: Path, model: str, dim: int) -> Path:
    slug = hashlib.sha256(f"{model}:{dim}".encode()).hexdigest()[:12]
    return db_path.with_name(f"{db_path.stem}.vec.{slug}.usearch")


def _new_index(dim: int) -> Any:
    from usearch.index import Index

    return Index(ndim=dim, metric="cos", dtype="f32", connectivity=ANN_CONNECTIVITY,
                 expansion_add=ANN_EXPANSION_ADD, expansion_search=ANN_EXPANSION_SEARCH)


def _top_seq(db: sqlite3.Connection) -> int:
    r = db.execute("SELECT value FROM mnemon_meta WHERE key = 'vec_seq'").fetchone()
    return r[0] if r else 0


def _rows(db: sqlite3.Connection, model: str, dim: int, after: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rowids, unit vectors, usable) of rows whose vec_seq is above `after`; usable = active, this model/dim."""
    keys, vecs, ok = [], [], []
    cur = db.execute(
        "SELECT rowid, embedding, embed_model, deleted_at IS NULL FROM insights WHERE vec_seq > ? ORDER BY vec_seq",
        (after,),
    )
    while chunk := cur.fetchmany(_READ_CHUNK):
        for rowid, blob, m, active in chunk:
            v = decode(blob) if blob is not None and m == model and active else None
            keys.append(rowid)
            if v is not None and v.shape[0] == dim:
                vecs.append(normalise(v))
                ok.append(True)
            else:
                vecs.append(np.zeros(dim, dtype=np.float32))
                ok.append(False)
    if not keys:
        return np.zeros(0, dtype=np.uint64), np.zeros((0, dim), dtype=np.float32), np.zeros(0, dtype=bool)
    return np.asarray(keys, dtype=np.uint64), np.stack(vecs), np.asarray(ok, dtype=bool)


class AnnIndex:
    """The HNSW file of one (store, model, dim), opened memory-mapped, plus the exact delta above it."""

    def __init__(self, db: sqlite3.Connection, db_path: Path, model: str, dim: int) -> None:
        self.db = db
        self.path = index_path(Path(db_path), model, dim)
        self.model = model
        self.dim = dim
        self._index: Any = None
        self._mtime: float | None = None
        self.high_water = -1
        self._delta_seq = -1
        self._delta_keys = np.zeros(0, dtype=np.uint64)
        self._delta_vecs = np.zeros((0, dim), dtype=np.float32)
        self._delta_ok = np.zeros(0, dtype=bool)
        self._delta_in_index = np.zeros(0, dtype=bool)  # which delta rows the file holds (an older vector)

    @property
    def meta_path(self) -> Path:
        return self.path.with_suffix(".json")

    def exists(self) -> bool:
        return self.path.exists() and self.meta_path.exists()

    def size(self) -> int:
        return 0 if self._index is None else len(self._index)

    # ------------------------------------------------------------------ writing

    def build(self, threads: int = 0) -> int:
        """Write the file from every active vector of the model (replacing any). Returns the rows indexed."""
        top = _top_seq(self.db)
        index = _new_index(self.dim)
        n = 0
        cur = self.db.execute(
            "SELECT rowid, embedding FROM insights WHERE embedding IS NOT NULL AND embed_model = ? "
            "AND deleted_at IS NULL AND length(embedding) = ?",
            (self.model, 4 * self.dim),
        )
        while chunk := cur.fetchmany(_READ_CHUNK):
            keys = np.fromiter((r[0] for r in chunk), dtype=np.uint64, count=len(chunk))
            vecs = np.stack([decode(r[1]) for r in chunk])
            index.add(keys, vecs, threads=threads)
            n += len(chunk)
        self._save(index, top)
        return n

    def refresh(self, threads: int = 0) -> int:
        """Fold the rows changed since the file was written into it (load, remove, add, save). Returns the
        rows folded."""
        from usearch.index import Index

        if not self.exists():
            return self.build(threads)
        hw = json.loads(self.meta_path.read_text())["high_water"]
        top = _top_seq(self.db)
        keys, vecs, ok = _rows(self.db, self.model, self.dim, hw)
        index = Index.restore(str(self.path), view=False)
        if index is None:  # not a usearch file: start over
            return self.build(threads)
        if keys.size:
            present = np.array([bool(index.contains(int(k))) for k in keys.tolist()])
            if present.any():
                index.remove(keys[present])
            if ok.any():
                index.add(keys[ok], vecs[ok], threads=threads)
        self._save(index, top)
        return int(keys.size)

    def _save(self, index: Any, high_water: int) -> None:
        tmp = self.path.with_name(self.path.name + f".tmp{os.getpid()}")
        index.save(str(tmp))
        meta_tmp = self.meta_path.with_name(self.meta_path.name + f".tmp{os.getpid()}")
        meta_tmp.write_text(json.dumps({"model": self.model, "dim": self.dim, "high_water": high_water}))
        # The file is renamed first: a reader pairing the old meta with the new file scans more delta, never less.
        os.replace(tmp, self.path)
        os.replace(meta_tmp, self.meta_path)
        self._index = None  # reopened (mapped) on the next search

    # ------------------------------------------------------------------ reading

    def open(self) -> bool:
        """Map the file if it exists (re-map when another process rewrote it). False without a file."""
        from usearch.index import Index

        if not self.exists():
            self._index = None
            return False
        mtime = self.path.stat().st_mtime
        if self._index is None or mtime != self._mtime:
            hw = json.loads(self.meta_path.read_text())["high_water"]
            self._index = Index.restore(str(self.path), view=True)
            if self._index is None:
                return False
            self._index.expansion_search = ANN_EXPANSION_SEARCH
            self._mtime = mtime
            if hw != self.high_water:
                self.high_water = hw
                self._delta_seq = -1
        return True

    def delta(self) -> int:
        """Bring the exact delta up to date; returns its size (rows changed since the file was written). Only
        the rows changed since the last call are read (an import changes one per insight); a row changed again
        replaces its earlier entry."""
        self.open()
        top = _top_seq(self.db)
        if top != self._delta_seq:
            fresh = self._delta_seq >= 0
            keys, vecs, ok = _rows(self.db, self.model, self.dim, self._delta_seq if fresh else self.high_water)
            in_index = np.fromiter((bool(self._index.contains(int(k))) for k in keys.tolist()), dtype=bool,
                                   count=keys.size)
            if fresh and self._delta_keys.size:
                keep = ~np.isin(self._delta_keys, keys)
                keys = np.concatenate([self._delta_keys[keep], keys])
                vecs = np.concatenate([self._delta_vecs[keep], vecs])
                ok = np.concatenate([self._delta_ok[keep], ok])
                in_index = np.concatenate([self._delta_in_index[keep], in_index])
            self._delta_keys, self._delta_vecs, self._delta_ok, self._delta_in_index = keys, vecs, ok, in_index
            self._delta_seq = top
        return int(self._delta_keys.size)

    def stale(self) -> bool:
        """More than `ANN_DELTA_MAX` rows changed since the file was written: time for a writer to `refresh`."""
        return self.delta() > ANN_DELTA_MAX

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, cosines) of the k nearest active vectors, best first: the index's answer without the rows
        changed since it was written, merged with an exact scan of those rows."""
        if not self.open():
            raise FileNotFoundError(self.path)
        self.delta()
        q = normalise(query)
        stale = self._delta_keys[self._delta_in_index]  # changed since the file, and in it: masked out
        m = self._index.search(q, k + int(stale.size), threads=1)
        keys = np.asarray(m.keys, dtype=np.uint64)
        cos = 1.0 - np.asarray(m.distances, dtype=np.float32)
        if stale.size:
            keep = ~np.isin(keys, stale)
            keys, cos = keys[keep], cos[keep]
            dk, dv = self._delta_keys[self._delta_ok], self._delta_vecs[self._delta_ok]
            if dk.size:
                keys = np.concatenate([keys, dk])
                cos = np.concatenate([cos, dv @ q])
        order = np.lexsort((keys, -cos))[:k]
        return keys[order], cos[order]

    def ids(self, keys: np.ndarray) -> list[str | None]:
        """Insight ids of rowids (None for a row that is gone)."""
        ks = [int(k) for k in keys.tolist()]
        if not ks:
            return []
        q = ",".join("?" * len(ks))
        found = dict(self.db.execute(f"SELECT rowid, id FROM insights WHERE rowid IN ({q})", ks).fetchall())
        return [found.get(k) for k in ks]

    def cosines(self, ids: list[str], query: np.ndarray) -> np.ndarray:
        """Exact cosine of the unit `query` with the current stored vector of each id (NaN without one of this
        model and dimension): what the matrix scan gives for those rows, read by primary key."""
        out = np.full(len(ids), np.nan, dtype=np.float32)
        if not ids:
            return out
        at = {id_: i for i, id_ in enumerate(ids)}
        q = np.asarray(query, dtype=np.float32)
        for chunk, marks in in_chunks(ids, 900):
            for id_, blob in self.db.execute(
                f"SELECT id, embedding FROM insights WHERE id IN ({marks}) AND embed_model = ? "
                "AND length(embedding) = ? AND +deleted_at IS NULL",
                [*chunk, self.model, 4 * self.dim],
            ):
                out[at[id_]] = float(normalise(decode(blob)) @ q)
        return out
