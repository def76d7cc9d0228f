"""The graph index file: what recall reads of the graph, as compact arrays in one file beside the database
that a process maps instead of querying (the memo, `memo.py`, reads it; the fold, `fold.py`, writes it).

Nodes are the active insights at one committed graph counter, in id order (so a node's number is its id rank).
Per node: importance, created_at (text and epoch seconds), category and source codes, BM25 document length;
the adjacency as CSR (neighbour, edge type code, weight, temporal sub-type code; one entry per neighbour and type,
the heaviest, sorted by neighbour then type, both directions, as `Edges.adjacency` answers); the `supersedes`
targets; postings (sorted nodes) per keyword token, per lower-case entity, per ASCII-folded source, and per
stemmed term with its frequency.

The header names the edge types and temporal sub-types whose positions the codes are: a file whose lists are
not this release's (a type added, wherever it sorts) is rejected and written anew, never read with shifted
codes. It also carries the format version, the store's id and the committed graph counter the file was read
at; the file is written and checked as a `store/mapfile.py` file (checksums, atomic rename), and a file that
fails any check is not used (recall reads the store, and the next writer rebuilds it).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..models import EdgeType
from ..store.base import IndexRow
from ..store.mapfile import Rejected, map_file, strings, write

__all__ = ["EDGE_TYPES", "SUB_TYPES", "GraphIndex", "Holder", "ascii_fold", "build", "open_index"]

FORMAT = 3  # 3: the header names the edge types and sub-types (2 did not)
MAGIC = b"MNEMGIX1"
SUFFIX = ".gidx"

# Type code = position; alphabetical, so code order is name order (the beam's tie order on one neighbour).
EDGE_TYPES: tuple[str, ...] = tuple(sorted(str(t) for t in EdgeType))
TYPE_CODE = {t: i for i, t in enumerate(EDGE_TYPES)}
# Temporal sub-type code = position (0: not temporal, or a sub-type of its own). Where one pair has two temporal
# edges of equal weight (a conversation step that is also a backbone or proximity link), the lower code wins.
SUB_TYPES: tuple[str, ...] = ("", "conversation", "backbone", "proximity")
SUB_CODE = {t: i for i, t in enumerate(SUB_TYPES)}
_SUPERSEDES = TYPE_CODE["supersedes"]

_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_fold(s: str) -> str:
    """ASCII letters lower-cased, nothing else: how SQLite's NOCASE (and the Postgres store) compare sources."""
    return s.translate(_FOLD)


def epoch(created_at: str) -> int:
    """RFC 3339 → epoch seconds (0 if unparsable), for ordering "newer first" with integers."""
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(created_at).timestamp())
    except ValueError:
        return 0


def path_for(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + SUFFIX)


# ---------------------------------------------------------------------------------------------- reading


