"""The `Store` protocol: everything the pipelines need from a database, and nothing above `store/` writes SQL.

Rows come back as models (`Insight`, `Edge`, `OplogEntry`) or as plain tuples where a hot path needs speed
(`TokenHit`). Times are RFC 3339 UTC strings; they sort as text.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol

import numpy as np

from ..models import Edge, Insight, OplogEntry


class TokenHit(NamedTuple):
    """An active insight sharing `hits` distinct tokens with a query; `n_tokens` = its own distinct tokens."""

    id: str
    hits: int
    n_tokens: int
    importance: int
    created_at: str


class Filters(NamedTuple):
    """Exact-match scope applied before every recall signal (`--cat`, `--source`)."""

    category: str | None = None
    source: str | None = None


NO_FILTERS = Filters()

# SQLite FTS5's bm25() constants (ext/fts5/fts5_aux.c).
BM25_K1 = 1.2
BM25_B = 0.75
BM25_IDF_FLOOR = 1e-6  # the idf of a term in more than half of the rows, where the formula goes negative


def bm25(tf: int, length: int, n_docs: int, n_hits: int, total_terms: int) -> float:
    """One term's BM25 in one insight exactly as FTS5's `bm25()` computes it, sign flipped (higher is better):
    the same double operations in the same order, so the result is bit-identical to SQLite's. `tf`: the term's
    occurrences in the insight, `length`: its term count, `n_docs` / `total_terms`: active insights and their
    terms, `n_hits`: active insights holding the term. The Postgres store ranks with it; a test holds it to
    SQLite's."""
    avgdl = float(total_terms) / float(n_docs)
    idf = math.log((n_docs - n_hits + 0.5) / (n_hits + 0.5))
    if idf <= 0.0:
        idf = BM25_IDF_FLOOR
    return idf * ((tf * (BM25_K1 + 1.0)) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)))


def rank_by_coverage(hits: list[TokenHit]) -> list[TokenHit]:
    """Most query tokens first; ties → higher importance, newer, then id (deterministic)."""
    out = sorted(hits, key=lambda h: h.id)
    out.sort(key=lambda h: h.created_at, reverse=True)
    out.sort(key=lambda h: (-h.hits, -h.importance))
    return out


