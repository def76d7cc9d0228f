"""The `Store` protocol: everything the pipelines need from a database, and nothing above `store/` writes SQL.

`Store` is the union of small protocols, one per kind of row: `Insights`, `Search` (tokens, terms, entities,
sessions), `Edges` (with the plain-tuple reads recall's graph walk makes), `Vectors` (with an optional
nearest-neighbour index, `AnnSearch`), `Oplog`, `Accesses` (a read's access counts, which never wait for a
writer) and `Dump` (every row, for `mnemon migrate`), beside `Lifecycle`.
`GraphLog` (what the graph read model, `graph/`, needs of a database to keep its index file: a consistent
snapshot, the change log, cutting it; offered by a store whose `graph_place` names a file), `BulkLoad` (a
migration target) and `Catalog` (the named stores of one database) stand apart. Every backend
implements them on `store/sql.py`'s shared SQL; `store/__init__.py` holds the table of backends.

Rows come back as models (`Insight`, `Edge`, `OplogEntry`) or as plain tuples where a hot path needs speed
(`TokenHit`). Times are RFC 3339 UTC strings; they sort as text.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

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

# Vectors of one (model, dimension) below this: recall scans the matrix exactly, above it an ANN index serves
# where the backend has one (`Vectors.ann_index`).
ANN_MIN_ROWS = 200_000

# SQLite FTS5's bm25() constants (ext/fts5/fts5_aux.c).
BM25_K1 = 1.2
BM25_B = 0.75
BM25_IDF_FLOOR = 1e-6  # the idf of a term in more than half of the rows, where the formula goes negative


def bm25(tf: int, length: int, n_docs: int, n_hits: int, total_terms: int, length_cap: float | None = None) -> float:
    """One term's BM25 in one insight exactly as FTS5's `bm25()` computes it, sign flipped (higher is better):
    the same double operations in the same order, so the result is bit-identical to SQLite's. `tf`: the term's
    occurrences in the insight, `length`: its term count, `n_docs` / `total_terms`: active insights and their
    terms, `n_hits`: active insights holding the term. The Postgres store ranks with it; a test holds it to
    SQLite's. `length_cap`: an insight longer than this many average lengths counts as that long (`capped`)."""
    avgdl = float(total_terms) / float(n_docs)
    idf = math.log((n_docs - n_hits + 0.5) / (n_hits + 0.5))
    if idf <= 0.0:
        idf = BM25_IDF_FLOOR
    length = capped(length, avgdl, length_cap)
    return idf * ((tf * (BM25_K1 + 1.0)) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)))


def capped(length: Any, avgdl: float, length_cap: float | None) -> Any:
    """BM25's length with the cap (None: as is): a memory of 60 sentences holding the query's rare words is
    not scored below a one-liner sharing a common one only for being long (docs/recall.md). Works on floats
    and arrays alike."""
    return length if length_cap is None else np.minimum(length, length_cap * avgdl)


def rank_by_coverage(hits: list[TokenHit]) -> list[TokenHit]:
    """Most query tokens first; ties → higher importance, newer, then id (deterministic)."""
    out = sorted(hits, key=lambda h: h.id)
    out.sort(key=lambda h: h.created_at, reverse=True)
    out.sort(key=lambda h: (-h.hits, -h.importance))
    return out


class Access(NamedTuple):
    """What one read counts (spec: +1 `access_count` and `last_accessed_at` = `at` for each insight it returned,
    and its oplog row). `key`: a served call's request id (`once.py`), so that the rerun of a read the engine
    answered counts nothing twice; None for a call of this process."""

    key: str | None
    ids: tuple[str, ...]
    at: str
    operation: str
    insight_id: str | None
    detail: str


class Busy(Exception):
    """A transaction asked not to wait (`record_access`) found another writer holding the store's write lock."""


def apply_access(store: Store, access: Access) -> None:
    """Inside a write transaction: count `access`, unless its key was counted before (`claim_request`). A
    later access applied before an earlier one leaves the later time (`touch` keeps the newest)."""
    if access.key is not None and not store.claim_request(access.key, access.at):
        return
    store.touch(access.ids, access.at)
    store.log(access.operation, access.insight_id, access.detail, access.at)