class GraphIndex:
    """One mapped, checked index file. Arrays are read-only views of the mapping."""

    def __init__(self, path: Path, mm: mmap.mmap, header: dict, identity: tuple[int, int, int]) -> None:
        self.path = path
        self._mm = mm
        self.header = header
        self.identity = identity  # (inode, mtime ns, size): a new file at the path is a new index
        self.counter: int = header["counter"]
        self.uid: int = header["uid"]
        self.built_at: float = header["built_at"]
        self.n: int = header["n"]
        self.n_docs: int = header["n_docs"]
        self.total_terms: int = header["total_terms"]
        self.cat_names: list[str] = header["cat_names"]
        self.src_names: list[str] = header["src_names"]
        a = self._arrays = {
            name: np.frombuffer(mm, dtype=dtype, count=count, offset=offset)
            for name, (dtype, count, offset, _, _) in header["sections"].items()
        }
        self.ids = a["ids"]
        self.importance = a["importance"]
        self.created = a["created"]
        self.created_key = a["created_key"]
        self.cat = a["cat"]
        self.src = a["src"]
        self.dl = a["dl"]
        self.n_tokens = a["n_tokens"]
        self.indptr = a["indptr"]
        self.nbr = a["nbr"]
        self.etype = a["etype"]
        self.weight = a["weight"]
        self.sub = a["sub"]
        self.superseded = a["superseded"]
        self.edges = int(self.nbr.shape[0])

    def nbytes(self) -> int:
        return self.identity[2]

    def node_of(self, ids: list[str]) -> np.ndarray:
        """Node of each id, -1 when the file does not hold it."""
        out = np.full(len(ids), -1, dtype=np.int64)
        if not ids or self.n == 0:
            return out
        pos = self.insertion(ids)
        ok = pos < self.n
        hit = np.flatnonzero(ok)
        keys = [ids[i].encode() for i in hit.tolist()]
        found = [self.ids[p] == k for p, k in zip(pos[hit].tolist(), keys)]
        out[hit[np.asarray(found, dtype=bool)]] = pos[hit][np.asarray(found, dtype=bool)]
        return out

    def insertion(self, ids: list[str]) -> np.ndarray:
        """How many of the file's ids sort before each id."""
        width = self.ids.dtype.itemsize
        keys = [i.encode() for i in ids]
        if all(len(k) <= width for k in keys):
            return np.searchsorted(self.ids, np.array(keys, dtype=self.ids.dtype)).astype(np.int64)
        from bisect import bisect_left

        return np.fromiter((bisect_left(self.ids, k) for k in keys), dtype=np.int64, count=len(keys))

    def posting(self, kind: str, key: str) -> np.ndarray:
        """Sorted nodes holding `key` (kind: tok, ent, src, term)."""
        lo, hi = self._span(kind, key)
        return self._arrays[kind + "_nodes"][lo:hi]

    def term_posting(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(sorted nodes holding the stemmed term, its frequency in each)."""
        lo, hi = self._span("term", term)
        return self._arrays["term_nodes"][lo:hi], self._arrays["term_tf"][lo:hi]

    def _span(self, kind: str, key: str) -> tuple[int, int]:
        keys = self._arrays[kind + "_keys"]
        k = key.encode()
        if keys.shape[0] == 0 or len(k) > keys.dtype.itemsize:
            return 0, 0
        i = int(np.searchsorted(keys, np.array(k, dtype=keys.dtype)))
        if i >= keys.shape[0] or keys[i] != k:
            return 0, 0
        ptr = self._arrays[kind + "_ptr"]
        return int(ptr[i]), int(ptr[i + 1])


class Holder:
    """The index file at one path as a store hands it out: mapped and checked once per file (a new file at the
    path, from another process's fold, is mapped anew); the rejection kept for `mnemon status`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cached: GraphIndex | Rejected | None = None

    def get(self, uid: int | None, counter: int) -> GraphIndex | None:
        try:
            st = os.stat(self.path)
            identity: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            identity = None
        cached = self._cached
        if cached is not None and (identity is None or cached.identity != identity):
            cached = None  # a memo may still read the old mapping: it goes when the last reader drops it
        if cached is None and identity is not None:
            cached = open_index(self.path, uid=uid, counter=counter)
            if isinstance(cached, Rejected):
                cached = cached._replace(identity=identity)
        self._cached = cached
        return cached if isinstance(cached, GraphIndex) else None

    def state(self) -> GraphIndex | Rejected | None:
        return self._cached


def open_index(path: Path, *, uid: int | None, counter: int) -> GraphIndex | Rejected | None:
    """The index at `path` if it is whole, of this store (`uid`), not ahead of its committed `counter` and
    coded with this release's edge types; a `Rejected` saying why not; None without a file."""
    got = map_file(path, MAGIC, FORMAT, uid=uid, counter=counter)
    if got is None or isinstance(got, Rejected):
        return got
    mm, header, identity = got
    for key, names in (("edge_types", EDGE_TYPES), ("sub_types", SUB_TYPES)):
        if header.get(key) != list(names):
            mm.close()
            return Rejected(path, f"{key.replace('_', ' ')} {header.get(key)} (this release codes {list(names)})")
    return GraphIndex(path, mm, header, identity)


# ---------------------------------------------------------------------------------------------- writing


def build(
    path: Path, *, uid: int, counter: int, rows: Iterable[IndexRow], edges: Iterable[tuple[str, str, str, float | None, str | None]],
) -> int:
    """Write the index of one consistent snapshot (`rows`: every active insight; `edges`: (source, target, type,
    weight, sub-type) of every edge) at `path`, atomically. Returns the file's size."""
    rows = sorted(rows, key=lambda r: r.id)
    n = len(rows)
    ids = [r.id for r in rows]
    node = {id_: i for i, id_ in enumerate(ids)}
    cat_names: list[str] = []
    src_names: list[str] = []
    cat_code: dict[str, int] = {}
    src_code: dict[str, int] = {}
    cat = np.zeros(n, dtype=np.int32)
    src = np.zeros(n, dtype=np.int32)
    dl = np.full(n, -1, dtype=np.int32)  # BM25 document length, -1: no BM25 row
    tok: dict[str, list[int]] = {}
    ent: dict[str, list[int]] = {}
    srcp: dict[str, list[int]] = {}
    term: dict[str, list[tuple[int, int]]] = {}
    n_docs = total = 0
    for i, r in enumerate(rows):
        cat[i] = cat_code.setdefault(r.category, len(cat_names))
        if cat[i] == len(cat_names):
            cat_names.append(r.category)
        src[i] = src_code.setdefault(r.source, len(src_names))
        if src[i] == len(src_names):
            src_names.append(r.source)
        for t in set(r.tokens):
            tok.setdefault(t, []).append(i)
        for e in set(r.entities):
            ent.setdefault(e, []).append(i)
        srcp.setdefault(ascii_fold(r.source), []).append(i)
        if r.terms is not None:
            n_docs += 1
            total += len(r.terms)
            dl[i] = len(r.terms)
            for t, tf in Counter(r.terms).items():
                term.setdefault(t, []).append((i, tf))
    sections: dict[str, np.ndarray] = {
        "ids": strings(ids),
        "importance": np.fromiter((r.importance for r in rows), dtype=np.int16, count=n),
        "created": strings([r.created_at for r in rows]),
        "created_key": np.fromiter((epoch(r.created_at) for r in rows), dtype=np.int64, count=n),
        "cat": cat,
        "src": src,
        "dl": dl,
        "n_tokens": np.fromiter((r.n_tokens for r in rows), dtype=np.int32, count=n),
    }
    sections.update(_csr(node, edges, n))
    for kind, post in (("tok", tok), ("ent", ent), ("src", srcp)):
        sections.update(_postings(kind, {k: (v, None) for k, v in post.items()}))
    sections.update(_postings("term", {k: ([p[0] for p in v], [p[1] for p in v]) for k, v in term.items()}))
    header = {
        "format": FORMAT, "uid": uid, "counter": counter, "built_at": time.time(), "n": n, "n_docs": n_docs,
        "total_terms": total, "cat_names": cat_names, "src_names": src_names, "edge_types": list(EDGE_TYPES),
        "sub_types": list(SUB_TYPES),
    }
    return write(path, header, sections, MAGIC)


def _csr(node: dict[str, int], edges: Iterable[tuple[str, str, str, float | None, str | None]], n: int) -> dict[str, np.ndarray]:
    """Adjacency of every node: both directions, other end active, no self-loops or unknown types; per
    (node, neighbour, type) the heaviest edge (then the lowest sub-type code), sorted by neighbour, type."""
    # Column by column (list comprehensions and masks, not a loop over the rows): the import's end builds
    # the file over every edge.
    rows = list(edges)
    get = node.get
    col = list(zip(*rows)) if rows else [(), (), (), (), ()]
    i = np.array([get(a, -1) for a in col[0]], dtype=np.int64)
    j = np.array([get(b, -1) for b in col[1]], dtype=np.int64)
    c = np.array([TYPE_CODE.get(typ, -1) for typ in col[2]], dtype=np.int64)
    w = np.array([0.0 if x is None else x for x in col[3]], dtype=np.float64)
    u = np.array([SUB_CODE.get(x or "", 0) for x in col[4]], dtype=np.int8)
    known = (i >= 0) & (j >= 0) & (c >= 0)
    superseded = np.unique(j[known & (c == _SUPERSEDES)])
    keep = known & (i != j)
    i, j, c, w, u = i[keep], j[keep], c[keep].astype(np.int8), w[keep], u[keep]
    src = np.concatenate([i, j])
    dst = np.concatenate([j, i])
    etype = np.concatenate([c, c])
    weight_a = np.concatenate([w, w])
    subc = np.concatenate([u, u])
    order = np.lexsort((subc, -weight_a, etype, dst, src))
    src, dst, etype, weight_a, subc = src[order], dst[order], etype[order], weight_a[order], subc[order]
    first = np.ones(src.size, dtype=bool)
    if src.size:
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (etype[1:] != etype[:-1])
    src, dst, etype, weight_a, subc = src[first], dst[first], etype[first], weight_a[first], subc[first]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return {
        "indptr": indptr, "nbr": dst.astype(np.int32), "etype": etype, "weight": weight_a, "sub": subc,
        "superseded": superseded.astype(np.int32),
    }


def _postings(kind: str, post: dict[str, tuple[list[int], list[int] | None]]) -> dict[str, np.ndarray]:
    keys = sorted(post, key=str.encode)
    ptr = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([len(post[k][0]) for k in keys], out=ptr[1:]) if keys else None
    nodes = np.fromiter((i for k in keys for i in post[k][0]), dtype=np.int32, count=int(ptr[-1]))
    out = {f"{kind}_keys": strings(keys), f"{kind}_ptr": ptr, f"{kind}_nodes": nodes}
    if kind == "term":
        out["term_tf"] = np.fromiter((f for k in keys for f in post[k][1] or ()), dtype=np.int32, count=int(ptr[-1]))
    return out