class Store(Protocol):
    location: str  # a path or URL, for `status` and messages

    # -- lifecycle
    def transaction(self) -> AbstractContextManager[None]: ...
    def close(self) -> None: ...
    def size_bytes(self) -> int: ...

    # -- insights
    def insert_insight(self, ins: Insight, tokens: Collection[str]) -> None: ...
    def get_insight(self, id: str, *, include_deleted: bool = False) -> Insight | None: ...
    def get_insights(self, ids: Sequence[str]) -> dict[str, Insight]: ...
    def find_by_content(self, content: str) -> str | None: ...
    def count_active(self) -> int: ...
    def count_deleted(self) -> int: ...
    def iter_active(self, filters: Filters = NO_FILTERS) -> Iterator[Insight]: ...
    def latest(
        self, *, source: str | None = None, since: str | None = None, exclude: str | None = None,
        limit: int, filters: Filters = NO_FILTERS,
    ) -> list[Insight]: ...
    def soft_delete(self, ids: Sequence[str], now: str) -> None: ...
    def touch(self, ids: Sequence[str], now: str, inc: int = 1) -> None: ...
    def set_effective_importance(self, values: dict[str, float]) -> None: ...
    def prune_candidates(self, *, exclude: str | None, stored_before: str | None, limit: int) -> list[Insight]: ...
    def like_search(self, query: str, filters: Filters, limit: int) -> list[Insight]: ...

    # -- tokens and entities (keyword / entity signals)
    def token_hits(
        self, tokens: Collection[str], *, filters: Filters = NO_FILTERS, exclude: str | None = None,
        limit: int | None = None, order: str = "coverage",
    ) -> list[TokenHit]:
        """Active insights holding ≥ 1 of the tokens. With `limit`, only the best: in `rank_by_coverage` order,
        or with `order="overlap"` by hits / min(|tokens|, n_tokens) desc, then id (the token fallback for
        semantic candidates)."""
        ...
    def token_tops(self, tokens: Collection[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]]:
        """`token_hits(tokens, limit=limit)` and `token_hits(tokens, limit=limit, order="overlap")` over all
        active insights, from one pass over the postings (what `remember` needs before it writes)."""
        ...
    def insight_tokens(self, ids: Sequence[str]) -> dict[str, frozenset[str]]: ...
    def term_scores(self, term: str) -> list[tuple[str, float]]:
        """(id, BM25 score of a one-term query) for every active insight holding the stemmed `term`
        (`text.terms` of its content, tags and entities): SQLite FTS5's `bm25()` — k1 = 1.2, b = 0.75,
        idf = ln((N − n + 0.5) / (n + 0.5)) floored at 1e-6, N and the average length over active insights —
        sign flipped so that higher is better. A query's BM25 is the sum of its distinct terms' scores."""
        ...
    def source_hits(self, names: Collection[str]) -> dict[str, list[str]]:
        """For each name that is the `source` of an active insight (ASCII case-insensitive): those insights."""
        ...
    def session_tail(self, session: str) -> str | None:
        """The active insight remembered last in `session`, if any (conversation edges)."""
        ...
    def set_session_tail(self, session: str, insight_id: str) -> None: ...
    def with_entity(self, entity: str, *, exclude: str, limit: int) -> list[str]: ...
    def known_entities(self, candidates: Collection[str], *, casefold: bool = False) -> dict[str, str]: ...
    def entity_hits(self, entities_lower: Collection[str], filters: Filters = NO_FILTERS) -> dict[str, int]: ...
    def top_entities(self, limit: int) -> list[tuple[str, int]]: ...
    def count_by_category(self) -> dict[str, int]: ...

    # -- vectors
    def set_vector(self, id: str, vector: np.ndarray, model: str) -> None: ...
    def get_vector(self, id: str, model: str) -> np.ndarray | None: ...
    def vector_matrix(self, model: str, dim: int) -> tuple[list[str], np.ndarray]: ...
    def maintain_vector_index(self, model: str, dim: int) -> int:
        """Bring an on-disk ANN index up to date after bulk vector writes (`embed --all`); 0 if there is none."""
        ...
    def vector_counts(self) -> dict[str, int]: ...
    def unembedded(self, model: str, limit: int) -> list[Insight]: ...

    # -- edges
    def upsert_edge(self, edge: Edge) -> None: ...
    def delete_edge(self, source_id: str, target_id: str, edge_type: str) -> None: ...
    def edges_of(self, ids: Sequence[str]) -> list[Edge]: ...
    def edges_among(self, ids: Sequence[str], edge_type: str | None = None) -> list[Edge]: ...
    def existing_edges(self, keys: Collection[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """Which of the (source_id, target_id, edge_type) keys already have a row."""
        ...
    def edge_counts(self, ids: Sequence[str]) -> dict[str, int]: ...
    def count_edges(self) -> int: ...
    def iter_edges(self) -> Iterator[Edge]: ...

    # -- recall (plain tuples: the beam search touches thousands of rows per query)
    def graph_version(self) -> Hashable:
        """A token that changes whenever insights or edges change (this or another process); readers key
        their caches of `insight_meta` / `adjacency` / `superseded_ids` on it."""
        ...
    def insight_meta(self, ids: Sequence[str]) -> dict[str, tuple[int, str, str, str]]:
        """Active insights among ids → (importance, created_at, category, source)."""
        ...
    def adjacency(self, ids: Sequence[str]) -> list[tuple[str, str, str, float, str | None]]:
        """(id, other end, edge type, weight, sub-type) of every edge touching one of ids, both directions,
        whose other end is an active insight; the sub-type is the metadata's `sub_type` of a temporal edge
        (backbone, proximity, conversation), None for the other types."""
        ...
    def superseded_ids(self) -> set[str]:
        """Every active insight that is the target of a `supersedes` edge."""
        ...

    # -- oplog
    def log(self, operation: str, insight_id: str | None, detail: str, now: str) -> None: ...
    def read_log(self, limit: int) -> list[OplogEntry]: ...
    def count_log(self) -> int: ...
    def oplog_oldest(self) -> str | None:
        """The time of the oldest row the retention left (None for an empty oplog)."""
        ...
