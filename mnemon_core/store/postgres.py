"""The scale-out store: Postgres + pgvector, for many agent processes on many machines sharing one memory.

Selected by `MNEMON_DATABASE_URL=postgresql://…` (or `--database-url`); extra `mnemon-core[postgres]`.

Layout: one Postgres schema per store (`mnemon_<name>`), so stores stay isolated in one database and a store is
dropped with its schema. Each holds the SQLite store's tables in Postgres terms:
- `insights`: the spec's columns, plus `seq` (insertion order, the SQLite rowid), the distinct
  pre-tokenised `terms` with a GIN index (keyword signal: which insights hold which query tokens; the score
  itself is computed exactly as on SQLite) and the stemmed `stems` in order with duplicates, with their count
  and a GIN index (BM25, computed in Python exactly as SQLite's FTS5 does).
- `vectors`: one pgvector row per embedded insight with its model, an `active` flag and `vec_seq` (see
  `vectors.py`), one partial HNSW index (cosine) per embedding model and dimension. A table of its own, so
  that updating an insight (access counts, EI) never re-inserts its vector into the HNSW graph.
- `edges` with indexes on (source, type) and (target, type) for the graph's neighbour queries;
  `insight_entities`; `oplog` (kept as `OplogRetention` says); `conversation_tails` (the last insight of each
  remember session); `mnemon_meta` (schema version; counters of active insights, their stemmed terms, vector
  changes and graph changes, each moved once per transaction at commit, so a long import does not rewrite one
  hot row thousands of times).
Text columns use the "C" collation, so ordering and equality are byte-wise, as in SQLite.

Concurrency: the outermost `transaction()` takes a transaction-scoped advisory lock per store as its first
statement, READ COMMITTED. Writers of one store queue on it the way SQLite writers queue on BEGIN IMMEDIATE
(so the exact-duplicate re-check, the graph builders and the oplog trim see every earlier write); readers
never wait. Inner `transaction()` calls are savepoints.

Connections: one connection for a short-lived process (the CLI), or a psycopg pool (`pool=True`) for
long-lived ones (MCP server, LangChain apps), where each thread's transaction holds its own connection.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..config import OplogRetention, Settings
from ..errors import MissingExtraError, StoreError, import_extra
from ..models import Edge, Insight, OplogEntry
from ..redact import redact
from ..text import document, terms
from . import base
from .base import NO_FILTERS, DumpRow, Filters, GraphPlace, GraphSnapshot, IndexRow, TokenHit, bm25
from .sql import (
    EDGE_COLS, EDGE_TYPE_CHECK, GRAPH_SUFFIX, INSIGHT_COLS, INSIGHT_COLUMNS, WRITE_LOCK_TIMEOUT_S, Busy, Dialect, SQLStore, oplog_trim,
    where,
)
from .vectors import AnsweredAnn, VectorCache

SCHEMA_PREFIX = "mnemon_"
MAX_IDENT_BYTES = 63  # Postgres NAMEDATALEN - 1
LONG_TERM_BYTES = 255  # longer tokens are indexed by their md5 (a GIN key must fit in a third of a page)
POOL_MAX = 8
PAGE = 5000  # rows per round trip when iterating a whole table
VECTOR_PAGE = 20000
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
HNSW_MAX_DIM = 2000  # pgvector's HNSW limit for `vector`; larger vectors are scanned exactly
CONNECT_TIMEOUT_S = 10
BULK_INDEX_MEM = "1GB"  # sort memory for rebuilding the indexes of a bulk load (`mnemon migrate`)
HNSW_BUILD_BYTES = 1024  # graph and tuple overhead per vector of an in-memory HNSW build, beside its floats
HNSW_BUILD_MEM_MAX = 8 << 30  # past this the build spills to disk (slower, but no server runs out of memory)
_LOADED = ("insights", "insight_entities", "vectors", "edges", "oplog")  # the tables a bulk load fills


# The two orders of `Store.token_hits` with a limit (their arguments: `_ranked_args`).
_RANKED = {
    "coverage": "ORDER BY hits DESC, importance DESC, created_at DESC, id ASC LIMIT %s",
    "overlap": "ORDER BY hits::float8 / greatest(1, least(%s, n_tokens)) DESC, id ASC LIMIT %s",
}


def _ranked_args(order: str, toks: Sequence[str], limit: int) -> list[int]:
    return [len(toks), limit] if order == "overlap" else [limit]


_UPSERT_EDGE = (
    f"INSERT INTO {{s}}.edges ({EDGE_COLS}) VALUES (%s,%s,%s,%s,%s,%s) "
    "ON CONFLICT (source_id, target_id, edge_type) DO UPDATE SET weight = EXCLUDED.weight, "
    "metadata = EXCLUDED.metadata, created_at = EXCLUDED.created_at"
)

# A global advisory lock (per database) that serialises schema creation and migrations across processes.
_MIGRATE_LOCK = int.from_bytes(hashlib.sha256(b"mnemon:migrate").digest()[:8], "big", signed=True)


def _psycopg() -> Any:
    return import_extra("psycopg", "postgres")


def schema_name(store: str) -> str:
    """The Postgres schema of a store; a name too long for an identifier is cut and given a hash suffix."""
    name = SCHEMA_PREFIX + store
    if len(name.encode()) <= MAX_IDENT_BYTES:
        return name
    digest = hashlib.sha1(store.encode()).hexdigest()[:12]
    return f"{SCHEMA_PREFIX}{store[:40]}_{digest}"


def store_lock_key(store: str) -> int:
    """The advisory-lock key of a store's write transactions (signed 64-bit)."""
    return int.from_bytes(hashlib.sha256(f"mnemon:store:{store}".encode()).digest()[:8], "big", signed=True)


def term_key(term: str) -> str:
    """A token as the GIN index holds it (must match the SQL function `term_keys`)."""
    raw = term.encode()
    return "md5:" + hashlib.md5(raw).hexdigest() if len(raw) > LONG_TERM_BYTES else term


def _stems(content: str, tags: Iterable[str], entities: Iterable[str]) -> list[str]:
    """An insight's stemmed terms in order, duplicates kept: what SQLite's `insights_bm25` holds of it."""
    return terms(document(content, tags, entities))


def _ascii_lower(expr: str) -> str:
    return f"translate({expr}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"


# `{s}.` is left for `PostgresStore._q`, which puts the store's schema there.
DIALECT = Dialect(
    mark="%s", schema="{s}.", unindexed="", seq="seq", arrays=True, lists=lambda v: list(v or []),
    mapping=lambda v: v or {}, json_text=lambda col, key: f"{col}->>'{key}'",
    fold=_ascii_lower,  # SQLite's LIKE folds ASCII letters only; translate() does exactly that, whatever the locale
)


# ---------------------------------------------------------------------------------------------- migrations
# Numbered steps; `mnemon_meta.schema_version` records how many ran. Each runs in one transaction with its
# version bump, under the global migration lock. A step gets `run(sql, args=None)`, which executes on that
# transaction's connection and returns the cursor; `{s}` is the store's quoted schema.


