"""The read side of the graph as recall needs it, memoised per store and kept as arrays: every insight a query
touched gets a dense index; its attributes (importance, created_at, category, source) and its adjacency list
(neighbour index, edge type code, weight — both directions, one entry per neighbour and type, sorted by
neighbour id then type) are fetched once, in batches, and reused by later queries.

Where the store keeps a graph index file (`index.py`, kept by `fold.py`), the memo starts from it: the file's nodes are the
first dense indices (in id order), their attributes, adjacency and postings are read from the mapping, and only
the insights the store's change log names since the file was written (the delta) are read from the store, as
above. The file is never believed for those.

The memo is valid while `store.graph_version()` stays the same. When the store's own commits changed the graph
since (a `remember` in this process), or its change log names what other commits touched, it forgets just those
insights (the new one, both ends of every edge written, every neighbour of a deleted one) and every posting list
(BM25 scores move with each insight added); when nothing can say, it starts over. So it never serves a stale
edge. A fresh process (the CLI) pays only for what one query touches, level by level; a long-lived one stops
reading the graph from SQLite at all once warm, and a write costs it the few rows the write changed.
"""

from __future__ import annotations

import math
import threading
import weakref
from bisect import bisect_left
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from typing import NamedTuple

import numpy as np

from ..entities import ACRONYM_STOPWORDS
from ..store import Filters, Store, TokenHit
from ..store.base import BM25_B, BM25_IDF_FLOOR, BM25_K1, capped
from .fold import index_file
from .index import SUB_CODE, TYPE_CODE, GraphIndex, ascii_fold, epoch

__all__ = ["Edges", "GraphView", "graph_view", "tally"]


class Edges(NamedTuple):
    """Edges of some nodes inside one set of flat arrays: node k's edges are positions start[k] to
    start[k] + degree[k] of nbr / etype / weight, sorted by neighbour id, then edge type code."""

    start: np.ndarray  # int64 per node
    degree: np.ndarray  # int64 per node
    nbr: np.ndarray  # int64 node index
    etype: np.ndarray  # int64 edge type code (index into φ; codes in type-name order)
    weight: np.ndarray  # float64
    sub: np.ndarray | None = None  # int64 temporal sub-type code (`index.SUB_TYPES`), where the graph has them


_views: weakref.WeakKeyDictionary[Store, GraphView] = weakref.WeakKeyDictionary()

# Counting into one bin per node beats sorting the postings once they hold this share of the nodes' span.
_TALLY_DENSITY = 1 / 8


