"""The read side of the graph as recall needs it, memoised per store: insight attributes, adjacency lists
and the supersede targets, valid while `store.graph_version()` stays the same.

A recall touches thousands of nodes; asking SQLite for each of them on every query would dominate its cost.
The memo fills lazily (only what queries reached) and is dropped as a whole when any process changes
insights or edges, so it never serves a stale edge. A fresh process (the CLI) pays only for what one query
touches, level by level, in batched queries.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Sequence

from ..store import Filters, Store

__all__ = ["GraphView", "Meta", "graph_view"]

# id → (importance, created_at, category, source)
Meta = tuple[int, str, str, str]

_views: weakref.WeakKeyDictionary[Store, GraphView] = weakref.WeakKeyDictionary()


def graph_view(store: Store) -> GraphView:
    """The memo of `store` (one per store object, released with it)."""
    try:
        view = _views.get(store)
        if view is None:
            view = _views[store] = GraphView(store)
        return view
    except TypeError:  # a store that cannot be weakly referenced gets a memo per call
        return GraphView(store)


class GraphView:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._version: Hashable = object()
        self._meta: dict[str, Meta | None] = {}
        self._adj: dict[str, list[tuple[str, str, float]]] = {}
        self._superseded: set[str] | None = None
        self._vec_ids: list[str] = []
        self._vec_row: dict[str, int] = {}

    def sync(self) -> None:
        """Drop the memo if the store changed since it was filled. Call once at the start of a query."""
        version = self.store.graph_version()
        if version != self._version:
            self._version = version
            self._meta.clear()
            self._adj.clear()
            self._superseded = None

    # ------------------------------------------------------------------ nodes

    def meta(self, ids: Sequence[str]) -> dict[str, Meta]:
        """Attributes of the active insights among ids (inactive or unknown ids are left out)."""
        memo = self._meta
        missing = [i for i in ids if i not in memo]
        if missing:
            found = self.store.insight_meta(missing)
            for i in missing:
                memo[i] = found.get(i)
        out: dict[str, Meta] = {}
        for i in ids:
            m = memo[i]
            if m is not None:
                out[i] = m
        return out

    def in_scope(self, ids: Sequence[str], scope: Filters) -> set[str]:
        """The ids that are active and pass the exact category/source filters."""
        metas = self.meta(ids)
        return {i for i, m in metas.items() if _passes(m, scope)}

    # ------------------------------------------------------------------ edges

    def neighbours(self, ids: Sequence[str], scope: Filters | None = None) -> dict[str, list[tuple[str, str, float]]]:
        """Each id's (neighbour, edge type, weight), both directions, one entry per (neighbour, type) with the
        larger weight, sorted; neighbours outside `scope` are dropped (traversal cannot leave the scope)."""
        memo = self._adj
        missing = [i for i in ids if i not in memo]
        if missing:
            best: dict[str, dict[tuple[str, str], float]] = {i: {} for i in missing}
            for node, other, etype, weight in self.store.adjacency(missing):
                if node == other:
                    continue
                edges = best[node]
                key = (other, etype)
                w = float(weight if weight is not None else 0.0)
                if w > edges.get(key, float("-inf")):
                    edges[key] = w
            for node, edges in best.items():
                memo[node] = sorted((o, t, w) for (o, t), w in edges.items())
        if scope is None or (scope.category is None and scope.source is None):
            return {i: memo[i] for i in ids}
        others = sorted({o for i in ids for o, _, _ in memo[i]})
        keep = self.in_scope(others, scope)
        return {i: [e for e in memo[i] if e[0] in keep] for i in ids}

    def superseded(self) -> set[str]:
        if self._superseded is None:
            self._superseded = self.store.superseded_ids()
        return self._superseded

    # ------------------------------------------------------------------ vectors

    def vector_rows(self, ids: list[str]) -> dict[str, int]:
        """id → row of the vector matrix whose row ids are `ids` (rebuilt only when they change)."""
        if ids != self._vec_ids:
            self._vec_ids = ids
            self._vec_row = {id_: r for r, id_ in enumerate(ids)}
        return self._vec_row


def _passes(meta: Meta, scope: Filters) -> bool:
    return (scope.category is None or meta[2] == scope.category) and (scope.source is None or meta[3] == scope.source)
