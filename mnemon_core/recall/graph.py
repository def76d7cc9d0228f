"""The read side of the graph as recall needs it, memoised per store and kept as arrays: every insight a query
touched gets a dense index; its attributes (importance, created_at, category, source) and its adjacency list
(neighbour index, edge type code, weight — both directions, one entry per neighbour and type, sorted by
neighbour id then type) are fetched once, in batches, and reused by later queries.

The memo is valid while `store.graph_version()` stays the same. When the store's own commits changed the graph
since (a `remember` in this process), it forgets just the insights they touched (`store.graph_changes`: the new
one, both ends of every edge written, every neighbour of a deleted one) and every posting list (BM25 scores
move with each insight added); when another process wrote, it is dropped as a whole. So it never serves a stale
edge. A fresh process (the CLI) pays only for what one query touches, level by level; a long-lived one stops
reading the graph from SQLite at all once warm, and a write costs it the few rows the write changed.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Sequence
from datetime import datetime
from itertools import repeat

import numpy as np

from ..models import EdgeType
from ..store import Filters, Store
from .traverse import Edges

__all__ = ["EDGE_TYPES", "GraphView", "graph_view"]

# Type code = position; alphabetical, so code order is name order (the beam's tie order on one neighbour).
EDGE_TYPES: tuple[str, ...] = tuple(sorted(str(t) for t in EdgeType))
_TYPE_CODE = {t: i for i, t in enumerate(EDGE_TYPES)}
# Temporal sub-type code = position (0: not temporal, or a sub-type of its own). Where one pair has two temporal
# edges of equal weight (a conversation step that is also a backbone or proximity link), the lower code wins.
SUB_TYPES: tuple[str, ...] = ("", "conversation", "backbone", "proximity")
_SUB_CODE = {t: i for i, t in enumerate(SUB_TYPES)}

_views: weakref.WeakKeyDictionary[Store, GraphView] = weakref.WeakKeyDictionary()


def graph_view(store: Store) -> GraphView:
    """The memo of `store` (one per store object, released with it)."""
    try:
        view = _views.get(store)
        if view is None:
            view = _views[store] = GraphView(store)
        return view
    except TypeError:  # a store that cannot be weakly referenced gets a fresh memo per query
        return GraphView(store)


class GraphView:
    def __init__(self, store: Store) -> None:
        # Weak: the memo lives in a WeakKeyDictionary keyed by the store, so it must not keep the store alive.
        try:
            self._store: Callable[[], Store | None] = weakref.ref(store)
        except TypeError:  # not weak-referenceable: then this view is used for one query only
            self._store = lambda: store
        # One query at a time per memo: a Memory shared by threads must not grow the arrays under a reader.
        self.lock = threading.RLock()
        self._version: Hashable = object()
        self._vec_ids: list[str] = []
        self._vec_row: dict[str, int] = {}
        self._reset()

    @property
    def store(self) -> Store:
        store = self._store()
        if store is None:
            raise RuntimeError("the store of this recall memo was closed")
        return store

    def _reset(self) -> None:
        self.ids: list[str] = []  # index → id
        self._sorted_ids: list[str] = []  # the indexed ids in order (for id_rank)
        self._rank = np.zeros(0, dtype=np.int64)
        self.index: dict[str, int] = {}  # id → index
        # Flat adjacency: node n's edges are [_start[n], _start[n] + _degree[n]) of _nbr/_etype/_weight.
        self._start = np.zeros(0, dtype=np.int64)  # -1 = not loaded
        self._degree = np.zeros(0, dtype=np.int64)
        self._nbr = np.zeros(0, dtype=np.int64)
        self._etype = np.zeros(0, dtype=np.int64)
        self._weight = np.zeros(0, dtype=np.float64)
        self._sub = np.zeros(0, dtype=np.int64)
        self._edge_n = 0
        self._live = 0  # entries of _nbr.. in use by a loaded node (the rest: lists of forgotten nodes)
        # Attributes by index; `_known` marks rows fetched, `_active` those that exist and are not deleted.
        self._known = np.zeros(0, dtype=bool)
        self._active = np.zeros(0, dtype=bool)
        self.importance = np.zeros(0, dtype=np.int64)
        self.created: list[str] = []
        self.created_key = np.zeros(0, dtype=np.int64)  # created_at as epoch seconds (orders like the text)
        # Postings of query tokens / entities / sources: sorted node indices of the active insights holding
        # them; of stemmed terms: (sorted nodes, each one's BM25 score for the term).
        self._tokens: dict[str, np.ndarray] = {}
        self._entities: dict[str, np.ndarray] = {}
        self._sources: dict[str, np.ndarray] = {}
        self._terms: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._cat = np.zeros(0, dtype=np.int64)
        self._src = np.zeros(0, dtype=np.int64)
        self._codes: dict[str, int] = {}
        self._superseded: np.ndarray | None = None
        self._vecrow = np.zeros(0, dtype=np.int64)

    def sync(self) -> None:
        """Bring the memo up to the store's graph version: forget what this store's own commits touched, or
        drop everything when that is not known. Call once at the start of a query."""
        store = self.store
        version = store.graph_version()
        if version == self._version:
            return
        changed = store.graph_changes(self._version, version)
        # Forgetting many nodes costs more than refilling lazily, and forgotten lists stay in the flat arrays
        # until a reset: start over when either grows large.
        if changed is None or len(changed) > max(256, len(self.ids) // 4) or self._edge_n > 2 * self._live + 65536:
            self._reset()
        else:
            self._forget(changed)
        self._version = version

    def _forget(self, ids: set[str]) -> None:
        """Unload the attributes and adjacency of ids and every posting list; ask again which of ids are
        superseded (the others' `supersedes` edges and states did not change)."""
        index = self.index
        nodes = np.fromiter((index[i] for i in ids if i in index), dtype=np.int64)
        if nodes.size:
            loaded = nodes[self._start[nodes] >= 0]
            self._live -= int(self._degree[loaded].sum())
            self._known[nodes] = self._active[nodes] = False
            self._start[nodes] = -1
            self._degree[nodes] = 0
        self._tokens.clear()
        self._entities.clear()
        self._sources.clear()
        self._terms.clear()
        if self._superseded is not None:
            kept = {self.ids[n] for n in self._superseded.tolist()} - ids
            self._superseded = self.intern(sorted(kept | self.store.superseded_ids(sorted(ids))))

    # ------------------------------------------------------------------ nodes

    def size(self) -> int:
        return len(self.ids)

    def id_rank(self, nodes: np.ndarray) -> np.ndarray:
        """Each node's position in id order among all indexed nodes (ties in the beam are broken by id).

        Kept up to date incrementally: nodes indexed since the last call are merged into the sorted order
        (a bisect each, plus one vectorised shift of the old ranks), so a warm memo pays nothing.
        """
        n = len(self.ids)
        done = len(self._sorted_ids)
        if done < n:
            fresh = sorted(range(done, n), key=self.ids.__getitem__)
            fresh_ids = [self.ids[i] for i in fresh]
            at = np.fromiter((bisect_left(self._sorted_ids, x) for x in fresh_ids), dtype=np.int64, count=len(fresh))
            rank = np.zeros(max(n, self._rank.shape[0]), dtype=np.int64)
            old = self._rank[:done]
            rank[:done] = old + np.searchsorted(at, old, side="right")
            rank[fresh] = at + np.arange(len(fresh))
            self._rank = rank
            merged = self._sorted_ids + fresh_ids
            merged.sort()  # two sorted runs: timsort merges them in one pass
            self._sorted_ids = merged
        return self._rank[nodes]

    def intern(self, ids: Iterable[str]) -> np.ndarray:
        """Dense indices of ids (new ones are appended)."""
        index = self.index
        out = []
        first_new = len(self.ids)
        for id_ in ids:
            i = index.get(id_)
            if i is None:
                i = index[id_] = len(self.ids)
                self.ids.append(id_)
                self.created.append("")
            out.append(i)
        if len(self.ids) > first_new:
            self._grow()
            rows = self._vec_row
            for i in range(first_new, len(self.ids)):
                self._vecrow[i] = rows.get(self.ids[i], -1)
        return np.asarray(out, dtype=np.int64)

    def _grow(self) -> None:
        n = len(self.ids)
        have = self._known.shape[0]
        if n <= have:
            return
        cap = max(n, have * 2, 256)
        self._known = _grown(self._known, cap)
        self._active = _grown(self._active, cap)
        self.importance = _grown(self.importance, cap)
        self.created_key = _grown(self.created_key, cap)
        self._cat = _grown(self._cat, cap)
        self._src = _grown(self._src, cap)
        start = np.full(cap, -1, dtype=np.int64)
        start[: self._start.shape[0]] = self._start
        self._start = start
        self._degree = _grown(self._degree, cap)
        vecrow = np.full(cap, -1, dtype=np.int64)
        vecrow[: self._vecrow.shape[0]] = self._vecrow
        self._vecrow = vecrow

    def _code(self, value: str) -> int:
        c = self._codes.get(value)
        if c is None:
            c = self._codes[value] = len(self._codes)
        return c

    def ensure_meta(self, nodes: np.ndarray) -> None:
        """Fetch the attributes of nodes not seen yet (one query per 900)."""
        missing = nodes[~self._known[nodes]]
        if missing.size == 0:
            return
        missing = np.unique(missing)
        found = self.store.insight_meta([self.ids[i] for i in missing.tolist()])
        for i in missing.tolist():
            m = found.get(self.ids[i])
            if m is not None:
                self._active[i] = True
                self.importance[i] = m[0]
                self.created[i] = m[1]
                self.created_key[i] = _epoch(m[1])
                self._cat[i] = self._code(m[2])
                self._src[i] = self._code(m[3])
        self._known[missing] = True

    def active(self, nodes: np.ndarray) -> np.ndarray:
        self.ensure_meta(nodes)
        return self._active[nodes]

    def scope_mask(self, nodes: np.ndarray, scope: Filters) -> np.ndarray:
        """True for nodes that are active and pass the exact category/source filters."""
        self.ensure_meta(nodes)
        mask = self._active[nodes].copy()
        if scope.category is not None:
            mask &= self._cat[nodes] == self._codes.get(scope.category, -1)
        if scope.source is not None:
            mask &= self._src[nodes] == self._codes.get(scope.source, -1)
        return mask

    def in_scope(self, ids: Sequence[str], scope: Filters) -> set[str]:
        nodes = self.intern(ids)
        mask = self.scope_mask(nodes, scope)
        return {id_ for id_, ok in zip(ids, mask.tolist()) if ok}

    def postings(self, tokens: Sequence[str] = (), entities: Sequence[str] = ()) -> list[np.ndarray]:
        """For each query token, then each (lower-case) entity: the active insights holding it, as sorted node
        indices. Asked of the store once per token / entity and store version."""
        out = []
        for memo, keys, fetch in (
            (self._tokens, tokens, lambda t: [h.id for h in self.store.token_hits([t])]),
            (self._entities, entities, lambda e: list(self.store.entity_hits([e]))),
        ):
            for key in keys:
                hit = memo.get(key)
                if hit is None:
                    hit = memo[key] = np.unique(self.intern(fetch(key)))
                out.append(hit)
        return out

    def source_postings(self, names: Sequence[str]) -> list[np.ndarray]:
        """For each (lower-case) name: the active insights whose source it is, as sorted node indices."""
        missing = [n for n in names if n not in self._sources]
        if missing:
            found = self.store.source_hits(missing)
            for n in missing:
                self._sources[n] = np.unique(self.intern(found.get(n, [])))
        return [self._sources[n] for n in names]

    def term_postings(self, terms: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each stemmed term: (sorted nodes holding it, their BM25 score for it), asked of the store once
        per term and store version."""
        out = []
        for term in terms:
            hit = self._terms.get(term)
            if hit is None:
                rows = self.store.term_scores(term)
                nodes = self.intern([r[0] for r in rows])
                scores = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
                order = np.argsort(nodes, kind="stable")
                hit = self._terms[term] = (nodes[order], scores[order])
            out.append(hit)
        return out

    # ------------------------------------------------------------------ edges

    def _ensure_adj(self, nodes: np.ndarray) -> None:
        """Load the adjacency lists of nodes not loaded yet (one query per 400 nodes) into the flat arrays:
        per node, one edge per (neighbour, type) with the largest weight, sorted by neighbour id then type."""
        missing = np.unique(nodes[self._start[nodes] < 0])
        if missing.size == 0:
            return
        rows = self.store.adjacency([self.ids[n] for n in missing.tolist()])
        if rows:
            cols = list(zip(*rows))
            src = self.intern(cols[0])
            dst = self.intern(cols[1])
            etype = np.fromiter((_TYPE_CODE.get(t, -1) for t in cols[2]), dtype=np.int64, count=len(rows))
            weight = np.fromiter((0.0 if w is None else w for w in cols[3]), dtype=np.float64, count=len(rows))
            sub = np.fromiter((_SUB_CODE.get(t or "", 0) for t in cols[4]), dtype=np.int64, count=len(rows))
            ok = (etype >= 0) & (src != dst)
            src, dst, etype, weight, sub = src[ok], dst[ok], etype[ok], weight[ok], sub[ok]
            order = np.lexsort((sub, -weight, etype, self.id_rank(dst), src))
            src, dst, etype, weight, sub = src[order], dst[order], etype[order], weight[order], sub[order]
            first = np.ones(src.size, dtype=bool)  # the heaviest of each (node, neighbour, type)
            first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (etype[1:] != etype[:-1])
            src, dst, etype, weight, sub = src[first], dst[first], etype[first], weight[first], sub[first]
        else:
            src = dst = etype = sub = np.zeros(0, dtype=np.int64)
            weight = np.zeros(0, dtype=np.float64)
        lo = self._edge_n
        self._reserve(src.size)
        hi = lo + src.size
        self._nbr[lo:hi], self._etype[lo:hi], self._weight[lo:hi], self._sub[lo:hi] = dst, etype, weight, sub
        self._edge_n = hi
        self._live += src.size
        begin = np.searchsorted(src, missing)
        self._start[missing] = lo + begin
        self._degree[missing] = np.searchsorted(src, missing, side="right") - begin

    def _reserve(self, extra: int) -> None:
        need = self._edge_n + extra
        if need > self._nbr.shape[0]:
            cap = max(need, self._nbr.shape[0] * 2, 4096)
            self._nbr = _grown(self._nbr, cap)
            self._etype = _grown(self._etype, cap)
            self._weight = _grown(self._weight, cap)
            self._sub = _grown(self._sub, cap)

    def edges(self, nodes: np.ndarray) -> Edges:
        """Flat adjacency of nodes (loaded on first use), for `beam_search_arrays`."""
        self._ensure_adj(nodes)
        return Edges(self._start[nodes], self._degree[nodes], self._nbr, self._etype, self._weight, self._sub)

    def superseded(self) -> np.ndarray:
        """Node indices of every active `supersedes` target."""
        if self._superseded is None:
            self._superseded = self.intern(sorted(self.store.superseded_ids()))
        return self._superseded

    def preload(self, batch: int = 4000) -> None:
        """Fill the memo for every active insight now (a long-lived process that wants warm queries from the
        start; recall fills it lazily otherwise)."""
        with self.lock:
            self._preload(batch)

    def _preload(self, batch: int) -> None:
        self.sync()
        rows = list(self.store.iter_active())
        nodes = self.intern([r.id for r in rows])
        for n, r in zip(nodes.tolist(), rows):
            if not self._known[n]:
                self._known[n] = self._active[n] = True
                self.importance[n] = r.importance
                self.created[n] = r.created_at
                self.created_key[n] = _epoch(r.created_at)
                self._cat[n] = self._code(str(r.category))
                self._src[n] = self._code(r.source)
        self.id_rank(nodes[:0])
        for i in range(0, nodes.size, batch):
            self._ensure_adj(nodes[i : i + batch])

    # ------------------------------------------------------------------ vectors

    def use_vectors(self, ids: list[str]) -> None:
        """Rows of the vector matrix are `ids`; node → row mapping is rebuilt only when they change (the store
        hands out the same list until its vectors change)."""
        if ids is not self._vec_ids and ids != self._vec_ids:
            self._vec_ids = ids
            self._vec_row = rows = dict(zip(ids, range(len(ids))))
            self._vecrow[:] = -1
            n = len(self.ids)
            self._vecrow[:n] = np.fromiter(map(rows.get, self.ids, repeat(-1)), dtype=np.int64, count=n)

    def vector_index(self) -> dict[str, int]:
        """id → row of the current vector matrix."""
        return self._vec_row

    def vector_rows(self, nodes: np.ndarray) -> np.ndarray:
        """Row of each node in the current vector matrix, -1 without a vector."""
        return self._vecrow[nodes]


def _epoch(created_at: str) -> int:
    """RFC 3339 → epoch seconds (0 if unparsable), for ordering "newer first" with integers."""
    try:
        return int(datetime.fromisoformat(created_at).timestamp())
    except ValueError:
        return 0


def _grown(arr: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros(cap, dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out