def _m001_initial(run: Callable[..., Any]) -> None:
    run(
        """
        CREATE TABLE {s}.insights (
            seq bigint GENERATED BY DEFAULT AS IDENTITY,
            id text COLLATE "C" PRIMARY KEY,
            content text COLLATE "C" NOT NULL,
            category text COLLATE "C" NOT NULL DEFAULT 'general',
            importance integer NOT NULL DEFAULT 3,
            tags text[] COLLATE "C" NOT NULL DEFAULT '{}',
            entities text[] COLLATE "C" NOT NULL DEFAULT '{}',
            source text COLLATE "C" NOT NULL DEFAULT 'user',
            access_count integer NOT NULL DEFAULT 0,
            created_at text COLLATE "C" NOT NULL,
            updated_at text COLLATE "C" NOT NULL,
            deleted_at text COLLATE "C",
            last_accessed_at text COLLATE "C",
            effective_importance double precision NOT NULL DEFAULT 0.5,
            stored_at text COLLATE "C",
            terms text[] COLLATE "C" NOT NULL DEFAULT '{}',
            n_tokens integer NOT NULL DEFAULT 0
        );
        CREATE UNIQUE INDEX insights_seq ON {s}.insights (seq);
        CREATE INDEX insights_content ON {s}.insights USING hash (content);
        CREATE INDEX insights_recent ON {s}.insights (created_at DESC, seq DESC) WHERE deleted_at IS NULL;
        CREATE INDEX insights_source_recent ON {s}.insights (source, created_at DESC, seq DESC)
            WHERE deleted_at IS NULL;
        CREATE INDEX insights_category ON {s}.insights (category) WHERE deleted_at IS NULL;
        CREATE INDEX insights_prune ON {s}.insights (effective_importance, created_at, id)
            WHERE deleted_at IS NULL AND importance < 4 AND access_count < 3;
        CREATE INDEX insights_deleted ON {s}.insights (deleted_at) WHERE deleted_at IS NOT NULL;
        CREATE FUNCTION {s}.term_keys(text[]) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
            SELECT coalesce(array_agg(CASE WHEN octet_length(t) > 255 THEN 'md5:' || md5(t) ELSE t END),
                            '{}'::text[])
            FROM unnest($1) AS t
        $$;
        CREATE INDEX insights_terms ON {s}.insights USING gin ({s}.term_keys(terms)) WHERE deleted_at IS NULL;

        CREATE TABLE {s}.insight_entities (
            insight_id text COLLATE "C" NOT NULL REFERENCES {s}.insights(id) ON DELETE CASCADE,
            entity text COLLATE "C" NOT NULL,
            entity_lower text COLLATE "C" NOT NULL,
            PRIMARY KEY (insight_id, entity)
        );
        CREATE INDEX entities_entity ON {s}.insight_entities (entity);
        CREATE INDEX entities_lower ON {s}.insight_entities (entity_lower);

        CREATE TABLE {s}.edges (
            source_id text COLLATE "C" NOT NULL REFERENCES {s}.insights(id) ON DELETE CASCADE,
            target_id text COLLATE "C" NOT NULL REFERENCES {s}.insights(id) ON DELETE CASCADE,
            edge_type text COLLATE "C" NOT NULL
                """ + EDGE_TYPE_CHECK + """,
            weight double precision NOT NULL DEFAULT 1.0,
            metadata jsonb NOT NULL DEFAULT '{}',
            created_at text COLLATE "C" NOT NULL,
            PRIMARY KEY (source_id, target_id, edge_type)
        );
        CREATE INDEX edges_source_type ON {s}.edges (source_id, edge_type);
        CREATE INDEX edges_target_type ON {s}.edges (target_id, edge_type);
        CREATE INDEX edges_type ON {s}.edges (edge_type);

        CREATE TABLE {s}.oplog (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            operation text COLLATE "C" NOT NULL,
            insight_id text COLLATE "C",
            detail text COLLATE "C" NOT NULL DEFAULT '',
            created_at text COLLATE "C" NOT NULL
        );
        CREATE INDEX oplog_created_at ON {s}.oplog (created_at);

        -- Which HNSW index serves which (model, dimension).
        CREATE TABLE {s}.vector_indexes (
            model text COLLATE "C" NOT NULL,
            dim integer NOT NULL,
            index_name text NOT NULL,
            PRIMARY KEY (model, dim)
        );

        CREATE TABLE {s}.vectors (
            id text COLLATE "C" PRIMARY KEY REFERENCES {s}.insights(id) ON DELETE CASCADE,
            model text COLLATE "C" NOT NULL,
            embedding vector NOT NULL,
            active boolean NOT NULL,
            vec_seq bigint NOT NULL
        );
        CREATE INDEX vectors_seq ON {s}.vectors (vec_seq, id);

        -- active: `count_active` runs on every remember (auto-prune), so it is a counter, not a scan.
        INSERT INTO {s}.mnemon_meta VALUES ('vec_seq', 0), ('active', 0), ('graph', 0) ON CONFLICT DO NOTHING;
        """
    )


def _m002_entity_recency(run: Callable[..., Any]) -> None:
    """The entity builder asks for the latest insights naming an entity. Joined to `insights`, the planner
    walked every insight by recency looking for a rare entity (0.6 s per remember at a million insights); with
    the insight's created_at and seq beside the entity (both fixed at insert), one index walks them in order."""
    run(
        """
        ALTER TABLE {s}.insight_entities ADD COLUMN created_at text COLLATE "C", ADD COLUMN seq bigint;
        UPDATE {s}.insight_entities e SET created_at = i.created_at, seq = i.seq
            FROM {s}.insights i WHERE i.id = e.insight_id;
        ALTER TABLE {s}.insight_entities ALTER COLUMN created_at SET NOT NULL, ALTER COLUMN seq SET NOT NULL;
        DROP INDEX {s}.entities_entity;
        CREATE INDEX entities_recent ON {s}.insight_entities (entity, created_at DESC, seq DESC);
        """
    )


def _m003_bm25_and_conversations(run: Callable[..., Any]) -> None:
    """BM25 as SQLite's FTS5 computes it (`Store.term_scores`): each insight's stemmed terms in order with
    duplicates (`stems`, GIN-indexed over active insights like `terms`) and their count, and the term total of
    active insights as a counter beside `active` (N); an index for the ASCII case-insensitive source lookup;
    the tail of each remember session (conversation edges). Stems are computed here, in Python (the stemmer),
    for every insight, soft-deleted ones too, a page at a time."""
    run(
        """
        ALTER TABLE {s}.insights ADD COLUMN stems text[] COLLATE "C" NOT NULL DEFAULT '{}',
            ADD COLUMN n_stems integer NOT NULL DEFAULT 0;
        CREATE TABLE {s}.conversation_tails (
            session text COLLATE "C" PRIMARY KEY,
            insight_id text COLLATE "C" NOT NULL
        );
        """
    )
    last = -1
    while rows := run(
        "SELECT seq, content, tags, entities FROM {s}.insights WHERE seq > %s ORDER BY seq LIMIT %s", (last, PAGE)
    ).fetchall():
        stems = [_stems(c, t, e) for _, c, t, e in rows]
        # Terms hold no spaces (letters, digits and marks only), so a page travels as joined strings.
        run(
            "UPDATE {s}.insights i SET stems = string_to_array(v.stems, ' '), n_stems = v.n "
            "FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS v(seq, stems, n) WHERE i.seq = v.seq",
            ([r[0] for r in rows], [" ".join(x) for x in stems], [len(x) for x in stems]),
        )
        last = rows[-1][0]
    run(
        """
        INSERT INTO {s}.mnemon_meta
            SELECT 'active_stems', coalesce(sum(n_stems), 0) FROM {s}.insights WHERE deleted_at IS NULL;
        CREATE INDEX insights_stems ON {s}.insights USING gin ({s}.term_keys(stems)) WHERE deleted_at IS NULL;
        CREATE INDEX insights_source_lower ON {s}.insights (lower(source)) WHERE deleted_at IS NULL;
        """
    )


def _fold_entities(run: Callable[..., Any]) -> None:
    """`entity_lower` as Python's `str.lower` makes it, for entities beyond ASCII: what SQLite stores and every
    query looks up, where SQL `lower()` under the C collation leaves "Émile" or "Москва" as they are."""
    ents = [e for (e,) in run("SELECT DISTINCT entity FROM {s}.insight_entities").fetchall() if not e.isascii()]
    if ents:
        run(
            "UPDATE {s}.insight_entities t SET entity_lower = v.el FROM unnest(%s::text[], %s::text[]) AS v(e, el) "
            "WHERE t.entity = v.e AND t.entity_lower <> v.el",
            (ents, [e.lower() for e in ents]),
        )


def _m004_fold_entities(run: Callable[..., Any]) -> None:
    """Stores written before the write path folded entities in Python (see `_fold_entities`)."""
    _fold_entities(run)


def _m005_supersedes_index(run: Callable[..., Any]) -> None:
    """Recall demotes superseded insights: a partial index holds the `supersedes` edges alone, so finding them
    no longer scans every edge."""
    run("CREATE INDEX IF NOT EXISTS edges_supersedes ON {s}.edges (target_id) WHERE edge_type = 'supersedes'")


def _m006_requests(run: Callable[..., Any]) -> None:
    """The request ids of the resident engine's served writes (`once.py`), so a rerun writes nothing twice."""
    run("CREATE TABLE IF NOT EXISTS {s}.requests (id TEXT PRIMARY KEY, created_at TEXT NOT NULL)")