class DumpRow(NamedTuple):
    """One insight with everything a lossless copy needs (`mnemon migrate`)."""

    insight: Insight
    tokens: frozenset[str]
    vector: np.ndarray | None
    model: str | None


class AnnSearch(Protocol):
    """A nearest-neighbour index over one (model, dimension), as recall's vector signal uses it."""

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(keys, cosines) of the k nearest active vectors, best first; `ids` names the keys."""
        ...
    def ids(self, keys: np.ndarray) -> list[str | None]: ...
    def cosines(self, ids: list[str], query: np.ndarray) -> np.ndarray:
        """Exact cosine of the unit query with the stored vector of each id (NaN without one)."""
        ...
    def stale(self) -> bool:
        """The exact scan beside the index (rows written since it was built) has grown past its limit: a writer
        should fold them in (`Store.maintain_vector_index`). Always False for an index that follows writes."""
        ...


class Lifecycle(Protocol):
    location: str  # a path or URL, for `status` and messages
    parallel_reads: bool  # reads from several threads run at once (each borrows a connection of its own)

    def transaction(self) -> AbstractContextManager[None]:
        """Outermost: one write transaction (writers of the store queue); inner: a savepoint."""
        ...
    def close(self) -> None: ...
    def size_bytes(self) -> int: ...
    def replaced(self) -> bool:
        """The database opened is no longer the one the settings name (a file removed or restored over)."""
        ...


class Insights(Protocol):
    def insert_insight(self, ins: Insight, tokens: Collection[str]) -> None: ...
    def get_insight(self, id: str, *, include_deleted: bool = False) -> Insight | None: ...
    def get_insights(self, ids: Sequence[str]) -> dict[str, Insight]:
        """The active ones among ids."""
        ...
    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        """The ids of active insights that start with `prefix` (ASCII), in id order, at most `limit`."""
        ...
    def texts(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """The active ones among ids → (content, category): what a candidate list shows, without the models."""
        ...
    def find_by_content(self, content: str) -> str | None:
        """The first stored active insight whose content is byte-identical."""
        ...
    def count_active(self) -> int: ...
    def count_deleted(self) -> int: ...
    def iter_active(self, filters: Filters = NO_FILTERS) -> Iterator[Insight]:
        """Insertion order."""
        ...
    def latest(
        self, *, source: str | None = None, since: str | None = None, exclude: str | None = None,
        limit: int, filters: Filters = NO_FILTERS,
    ) -> list[Insight]:
        """Newest first (created_at, then insertion order)."""
        ...
    def latest_ids(self, *, limit: int, filters: Filters = NO_FILTERS) -> list[str]:
        """The ids `latest(limit=, filters=)` returns, without reading the rows (recall's recency signal)."""
        ...
    def soft_delete(self, ids: Sequence[str], now: str) -> None:
        """Mark deleted and drop their edges."""
        ...
    def touch(self, ids: Sequence[str], now: str, inc: int = 1) -> None:
        """+inc `access_count` per listed id (twice listed: twice); `last_accessed_at` = now unless it is newer."""
        ...
    def set_effective_importance(self, values: dict[str, float]) -> None: ...
    def prune_candidates(
        self, *, exclude: str | None, stored_before: str | None, limit: int, immune_importance: int,
        immune_access: int,
    ) -> list[Insight]:
        """Active insights with importance < immune_importance and access_count < immune_access, stored at or
        before `stored_before`, lowest effective importance first (then created_at, id)."""
        ...
    def like_search(self, query: str, filters: Filters, limit: int) -> list[Insight]:
        """Content containing `query` (ASCII case-insensitive), by importance, newest, id."""
        ...


class Search(Protocol):
    """The keyword, entity and conversation indexes beside the insights."""

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
    def term_scores(self, term: str, length_cap: float | None = None) -> list[tuple[str, float]]:
        """(id, BM25 score of a one-term query) for every active insight holding the stemmed `term`
        (`text.terms` of its content, tags and entities): SQLite FTS5's `bm25()` — k1 = 1.2, b = 0.75,
        idf = ln((N − n + 0.5) / (n + 0.5)) floored at 1e-6, N and the average length over active insights —
        sign flipped so that higher is better. A query's BM25 is the sum of its distinct terms' scores.
        `length_cap`: lengths capped at that many average lengths (`bm25`)."""
        ...
    def source_hits(self, names: Collection[str]) -> dict[str, list[str]]:
        """For each name that is the `source` of an active insight (ASCII case-insensitive): those insights."""
        ...
    def session_tail(self, session: str) -> str | None:
        """The active insight remembered last in `session`, if any (conversation edges)."""
        ...
    def set_session_tail(self, session: str, insight_id: str) -> None: ...
    def with_entity(self, entity: str, *, exclude: str, limit: int) -> list[str]:
        """Active insights naming the entity, most recent first."""
        ...
    def known_entities(self, candidates: Collection[str], *, casefold: bool = False) -> dict[str, str]: ...
    def entity_hits(self, entities_lower: Collection[str], filters: Filters = NO_FILTERS) -> dict[str, int]: ...
    def top_entities(self, limit: int) -> list[tuple[str, int]]: ...
    def count_by_category(self) -> dict[str, int]: ...


class Vectors(Protocol):
    def set_vector(self, id: str, vector: np.ndarray, model: str) -> None: ...
    def get_vector(self, id: str, model: str) -> np.ndarray | None: ...
    def vector_matrix(self, model: str, dim: int) -> tuple[list[str], np.ndarray]:
        """(ids, unit vectors) of active insights embedded by `model` with `dim` dimensions."""
        ...
    def ann_index(self, model: str, dim: int) -> AnnSearch | None:
        """The nearest-neighbour index that serves recall's vector signal for (model, dim): optional, and only
        from `ANN_MIN_ROWS` vectors on; None: scan `vector_matrix` exactly."""
        ...
    def nearest(self, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k active insights of `model` closest to `vector` by cosine, best first, as (id, cosine):
        through the backend's index where one serves (approximate), else exact."""
        ...
    def maintain_vector_index(self, model: str, dim: int) -> int:
        """Bring an on-disk ANN index up to date after bulk vector writes (`embed --all`); 0 if there is none."""
        ...
    def vector_counts(self) -> dict[str, int]:
        """"model:dim" → active insights embedded so."""
        ...
    def unembedded(self, model: str, limit: int) -> list[Insight]:
        """Active insights without a vector of `model`, by importance, newest, id."""
        ...

    # The vector queue: the insights a large import wrote without their vectors (`write/importer.py`), in
    # the import's batches and order, so the vectors and semantic edges filled in later are the ones the
    # import would have written. A backend without one (`queues_vectors` False) imports with vectors.
    queues_vectors: bool

    def queue_vectors(self, ids: Sequence[str]) -> None:
        """Queue these insights, in this order, as one new batch."""
        ...
    def queued_vectors(self) -> tuple[int, list[Insight]]:
        """(the oldest queued batch, its active insights in queue order); (0, []) when none is queued."""
        ...
    def unqueue_vectors(self, batch: int) -> bool:
        """Take a batch off the queue; False when it was not there (another process filled it)."""
        ...
    def count_queued(self) -> int:
        """Insights in the queue (one forgotten meanwhile counts until its batch is filled)."""
        ...


class IndexRow(NamedTuple):
    """One active insight as the graph index file holds it (`GraphLog.index_rows`)."""

    id: str
    importance: int
    created_at: str
    category: str
    source: str
    tokens: list[str]  # its keyword tokens (the token postings)
    entities: list[str]  # its entities, lower-case, distinct
    terms: list[str] | None  # its stemmed terms in order (BM25), None when it has no BM25 row
    n_tokens: int  # its distinct keyword tokens as the store counts them (`TokenHit.n_tokens`)


class GraphPlace(NamedTuple):
    """Where a store keeps its graph index file, and for whom."""

    path: Path
    # One file every process of the store reads (SQLite's, beside the database): only a writer writes it, and a
    # fold cuts the change log at it. Else each client's own (Postgres's, under the client's data dir).
    shared: bool


class GraphSnapshot(NamedTuple):
    """The graph at one committed counter: every active insight and every edge, read in one transaction."""

    counter: int
    rows: list[IndexRow]
    edges: Iterable[tuple[str, str, str, float | None, str | None]]  # (source, target, type, weight, sub-type)


class LogBehind(NamedTuple):
    """The change log after one counter."""

    rows: int  # rows (an insight touched twice counts twice: a cheap upper bound)
    unknown: bool  # a commit there touched too many insights to list
    floor: int  # the counter the log starts after (rows at or before it are cut)


class Edges(Protocol):
    def upsert_edge(self, edge: Edge) -> None: ...
    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        """`upsert_edge` of each, in order (the importer's batch sends its edges at once)."""
        ...
    def delete_edge(self, source_id: str, target_id: str, edge_type: str) -> None: ...
    def edges_of(self, ids: Sequence[str]) -> list[Edge]: ...
    def edges_among(self, ids: Sequence[str], edge_type: str | None = None) -> list[Edge]:
        """Both ends among ids, by (source, target)."""
        ...
    def existing_edges(self, keys: Collection[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """Which of the (source_id, target_id, edge_type) keys already have a row."""
        ...
    def edge_counts(self, ids: Sequence[str]) -> dict[str, int]: ...
    def count_edges(self) -> int: ...
    def iter_edges(self) -> Iterator[Edge]:
        """Primary-key order."""
        ...

    # recall (plain tuples: the beam search touches thousands of rows per query)
    def graph_version(self) -> Hashable:
        """A token that changes whenever insights or edges change (this or another process); readers key
        their caches of `insight_meta` / `adjacency` / `superseded_ids` on it."""
        ...
    def graph_changes(self, since: Hashable, now: Hashable) -> set[str] | None:
        """The insights whose attributes or adjacency this store object's own commits changed between two of
        its graph versions, or None when it cannot say (another process wrote, a rollback, a version read
        inside an open transaction, or no journal kept): a reader then drops its caches as a whole."""
        ...
    def insight_meta(self, ids: Sequence[str]) -> dict[str, tuple[int, str, str, str]]:
        """Active insights among ids → (importance, created_at, category, source)."""
        ...
    def adjacency(self, ids: Sequence[str]) -> list[tuple[str, str, str, float, str | None]]:
        """(id, other end, edge type, weight, sub-type) of every edge touching one of ids, both directions,
        whose other end is an active insight; the sub-type is the metadata's `sub_type` of a temporal edge
        (backbone, proximity, conversation), None for the other types."""
        ...
    def superseded_ids(self, among: Sequence[str] | None = None) -> set[str]:
        """Every active insight that is the target of a `supersedes` edge (of those among ids, when given)."""
        ...
    def graph_place(self) -> GraphPlace | None:
        """Where this store keeps its graph index file; None: it keeps none, recall reads everything through the
        calls above. A store that names a place is also a `GraphLog`."""
        ...


class GraphLog(Protocol):
    """The data calls the graph read model (`graph/`) makes of a store that keeps a graph index file (its
    `graph_place` names one)."""

    readonly: bool

    def store_uid(self) -> int | None:
        """The store's random id, which its files carry (a copy of another store's file is not believed)."""
        ...
    def in_transaction(self) -> bool:
        """A transaction of this store object (this thread's, where threads have their own) is open."""
        ...
    def graph_writes_pending(self) -> bool:
        """The open transaction changed insights or edges: a file, which knows only committed rows, is not
        believed meanwhile."""
        ...
    def graph_changes_since(self, since: int, now: int) -> set[str] | None:
        """The insights whose attributes or adjacency the commits that moved the committed graph counter from
        `since` to `now` touched, by any process (the store's change log); None when the log cannot say."""
        ...
    def graph_log_since(self, counter: int) -> LogBehind: ...
    def graph_log_counter(self, at_most: int, skip: int) -> int | None:
        """The counter of the log row `skip` rows below the newest at or before `at_most` (None: fewer rows)."""
        ...
    def cut_graph_log(self, through: int) -> None:
        """Drop the log rows at or before `through` and raise the floor to it, in a transaction of its own."""
        ...
    def graph_snapshot(self) -> AbstractContextManager[GraphSnapshot]:
        """The graph at one committed counter, valid inside the block."""
        ...
    def index_rows(self, ids: Sequence[str] | None = None) -> list[IndexRow]:
        """Every active insight (or the active ones among ids) as the index file holds it."""
        ...
    def vector_files_missing(self, min_rows: int) -> bool:
        """Some model of which this process holds `min_rows` vectors has no vector matrix file yet."""
        ...
    def write_vector_files(self, min_rows: int, *, missing_only: bool) -> None:
        """The vector matrix file (`vecfile.py`) of each model with `min_rows` vectors, at one vector sequence
        number; `missing_only`: only of the models `vector_files_missing` names."""
        ...


class StoreDefaults:
    """What a backend gets where it has nothing better (`SQLStore`, `CypherStore`): edges upserted one by one,
    and no graph index file (SQLite and Postgres override that part), so recall reads everything through the
    `Edges` and `Insights` calls."""


    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        """Several upserts in order (a later one of the same key wins); a backend may send them at once."""
        for e in edges:
            self.upsert_edge(e)  # type: ignore[attr-defined]

    def texts(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        rows: dict[str, Insight] = self.get_insights(ids)  # type: ignore[attr-defined]
        return {i: (r.content, r.category) for i, r in rows.items()}

    def graph_place(self) -> None:
        return None

    queues_vectors = False  # an import waits for its vectors: nothing is ever queued

    def queue_vectors(self, ids: Sequence[str]) -> None:
        raise NotImplementedError("this store keeps no vector queue (queues_vectors is False)")

    def count_queued(self) -> int:
        return 0

    def queued_vectors(self) -> tuple[int, list[Insight]]:
        return 0, []

    def unqueue_vectors(self, batch: int) -> bool:
        return False


class Oplog(Protocol):
    def log(self, operation: str, insight_id: str | None, detail: str, now: str) -> None: ...
    def claim_request(self, request_id: str, now: str) -> bool:
        """Inside a write transaction: record a served call's request id; False if it was recorded before
        (`once.py`: the rerun of a call whose answer was lost writes nothing)."""
        ...
    def read_log(self, limit: int) -> list[OplogEntry]:
        """Newest first."""
        ...
    def count_log(self) -> int: ...
    def oplog_oldest(self) -> str | None:
        """The time of the oldest row the retention left (None for an empty oplog)."""
        ...


class Accesses(Protocol):
    """A read never waits behind a writer (DESIGN.md): its access counts are bookkeeping, not a reason to block an
    agent's turn. Every backend keeps this promise as far as its database lets it (docs/backends.md)."""

    def record_access(self, access: Access) -> bool:
        """Count a read's access without waiting for the write lock: applied at once in a transaction of its
        own when no writer holds the lock (True); else kept beside the store and applied by the store's next
        write transaction, of this process or another, before anything else it does (False). Counted once
        whichever way (`apply_access`); an error only when it can be neither applied nor kept."""
        ...


class Dump(Protocol):
    """Every row as stored, validation skipped (`mnemon migrate`, `store/dump.py`)."""

    def dump_insights(self) -> Iterator[DumpRow]:
        """Soft-deleted ones too, in insertion order, with tokens and vector."""
        ...
    def dump_oplog(self) -> Iterator[OplogEntry]:
        """By id."""
        ...
    def dump_tails(self) -> Iterator[tuple[str, str]]:
        """(session, insight id) of every remember session's tail, by session."""
        ...


class Store(Lifecycle, Insights, Search, Vectors, Edges, Oplog, Accesses, Dump, Protocol):
    """Everything the pipelines need from a database."""


class BulkLoad(Protocol):
    """A store `mnemon migrate` can copy into."""

    def load(
        self, insights: Iterable[DumpRow], edges: Iterable[Edge], oplog: Iterable[OplogEntry],
        tails: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Copy `Dump`'s rows into this empty store in one transaction."""
        ...


class Catalog(Protocol):
    """The named stores of one database: store directories under a data dir, or schemas of a Postgres database."""

    def names(self) -> list[str]:
        """Sorted."""
        ...
    def exists(self, name: str) -> bool: ...
    def create(self, name: str) -> None: ...
    def remove(self, name: str) -> None: ...
