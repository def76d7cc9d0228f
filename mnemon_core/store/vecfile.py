"""The vector matrix file: a store's unit vectors of one (model, dim) as one float32 matrix beside the database
that a fresh process maps instead of reading every blob (`vectors.VectorCache` starts from it).

Rows are the live rows of a `VectorCache` at one committed vector sequence number (`vec_seq`, the file's
counter), then empty rows as room to grow: the mapping is private copy-on-write, so the rows a process writes
later (its own remembers, the changes it reads since the file) are its own pages and the rest stay shared with
every other reader through the page cache. What changed after the counter the reader reads from the store as
it always did (rows whose `vec_seq` is larger). The file is written with the graph index file
(`mapfile.write`: temporary name, synced, renamed; the header's checksums, the store's id and the counter are
checked when it is mapped), so a torn, damaged, foreign or future file is never used: the cache then loads
from the store.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from . import mapfile
from .vectors import VectorCache

__all__ = ["load", "path_for", "write"]

FORMAT = 1
MAGIC = b"MNEMVEC1"
# Room to grow in the file, as a share of its rows (at least SPARE_MIN): a process appends this many vectors
# before its cache outgrows the mapping and copies it.
SPARE = 0.125
SPARE_MIN = 1024


def path_for(db_path: Path, model: str, dim: int) -> Path:
    key = zlib.crc32(f"{model}\0{dim}".encode())
    return db_path.with_name(f"{db_path.name}.vec-{key:08x}")


def write(path: Path, cache: VectorCache, *, uid: int, counter: int) -> int:
    """The cache's live rows at `counter` to `path`, atomically; the file's size."""
    ids, mat = cache.snapshot()
    n = len(ids)
    cap = n + max(SPARE_MIN, int(n * SPARE))
    rows = np.zeros((cap, cache.dim), dtype=np.float32)
    rows[:n] = mat
    header = {"format": FORMAT, "uid": uid, "counter": counter, "model": cache.model, "dim": cache.dim, "n": n}
    return mapfile.write(path, header, {"ids": mapfile.strings(ids), "rows": rows.reshape(-1)}, MAGIC)


def load(path: Path, model: str, dim: int, *, uid: int | None, counter: int) -> VectorCache | mapfile.Rejected | None:
    """A cache holding the file's rows (high water: its counter), or why the file was not used; None without
    one."""
    got = mapfile.map_file(path, MAGIC, FORMAT, uid=uid, counter=counter, copy=True)
    if got is None or isinstance(got, mapfile.Rejected):
        return got
    mm, header, _ = got
    if header["model"] != model or header["dim"] != dim:
        mm.close()
        return mapfile.Rejected(path, f"holds {header['model']}:{header['dim']}")
    dtype, count, offset = header["sections"]["ids"][:3]
    ids = np.frombuffer(mm, dtype=dtype, count=count, offset=offset)
    dtype, count, offset = header["sections"]["rows"][:3]
    rows = np.frombuffer(mm, dtype=dtype, count=count, offset=offset).reshape(-1, dim)
    return VectorCache.mapped(model, dim, [i.decode() for i in ids.tolist()], rows, header["counter"])