def _m007_graph_log(run: Callable[..., Any]) -> None:
    """Which insights each committed graph change touched, by the counter it moved to, as on SQLite: what a
    client holding a graph index file (`graph/index.py`) reads of the database instead of the graph. The log starts at
    the current counter; a random store id ties an index file to this store."""
    run("CREATE TABLE IF NOT EXISTS {s}.graph_log (counter bigint NOT NULL, insight_id text COLLATE \"C\" NOT NULL)")
    run("CREATE INDEX IF NOT EXISTS graph_log_counter ON {s}.graph_log (counter)")
    run("INSERT INTO {s}.mnemon_meta SELECT 'graph_log_floor', coalesce((SELECT value FROM {s}.mnemon_meta "
        "WHERE key = 'graph'), 0) ON CONFLICT DO NOTHING")
    run("INSERT INTO {s}.mnemon_meta VALUES ('store_uid', %s) ON CONFLICT DO NOTHING",
        (int.from_bytes(os.urandom(6), "little"),))


def _m008_pending_accesses(run: Callable[..., Any]) -> None:
    """The accesses reads could not apply while a writer held the store's lock (`record_access`), in the order
    they came, for the next write transaction (which deletes what it applies)."""
    run("CREATE TABLE IF NOT EXISTS {s}.pending_accesses (seq bigserial PRIMARY KEY, key text, ids text[] NOT NULL, "
        "at text NOT NULL, operation text NOT NULL, insight_id text, detail text NOT NULL)")


def _m009_vector_queue(run: Callable[..., Any]) -> None:
    """The insights a large import wrote without their vectors, in its batches and order, as on SQLite. No
    foreign key (a bulk load drops and remakes the insights' key): the fill joins the insights, so a row whose
    insight is gone is passed over and leaves with its batch."""
    run("CREATE TABLE IF NOT EXISTS {s}.vector_queue (insight_id text COLLATE \"C\" PRIMARY KEY, "
        "batch bigint NOT NULL, pos bigint NOT NULL)")
    run("CREATE INDEX IF NOT EXISTS vector_queue_order ON {s}.vector_queue (batch, pos)")


MIGRATIONS: list[Callable[[Callable[..., Any]], None]] = [
    _m001_initial, _m002_entity_recency, _m003_bm25_and_conversations, _m004_fold_entities, _m005_supersedes_index,
    _m006_requests, _m007_graph_log, _m008_pending_accesses, _m009_vector_queue,
]


# ---------------------------------------------------------------------------------------------- connections


class _Single:
    """One connection shared by the threads of a short-lived process, one at a time (like SQLite's lock).
    A broken connection is replaced on the next use."""

    def __init__(self, connect: Callable[[], Any], conn: Any) -> None:
        self._connect = connect
        self._lock = threading.RLock()
        self.conn = conn

    @contextmanager
    def connection(self) -> Iterator[Any]:
        with self._lock:
            if self.conn.closed or self.conn.broken:
                self.conn = self._connect()
            yield self.conn

    def close(self) -> None:
        with self._lock:
            self.conn.close()


class _Tx:
    """One thread's open transaction: its connection, and per savepoint level the counter changes to apply
    at commit (dropped with a level that rolls back)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.levels: list[dict[str, int]] = [{"active": 0, "stems": 0, "graph": 0}]
        self.stamp: int | None = None  # this transaction's vec_seq, reserved at its first vector change
        self.stamp_level = 0
        # Edge upserts wait here and go to the server together (one pipelined round trip) before the next
        # statement, savepoint or commit: a graph builder writes tens of edges between two reads.
        self.edges: list[tuple[Any, ...]] = []
        self.trim_due: str | None = None  # oplog rows were written: trim at commit, as of this time
        # The insights its graph writes touched, for the change log (a savepoint rolled back leaves its ids:
        # a reader forgetting one insight too many only reads it again).
        self.touched: set[str] = set()


class _PgAnn(AnsweredAnn):
    """pgvector's HNSW index over (model, dim)."""

    store: PostgresStore

    def cosines(self, ids: list[str], query: np.ndarray) -> np.ndarray:
        """Exact cosine with the stored vector of each id (NaN without an active one of this model and dim)."""
        out = np.full(len(ids), np.nan, dtype=np.float32)
        if not ids:
            return out
        rows = self.store._exec(
            "SELECT id, 1 - (embedding <=> %s) FROM {s}.vectors WHERE id = ANY(%s::text[]) AND model = %s "
            "AND vector_dims(embedding) = %s AND active",
            (np.asarray(query, dtype=np.float32), list(ids), self.model, self.dim),
        )
        pos = {id_: i for i, id_ in enumerate(ids)}
        for id_, cos in rows:
            out[pos[id_]] = cos
        return out