def tally(postings: Sequence[np.ndarray], weights: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct nodes of the postings, sorted; how many of them hold each — or, with weights, the sum of
    each one's weights in posting order): `np.unique(..., return_counts=True)` and its weighted twin, the same
    numbers, in one pass over bins where the postings are long (a common token at 100k insights)."""
    values = np.concatenate(postings).astype(np.int64, copy=False)
    w = np.concatenate(weights) if weights is not None else None
    if values.size == 0:
        return values, (np.zeros(0, dtype=np.float64) if w is not None else np.zeros(0, dtype=np.int64))
    span = int(values.max()) + 1
    if values.size < span * _TALLY_DENSITY:
        nodes, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        return nodes, (np.bincount(inverse, weights=w, minlength=nodes.size) if w is not None else counts)
    counts = np.bincount(values, minlength=span)
    nodes = np.flatnonzero(counts)
    return nodes, (np.bincount(values, weights=w, minlength=span)[nodes] if w is not None else counts[nodes])


def graph_view(store: Store) -> GraphView:
    """The memo of `store` (one per store object, released with it)."""
    try:
        view = _views.get(store)
        if view is None:
            view = _views[store] = GraphView(store)
        return view
    except TypeError:  # a store that cannot be weakly referenced gets a fresh memo per query
        return GraphView(store)


class _Names:
    """node → text: the index file's column for its nodes (decoded on use), a list for the nodes after them."""

    __slots__ = ("_file", "_n", "extra")

    def __init__(self, file: np.ndarray | None) -> None:
        self._file = file
        self._n = 0 if file is None else int(file.shape[0])
        self.extra: list[str] = []

    def __len__(self) -> int:
        return self._n + len(self.extra)

    def __getitem__(self, i: int) -> str:
        if i < self._n:
            return self._file[i].decode()  # type: ignore[index]
        return self.extra[i - self._n]

    def __setitem__(self, i: int, value: str) -> None:
        if i >= self._n:  # a file node's text is the file's (ids and created_at never change)
            self.extra[i - self._n] = value

    def append(self, value: str) -> None:
        self.extra.append(value)

    def take(self, nodes: np.ndarray) -> np.ndarray:
        """The texts of `nodes` as one array of UTF-8 bytes, which sort as the texts do (the order of code points)."""
        infile = nodes < self._n
        extra = np.array([self.extra[i - self._n].encode() for i in nodes[~infile].tolist()], dtype="S")
        part = self._file[nodes[infile]] if self._file is not None else np.zeros(0, dtype="S1")
        out = np.zeros(nodes.size, dtype=f"S{max(1, part.itemsize, extra.itemsize)}")
        out[infile], out[~infile] = part, extra
        return out


def _ranks(values: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (0 the smallest), for a key of `np.lexsort` that it must negate."""
    return np.unique(values, return_inverse=True)[1]


def _simple_token(token: str) -> bool:
    """A token SQLite's FTS5 (unicode61) reads as one token, spelt the same: ASCII letters and digits. The
    index answers these; any other token is asked of the store, as FTS5 would split or fold it."""
    return token.isascii() and token.isalnum()


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
        self._reset(None)

    @property
    def store(self) -> Store:
        store = self._store()
        if store is None:
            raise RuntimeError("the store of this recall memo was closed")
        return store

    @property
    def index_file(self) -> GraphIndex | None:
        """The graph index file the memo starts from (None: everything comes from the store)."""
        return self._gx

    def _reset(self, gx: GraphIndex | None) -> None:
        self._gx = gx
        n0 = self._n0 = 0 if gx is None else gx.n
        self.ids = _Names(None if gx is None else gx.ids)  # index → id
        self.created = _Names(None if gx is None else gx.created)
        self.index: dict[str, int] = {}  # id → index, of the nodes after the file's
        # Nodes after the file's, ranked by id among themselves (`id_rank`), each with its insertion point
        # among the file's ids.
        self._sorted_ids: list[str] = []
        self._rank = np.zeros(0, dtype=np.int64)
        self._extra_p = np.zeros(0, dtype=np.int64)
        self._sorted_p: np.ndarray | None = None
        # Flat adjacency of nodes read from the store: node n's edges are [_start[n], _start[n] + _degree[n])
        # of _nbr/_etype/_weight/_sub (-1 = not loaded). The file's own nodes read theirs from its CSR.
        self._start = np.full(n0, -1, dtype=np.int64)
        self._degree = np.zeros(n0, dtype=np.int64)
        self._nbr = np.zeros(0, dtype=np.int64)
        self._etype = np.zeros(0, dtype=np.int64)
        self._weight = np.zeros(0, dtype=np.float64)
        self._sub = np.zeros(0, dtype=np.int64)
        self._edge_n = 0
        self._live = 0  # entries of _nbr.. in use by a loaded node (the rest: lists of forgotten nodes)
        # Attributes by index; `_known` marks rows fetched, `_active` those that exist and are not deleted.
        self._known = np.ones(n0, dtype=bool)
        self._active = np.ones(n0, dtype=bool)
        self._codes: dict[str, int] = {}
        if gx is None:
            self.importance = np.zeros(0, dtype=np.int64)
            self.created_key = np.zeros(0, dtype=np.int64)  # created_at as epoch seconds (orders like the text)
            self._cat = np.zeros(0, dtype=np.int64)
            self._src = np.zeros(0, dtype=np.int64)
        else:
            self.importance = gx.importance.astype(np.int64)
            self.created_key = gx.created_key.astype(np.int64)
            cat = np.array([self._code(c) for c in gx.cat_names] or [0], dtype=np.int64)
            src = np.array([self._code(c) for c in gx.src_names] or [0], dtype=np.int64)
            self._cat = cat[gx.cat]
            self._src = src[gx.src]
        # Postings of query tokens / entities / sources: sorted node indices of the active insights holding
        # them; of stemmed terms: (sorted nodes, each one's BM25 score for the term).
        self._tokens: dict[str, np.ndarray] = {}
        self._entities: dict[str, np.ndarray] = {}
        self._sources: dict[str, np.ndarray] = {}
        self._terms: dict[tuple[str, float | None], tuple[np.ndarray, np.ndarray]] = {}  # by (term, length cap)
        self._superseded: np.ndarray | None = None
        self._vecrow = np.full(n0, -2, dtype=np.int64)  # -2: not looked up yet
        # With a file: which of its nodes the delta overrides, and the delta itself (node → its keys; postings
        # by key; BM25 length), with the BM25 statistics of file and delta together.
        self._stale = np.zeros(n0, dtype=bool)
        self._delta: dict[int, tuple[list[str], list[str], str, list[str] | None]] = {}
        self._d_tok: dict[str, set[int]] = {}
        self._d_ent: dict[str, set[int]] = {}
        self._d_src: dict[str, set[int]] = {}
        self._d_term: dict[str, dict[int, int]] = {}
        self._n_tok: dict[int, int] = {}  # the delta's distinct-token counts
        self._n_docs = 0 if gx is None else gx.n_docs
        self._total_terms = 0 if gx is None else gx.total_terms

    def sync(self) -> None:
        """Bring the memo up to the store's graph version: forget what changed since (as this store's own
        commits or its change log name it), or start over when that is not known. Call once at the start of a
        query."""
        store = self.store
        version = store.graph_version()
        if version == self._version:
            return
        gx = index_file(store)
        if gx is not self._gx:
            self._attach(gx, version)
            return
        changed = store.graph_changes(self._version, version)
        if changed is None and gx is not None and isinstance(self._version, tuple):
            changed = store.graph_changes_since(self._version[0], version[0])  # type: ignore[index]
        # Forgetting many nodes costs more than refilling lazily, and forgotten lists stay in the flat arrays
        # until a reset: start over when either grows large.
        extra = len(self.ids) - self._n0
        if changed is None or len(changed) > max(256, extra // 4 if gx is None else 4096) or (
            self._edge_n > 2 * self._live + 65536
        ):
            self._attach(gx, version)
            return
        self._forget(changed)
        self._version = version

    def _attach(self, gx: GraphIndex | None, version: Hashable) -> None:
        """Start over from the index file gx (or from nothing), with the delta its store's log names."""
        self._reset(gx)
        if gx is not None:
            delta = self.store.graph_changes_since(gx.counter, version[0])  # type: ignore[index]
            if delta is None:  # the log cannot say what changed since the file: read everything from the store
                self._reset(None)
            elif delta:
                self._forget(delta)
        self._version = version

    def _forget(self, ids: set[str]) -> None:
        """Unload the attributes and adjacency of ids and every posting list; ask again which of ids are
        superseded (the others' `supersedes` edges and states did not change). With a file, ids join the
        delta: the file is no longer believed for them, and their rows are read from the store now."""
        nodes = self._lookup(sorted(ids))
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
        gx = self._gx
        if gx is not None:
            self._load_delta(gx, sorted(ids))
            self._superseded = None
        elif self._superseded is not None:
            kept = {self.ids[n] for n in self._superseded.tolist()} - ids
            self._superseded = self.intern(sorted(kept | self.store.superseded_ids(sorted(ids))))

    def _load_delta(self, gx: GraphIndex, ids: list[str]) -> None:
        """Read ids' rows from the store into the delta (their attributes, postings and BM25 length)."""
        nodes = self.intern(ids)
        fresh = nodes[nodes < self._n0]
        fresh = fresh[~self._stale[fresh]]
        if fresh.size:  # the file's rows of these stop counting
            self._stale[fresh] = True
            had = gx.dl[fresh]
            self._n_docs -= int((had >= 0).sum())
            self._total_terms -= int(had[had >= 0].sum())
        rows = {r.id: r for r in self.store.index_rows(ids)}
        self._known[nodes] = True
        for id_, n in zip(ids, nodes.tolist()):
            r = rows.get(id_)
            keys = None if r is None else (sorted(set(r.tokens)), sorted(set(r.entities)), ascii_fold(r.source),
                                           r.terms)
            old = self._delta.pop(n, None)
            if old is not None and old != keys:
                self._unpost(n, old)
            if r is None or keys is None:
                continue
            self._active[n] = True
            self.importance[n] = r.importance
            self.created[n] = r.created_at
            self.created_key[n] = epoch(r.created_at)
            self._cat[n] = self._code(r.category)
            self._src[n] = self._code(r.source)
            self._n_tok[n] = r.n_tokens
            self._delta[n] = keys
            if old == keys:  # a neighbour whose edges changed: its postings stand
                continue
            for memo, names in ((self._d_tok, keys[0]), (self._d_ent, keys[1]), (self._d_src, [keys[2]])):
                for k in names:
                    memo.setdefault(k, set()).add(n)
            if r.terms is not None:
                self._n_docs += 1
                self._total_terms += len(r.terms)
                for t in r.terms:
                    tf = self._d_term.setdefault(t, {})
                    tf[n] = tf.get(n, 0) + 1

    def _unpost(self, n: int, keys: tuple[list[str], list[str], str, list[str] | None]) -> None:
        for memo, names in ((self._d_tok, keys[0]), (self._d_ent, keys[1]), (self._d_src, [keys[2]])):
            for k in names:
                memo[k].discard(n)
        if keys[3] is not None:
            self._n_docs -= 1
            self._total_terms -= len(keys[3])
            for t in set(keys[3]):
                self._d_term[t].pop(n, None)

    # ------------------------------------------------------------------ nodes

    def size(self) -> int:
        return len(self.ids)

    def id_rank(self, nodes: np.ndarray) -> np.ndarray:
        """A number per node that orders nodes as their ids order (ties in the beam are broken by id): the
        node itself for the file's nodes when nothing was indexed after them, else its rank among all.

        The nodes after the file's are ranked incrementally: those indexed since the last call are merged
        into the sorted order (a bisect each, plus one vectorised shift of the old ranks), so a warm memo pays
        nothing.
        """
        n0 = self._n0
        n = len(self.ids) - n0
        done = len(self._sorted_ids)
        if done < n:
            extra = self.ids.extra
            fresh = sorted(range(done, n), key=extra.__getitem__)
            fresh_ids = [extra[i] for i in fresh]
            at = np.fromiter((bisect_left(self._sorted_ids, x) for x in fresh_ids), dtype=np.int64, count=len(fresh))
            rank = np.zeros(max(n, self._rank.shape[0]), dtype=np.int64)
            old = self._rank[:done]
            rank[:done] = old + np.searchsorted(at, old, side="right")
            rank[fresh] = at + np.arange(len(fresh))
            self._rank = rank
            merged = self._sorted_ids + fresh_ids
            merged.sort()  # two sorted runs: timsort merges them in one pass
            self._sorted_ids = merged
            self._sorted_p = None
        if n0 == 0:
            return self._rank[nodes]
        if n == 0:
            return nodes.astype(np.int64, copy=True)
        if self._sorted_p is None:
            self._sorted_p = np.sort(self._extra_p[:n])
        out = np.empty(nodes.shape[0], dtype=np.int64)
        infile = nodes < n0
        f = nodes[infile]
        out[infile] = f + np.searchsorted(self._sorted_p, f, side="right")
        e = nodes[~infile] - n0
        out[~infile] = self._extra_p[e] + self._rank[e]
        return out

    def _lookup(self, ids: Sequence[str]) -> np.ndarray:
        """The indices of those of ids the memo has (no new ones)."""
        out = [] if self._gx is None else [f for f in self._gx.node_of(list(ids)).tolist() if f >= 0]
        out += [i for i in (self.index.get(x) for x in ids) if i is not None]
        return np.asarray(out, dtype=np.int64)

    def intern(self, ids: Iterable[str]) -> np.ndarray:
        """Dense indices of ids (new ones are appended)."""
        ids = ids if isinstance(ids, list) else list(ids)
        gx = self._gx
        infile = gx.node_of(ids) if gx is not None and ids else None
        index = self.index
        out = []
        first_new = len(self.ids)
        fresh: list[str] = []
        for k, id_ in enumerate(ids):
            if infile is not None and infile[k] >= 0:
                out.append(int(infile[k]))
                continue
            i = index.get(id_)
            if i is None:
                i = index[id_] = len(self.ids)
                self.ids.append(id_)
                self.created.append("")
                fresh.append(id_)
            out.append(i)
        if fresh:
            self._grow()
            if gx is not None:
                at = first_new - self._n0
                self._extra_p[at : at + len(fresh)] = gx.insertion(fresh)
        return np.asarray(out, dtype=np.int64)

    def _grow(self) -> None:
        n = len(self.ids)
        have = self._known.shape[0]
        if n <= have:
            return
        cap = max(n, have + max(256, have - self._n0))  # the nodes after the file's grow by doubling
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
        vecrow = np.full(cap, -2, dtype=np.int64)
        vecrow[: self._vecrow.shape[0]] = self._vecrow
        self._vecrow = vecrow
        self._extra_p = _grown(self._extra_p, cap - self._n0)

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
                self.created_key[i] = epoch(m[1])
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
        nodes = self.intern(list(ids))
        mask = self.scope_mask(nodes, scope)
        return {id_ for id_, ok in zip(ids, mask.tolist()) if ok}

    def _merged(self, file_nodes: np.ndarray, delta: Iterable[int] | None) -> np.ndarray:
        """The file's posting without the nodes the delta overrides, with the delta's: sorted node indices."""
        keep = file_nodes[~self._stale[file_nodes]].astype(np.int64)
        if not delta:
            return keep
        return np.union1d(keep, np.fromiter(delta, dtype=np.int64))

    def postings(self, tokens: Sequence[str] = (), entities: Sequence[str] = ()) -> list[np.ndarray]:
        """For each query token, then each (lower-case) entity: the active insights holding it, as sorted node
        indices. Asked of the index file (and its delta) or of the store, once per token / entity and version."""
        gx = self._gx
        out = []
        for memo, keys, kind, delta, fetch in (
            (self._tokens, tokens, "tok", self._d_tok, lambda t: [h.id for h in self.store.token_hits([t])]),
            (self._entities, entities, "ent", self._d_ent, lambda e: list(self.store.entity_hits([e]))),
        ):
            for key in keys:
                hit = memo.get(key)
                if hit is None:
                    if gx is not None and (kind == "ent" or _simple_token(key)):
                        hit = self._merged(gx.posting(kind, key), delta.get(key))
                    else:
                        hit = np.unique(self.intern(fetch(key)))
                    memo[key] = hit
                out.append(hit)
        return out

    def known_entities(self, candidates: Sequence[str]) -> set[str]:
        """`Store.known_entities(candidates, casefold=True)`'s spellings as `query_entities` needs them. With
        the file, a candidate is known when its entity posting holds a node, and is given in lower case
        (the query's entities are lower-cased in the end), except where the spelling decides whether it is a
        stop word (the acronym list is case-sensitive): those few are asked of the store."""
        if self._gx is None:
            return set(self.store.known_entities(candidates, casefold=True).values())
        keys = list(dict.fromkeys(c.lower() for c in candidates))
        known = [k for k, p in zip(keys, self.postings((), keys)) if p.size]
        spelled = [k for k in known if k.upper() in ACRONYM_STOPWORDS]
        out = set(known).difference(spelled)
        if spelled:
            out.update(self.store.known_entities(spelled, casefold=True).values())
        return out

    def source_postings(self, names: Sequence[str]) -> list[np.ndarray]:
        """For each (lower-case) name: the active insights whose source it is, as sorted node indices."""
        missing = [n for n in names if n not in self._sources]
        gx = self._gx
        if missing and gx is not None:
            for n in missing:
                key = ascii_fold(n)
                self._sources[n] = self._merged(gx.posting("src", key), self._d_src.get(key))
        elif missing:
            found = self.store.source_hits(missing)
            for n in missing:
                self._sources[n] = np.unique(self.intern(found.get(n, [])))
        return [self._sources[n] for n in names]

    def term_postings(
        self, terms: Sequence[str], length_cap: float | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each stemmed term: (sorted nodes holding it, their BM25 score for it, lengths capped at
        `length_cap` average lengths), asked of the index file (scored here, with the statistics of file and
        delta together) or of the store, once per term, cap and version."""
        out = []
        for term in terms:
            hit = self._terms.get((term, length_cap))
            if hit is None:
                hit = self._terms[(term, length_cap)] = (
                    self._file_term(term, length_cap) if self._gx is not None else self._store_term(term, length_cap))
            out.append(hit)
        return out

    def _store_term(self, term: str, length_cap: float | None) -> tuple[np.ndarray, np.ndarray]:
        rows = self.store.term_scores(term, length_cap)
        nodes = self.intern([r[0] for r in rows])
        scores = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        order = np.argsort(nodes, kind="stable")
        return nodes[order], scores[order]

    def _file_term(self, term: str, length_cap: float | None) -> tuple[np.ndarray, np.ndarray]:
        """`Store.term_scores` from the file: FTS5's bm25() of a one-term query, the same double operations
        in the same order as `store.base.bm25`."""
        gx = self._gx
        assert gx is not None
        f_nodes, f_tf = gx.term_posting(term)
        keep = ~self._stale[f_nodes]
        f_nodes = f_nodes[keep].astype(np.int64)
        tf = f_tf[keep].astype(np.float64)
        length = gx.dl[f_nodes].astype(np.float64)
        d = self._d_term.get(term)
        if d:
            d_nodes = np.fromiter(d, dtype=np.int64, count=len(d))
            f_nodes = np.concatenate([f_nodes, d_nodes])
            tf = np.concatenate([tf, np.fromiter(d.values(), dtype=np.float64, count=len(d))])
            d_len = [len(self._delta[n][3] or ()) for n in d_nodes.tolist()]
            length = np.concatenate([length, np.asarray(d_len, dtype=np.float64)])
        order = np.argsort(f_nodes, kind="stable")
        nodes, tf, length = f_nodes[order], tf[order], length[order]
        if nodes.size == 0:
            return nodes, np.zeros(0, dtype=np.float64)
        n_docs, n_hits = self._n_docs, int(nodes.size)
        avgdl = float(self._total_terms) / float(n_docs)
        idf = math.log((n_docs - n_hits + 0.5) / (n_hits + 0.5))
        if idf <= 0.0:
            idf = BM25_IDF_FLOOR
        length = capped(length, avgdl, length_cap)
        return nodes, idf * ((tf * (BM25_K1 + 1.0)) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)))

    def token_tops(self, tokens: Collection[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]] | None:
        """`Store.token_tops` from the index file and its delta (what `remember` asks before it writes); None
        without a file, or for a token only the store can match (`_simple_token`)."""
        with self.lock:
            self.sync()
            toks = sorted(set(tokens))
            if self._gx is None or not all(map(_simple_token, toks)):
                return None
            if not toks:
                return [], []
            nodes, hits = tally(self.postings(toks))
            if nodes.size == 0:
                return [], []
            n0 = self._n0
            n_tok = np.zeros(nodes.size, dtype=np.int64)
            infile = nodes < n0
            infile[infile] = ~self._stale[nodes[infile]]
            n_tok[infile] = self._gx.n_tokens[nodes[infile]]
            n_tok[~infile] = [self._n_tok[n] for n in nodes[~infile].tolist()]
            importance = self.importance[nodes]
            # Only rows that can make the cut are ordered on the full key (created_at as text, then id); the ties
            # at the cut are often thousands of rows, so they are ordered by array, not one key call per row.
            by_cov = self._best(np.lexsort((-importance, -hits)), limit, hits, importance)
            ids = _ranks(self.ids.take(nodes[by_cov]))
            coverage = by_cov[np.lexsort((ids, -_ranks(self.created.take(nodes[by_cov])), -importance[by_cov],
                                          -hits[by_cov]))].tolist()
            ratio = hits / np.maximum(1, np.minimum(len(toks), n_tok))
            by_ratio = self._best(np.argsort(-ratio, kind="stable"), limit, ratio)
            overlap = by_ratio[np.lexsort((_ranks(self.ids.take(nodes[by_ratio])), -ratio[by_ratio]))].tolist()

            def rows(ks: list[int]) -> list[TokenHit]:
                at = np.asarray(ks, dtype=np.int64)
                ids, created = self.ids, self.created
                return [TokenHit(ids[n], h, t, i, created[n]) for n, h, t, i in zip(
                    nodes[at].tolist(), hits[at].tolist(), n_tok[at].tolist(), importance[at].tolist())]

            return rows(coverage[:limit]), rows(overlap[:limit])

    @staticmethod
    def _best(order: np.ndarray, limit: int, *keys: np.ndarray) -> np.ndarray:
        """The first `limit` rows of `order` (sorted by `keys`) and every later row tied with the last of them."""
        if order.size <= limit:
            return order
        tail, last = order[limit:], order[limit - 1]
        tied = np.ones(tail.size, dtype=bool)
        for key in keys:
            tied &= key[tail] == key[last]
        return order[: limit + (tail.size if tied.all() else int(np.argmin(tied)))]

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
            src = self.intern(list(cols[0]))
            dst = self.intern(list(cols[1]))
            etype = np.fromiter((TYPE_CODE.get(t, -1) for t in cols[2]), dtype=np.int64, count=len(rows))
            weight = np.fromiter((0.0 if w is None else w for w in cols[3]), dtype=np.float64, count=len(rows))
            sub = np.fromiter((SUB_CODE.get(t or "", 0) for t in cols[4]), dtype=np.int64, count=len(rows))
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
        """Flat adjacency of nodes (loaded on first use), for `beam_search_arrays`. With an index file, the
        edges of the file's nodes come from its CSR and the delta's from the store: both are gathered into
        arrays of their own, in the nodes' order."""
        gx = self._gx
        if gx is None:
            self._ensure_adj(nodes)
            return Edges(self._start[nodes], self._degree[nodes], self._nbr, self._etype, self._weight, self._sub)
        infile = nodes < self._n0
        infile[infile] = ~self._stale[nodes[infile]]
        if not infile.all():
            self._ensure_adj(nodes[~infile])
        f = nodes[infile]
        start = self._start[nodes]
        degree = self._degree[nodes]
        start[infile] = gx.indptr[f]
        degree[infile] = gx.indptr[f + 1] - start[infile]
        total = int(degree.sum())
        offsets = np.cumsum(degree) - degree
        pos = np.repeat(start - offsets, degree) + np.arange(total, dtype=np.int64)
        from_file = np.repeat(infile, degree)
        nbr = np.empty(total, dtype=np.int64)
        etype = np.empty(total, dtype=np.int64)
        weight = np.empty(total, dtype=np.float64)
        sub = np.empty(total, dtype=np.int64)
        for out, file_col, own in ((nbr, gx.nbr, self._nbr), (etype, gx.etype, self._etype),
                                   (weight, gx.weight, self._weight), (sub, gx.sub, self._sub)):
            if from_file.all():
                out[:] = file_col[pos]
            else:
                out[from_file] = file_col[pos[from_file]]
                out[~from_file] = own[pos[~from_file]]
        return Edges(offsets, degree, nbr, etype, weight, sub)

    def superseded(self) -> np.ndarray:
        """Node indices of every active `supersedes` target."""
        if self._superseded is None:
            gx = self._gx
            if gx is None:
                self._superseded = self.intern(sorted(self.store.superseded_ids()))
            else:
                f = gx.superseded.astype(np.int64)
                f = f[~self._stale[f]]
                delta = sorted(self.ids[n] for n in self._delta)
                d = self.intern(sorted(self.store.superseded_ids(delta))) if delta else np.zeros(0, np.int64)
                self._superseded = np.union1d(f, d)
        return self._superseded

    def preload(self, batch: int = 4000) -> None:
        """Fill the memo for every active insight now (a long-lived process that wants warm queries from the
        start; recall fills it lazily otherwise). With an index file only the delta is read."""
        with self.lock:
            self._preload(batch)

    def _preload(self, batch: int) -> None:
        self.sync()
        if self._gx is not None:
            nodes = np.fromiter(self._delta, dtype=np.int64, count=len(self._delta))
            self.id_rank(nodes[:0])
            for i in range(0, nodes.size, batch):
                self._ensure_adj(nodes[i : i + batch])
            return
        rows = list(self.store.iter_active())
        nodes = self.intern([r.id for r in rows])
        for n, r in zip(nodes.tolist(), rows):
            if not self._known[n]:
                self._known[n] = self._active[n] = True
                self.importance[n] = r.importance
                self.created[n] = r.created_at
                self.created_key[n] = epoch(r.created_at)
                self._cat[n] = self._code(str(r.category))
                self._src[n] = self._code(r.source)
        self.id_rank(nodes[:0])
        for i in range(0, nodes.size, batch):
            self._ensure_adj(nodes[i : i + batch])

    # ------------------------------------------------------------------ vectors

    def use_vectors(self, ids: list[str]) -> None:
        """Rows of the vector matrix are `ids`; node → row is looked up per node on first use, and forgotten
        only when they change (the store hands out the same list until its vectors change)."""
        if ids is not self._vec_ids and ids != self._vec_ids:
            self._vec_ids = ids
            self._vec_row = dict(zip(ids, range(len(ids))))
            self._vecrow[:] = -2

    def vector_index(self) -> dict[str, int]:
        """id → row of the current vector matrix."""
        return self._vec_row

    def vector_rows(self, nodes: np.ndarray) -> np.ndarray:
        """Row of each node in the current vector matrix, -1 without a vector."""
        rows = self._vecrow[nodes]
        unknown = rows == -2
        if unknown.any():
            get = self._vec_row.get
            todo = np.unique(nodes[unknown])
            self._vecrow[todo] = np.fromiter((get(self.ids[n], -1) for n in todo.tolist()), dtype=np.int64,
                                             count=todo.size)
            rows = self._vecrow[nodes]
        return rows


def _grown(arr: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros(cap, dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out
