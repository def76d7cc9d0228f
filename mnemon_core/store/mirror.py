"""A store's rows as the process keeps them beside a database that has no transaction to read inside (Redis,
FalkorDB).

Redis runs a `MULTI`/`EXEC` block whole or not at all, but nothing inside it can read what the block wrote; a
`remember` reads between its writes (the graph builders read the edges and insights it just wrote). So the
process keeps a `Mirror` of the store: every row (insights with their tokens and vector, edges with adjacency
by end, session tails) and the indexes recall ranks with (`store/postings.py`). A write transaction changes the
mirror at once (its reads see it), journals what each change replaced (a savepoint rolls back by undoing the
journal to its mark) and marks what it touched; the backend writes the final state of what was marked in one
atomic block at commit (`store/mirrored.py`, `MirroredStore._commit`). What other processes committed comes in
through the backend's change log (`Mirror.replace_insight` of the insights a commit named) before the next read.

Every read of the `Store` protocol is answered here, so a backend on a mirror is its persistence only: the
layout of its keys, the atomic write of a commit, reading rows back, and the change log.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..models import Edge, EdgeType, Insight
from ..text import document, terms
from .base import NO_FILTERS, DumpRow, Filters, TokenHit
from .postings import Indexed, Postings, in_scope
from .vectors import VectorCache, decode, encode, scan

EdgeKey = tuple[str, str, str]  # (source id, target id, edge type)
SUPERSEDES = str(EdgeType.supersedes)


@dataclass(frozen=True)
class Row:
    """One insight as the mirror holds it."""

    insight: Insight
    seq: int  # insertion order
    tokens: frozenset[str]
    stems: tuple[str, ...]
    model: str | None = None  # the vector's model
    vector: bytes | None = None  # little-endian float32 (`vectors.encode`)

    @property
    def active(self) -> bool:
        return self.insight.deleted_at is None

    def indexed(self) -> Indexed:
        ins = self.insight
        return Indexed(seq=self.seq, importance=ins.importance, created_at=ins.created_at,
                       category=str(ins.category) or "general", source=ins.source or "", tokens=self.tokens,
                       stems=self.stems, entities=tuple(dict.fromkeys(ins.entities)), content=ins.content)


def row_of(ins: Insight, seq: int, tokens: Iterable[str], model: str | None = None,
           vector: bytes | None = None) -> Row:
    return Row(ins, seq, frozenset(tokens), tuple(terms(document(ins.content, ins.tags, ins.entities))), model,
               vector)


def copy(ins: Insight) -> Insight:
    """A caller's own copy (a model is mutable; the mirror's must not change under it)."""
    return ins.model_copy(update={"tags": list(ins.tags), "entities": list(ins.entities)})


class Mirror:
    """The rows of one store and the indexes over them, with an undo journal and the set of what changed."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}  # by insertion order
        self.postings = Postings()
        self.edges: dict[EdgeKey, Edge] = {}
        self.by_end: dict[str, set[EdgeKey]] = {}  # insight id → keys of the edges touching it
        self.superseded: Counter[str] = Counter()  # target → its `supersedes` edges (a write asks, every time)
        self.tails: dict[str, str] = {}
        self.seq = 0  # the last insertion number given
        self._vectors: dict[tuple[str, int], VectorCache] = {}
        self.undo: list[tuple[str, Any, Any]] = []  # (kind, key, what it replaced)
        self.changed_rows: set[str] = set()
        self.changed_edges: set[EdgeKey] = set()
        self.changed_tails: set[str] = set()

    # ------------------------------------------------------------------ changes

    def put_row(self, row: Row) -> None:
        id_ = row.insight.id
        old = self.rows.get(id_)
        self.undo.append(("row", id_, old))
        self.changed_rows.add(id_)
        self._set_row(id_, row)

    def _set_row(self, id_: str, row: Row | None) -> None:
        old = self.rows.get(id_)
        if old is not None and old.active:
            self.postings.remove(id_)
        if row is None:
            self.rows.pop(id_, None)
        else:
            self.rows[id_] = row
            if row.active:
                self.postings.add(id_, row.indexed())
        if (old is not None and old.vector is not None) or (row is not None and row.vector is not None):
            for cache in self._vectors.values():
                blob = row.vector if row is not None and row.active else None
                cache.apply([(id_, blob, row.model if row is not None else None, blob is not None)],
                            cache.high_water)

    def put_edge(self, key: EdgeKey, edge: Edge | None) -> None:
        self.undo.append(("edge", key, self.edges.get(key)))
        self.changed_edges.add(key)
        self._set_edge(key, edge)

    def _set_edge(self, key: EdgeKey, edge: Edge | None) -> None:
        supersedes = key[2] == SUPERSEDES
        if edge is None:
            if self.edges.pop(key, None) is not None:
                if supersedes:
                    self.superseded[key[1]] -= 1
                    if not self.superseded[key[1]]:
                        del self.superseded[key[1]]
                for end in key[:2]:
                    keys = self.by_end.get(end)
                    if keys is not None:
                        keys.discard(key)
                        if not keys:
                            del self.by_end[end]
        else:
            if supersedes and key not in self.edges:
                self.superseded[key[1]] += 1
            self.edges[key] = edge
            for end in key[:2]:
                self.by_end.setdefault(end, set()).add(key)

    def put_tail(self, session: str, insight_id: str | None) -> None:
        self.undo.append(("tail", session, self.tails.get(session)))
        self.changed_tails.add(session)
        self._set_tail(session, insight_id)

    def _set_tail(self, session: str, insight_id: str | None) -> None:
        if insight_id is None:
            self.tails.pop(session, None)
        else:
            self.tails[session] = insight_id

    def set_seq(self, seq: int) -> None:
        self.undo.append(("seq", None, self.seq))
        self.seq = seq

    def mark(self) -> int:
        return len(self.undo)

    def rollback(self, mark: int) -> None:
        """Undo every change after `mark` (what they touched stays marked: its state now is written again)."""
        while len(self.undo) > mark:
            kind, key, old = self.undo.pop()
            if kind == "row":
                self._set_row(key, old)
            elif kind == "edge":
                self._set_edge(key, old)
            elif kind == "tail":
                self._set_tail(key, old)
            elif kind == "seq":
                self.seq = old

    def vectors_moved(self) -> set[str]:
        """The changed insights whose indexed vector may differ from the stored one (its bytes, model, or whether it
        is indexed at all: an inactive insight's is not), judged against the row the transaction first replaced; one
        whose first change a savepoint undid counts as moved. A recall's access bump moves none."""
        before: dict[str, Row | None] = {}
        for kind, key, old in self.undo:
            if kind == "row" and key not in before:
                before[key] = old
        return {i for i in self.changed_rows if i not in before or _indexed(before[i]) != _indexed(self.rows.get(i))}

    def settle(self) -> tuple[set[str], set[EdgeKey], set[str]]:
        """The transaction ended: what it changed (rows, edges, tails), forgotten here."""
        out = self.changed_rows, self.changed_edges, self.changed_tails
        self.undo = []
        self.changed_rows, self.changed_edges, self.changed_tails = set(), set(), set()
        return out

    def replace_insight(self, id_: str, row: Row | None, edges: Iterable[Edge]) -> None:
        """Another process's commit: the insight's row and every edge touching it as stored now (not journaled)."""
        self._set_row(id_, row)
        for key in list(self.by_end.get(id_, ())):
            self._set_edge(key, None)
        for e in edges:
            self._set_edge((e.source_id, e.target_id, str(e.edge_type)), e)
        if row is not None:
            self.seq = max(self.seq, row.seq)

    # ------------------------------------------------------------------ insights

    def active(self, id_: str) -> Row | None:
        row = self.rows.get(id_)
        return row if row is not None and row.active else None

    def get_insight(self, id: str, *, include_deleted: bool = False) -> Insight | None:
        row = self.rows.get(id)
        if row is None or (not row.active and not include_deleted):
            return None
        return copy(row.insight)

    def get_insights(self, ids: Sequence[str]) -> dict[str, Insight]:
        return {i: copy(r.insight) for i in dict.fromkeys(ids) if (r := self.active(i)) is not None}

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        return sorted(i for i, r in self.rows.items() if r.active and i.startswith(prefix))[:limit]

    def texts(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        return {i: (r.insight.content, str(r.insight.category)) for i in dict.fromkeys(ids)
                if (r := self.active(i)) is not None}

    def find_by_content(self, content: str) -> str | None:
        return self.postings.by_content(content)

    def count_active(self) -> int:
        return len(self.postings.rows)

    def count_deleted(self) -> int:
        return len(self.rows) - len(self.postings.rows)

    def _in_scope(self, filters: Filters) -> list[Row]:
        return [r for i, x in self.postings.rows.items() if in_scope(x, filters) and (r := self.rows[i])]

    def iter_active(self, filters: Filters = NO_FILTERS) -> Iterator[Insight]:
        for r in sorted(self._in_scope(filters), key=lambda r: r.seq):
            yield copy(r.insight)

    def _latest(self, filters: Filters, limit: int, source: str | None = None, since: str | None = None,
                exclude: str | None = None) -> list[Row]:
        """The newest `limit` in scope (a heap, not a sort of the whole store: a write asks several times)."""
        rows = (r for r in self._in_scope(filters) if (source is None or r.insight.source == source)
                and (since is None or r.insight.created_at >= since) and r.insight.id != exclude)
        return heapq.nlargest(limit, rows, key=lambda r: (r.insight.created_at, r.seq))

    def latest(
        self, *, source: str | None = None, since: str | None = None, exclude: str | None = None,
        limit: int, filters: Filters = NO_FILTERS,
    ) -> list[Insight]:
        return [copy(r.insight) for r in self._latest(filters, limit, source, since, exclude)]

    def latest_ids(self, *, limit: int, filters: Filters = NO_FILTERS) -> list[str]:
        return [r.insight.id for r in self._latest(filters, limit)]

    def prune_candidates(
        self, *, exclude: str | None, stored_before: str | None, limit: int, immune_importance: int,
        immune_access: int,
    ) -> list[Insight]:
        rows = [r.insight for r in self._in_scope(NO_FILTERS)
                if r.insight.importance < immune_importance and r.insight.access_count < immune_access
                and r.insight.id != exclude
                and (stored_before is None or (r.insight.stored_at or r.insight.created_at) <= stored_before)]
        rows.sort(key=lambda i: (i.effective_importance, i.created_at, i.id))
        return [copy(i) for i in rows[:limit]]

    def like_search(self, query: str, filters: Filters, limit: int) -> list[Insight]:
        return [copy(self.rows[i].insight) for i in self.postings.like(query, filters, limit)]

    def unembedded(self, model: str, limit: int) -> list[Insight]:
        rows = [r.insight for r in self._in_scope(NO_FILTERS) if r.model != model or r.vector is None]
        rows.sort(key=lambda i: i.id)
        rows.sort(key=lambda i: i.created_at, reverse=True)
        rows.sort(key=lambda i: -i.importance)
        return [copy(i) for i in rows[:limit]]

    # ------------------------------------------------------------------ search

    def token_hits(
        self, tokens: Collection[str], *, filters: Filters = NO_FILTERS, exclude: str | None = None,
        limit: int | None = None, order: str = "coverage",
    ) -> list[TokenHit]:
        return self.postings.token_hits(tokens, filters=filters, exclude=exclude, limit=limit, order=order)

    def token_tops(self, tokens: Collection[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]]:
        return self.postings.token_tops(tokens, limit)

    def insight_tokens(self, ids: Sequence[str]) -> dict[str, frozenset[str]]:
        return {i: self.rows[i].tokens for i in dict.fromkeys(ids) if i in self.rows}

    def term_scores(self, term: str, length_cap: float | None = None) -> list[tuple[str, float]]:
        return self.postings.term_scores(term, length_cap)

    def source_hits(self, names: Collection[str]) -> dict[str, list[str]]:
        return self.postings.source_hits(names)

    def session_tail(self, session: str) -> str | None:
        tail = self.tails.get(session)
        return tail if tail is not None and self.active(tail) is not None else None

    def with_entity(self, entity: str, *, exclude: str, limit: int) -> list[str]:
        return self.postings.with_entity(entity, exclude=exclude, limit=limit)

    def known_entities(self, candidates: Collection[str], *, casefold: bool = False) -> dict[str, str]:
        return self.postings.known_entities(candidates, casefold=casefold)

    def entity_hits(self, entities_lower: Collection[str], filters: Filters = NO_FILTERS) -> dict[str, int]:
        return self.postings.entity_hits(entities_lower, filters)

    def top_entities(self, limit: int) -> list[tuple[str, int]]:
        return self.postings.top_entities(limit)

    def count_by_category(self) -> dict[str, int]:
        return dict(sorted(Counter(x.category for x in self.postings.rows.values()).items()))

    # ------------------------------------------------------------------ vectors

    def get_vector(self, id: str, model: str) -> np.ndarray | None:
        row = self.rows.get(id)
        if row is None or row.vector is None or row.model != model:
            return None
        return decode(row.vector).copy()

    def vector_matrix(self, model: str, dim: int) -> tuple[list[str], np.ndarray]:
        cache = self._vectors.get((model, dim))
        if cache is None:
            cache = self._vectors[(model, dim)] = VectorCache(model, dim)
            cache.apply([(i, r.vector, r.model, True) for i, r in self.rows.items()
                         if r.active and r.vector is not None and r.model == model], 0)
        return cache.snapshot()

    def nearest(self, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        return scan(self, model, vector, k)

    def vector_counts(self) -> dict[str, int]:
        counts = Counter(f"{r.model}:{len(r.vector) // 4}" for r in self.rows.values()
                         if r.active and r.vector is not None)
        return dict(sorted(counts.items()))

    # ------------------------------------------------------------------ edges

    def edges_of(self, ids: Sequence[str]) -> list[Edge]:
        keys = {k for i in dict.fromkeys(ids) for k in self.by_end.get(i, ())}
        return [self.edges[k] for k in sorted(keys)]

    def edges_among(self, ids: Sequence[str], edge_type: str | None = None) -> list[Edge]:
        among = set(ids)
        keys = {k for i in among for k in self.by_end.get(i, ()) if k[0] in among and k[1] in among
                and (edge_type is None or k[2] == str(edge_type))}
        return [self.edges[k] for k in sorted(keys)]

    def existing_edges(self, keys: Collection[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        return {(s, t, str(y)) for s, t, y in keys if (s, t, str(y)) in self.edges}

    def edge_counts(self, ids: Sequence[str]) -> dict[str, int]:
        return {i: len(self.by_end.get(i, ())) for i in ids}

    def count_edges(self) -> int:
        return len(self.edges)

    def iter_edges(self) -> Iterator[Edge]:
        for k in sorted(self.edges):
            yield self.edges[k]

    def insight_meta(self, ids: Sequence[str]) -> dict[str, tuple[int, str, str, str]]:
        out = {}
        for i in dict.fromkeys(ids):
            x = self.postings.rows.get(i)
            if x is not None:
                out[i] = (x.importance, x.created_at, x.category or "general", x.source or "")
        return out

    def adjacency(self, ids: Sequence[str]) -> list[tuple[str, str, str, float, str | None]]:
        out = []
        active = self.postings.rows
        for i in dict.fromkeys(ids):
            for key in self.by_end.get(i, ()):
                other = key[1] if key[0] == i else key[0]
                if other in active:
                    e = self.edges[key]
                    sub = e.metadata.get("sub_type") if key[2] == "temporal" else None
                    out.append((i, other, key[2], e.weight, sub))
        return out

    def superseded_ids(self, among: Sequence[str] | None = None) -> set[str]:
        targets = {t for t in self.superseded if t in self.postings.rows}
        return targets if among is None else targets & set(among)

    # ------------------------------------------------------------------ copy (`mnemon migrate`)

    def dump_insights(self) -> Iterator[DumpRow]:
        for r in sorted(self.rows.values(), key=lambda r: r.seq):
            vec = None if r.vector is None else decode(r.vector).copy()
            yield DumpRow(Insight.model_construct(**dict(r.insight)), r.tokens, vec,
                          r.model if vec is not None else None)

    def dump_tails(self) -> Iterator[tuple[str, str]]:
        for session in sorted(self.tails):
            yield session, self.tails[session]


def _indexed(row: Row | None) -> tuple[str | None, bytes | None]:
    """What a vector index holds of a row: its model and vector while it is active."""
    return (row.model, row.vector) if row is not None and row.active else (None, None)


def with_vector(row: Row, vector: np.ndarray | None, model: str | None) -> Row:
    return replace(row, vector=None if vector is None else encode(vector), model=model if vector is not None else None)