class PostgresStore(SQLStore):
    """`Store` over one schema of a Postgres database with pgvector."""

    dialect = DIALECT
    without_vector = "NOT EXISTS (SELECT 1 FROM {s}.vectors v WHERE v.id = i.id AND v.model = ?)"

    def __init__(
        self, url: str, *, store: str = "default", readonly: bool = False, pool: bool = False,
        pool_max: int = POOL_MAX, oplog_retention: OplogRetention = OplogRetention(), index_dir: Path | None = None,
    ) -> None:
        psycopg = _psycopg()
        self.url = url
        self.name = store
        self.readonly = readonly
        self.oplog_retention = oplog_retention
        self.schema = schema_name(store)
        self.location = f"{redact(url)} (store {store})"
        self._s = '"' + self.schema.replace('"', '""') + '"'
        self._lock_key = store_lock_key(store)
        self._local = threading.local()
        self._gen = 0  # this object's graph writes and rollbacks (graph_version), seen before any commit
        self._sql_cache: dict[str, str] = {}
        self._vectors: dict[tuple[str, int], VectorCache] = {}
        self._vector_lock = threading.Lock()
        self._indexed: dict[tuple[str, int], str | None] = {}
        # The graph index file lives beside the client (`index_dir`, one per database and store), so that a
        # fleet of agents on one database each map the graph instead of querying it.
        key = hashlib.sha256(f"{redact(url)}|{self.schema}".encode()).hexdigest()[:16]
        self._graph_file = index_dir / f"pg-{key}{GRAPH_SUFFIX}" if index_dir is not None else None
        try:
            boot = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as e:
            raise StoreError(f"cannot connect to {redact(url)}: {_first_line(e)}", path=redact(url)) from e
        try:
            self._bootstrap(boot)
            if pool:
                boot.close()
                self._pool: Any = self._open_pool(pool_max)
            else:
                self._pool = _Single(lambda: self._configure(self._connect()), self._configure(boot))
            self.parallel_reads = pool  # the pool lends each thread a connection of its own
        except BaseException:
            boot.close()
            raise

    # ------------------------------------------------------------------ connections and schema

    def _connect(self) -> Any:
        return _psycopg().connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)

    def _configure(self, conn: Any) -> Any:
        """Every connection: READ COMMITTED (a writer's statements see all that committed before its lock),
        read-only sessions for --readonly, numpy arrays as pgvector's `vector`."""
        psycopg = _psycopg()
        conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
        _vector_on_path(conn)
        if self.readonly:
            conn.execute("SET default_transaction_read_only = on")
        register_vector(conn)
        return conn

    def _open_pool(self, pool_max: int) -> Any:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise MissingExtraError("psycopg-pool", "postgres") from None
        pool = ConnectionPool(
            self.url, min_size=1, max_size=max(1, pool_max), open=False, configure=self._configure,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S}, check=ConnectionPool.check_connection,
            name=f"mnemon-{self.name}",
        )
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        return pool

    def _bootstrap(self, conn: Any) -> None:
        """Create (or find, when read-only) the store's schema and bring it to the current version."""
        psycopg = _psycopg()
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)).fetchone()
        if self.readonly:
            if not exists:
                raise StoreError(f'store "{self.name}" not found in {redact(self.url)}', path=self.location)
            return
        version = self._version(conn) if exists else -1
        if version == len(MIGRATIONS):
            return
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
                if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                _vector_on_path(conn)
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._s}")
                conn.execute(f"COMMENT ON SCHEMA {self._s} IS %s" % _literal(f"mnemon store {self.name}"))
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._s}.mnemon_meta (key text PRIMARY KEY, value bigint NOT NULL)"
                )
                conn.execute(
                    f"INSERT INTO {self._s}.mnemon_meta VALUES ('schema_version', 0) ON CONFLICT DO NOTHING"
                )
            done = self._version(conn)
            for n, step in enumerate(MIGRATIONS[done:], start=done + 1):
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
                    if self._version(conn) >= n:  # another process got here first
                        continue
                    step(lambda sql, args=None: conn.execute(sql.replace("{s}", self._s), args))
                    conn.execute(
                        f"UPDATE {self._s}.mnemon_meta SET value = %s WHERE key = 'schema_version'", (n,)
                    )
        except psycopg.errors.InsufficientPrivilege as e:
            raise StoreError(
                f"cannot set up store \"{self.name}\" in {redact(self.url)}: {_first_line(e)} "
                "(a superuser must run CREATE EXTENSION vector once; the role needs CREATE on the database)",
                path=self.location,
            ) from e
        except psycopg.Error as e:
            raise StoreError(f"cannot set up store \"{self.name}\": {_first_line(e)}", path=self.location) from e

    def _version(self, conn: Any) -> int:
        reg = conn.execute("SELECT to_regclass(%s)", (f"{self._s}.mnemon_meta",)).fetchone()[0]
        if reg is None:
            return -1
        r = conn.execute(f"SELECT value FROM {self._s}.mnemon_meta WHERE key = 'schema_version'").fetchone()
        return int(r[0]) if r else 0

    def _q(self, sql: str) -> str:
        """A statement of this store: shared templates rendered (`store/sql.py`), `{s}` its quoted schema."""
        out = self._sql_cache.get(sql)
        if out is None:
            out = self._sql_cache[sql] = DIALECT.render(sql).replace("{s}", self._s)
        return out

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        """This thread's transaction connection, or one borrowed for a single autocommit statement."""
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None:
            if tx.edges:
                self._send_edges(tx)
            yield tx.conn
            return
        with self._pool.connection() as conn:
            yield conn

    def _send_edges(self, tx: _Tx) -> None:
        rows, tx.edges = tx.edges, []
        with tx.conn.cursor() as cur:
            cur.executemany(self._q(_UPSERT_EDGE), rows)

    def _exec(
        self, sql: str, args: Sequence[Any] | dict[str, Any] = (), *, binary: bool = False
    ) -> list[tuple[Any, ...]]:
        """One statement; `binary` fetches results in binary form (vectors come back as float32 arrays)."""
        with self._conn() as conn:
            cur = conn.execute(self._q(sql), args, binary=binary)
            return cur.fetchall() if cur.description else []

    # ------------------------------------------------------------------ lifecycle

    def _take_write_lock(self, conn: Any, wait: bool) -> bool:
        """This store's advisory lock, waited for at most WRITE_LOCK_TIMEOUT_S (then "locked", as SQLite's busy
        timeout says it; the timeout holds for the rest of the transaction's lock waits too), or with `wait`
        False not at all (`Busy`). Whether reads left accesses for this transaction to apply."""
        if not wait:
            got, pending = conn.execute(self._q(
                "SELECT pg_try_advisory_xact_lock(%s), EXISTS (SELECT 1 FROM {s}.pending_accesses)"),
                (self._lock_key,)).fetchone()
            if not got:
                raise Busy
            return bool(pending)
        conn.execute(f"SET LOCAL lock_timeout = '{int(WRITE_LOCK_TIMEOUT_S * 1000)}ms'")
        try:
            # The pending accesses are looked for in the same statement: the snapshot may be older than the
            # lock, and one kept meanwhile waits for the next writer.
            return bool(conn.execute(self._q(
                "SELECT pg_advisory_xact_lock(%s), EXISTS (SELECT 1 FROM {s}.pending_accesses)"),
                (self._lock_key,)).fetchone()[1])
        except _psycopg().errors.LockNotAvailable as e:
            raise StoreError(
                f"store is locked: another writer held the write lock on {self.location} longer than the "
                f"{WRITE_LOCK_TIMEOUT_S:g} s lock timeout; try again", path=self.location,
            ) from e

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Outermost call: BEGIN + this store's advisory lock (writers queue); inner calls: savepoints."""
        with self._transaction(wait=True):
            yield

    @contextmanager
    def _transaction(self, *, wait: bool) -> Iterator[None]:
        """`transaction()`; with `wait=False` an outermost call that finds the write lock taken raises `Busy` at
        once. The outermost call first applies the accesses that reads left pending (`record_access`)."""
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None:
            if tx.edges:
                self._send_edges(tx)  # they belong to the enclosing level
            depth = len(tx.levels)
            tx.levels.append({"active": 0, "stems": 0, "graph": 0})
            try:
                with tx.conn.transaction():
                    yield
                    if tx.edges:
                        self._send_edges(tx)  # inside the savepoint, so a failure rolls back with it
            except BaseException:
                tx.edges = []
                tx.levels.pop()
                if tx.stamp is not None and tx.stamp_level >= depth:
                    tx.stamp = None  # its reservation was rolled back with the savepoint
                self._gen += 1
                raise
            top = tx.levels.pop()
            for k, v in top.items():
                tx.levels[-1][k] += v
            return
        with self._pool.connection() as conn:
            tx = self._local.tx = _Tx(conn)
            try:
                with conn.transaction():
                    if self._take_write_lock(conn, wait):
                        self._apply_pending(conn)
                    yield
                    if tx.edges:
                        self._send_edges(tx)
                    if tx.trim_due is not None:
                        self._trim_oplog(conn, tx.trim_due)
                    self._flush(conn, tx.levels[0], tx.touched)
            except BaseException:
                self._gen += 1
                raise
            finally:
                self._local.tx = None

    def _apply_pending(self, conn: Any) -> None:
        """The accesses reads left, applied and deleted in this transaction: each once, in the order kept."""
        rows = conn.execute(self._q(
            "DELETE FROM {s}.pending_accesses RETURNING seq, key, ids, at, operation, insight_id, detail")).fetchall()
        for r in sorted(rows):
            base.apply_access(self, base.Access(r[1], tuple(r[2]), r[3], r[4], r[5], r[6]))

    def _keep(self, access: base.Access) -> None:
        """A row of `pending_accesses` (an insert waits for no lock), for the next write transaction of any
        client."""
        self._exec("INSERT INTO {s}.pending_accesses (key, ids, at, operation, insight_id, detail) "
                   "VALUES (%s, %s, %s, %s, %s, %s)", (access.key, list(access.ids), *access[2:]))

    def _changed(self, active: int = 0, graph: Iterable[str] = (), stems: int = 0) -> None:
        """Count a change (active insights, their stemmed terms, the graph: the insights it touched): applied
        at commit inside a transaction, at once outside one."""
        touched = set(graph)
        if touched:
            self._gen += 1
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None:
            tx.levels[-1]["active"] += active
            tx.levels[-1]["stems"] += stems
            tx.levels[-1]["graph"] += int(bool(touched))
            tx.touched |= touched
        else:
            with self._conn() as conn, conn.transaction():
                self._flush(conn, {"active": active, "stems": stems, "graph": int(bool(touched))}, touched)

    def _flush(self, conn: Any, counts: dict[str, int], touched: set[str]) -> None:
        if counts["active"] or counts["stems"] or counts["graph"]:
            rows = conn.execute(
                self._q(
                    "UPDATE {s}.mnemon_meta SET value = value + CASE key WHEN 'active' THEN %s "
                    "WHEN 'active_stems' THEN %s ELSE 1 END "
                    "WHERE key IN ('active', 'active_stems') OR (key = 'graph' AND %s) RETURNING key, value"
                ),
                (counts["active"], counts["stems"], counts["graph"] > 0),
            ).fetchall()
            counter = dict(rows).get("graph")
            if counter is not None and touched:  # a store older than the log has no floor: nothing reads it
                conn.execute(self._q("INSERT INTO {s}.graph_log SELECT %s, unnest(%s::text[])"),
                             (counter, sorted(touched)))

    def _pending(self, key: str) -> int:
        """This thread's uncommitted change to a counter (its transaction reads its own writes)."""
        tx: _Tx | None = getattr(self._local, "tx", None)
        return sum(level[key] for level in tx.levels) if tx is not None else 0

    def _stamp(self) -> int:
        """The vec_seq for a vector change: one per transaction. Reserving it locks the counter row until
        commit, so a reader that sees the counter at N has seen every row stamped ≤ N."""
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None and tx.stamp is not None:
            return tx.stamp
        r = self._one("UPDATE {s}.mnemon_meta SET value = value + 1 WHERE key = 'vec_seq' RETURNING value")
        stamp = int(r[0])  # type: ignore[index]
        if tx is not None:
            tx.stamp, tx.stamp_level = stamp, len(tx.levels) - 1
        return stamp

    def close(self) -> None:
        self._pool.close()

    def size_bytes(self) -> int:
        r = self._one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (self.schema,),
        )
        return int(r[0]) if r else 0

    # ------------------------------------------------------------------ insights

    def insert_insight(self, ins: Insight, tokens: Collection[str]) -> None:
        toks = sorted(set(tokens))
        stems = _stems(ins.content, ins.tags, ins.entities)
        self._exec(
            "INSERT INTO {s}.insights (id, content, category, importance, tags, entities, source, access_count, "
            "created_at, updated_at, deleted_at, last_accessed_at, effective_importance, stored_at, terms, n_tokens, "
            "stems, n_stems) VALUES (%s,%s,%s,%s,%s::text[],%s::text[],%s,%s,%s,%s,%s,%s,%s,%s,%s::text[],%s,"
            "%s::text[],%s)",
            (
                ins.id, ins.content, str(ins.category), ins.importance, list(ins.tags), list(ins.entities),
                ins.source, ins.access_count, ins.created_at, ins.updated_at, ins.deleted_at, ins.last_accessed_at,
                ins.effective_importance, ins.stored_at, toks, len(toks), stems, len(stems),
            ),
        )
        if ins.entities:
            ents = list(dict.fromkeys(ins.entities))
            self._exec(
                "INSERT INTO {s}.insight_entities (insight_id, entity, entity_lower, created_at, seq) "
                "SELECT i.id, u.e, u.el, i.created_at, i.seq FROM {s}.insights i, "
                "unnest(%s::text[], %s::text[]) AS u(e, el) WHERE i.id = %s ON CONFLICT DO NOTHING",
                (ents, [e.lower() for e in ents], ins.id),
            )
        active = ins.deleted_at is None
        self._changed(active=int(active), graph=[ins.id], stems=len(stems) if active else 0)

    def count_active(self) -> int:
        r = self._one("SELECT value FROM {s}.mnemon_meta WHERE key = 'active'")
        return int(r[0]) if r else 0

    def iter_active(self, filters: Filters = NO_FILTERS) -> Iterator[Insight]:
        """Insertion order, fetched a page at a time (a connection is never held between pages)."""
        scope, args = where(filters)
        last = -1
        while True:
            rows = self._exec(
                f"SELECT {INSIGHT_COLS}, seq FROM {{s}}.insights WHERE {scope} AND seq > %s ORDER BY seq LIMIT %s",
                [*args, last, PAGE],
            )
            for r in rows:
                yield self._insight(r)
            if len(rows) < PAGE:
                return
            last = rows[-1][-1]

    def soft_delete(self, ids: Sequence[str], now: str) -> None:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return
        was_active = self._exec(
            "UPDATE {s}.insights i SET deleted_at = %s, updated_at = %s FROM (SELECT id, deleted_at IS NULL AS was "
            "FROM {s}.insights WHERE id = ANY(%s::text[])) o WHERE i.id = o.id RETURNING o.was, i.n_stems",
            (now, now, ids),
        )
        if self._one("SELECT 1 FROM {s}.vectors WHERE id = ANY(%s::text[]) LIMIT 1", (ids,)):
            self._exec(
                "UPDATE {s}.vectors SET active = false, vec_seq = %s WHERE id = ANY(%s::text[])", (self._stamp(), ids)
            )
        ends = self._exec(  # every neighbour's adjacency loses the edges removed here
            "DELETE FROM {s}.edges WHERE source_id = ANY(%s::text[]) OR target_id = ANY(%s::text[]) "
            "RETURNING source_id, target_id", (ids, ids)
        )
        self._changed(active=-sum(1 for r in was_active if r[0]), graph={*ids, *(i for r in ends for i in r)},
                      stems=-sum(r[1] for r in was_active if r[0]))

    def touch(self, ids: Sequence[str], now: str, inc: int = 1) -> None:
        # An id listed twice counts twice, as on SQLite.
        counts = Counter(ids)
        if not counts:
            return
        self._exec(
            "UPDATE {s}.insights i SET access_count = i.access_count + %s * v.n, "
            "last_accessed_at = greatest(i.last_accessed_at, %s) "
            "FROM unnest(%s::text[], %s::int[]) AS v(id, n) WHERE i.id = v.id",
            (inc, now, list(counts), list(counts.values())),
        )

    def set_effective_importance(self, values: dict[str, float]) -> None:
        if not values:
            return
        self._exec(
            "UPDATE {s}.insights i SET effective_importance = v.e "
            "FROM unnest(%s::text[], %s::float8[]) AS v(id, e) WHERE i.id = v.id",
            (list(values), [float(v) for v in values.values()]),
        )

    # ------------------------------------------------------------------ tokens and entities

    def token_hits(
        self, tokens: Collection[str], *, filters: Filters = NO_FILTERS, exclude: str | None = None,
        limit: int | None = None, order: str = "coverage",
    ) -> list[TokenHit]:
        """Active insights holding ≥ 1 of the tokens. With `limit`, only the best (see `Store.token_hits`)."""
        toks = sorted(set(tokens))
        if not toks:
            return []
        sql, args = self._token_matches(toks, filters, exclude)
        if limit is not None:  # ranked and cut by the server: a common token can match a large share of the store
            sql, args = f"SELECT * FROM ({sql}) m {_RANKED[order]}", [*args, *_ranked_args(order, toks, limit)]
        return [TokenHit(*r) for r in self._exec(sql, args)]

    def token_tops(self, tokens: Collection[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]]:
        toks = sorted(set(tokens))
        if not toks:
            return [], []
        sql, args = self._token_matches(toks, NO_FILTERS, None)
        # The postings are read once (the costly part: every row holding a common token) and ranked twice.
        rows = self._exec(
            f"WITH m AS MATERIALIZED ({sql}) "
            f"(SELECT 0, * FROM m {_RANKED['coverage']}) UNION ALL (SELECT 1, * FROM m {_RANKED['overlap']})",
            [*args, *_ranked_args("coverage", toks, limit), *_ranked_args("overlap", toks, limit)],
        )
        tops: tuple[list[TokenHit], list[TokenHit]] = ([], [])
        for which, *row in rows:
            tops[which].append(TokenHit(*row))
        return tops

    def _token_matches(self, toks: list[str], filters: Filters, exclude: str | None) -> tuple[str, list[Any]]:
        """SQL and arguments of (id, hits, n_tokens, importance, created_at) for every active insight holding
        one of `toks` (the GIN index finds them; `terms` holds distinct tokens, so the count of those in the
        query is the number of distinct hits)."""
        scope, args = where(filters)
        if exclude is not None:
            scope += " AND id <> %s"
            args.append(exclude)
        sql = (
            "SELECT id, (SELECT count(*) FROM unnest(terms) AS t WHERE t = ANY(%s::text[]))::int AS hits, n_tokens, "
            f"importance, created_at FROM {{s}}.insights WHERE {{s}}.term_keys(terms) && %s::text[] AND {scope}"
        )
        return sql, [toks, sorted({term_key(t) for t in toks}), *args]

    def insight_tokens(self, ids: Sequence[str]) -> dict[str, frozenset[str]]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._exec("SELECT id, terms FROM {s}.insights WHERE id = ANY(%s::text[])", (ids,))
        return {r[0]: frozenset(r[1]) for r in rows}

    def index_rows(self, ids: Sequence[str] | None = None) -> list[IndexRow]:
        return self._index_rows(self._exec, ids)

    def _index_rows(self, run: Callable[..., list[tuple[Any, ...]]], ids: Sequence[str] | None) -> list[IndexRow]:
        sql = ("SELECT id, importance, created_at, category, source, terms, stems, n_tokens FROM {s}.insights "
               "WHERE deleted_at IS NULL")
        ent = ("SELECT e.insight_id, e.entity_lower FROM {s}.insight_entities e JOIN {s}.insights i "
               "ON i.id = e.insight_id WHERE i.deleted_at IS NULL")
        if ids is None:
            rows, pairs = run(sql + " ORDER BY seq"), run(ent)
        else:
            want = list(dict.fromkeys(ids))
            rows = run(sql + " AND id = ANY(%s::text[]) ORDER BY seq", (want,))
            pairs = run(ent + " AND e.insight_id = ANY(%s::text[])", (want,))
        ents: dict[str, list[str]] = {}
        for i, e in pairs:
            ents.setdefault(i, []).append(e)
        return [IndexRow(r[0], r[1], r[2], r[3] or "general", r[4] or "", list(r[5]), ents.get(r[0], []), list(r[6]),
                         r[7]) for r in rows]

    def term_scores(self, term: str, length_cap: float | None = None) -> list[tuple[str, float]]:
        # The postings (GIN over the term keys) and the two totals come from one statement, so from one
        # snapshot; the score is computed here, bit-identical to SQLite's bm25() (`base.bm25`). Insertion
        # order, as FTS5 returns its matches.
        rows = self._exec(
            "SELECT id, cardinality(array_positions(stems, %s::text)), n_stems, "
            "(SELECT value FROM {s}.mnemon_meta WHERE key = 'active'), "
            "(SELECT value FROM {s}.mnemon_meta WHERE key = 'active_stems') FROM {s}.insights "
            "WHERE {s}.term_keys(stems) && %s::text[] AND %s::text = ANY(stems) AND deleted_at IS NULL ORDER BY seq",
            (term, [term_key(term)], term),
        )
        if not rows:
            return []
        n_docs = int(rows[0][3]) + self._pending("active")
        total = int(rows[0][4]) + self._pending("stems")
        return [(r[0], bm25(r[1], r[2], n_docs, len(rows), total, length_cap)) for r in rows]

    def source_hits(self, names: Collection[str]) -> dict[str, list[str]]:
        # SQLite's `COLLATE NOCASE` folds ASCII letters only; so does lower() under the "C" collation (the
        # name is cast to it: a parameter would take the database's collation, which may fold more).
        names = list(dict.fromkeys(names))
        if not names:
            return {}
        rows = self._exec(
            "SELECT n.name, i.id FROM unnest(%s::text[]) WITH ORDINALITY AS n(name, k) JOIN {s}.insights i "
            "ON lower(i.source) = lower(n.name COLLATE \"C\") WHERE i.deleted_at IS NULL ORDER BY n.k, i.seq",
            (names,),
        )
        out: dict[str, list[str]] = {}
        for name, id_ in rows:
            out.setdefault(name, []).append(id_)
        return out

    # ------------------------------------------------------------------ vectors

    def set_vector(self, id: str, vector: np.ndarray, model: str) -> None:
        vec = np.asarray(vector, dtype=np.float32)
        self._exec(
            "INSERT INTO {s}.vectors (id, model, embedding, active, vec_seq) "
            "SELECT id, %s, %s, deleted_at IS NULL, %s FROM {s}.insights WHERE id = %s "
            "ON CONFLICT (id) DO UPDATE SET model = EXCLUDED.model, embedding = EXCLUDED.embedding, "
            "active = EXCLUDED.active, vec_seq = EXCLUDED.vec_seq",
            (model, vec, self._stamp(), id),
        )
        self._ensure_vector_index(model, int(vec.shape[0]))

    def get_vector(self, id: str, model: str) -> np.ndarray | None:
        rows = self._exec("SELECT embedding, model FROM {s}.vectors WHERE id = %s", (id,), binary=True)
        if not rows or rows[0][1] != model:
            return None
        return np.asarray(rows[0][0], dtype=np.float32)

    def _vector_changes(self, after: int, top: int) -> Iterator[list[tuple[str, bytes | None, str | None, bool]]]:
        # Bounded by `top`: every row stamped ≤ top had committed when `top` was read. Paged by (vec_seq, id),
        # so a first load of a large store is not one huge result.
        last: tuple[int, str] = (after, "")
        while True:
            rows = self._exec(
                "SELECT id, embedding, model, active, vec_seq FROM {s}.vectors "
                "WHERE vec_seq > %s AND (vec_seq, id) > (%s, %s) AND vec_seq <= %s ORDER BY vec_seq, id LIMIT %s",
                (after, *last, top, VECTOR_PAGE), binary=True,
            )
            yield [(r[0], _blob(r[1]), r[2], r[3]) for r in rows]
            if len(rows) < VECTOR_PAGE:
                return
            last = (int(rows[-1][4]), rows[-1][0])

    def nearest(self, model: str, vector: np.ndarray, k: int, *, ef_search: int | None = None) -> list[tuple[str, float]]:
        """The k active insights of `model` closest to `vector` by cosine, best first, as (id, cosine), through
        the HNSW index of that (model, dimension) — approximate, for processes that must not hold the matrix."""
        psycopg = _psycopg()
        from psycopg import sql as q

        vec = np.asarray(vector, dtype=np.float32)
        dim = int(vec.shape[0])
        cast = q.SQL("embedding::vector({})").format(q.Literal(dim)) if dim <= HNSW_MAX_DIM else q.SQL("embedding")
        stmt = q.SQL(
            "SELECT id, 1 - ({cast} <=> %s) FROM {s}.vectors WHERE model = {m} "
            "AND vector_dims(embedding) = {d} AND active ORDER BY {cast} <=> %s LIMIT %s"
        ).format(cast=cast, s=q.Identifier(self.schema), m=q.Literal(model), d=q.Literal(dim))
        with self._conn() as conn, conn.transaction():
            conn.execute(q.SQL("SET LOCAL hnsw.ef_search = {}").format(q.Literal(max(40, ef_search or 2 * k))))
            try:
                rows = conn.execute(stmt, (vec, vec, k), prepare=False).fetchall()
            except psycopg.Error as e:
                raise StoreError(f"vector search failed: {_first_line(e)}", path=self.location) from e
        return [(r[0], float(r[1])) for r in rows]

    def ann_index(self, model: str, dim: int) -> _PgAnn | None:
        """The HNSW index as recall's vector signal for (model, dim), once it holds at least `ANN_MIN_ROWS`
        vectors (the threshold the SQLite store's index uses); below that, None: recall scans the matrix,
        exactly. A fresh process (the CLI) then asks the server for the nearest rows instead of loading them."""
        if dim > HNSW_MAX_DIM:
            return None
        r = self._one(
            "SELECT c.reltuples FROM {s}.vector_indexes v JOIN pg_class c ON c.oid = to_regclass(%s || v.index_name) "
            "WHERE v.model = %s AND v.dim = %s",
            (self._s + ".", model, dim),
        )
        # reltuples: the index's size as of its last build or ANALYZE
        if r is None or (r[0] or 0) < max(1, base.ANN_MIN_ROWS):
            return None
        return _PgAnn(self, model, dim)

    def _ensure_vector_index(self, model: str, dim: int, *, build_mem: str | None = None) -> None:
        """One partial HNSW index (cosine) per embedding model and dimension, made when its first vector is
        written (the table is then nearly empty, so the build is instant) or after a bulk load."""
        if dim > HNSW_MAX_DIM or self._indexed.get((model, dim)):
            return
        r = self._one("SELECT index_name FROM {s}.vector_indexes WHERE model = %s AND dim = %s", (model, dim))
        if r:
            self._indexed[(model, dim)] = r[0]
            return
        name = "vectors_hnsw_" + hashlib.sha1(f"{model}:{dim}".encode()).hexdigest()[:12]
        psycopg = _psycopg()
        try:
            self._create_vector_index(name, model, dim, build_mem)
        except psycopg.errors.UniqueViolation:
            pass  # another process made it between our look and our CREATE (its savepoint rolled back ours)
        self._indexed[(model, dim)] = name

    def _create_vector_index(self, name: str, model: str, dim: int, build_mem: str | None) -> None:
        from psycopg import sql as q

        with self._conn() as conn, conn.transaction():
            if build_mem:  # an HNSW build that does not fit in maintenance_work_mem slows down many times over
                conn.execute(q.SQL("SET LOCAL maintenance_work_mem = {}").format(q.Literal(build_mem)))
            conn.execute(
                q.SQL(
                    "CREATE INDEX IF NOT EXISTS {n} ON {s}.vectors USING hnsw ((embedding::vector({d})) "
                    "vector_cosine_ops) WITH (m = {m}, ef_construction = {ef}) "
                    "WHERE model = {model} AND vector_dims(embedding) = {d} AND active"
                ).format(
                    n=q.Identifier(name), s=q.Identifier(self.schema), d=q.Literal(dim), m=q.Literal(HNSW_M),
                    ef=q.Literal(HNSW_EF_CONSTRUCTION), model=q.Literal(model),
                )
            )
            conn.execute(
                self._q("INSERT INTO {s}.vector_indexes VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"),
                (model, dim, name),
            )

    def maintain_vector_index(self, model: str, dim: int) -> int:
        return 0  # the HNSW index lives in the database and follows every write

    def vector_counts(self) -> dict[str, int]:
        rows = self._exec(
            "SELECT model || ':' || vector_dims(embedding), count(*)::int FROM {s}.vectors "
            "WHERE active GROUP BY 1 ORDER BY 1"
        )
        return {r[0]: r[1] for r in rows}

    # ------------------------------------------------------------------ edges

    def upsert_edge(self, edge: Edge) -> None:
        row = (edge.source_id, edge.target_id, str(edge.edge_type), edge.weight, _jsonb(edge.metadata),
               edge.created_at)
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None:
            tx.edges.append(row)  # sent before this transaction's next statement (see `_conn`)
        else:
            self._exec(_UPSERT_EDGE, row)
        self._changed(graph=(edge.source_id, edge.target_id))

    def delete_edge(self, source_id: str, target_id: str, edge_type: str) -> None:
        self._exec(
            "DELETE FROM {s}.edges WHERE source_id = %s AND target_id = %s AND edge_type = %s",
            (source_id, target_id, str(edge_type)),
        )
        self._changed(graph=(source_id, target_id))

    def existing_edges(self, keys: Collection[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        rows = list(dict.fromkeys(keys))
        if not rows:
            return set()
        found = self._exec(
            "SELECT e.source_id, e.target_id, e.edge_type FROM unnest(%s::text[], %s::text[], %s::text[]) "
            "AS k(s, t, y) JOIN {s}.edges e ON e.source_id = k.s AND e.target_id = k.t AND e.edge_type = k.y",
            tuple(list(col) for col in zip(*rows)),
        )
        return {(r[0], r[1], r[2]) for r in found}

    def iter_edges(self) -> Iterator[Edge]:
        last: tuple[str, str, str] | None = None
        while True:
            if last is None:
                rows = self._exec(f"SELECT {EDGE_COLS} FROM {{s}}.edges ORDER BY 1, 2, 3 LIMIT %s", (PAGE,))
            else:
                rows = self._exec(
                    f"SELECT {EDGE_COLS} FROM {{s}}.edges WHERE (source_id, target_id, edge_type) > (%s, %s, %s) "
                    "ORDER BY 1, 2, 3 LIMIT %s",
                    (*last, PAGE),
                )
            for r in rows:
                yield self._edge(r)
            if len(rows) < PAGE:
                return
            last = (rows[-1][0], rows[-1][1], rows[-1][2])

    # ------------------------------------------------------------------ recall (plain tuples, no models)

    def graph_version(self) -> tuple[int, int]:
        # The committed counter moves once per transaction that changed insights or edges (any process);
        # `_gen` moves with this object's own writes and rollbacks before they commit.
        r = self._one("SELECT value FROM {s}.mnemon_meta WHERE key = 'graph'")
        return (int(r[0]) if r else 0), self._gen

    def graph_changes(self, since: Hashable, now: Hashable) -> set[str] | None:
        return None  # no journal of its own (threads share the pool): `graph_changes_since` reads the log

    def graph_changes_since(self, since: int, now: int) -> set[str] | None:
        rows = self._exec(
            "SELECT (SELECT value FROM {s}.mnemon_meta WHERE key = 'graph_log_floor'), insight_id FROM "
            "(SELECT DISTINCT insight_id FROM {s}.graph_log WHERE counter > %s AND counter <= %s) l "
            "RIGHT JOIN (SELECT 1) one ON true", (since, now)
        )
        floor = rows[0][0]
        if floor is None or since < floor or since > now:
            return None
        ids = {r[1] for r in rows if r[1] is not None}
        return None if "*" in ids else ids

    # ------------------------------------------------------------------ the graph index file (graph/fold.py)

    def _vector_file_beside(self) -> Path | None:
        return self._graph_file

    def graph_place(self) -> GraphPlace | None:
        return None if self._graph_file is None else GraphPlace(self._graph_file, shared=False)

    def graph_writes_pending(self) -> bool:
        tx: _Tx | None = getattr(self._local, "tx", None)
        return tx is not None and tx.touched

    @contextmanager
    def graph_snapshot(self) -> Iterator[GraphSnapshot]:
        psycopg = _psycopg()
        with self._pool.connection() as conn:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # one snapshot for all three
            try:
                with conn.transaction():
                    counter = int(conn.execute(self._q(
                        "SELECT coalesce((SELECT value FROM {s}.mnemon_meta WHERE key = 'graph'), 0)")).fetchone()[0])
                    rows = self._index_rows(lambda q, a=(): conn.execute(self._q(q), a).fetchall(), None)
                    yield GraphSnapshot(counter, rows, conn.execute(self._q(
                        "SELECT source_id, target_id, edge_type, weight, "
                        "CASE WHEN edge_type = 'temporal' THEN metadata->>'sub_type' END FROM {s}.edges")))
            finally:
                conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED

    # ------------------------------------------------------------------ oplog

    def in_transaction(self) -> bool:
        return getattr(self._local, "tx", None) is not None

    def _trim_at_commit(self, now: str) -> None:
        self._local.tx.trim_due = now

    def _trim_oplog(self, conn: Any, now: str) -> None:
        for sql, args in oplog_trim(self.oplog_retention, now):
            conn.execute(self._q(sql), args)

    # ------------------------------------------------------------------ copy (`mnemon migrate`)

    def dump_insights(self) -> Iterator[DumpRow]:
        """Every insight, soft-deleted ones too, in insertion order, with its tokens and vector."""
        last = -1
        while True:
            rows = self._exec(
                f"SELECT {', '.join('i.' + c for c in INSIGHT_COLUMNS)}, i.terms, v.embedding, v.model, "
                "i.seq FROM {s}.insights i LEFT JOIN {s}.vectors v ON v.id = i.id WHERE i.seq > %s "
                "ORDER BY i.seq LIMIT %s",
                (last, PAGE), binary=True,
            )
            for r in rows:
                vec = None if r[15] is None else np.asarray(r[15], dtype=np.float32)
                yield DumpRow(self._insight(r, Insight.model_construct), frozenset(r[14]), vec, r[16])
            if len(rows) < PAGE:
                return
            last = rows[-1][-1]

    def load(
        self, insights: Iterable[DumpRow], edges: Iterable[Edge], oplog: Iterable[OplogEntry],
        tails: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Bulk-copy rows into this (empty) store with binary COPY in one transaction: insights in the given
        order (their stems, term counts and the counters made on the way), oplog ids kept, the session tails.
        Vectors wait in a spool file until their insights are in; their HNSW indexes are built last."""
        import tempfile

        models: dict[tuple[str, int], int] = {}  # (model, dim) -> active vectors
        spooled: list[tuple[str, str, bool, int]] = []  # (id, model, active, dim); the floats are in `spool`
        with self.transaction(), tempfile.TemporaryFile() as spool:
            conn = self._local.tx.conn
            base = int(conn.execute(self._q("SELECT value FROM {s}.mnemon_meta WHERE key = 'vec_seq'")).fetchone()[0])
            with conn.cursor() as cur:
                rebuild = self._drop_indexes(cur)
                with cur.copy(self._q(
                    "COPY {s}.insights (id, content, category, importance, tags, entities, source, access_count, "
                    "created_at, updated_at, deleted_at, last_accessed_at, effective_importance, stored_at, terms, "
                    "n_tokens, stems, n_stems) FROM STDIN (FORMAT BINARY)"
                )) as cp:
                    cp.set_types([
                        "text", "text", "text", "int4", "text[]", "text[]", "text", "int4", "text", "text", "text",
                        "text", "float8", "text", "text[]", "int4", "text[]", "int4",
                    ])
                    for row in insights:
                        ins = row.insight
                        toks = sorted(row.tokens)
                        # Stemmed from the text, as the source store did when it stored the insight.
                        stems = _stems(ins.content, ins.tags, ins.entities)
                        cp.write_row((
                            ins.id, ins.content, str(ins.category), ins.importance, list(ins.tags),
                            list(ins.entities), ins.source, ins.access_count, ins.created_at, ins.updated_at,
                            ins.deleted_at, ins.last_accessed_at, float(ins.effective_importance), ins.stored_at,
                            toks, len(toks), stems, len(stems),
                        ))
                        if row.vector is not None:
                            vec = np.asarray(row.vector, dtype="<f4")
                            spool.write(vec.tobytes())
                            model = row.model or "unknown"
                            spooled.append((ins.id, model, ins.deleted_at is None, int(vec.shape[0])))
                            key = (model, int(vec.shape[0]))
                            models[key] = models.get(key, 0) + (ins.deleted_at is None)
                spool.seek(0)
                with cur.copy(self._q(
                    "COPY {s}.vectors (id, model, embedding, active, vec_seq) FROM STDIN (FORMAT BINARY)"
                )) as cp:
                    cp.set_types(["text", "text", "vector", "bool", "int8"])
                    for n, (id_, model, active, dim) in enumerate(spooled, start=1):
                        vec = np.frombuffer(spool.read(4 * dim), dtype="<f4")
                        cp.write_row((id_, model, vec, active, base + n))
                cur.execute(self._q(
                    "INSERT INTO {s}.insight_entities (insight_id, entity, entity_lower, created_at, seq) "
                    "SELECT DISTINCT id, e, lower(e), created_at, seq FROM {s}.insights, unnest(entities) AS e"
                ))
                _fold_entities(lambda sql, args=None: cur.execute(self._q(sql), args))
                with cur.copy(self._q(f"COPY {{s}}.edges ({EDGE_COLS}) FROM STDIN (FORMAT BINARY)")) as cp:
                    cp.set_types(["text", "text", "text", "float8", "jsonb", "text"])
                    for e in edges:
                        cp.write_row((e.source_id, e.target_id, str(e.edge_type), float(e.weight), e.metadata,
                                      e.created_at))
                with cur.copy(self._q(
                    "COPY {s}.oplog (id, operation, insight_id, detail, created_at) FROM STDIN (FORMAT BINARY)"
                )) as cp:
                    cp.set_types(["int8", "text", "text", "text", "text"])
                    for o in oplog:
                        cp.write_row((o.id, o.operation, o.insight_id, o.detail, o.created_at))
                with cur.copy(self._q(
                    "COPY {s}.conversation_tails (session, insight_id) FROM STDIN (FORMAT BINARY)"
                )) as cp:
                    cp.set_types(["text", "text"])
                    for tail in tails:
                        cp.write_row(tail)
                # Counters and identities continue after the copied rows.
                cur.execute(self._q(
                    "UPDATE {s}.mnemon_meta SET value = CASE key "
                    "WHEN 'active' THEN (SELECT count(*) FROM {s}.insights WHERE deleted_at IS NULL) "
                    "WHEN 'active_stems' THEN (SELECT coalesce(sum(n_stems), 0) FROM {s}.insights "
                    "WHERE deleted_at IS NULL) "
                    "WHEN 'vec_seq' THEN value + %s ELSE value + 1 END "
                    "WHERE key IN ('active', 'active_stems', 'vec_seq', 'graph')"
                ), (len(spooled),))
                for table, col in (("insights", "seq"), ("oplog", "id")):
                    cur.execute(self._q(
                        f"SELECT setval(pg_get_serial_sequence(%s, '{col}'), "
                        f"coalesce((SELECT max({col}) FROM {{s}}.{table}), 0) + 1, false)"
                    ), (f"{self._s}.{table}",))
                cur.execute(f"SET LOCAL maintenance_work_mem = {_literal(BULK_INDEX_MEM)}")
                for stmt in rebuild:
                    cur.execute(stmt)
        self._gen += 1
        with self._conn() as conn:
            for table in _LOADED:
                conn.execute(self._q(f"ANALYZE {{s}}.{table}"))
        for (model, dim), rows in sorted(models.items()):
            need = rows * (4 * dim + HNSW_BUILD_BYTES)
            self._ensure_vector_index(model, dim, build_mem=f"{max(64, min(need, HNSW_BUILD_MEM_MAX) >> 20)}MB")

    def _drop_indexes(self, cur: Any) -> list[str]:
        """Drop the keys, foreign keys and indexes of the tables a bulk load fills; return the statements that
        make them again. Building an index once over the loaded rows beats updating it row by row and checking a
        foreign key per row (measured: 7 % less time for the whole `mnemon migrate` at 100k insights, 9 % at 1M).
        The definitions come from the catalog, so they are the schema's own, whatever migration made them."""
        tables = [f"{self._s}.{t}" for t in _LOADED]
        cons = cur.execute(
            "SELECT conrelid::regclass::text, quote_ident(conname), pg_get_constraintdef(oid), contype "
            "FROM pg_constraint WHERE conrelid = ANY(%s::regclass[]) AND contype IN ('p', 'u', 'f') "
            "ORDER BY contype = 'f' DESC, conname",  # foreign keys go first: they depend on the keys
            (tables,),
        ).fetchall()
        idx = cur.execute(
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index i "
            "WHERE indrelid = ANY(%s::regclass[]) AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid) "
            "ORDER BY 1",
            (tables,),
        ).fetchall()
        for table, name, _, _ in cons:
            cur.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
        for name, _ in idx:
            cur.execute(f"DROP INDEX {name}")
        return [d for _, d in idx] + [f"ALTER TABLE {t} ADD CONSTRAINT {n} {d}" for t, n, d, _ in reversed(cons)]


# ---------------------------------------------------------------------------------------------- helpers


def _vector_on_path(conn: Any) -> None:
    """Put pgvector's schema on this session's search path when it is elsewhere (e.g. `extensions`)."""
    if conn.execute("SELECT to_regtype('vector')").fetchone()[0] is None:
        conn.execute(
            "SELECT set_config('search_path', current_setting('search_path') || ', ' || quote_ident(n.nspname),"
            " false) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        )


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _jsonb(value: dict[str, str]) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value)


def _blob(value: Any) -> bytes | None:
    return None if value is None else np.asarray(value, dtype="<f4").tobytes()


def _vector_text(vec: np.ndarray) -> str:
    """pgvector's text form; repr() of a float32 round-trips exactly."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vec, dtype=np.float32)) + "]"


def register_vector(conn: Any) -> None:
    """numpy float32 arrays ⇄ pgvector's `vector`, binary (4-byte header, big-endian float32) on the hot
    paths: exact, and no per-element Python work."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the pgvector extension is not installed in this database (CREATE EXTENSION vector)")
    info.register(conn)

    class TextDumper(Dumper):
        oid = info.oid
        format = Format.TEXT

        def dump(self, obj: Any) -> bytes:
            return _vector_text(obj).encode()

    class BinaryDumper(Dumper):
        oid = info.oid
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            a = np.asarray(obj, dtype=">f4")
            return struct.pack(">HH", a.shape[0], 0) + a.tobytes()

    class TextLoader(Loader):
        format = Format.TEXT

        def load(self, data: Any) -> np.ndarray:
            text = bytes(data).decode()
            return np.array([float(x) for x in text[1:-1].split(",") if x], dtype=np.float32)

    class BinaryLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> np.ndarray:
            return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)

    conn.adapters.register_dumper(np.ndarray, TextDumper)
    conn.adapters.register_dumper(np.ndarray, BinaryDumper)
    conn.adapters.register_loader(info.oid, TextLoader)
    conn.adapters.register_loader(info.oid, BinaryLoader)


# ---------------------------------------------------------------------------------------------- stores


def list_stores(url: str) -> list[str]:
    """Names of the mnemon stores in a database, sorted."""
    psycopg = _psycopg()
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        rows = conn.execute(
            "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname LIKE %s",
            (SCHEMA_PREFIX.replace("_", "\\_") + "%",),
        ).fetchall()
    prefix = "mnemon store "
    return sorted(r[0][len(prefix):] for r in rows if r[0] and r[0].startswith(prefix))


def drop_store(url: str, store: str) -> bool:
    """Drop a store's schema with everything in it; False when there was none."""
    psycopg = _psycopg()
    name = schema_name(store)
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone():
            return False
        conn.execute("SET lock_timeout = '30s'")  # fail, not hang, while a session is inside a transaction on it
        try:
            conn.execute('DROP SCHEMA "%s" CASCADE' % name.replace('"', '""'))
        except psycopg.errors.LockNotAvailable as e:
            raise StoreError(f'cannot drop store "{store}": it is in use ({_first_line(e)})') from e
    return True


# ---------------------------------------------------------------------------------------------- the backend


def open_store(settings: Settings) -> PostgresStore:
    # Long-lived processes (MCP server, framework apps) share a pool; a CLI call needs one connection.
    return PostgresStore(settings.database_url or "", store=settings.store, readonly=settings.readonly,
                         pool=settings.origin != "cli", oplog_retention=settings.oplog_retention,
                         index_dir=settings.data_dir / "graph-index")


class Schemas:
    """`Catalog` of the stores in one Postgres database: a schema each (the active-store choice stays in the
    local `active` file)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def names(self) -> list[str]:
        return list_stores(self.url)

    def exists(self, name: str) -> bool:
        return name in self.names()

    def create(self, name: str) -> None:
        PostgresStore(self.url, store=name).close()

    def remove(self, name: str) -> None:
        drop_store(self.url, name)


def catalog(settings: Settings) -> Schemas:
    return Schemas(settings.database_url or "")
