"""The embedded default store: one SQLite file per store, WAL, foreign keys, a busy timeout.

Schema as reference §2.2 plus what the Python engine adds beside it: `stored_at` (prune grace), the vector's
model and a change sequence (`vec_seq`, see `vectors.py`), each insight's distinct-token count, an
`insight_entities` index (entity edges, the entity signal, the known-entity path), an FTS5 table over the
pre-tokenised text (the spec's keyword coverage: which insights hold which query tokens), a second FTS5 table
over the stemmed terms of active insights (BM25, `bm25()`), and the last insight of each remember session
(conversation edges).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Collection, Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..config import STORE_NAME_RE, OplogRetention, Settings, create_private_file, make_private_dirs
from ..errors import StoreError
from ..models import Edge, Insight
from ..text import document, terms, token_set
from . import ann, base
from .base import NO_FILTERS, DumpRow, Filters, GraphPlace, GraphSnapshot, IndexRow, TokenHit
from .accessfile import AccessFile
from .journal import GraphJournal
from .sql import (
    EDGE_TYPE_CHECK, GRAPH_SUFFIX, INSIGHT_COLS, INSIGHT_COLUMNS, WRITE_LOCK_TIMEOUT_S, Busy, Dialect, SQLStore, in_chunks,
    json_lists, json_mapping, metadata_json, oplog_trim, where,
)
from .vectors import VectorCache, decode, encode

BUSY_TIMEOUT_MS = WRITE_LOCK_TIMEOUT_S * 1000
OPEN_RETRY_S = 0.05  # between tries of an open SQLite refused as locked
_VECTOR_CHUNK = 20_000  # rows per fetch while the vector matrix loads

DIALECT = Dialect(
    mark="?", schema="", unindexed="+", seq="rowid", arrays=False, lists=json_lists, mapping=json_mapping,
    json_text=lambda col, key: f"json_extract({col}, '$.{key}')",
    fold=lambda expr: expr,  # LIKE already folds ASCII letters only
)


# One edge per ordered pair and type; m001 creates it, m002 rebuilds an older table into it.
EDGES_DDL = """
    CREATE TABLE IF NOT EXISTS edges (
        source_id TEXT NOT NULL REFERENCES insights(id) ON DELETE CASCADE,
        target_id TEXT NOT NULL REFERENCES insights(id) ON DELETE CASCADE,
        edge_type TEXT NOT NULL """ + EDGE_TYPE_CHECK + """,
        weight REAL DEFAULT 1.0,
        metadata TEXT DEFAULT '{}',
        created_at TEXT NOT NULL,
        PRIMARY KEY (source_id, target_id, edge_type)
    )"""


def _script(db: sqlite3.Connection, sql: str) -> None:
    """Run DDL statements one by one: `executescript` would commit the migration's open transaction."""
    for stmt in sql.split(";"):
        if stmt.strip():
            db.execute(stmt)


def _m001_initial(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE TABLE IF NOT EXISTS insights (
            id TEXT PRIMARY KEY,
            content TEXT NOT NULL,
            category TEXT DEFAULT 'general',
            importance INTEGER DEFAULT 3,
            tags TEXT DEFAULT '[]',
            entities TEXT DEFAULT '[]',
            source TEXT DEFAULT 'user',
            access_count INTEGER DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            deleted_at TEXT
        );
        """ + EDGES_DDL + """;
        CREATE TABLE IF NOT EXISTS oplog (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            operation TEXT NOT NULL,
            insight_id TEXT,
            detail TEXT DEFAULT '',
            created_at TEXT NOT NULL
        );
        """
    )


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _m002_lifecycle_columns(db: sqlite3.Connection) -> None:
    """Columns later releases added: access recency, vector, cached EI, insertion time."""
    cols = _columns(db, "insights")
    for name, ddl in (
        ("last_accessed_at", "TEXT"),
        ("embedding", "BLOB"),
        ("effective_importance", "REAL DEFAULT 0.5"),
        ("stored_at", "TEXT"),
        ("embed_model", "TEXT"),
        ("vec_seq", "INTEGER"),
        ("n_tokens", "INTEGER DEFAULT 0"),
    ):
        if name not in cols:
            db.execute(f"ALTER TABLE insights ADD COLUMN {name} {ddl}")
    db.execute("UPDATE insights SET stored_at = created_at WHERE stored_at IS NULL")
    # An edges table from an older release may not accept 'supersedes' (or still accept 'narrative').
    sql = db.execute("SELECT sql FROM sqlite_master WHERE name='edges'").fetchone()[0]
    if "supersedes" not in sql or "narrative" in sql:
        _script(
            db,
            """
            DELETE FROM edges WHERE edge_type NOT IN ('temporal','semantic','causal','entity');
            ALTER TABLE edges RENAME TO edges_old;
            """ + EDGES_DDL + """;
            INSERT INTO edges SELECT * FROM edges_old;
            DROP TABLE edges_old;
            """
        )
    db.execute(
        "UPDATE insights SET deleted_at = strftime('%Y-%m-%dT%H:%M:%SZ','now') "
        "WHERE category = 'narrative' AND deleted_at IS NULL"
    )


def _m003_indexes_and_search(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE INDEX IF NOT EXISTS idx_insights_category ON insights(category);
        CREATE INDEX IF NOT EXISTS idx_insights_importance ON insights(importance);
        CREATE INDEX IF NOT EXISTS idx_insights_created_at ON insights(created_at);
        CREATE INDEX IF NOT EXISTS idx_insights_deleted_at ON insights(deleted_at);
        CREATE INDEX IF NOT EXISTS idx_insights_source ON insights(source);
        CREATE INDEX IF NOT EXISTS idx_insights_ei ON insights(effective_importance);
        CREATE INDEX IF NOT EXISTS idx_insights_stored_at ON insights(stored_at);
        CREATE INDEX IF NOT EXISTS idx_insights_vec_seq ON insights(vec_seq);
        CREATE INDEX IF NOT EXISTS idx_insights_content ON insights(content);
        CREATE INDEX IF NOT EXISTS idx_prune_candidates
            ON insights(deleted_at, importance, access_count, effective_importance);
        CREATE INDEX IF NOT EXISTS idx_edges_source_type ON edges(source_id, edge_type);
        CREATE INDEX IF NOT EXISTS idx_edges_target_type ON edges(target_id, edge_type);
        CREATE INDEX IF NOT EXISTS idx_oplog_created_at ON oplog(created_at);
        CREATE TABLE IF NOT EXISTS insight_entities (
            insight_id TEXT NOT NULL REFERENCES insights(id) ON DELETE CASCADE,
            entity TEXT NOT NULL,
            entity_lower TEXT NOT NULL,
            PRIMARY KEY (insight_id, entity)
        );
        CREATE INDEX IF NOT EXISTS idx_entities_entity ON insight_entities(entity);
        CREATE INDEX IF NOT EXISTS idx_entities_lower ON insight_entities(entity_lower);
        CREATE VIRTUAL TABLE IF NOT EXISTS insights_fts
            USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0');
        CREATE TABLE IF NOT EXISTS mnemon_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        INSERT OR IGNORE INTO mnemon_meta VALUES ('vec_seq', 0);
        """
    )
    # Backfill the side tables of rows written by an older release.
    rows = db.execute(
        "SELECT rowid, id, content, tags, entities FROM insights "
        "WHERE rowid NOT IN (SELECT rowid FROM insights_fts)"
    ).fetchall()
    for rowid, id_, content, tags, entities in rows:
        ents = json.loads(entities or "[]")
        toks = token_set(document(content, json.loads(tags or "[]"), ents))
        db.execute("INSERT INTO insights_fts(rowid, terms) VALUES (?, ?)", (rowid, " ".join(toks)))
        db.execute("UPDATE insights SET n_tokens = ? WHERE rowid = ?", (len(toks), rowid))
        db.executemany(
            "INSERT OR IGNORE INTO insight_entities VALUES (?, ?, ?)", [(id_, e, e.lower()) for e in ents]
        )
    db.execute(
        "UPDATE insights SET embed_model = 'unknown' WHERE embedding IS NOT NULL AND embed_model IS NULL"
    )


def _m004_write_path_indexes(db: sqlite3.Connection) -> None:
    """The temporal and causal builders ask for the latest insights of one source; the edge indexes on
    source_id, target_id and edge_type alone are covered by the primary key and the (target, type) index and
    only slowed every edge write."""
    _script(
        db,
        """
        CREATE INDEX IF NOT EXISTS idx_insights_source_created ON insights(source, created_at);
        DROP INDEX IF EXISTS idx_edges_source;
        DROP INDEX IF EXISTS idx_edges_target;
        DROP INDEX IF EXISTS idx_edges_type
        """,
    )


def _m005_entity_recency(db: sqlite3.Connection) -> None:
    """The entity builder asks for the latest insights naming an entity. Joined to `insights` and sorted, that
    read every insight naming a common entity (1.7 s at a million insights, one entity in five); with the
    insight's created_at and rowid beside the entity (both fixed at insert), one index walks them in order."""
    cols = _columns(db, "insight_entities")
    if "created_at" not in cols:
        db.execute("ALTER TABLE insight_entities ADD COLUMN created_at TEXT NOT NULL DEFAULT ''")
    if "seq" not in cols:
        db.execute("ALTER TABLE insight_entities ADD COLUMN seq INTEGER NOT NULL DEFAULT 0")
    _script(
        db,
        """
        UPDATE insight_entities SET (created_at, seq) =
            (SELECT i.created_at, i.rowid FROM insights i WHERE i.id = insight_entities.insight_id);
        DROP INDEX IF EXISTS idx_entities_entity;
        CREATE INDEX IF NOT EXISTS idx_entities_recent ON insight_entities(entity, created_at DESC, seq DESC)
        """,
    )


def _m006_bm25_and_conversations(db: sqlite3.Connection) -> None:
    """BM25 over stemmed terms with real term frequencies: an FTS5 table holding each active insight's terms in
    order (`text.terms`, already lower-cased and split, so the `ascii` tokenizer only splits on the spaces);
    soft-deleted insights leave it, so its row count and average length are those of the live store. A
    case-insensitive index on source (who said it counts as an entity of the query). The tail of each
    remember session (conversation edges)."""
    _script(
        db,
        """
        CREATE VIRTUAL TABLE IF NOT EXISTS insights_bm25 USING fts5(terms, tokenize = 'ascii');
        CREATE INDEX IF NOT EXISTS idx_insights_source_nocase ON insights(source COLLATE NOCASE);
        CREATE TABLE IF NOT EXISTS conversation_tails (session TEXT PRIMARY KEY, insight_id TEXT NOT NULL)
        """,
    )
    rows = db.execute(
        "SELECT rowid, content, tags, entities FROM insights WHERE deleted_at IS NULL "
        "AND rowid NOT IN (SELECT rowid FROM insights_bm25)"
    )
    db.executemany(
        "INSERT INTO insights_bm25(rowid, terms) VALUES (?, ?)",
        ((r, " ".join(terms(document(c, json.loads(t or "[]"), json.loads(e or "[]"))))) for r, c, t, e in rows),
    )


def _m007_supersedes_index(db: sqlite3.Connection) -> None:
    """Recall demotes superseded insights: finding them scanned every edge (17 ms at 10k insights, on every
    query of a fresh process). A partial index holds only `supersedes` edges; with both columns it is covering,
    which is what makes the planner (no ANALYZE statistics) prefer it to the (target, type) index."""
    db.execute(
        "CREATE INDEX IF NOT EXISTS idx_edges_supersedes ON edges(target_id, edge_type) WHERE edge_type = 'supersedes'"
    )


def _m008_requests(db: sqlite3.Connection) -> None:
    """The request ids of the resident engine's served writes (`once.py`), so a rerun writes nothing twice."""
    db.execute("CREATE TABLE IF NOT EXISTS requests (id TEXT PRIMARY KEY, created_at TEXT NOT NULL) WITHOUT ROWID")


def _m009_graph_log(db: sqlite3.Connection) -> None:
    """Which insights each committed graph change touched, by the counter it moved to: what a process holding
    the graph index file (`graph/index.py`) reads instead of the store for everything else. The log starts at the
    current counter (`graph_log_floor`: changes up to it are not logged); a random store id ties an index
    file to this store."""
    _script(
        db,
        """
        CREATE TABLE IF NOT EXISTS graph_log (counter INTEGER NOT NULL, insight_id TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS idx_graph_log_counter ON graph_log(counter)
        """,
    )
    db.execute(
        "INSERT OR IGNORE INTO mnemon_meta (key, value) "
        "SELECT 'graph_log_floor', coalesce((SELECT value FROM mnemon_meta WHERE key = 'graph'), 0)"
    )
    db.execute("INSERT OR IGNORE INTO mnemon_meta (key, value) VALUES ('store_uid', ?)",
               (int.from_bytes(os.urandom(7), "little"),))


def _m010_prune_grace_index(db: sqlite3.Connection) -> None:
    """Auto-prune runs on every remember over capacity and takes only insights stored before the grace period.
    Through the (deleted_at, importance) index it read and sorted every non-immune insight, even when none was
    old enough (5 ms a remember at 10k insights freshly imported); by the grace expression it reads only those."""
    db.execute("CREATE INDEX IF NOT EXISTS idx_prune_grace ON insights(deleted_at, COALESCE(stored_at, created_at))")


def _m011_active_counter(db: sqlite3.Connection) -> None:
    """Auto-prune asks the number of active insights on every remember: counted, that walked the deleted_at index
    (0.3 ms at 10k insights, 30 ms at a million). Triggers keep it in `mnemon_meta` as every write changes it,
    whichever statement or process does (Postgres keeps the same counter in its write path)."""
    db.execute("INSERT OR REPLACE INTO mnemon_meta (key, value) "
               "VALUES ('active', (SELECT count(*) FROM insights WHERE deleted_at IS NULL))")
    # One statement each: a trigger's body holds semicolons, which `_script` splits on.
    for name, when, change in (
        ("insert", "AFTER INSERT ON insights WHEN NEW.deleted_at IS NULL", "1"),
        ("delete", "AFTER DELETE ON insights WHEN OLD.deleted_at IS NULL", "-1"),
        ("update", "AFTER UPDATE OF deleted_at ON insights WHEN (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL)",
         "iif(NEW.deleted_at IS NULL, 1, -1)"),
    ):
        db.execute(f"CREATE TRIGGER IF NOT EXISTS insights_active_{name} {when} "
                   f"BEGIN UPDATE mnemon_meta SET value = value + {change} WHERE key = 'active'; END")


def _m012_vector_queue(db: sqlite3.Connection) -> None:
    """The insights a large import wrote without their vectors, in its batches and order (`write/importer.py`):
    the engine or `embed --all` embeds them later and adds the semantic edges the import would have."""
    _script(
        db,
        """
        CREATE TABLE IF NOT EXISTS vector_queue (
            insight_id TEXT PRIMARY KEY REFERENCES insights(id) ON DELETE CASCADE,
            batch INTEGER NOT NULL, pos INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_vector_queue_order ON vector_queue(batch, pos)
        """,
    )


MIGRATIONS = [
    _m001_initial, _m002_lifecycle_columns, _m003_indexes_and_search, _m004_write_path_indexes, _m005_entity_recency,
    _m006_bm25_and_conversations, _m007_supersedes_index, _m008_requests, _m009_graph_log, _m010_prune_grace_index,
    _m011_active_counter, _m012_vector_queue,
]


def _file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _code(e: sqlite3.Error) -> int:
    """The primary result code of an error (SQLITE_READONLY for SQLITE_READONLY_DIRECTORY, ...)."""
    return (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF


def _fts_phrase(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


# SQLite caps a compound SELECT at 500 terms; longer token lists are unions of unions.
_COMPOUND_MAX = 400


def _match_union(n: int) -> str:
    """A subquery listing the FTS rowid of every (token, insight) posting for n tokens bound in order."""
    term = "SELECT rowid AS r FROM insights_fts WHERE insights_fts MATCH ?"
    if n <= _COMPOUND_MAX:
        return " UNION ALL ".join([term] * n)
    sizes = [min(_COMPOUND_MAX, n - i) for i in range(0, n, _COMPOUND_MAX)]
    return " UNION ALL ".join(f"SELECT r FROM ({' UNION ALL '.join([term] * k)})" for k in sizes)


class SQLiteStore(SQLStore):
    """`Store` over one SQLite file. One connection; safe across processes through WAL + busy timeout."""

    dialect = DIALECT
    without_vector = "(i.embedding IS NULL OR i.embed_model IS NOT ?)"

    def __init__(
        self, path: str | Path, *, readonly: bool = False, oplog_retention: OplogRetention = OplogRetention()
    ) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.parallel_reads = False  # one connection: calls take turns on it
        self.readonly = readonly
        self.oplog_retention = oplog_retention
        self._trim_due: str | None = None  # the open transaction wrote oplog rows: trim at commit, as of then
        self._depth = 0
        self._lock = threading.RLock()
        self._vectors: dict[tuple[str, int], VectorCache] = {}
        self._vector_lock = self._lock  # the connection's lock: the cache refresh reads through it
        self._ann: dict[tuple[str, int], ann.AnnIndex] = {}  # mapped HNSW files (store/ann.py), by (model, dim)
        self._graph_gen = 0  # bumped by this connection's insight/edge writes and rollbacks (graph_version)
        self._graph_dirty = False  # the open transaction changed insights or edges
        self._journal = GraphJournal()  # which insights this connection's commits touched (graph_changes)
        self._bm25_memo: tuple[Hashable, int, int] | None = None  # (graph version, BM25 rows, their terms)
        self._pending = AccessFile(self.path)  # reads' accesses waiting for the write lock (`record_access`)
        self._ready = False  # the schema is this code's: a transaction may apply pending accesses
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self._open(readonly)
                break
            except sqlite3.Error as e:
                # SQLite answers some opens "database is locked" at once, past the busy handler (seen with
                # several processes opening a WAL database right after its writer was killed): such an
                # open is tried again, as a locked write waits, until the busy timeout.
                if _code(e) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) and time.monotonic() < deadline:
                    time.sleep(OPEN_RETRY_S)
                    continue
                # A file this user may read but not write (or create its WAL beside): say how to read it.
                unwritable = _code(e) == sqlite3.SQLITE_READONLY or (
                    _code(e) == sqlite3.SQLITE_CANTOPEN and os.access(self.path, os.R_OK))
                hint = " (--readonly reads it)" if not readonly and unwritable else ""
                raise StoreError(f"cannot open database {self.path}: {e}{hint}", path=str(self.path)) from e
            except OSError as e:  # the data directory is a file, under a file, not writable, ...
                raise StoreError(f"cannot create the store directory {self.path.parent}: {e.strerror}",
                                 path=str(self.path)) from e

    def _open(self, readonly: bool) -> None:
        """Connect (`self.db`), set the connection up, and bring the schema up to date (not when read-only)."""
        if readonly:
            if not self.path.exists():
                raise StoreError(f"database not found: {self.path}", path=str(self.path))
            self.db = self._open_readonly()
        else:
            make_private_dirs(self.path.parent)
            create_private_file(self.path)
            self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        try:
            self._file = _file_id(self.path)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA foreign_keys = ON")
            if not readonly:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")
                self.db.execute("PRAGMA cache_size = -65536")  # 64 MiB of page cache
                self._migrate()
                self._ready = True
            elif self.db.execute("PRAGMA user_version").fetchone()[0] < 100 + len(MIGRATIONS):
                raise StoreError(
                    f"{self.path} needs a schema upgrade, which --readonly cannot do: run one command on it "
                    "without --readonly (as a user who may write it)", path=str(self.path),
                )
        except BaseException:
            self.db.close()  # a failed open holds no connection (and a retry opens its own)
            raise

    def _open_readonly(self) -> sqlite3.Connection:
        """`mode=ro`. A WAL database is read through its index file (-shm); where this user cannot create it
        (a read-only mount, another user's directory, no writer connected), the file is opened `immutable`:
        read as it is on disk, without locks. A writer that starts meanwhile goes unseen until the next command;
        that is the price of reading what one may not write."""
        uri = self.path.resolve().as_uri()
        db = sqlite3.connect(uri + "?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA user_version").fetchone()
        except sqlite3.OperationalError as e:
            if _code(e) not in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN):
                raise
            db.close()
            db = sqlite3.connect(uri + "?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
        return db

    # ------------------------------------------------------------------ lifecycle

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        # The Go original sets user_version = 1 after its float32 re-encode; ours count from 100.
        done = max(0, version - 100) if version >= 100 else 0
        for n, step in enumerate(MIGRATIONS[done:], start=done + 1):
            with self.transaction():
                step(self.db)
                self.db.execute(f"PRAGMA user_version = {100 + n}")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Outermost call: BEGIN IMMEDIATE (a second writer waits on the busy timeout); inner: savepoint."""
        with self._transaction(wait=True):
            yield

    @contextmanager
    def _transaction(self, *, wait: bool) -> Iterator[None]:
        """`transaction()`; with `wait=False` a call that finds the write lock taken (this store object's, then
        the database's) raises `Busy` at once. The outermost call first applies the accesses that reads left
        pending (`record_access`)."""
        if not self._lock.acquire(blocking=wait):
            raise Busy
        try:
            name = f"sp{self._depth}"
            if self._depth == 0:
                self._begin(wait)
            else:
                self.db.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                if self._depth == 1 and self._ready:  # what reads left for the next writer comes first
                    for access in self._pending.take():
                        base.apply_access(self, access)
                yield
            except BaseException:
                self._depth -= 1
                self._forget_uncommitted()
                if self._depth == 0:
                    self._graph_dirty = False
                    self._trim_due = None
                    self._journal.abort()
                    self.db.execute("ROLLBACK")
                else:
                    self.db.execute(f"ROLLBACK TO {name}")
                    self.db.execute(f"RELEASE {name}")
                raise
            else:
                self._depth -= 1
                if self._depth == 0:
                    counter = None
                    if self._graph_dirty:
                        self._graph_dirty = False
                        counter = self._bump_graph()
                        self._log_graph(counter, self._journal.pending())
                    if self._trim_due is not None:
                        self._trim_oplog(self._trim_due)
                    try:
                        self.db.execute("COMMIT")
                    except BaseException:
                        # A failed COMMIT (a deferred constraint, a full disk) can leave the transaction open:
                        # end it, or every later transaction() fails on this connection.
                        self._journal.abort()
                        self._forget_uncommitted()
                        if self.db.in_transaction:
                            self.db.execute("ROLLBACK")
                        raise
                    if counter is None:
                        self._journal.abort()
                    else:
                        self._journal.commit(counter, self._graph_gen)
                    self._pending.applied()
                else:
                    self.db.execute(f"RELEASE {name}")
        finally:
            self._lock.release()

    def _begin(self, wait: bool = True) -> None:
        try:
            if not wait:
                self.db.execute("PRAGMA busy_timeout = 0")
            try:
                self.db.execute("BEGIN IMMEDIATE")
            finally:
                if not wait:
                    self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._journal.begin(self._graph_gen)
        except sqlite3.OperationalError as e:
            if _code(e) not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
            if not wait:
                raise Busy from None
            raise StoreError(
                f"database is locked: another process held the write lock on {self.path} longer than the "
                f"{BUSY_TIMEOUT_MS / 1000:g} s busy timeout; try again", path=str(self.path),
            ) from e

    def _forget_uncommitted(self) -> None:
        """After a rollback: caches may hold rows it removed (vectors under sequence numbers reused next, the
        ANN files' exact deltas), and readers must see a new graph version."""
        self._graph_gen += 1
        self._vectors.clear()
        self._ann.clear()

    def close(self) -> None:
        self.db.close()

    def replaced(self) -> bool:
        """The file at the store's path is no longer the one this connection opened: removed (`store remove`)
        or put in its place (a restore). A long-lived process reopens rather than write to the old file."""
        return _file_id(self.path) != self._file

    def size_bytes(self) -> int:
        """The database's own size (pages × page size): the same whether its WAL is checkpointed yet or not, so
        a long-lived connection (the resident engine) reports what a fresh process does."""
        pages, size = (self._exec(f"PRAGMA {p}")[0][0] for p in ("page_count", "page_size"))
        return int(pages) * int(size)

    # ------------------------------------------------------------------ insights

    def insert_insight(self, ins: Insight, tokens: Collection[str]) -> None:
        self._graph_write([ins.id])
        toks = set(tokens)
        cur = self.db.execute(
            "INSERT INTO insights (id, content, category, importance, tags, entities, source, access_count, "
            "created_at, updated_at, deleted_at, last_accessed_at, effective_importance, stored_at, n_tokens) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                ins.id, ins.content, str(ins.category), ins.importance,
                json.dumps(ins.tags, ensure_ascii=False), json.dumps(ins.entities, ensure_ascii=False),
                ins.source, ins.access_count, ins.created_at, ins.updated_at, ins.deleted_at,
                ins.last_accessed_at, ins.effective_importance, ins.stored_at, len(toks),
            ),
        )
        self.db.execute("INSERT INTO insights_fts(rowid, terms) VALUES (?, ?)", (cur.lastrowid, " ".join(toks)))
        if ins.deleted_at is None:
            self.db.execute(
                "INSERT INTO insights_bm25(rowid, terms) VALUES (?, ?)", (cur.lastrowid, " ".join(terms(document(ins.content, ins.tags, ins.entities))))
            )
        self.db.executemany(
            "INSERT OR IGNORE INTO insight_entities (insight_id, entity, entity_lower, created_at, seq) "
            "VALUES (?, ?, ?, ?, ?)",
            [(ins.id, e, e.lower(), ins.created_at, cur.lastrowid) for e in ins.entities],
        )

    def count_active(self) -> int:
        return self.db.execute("SELECT value FROM mnemon_meta WHERE key = 'active'").fetchone()[0]

    def iter_active(self, filters: Filters = NO_FILTERS) -> Iterator[Insight]:
        sql, args = where(filters)
        # A cursor, not `_exec`: the rows stream.
        cur = self.db.execute(DIALECT.render(f"SELECT {INSIGHT_COLS} FROM insights WHERE {sql} ORDER BY rowid"), args)
        for r in cur:
            yield self._insight(r)

    def soft_delete(self, ids: Sequence[str], now: str) -> None:
        with self.transaction():  # one commit, so the neighbours found by the DELETE join its journal entry
            self._graph_write(ids)
            for id_ in ids:
                seq = self._next_vec_seq()
                self.db.execute(
                    "UPDATE insights SET deleted_at = ?, updated_at = ?, "
                    "vec_seq = CASE WHEN embedding IS NULL THEN vec_seq ELSE ? END WHERE id = ?",
                    (now, now, seq, id_),
                )
                self.db.execute(
                    "DELETE FROM insights_bm25 WHERE rowid = (SELECT rowid FROM insights WHERE id = ?)", (id_,)
                )
                # Every neighbour's adjacency list loses the edges removed here.
                for row in self.db.execute(
                    "DELETE FROM edges WHERE source_id = ? OR target_id = ? RETURNING source_id, target_id", (id_, id_)
                ).fetchall():
                    self._journal.touch(row)

    def touch(self, ids: Sequence[str], now: str, inc: int = 1) -> None:
        self.db.executemany(
            "UPDATE insights SET access_count = access_count + ?, "
            "last_accessed_at = max(coalesce(last_accessed_at, ''), ?) WHERE id = ?",
            [(inc, now, i) for i in ids],
        )

    def _keep(self, access: base.Access) -> None:
        """In the file beside the database (`accessfile.py`), for the next write transaction of any process."""
        try:
            self._pending.add(access)
        except OSError as e:
            raise StoreError(f"cannot keep the access for the next writer in {self._pending.path}: {e.strerror}",
                             path=str(self.path)) from e

    def set_effective_importance(self, values: dict[str, float]) -> None:
        self.db.executemany(
            "UPDATE insights SET effective_importance = ? WHERE id = ?", [(v, k) for k, v in values.items()]
        )

    # ------------------------------------------------------------------ tokens and entities

    def token_hits(
        self, tokens: Collection[str], *, filters: Filters = NO_FILTERS, exclude: str | None = None,
        limit: int | None = None, order: str = "coverage",
    ) -> list[TokenHit]:
        toks = sorted(set(tokens))
        if not toks:
            return []
        union = _match_union(len(toks))
        scope, args = where(filters, "i")
        if exclude is not None:
            scope += " AND i.id != ?"
            args.append(exclude)
        # Count postings per insight first, then join each counted insight once.
        sql = (
            f"SELECT i.id, m.hits, i.n_tokens, i.importance, i.created_at FROM "
            f"(SELECT r, count(*) AS hits FROM ({union}) GROUP BY r) m "
            f"JOIN insights i ON i.rowid = m.r WHERE {scope}"
        )
        tail: list[object] = []
        if limit is not None:
            # Ranked and cut by SQLite, so that a common token matching thousands of rows does not cost
            # thousands of Python objects.
            if order == "overlap":
                sql += " ORDER BY CAST(m.hits AS REAL) / max(1, min(?, i.n_tokens)) DESC, i.id ASC LIMIT ?"
                tail = [len(toks), limit]
            else:
                sql += " ORDER BY m.hits DESC, i.importance DESC, i.created_at DESC, i.id ASC LIMIT ?"
                tail = [limit]
        return [TokenHit(*r) for r in self._exec(sql, [*map(_fts_phrase, toks), *args, *tail])]

    def token_tops(self, tokens: Collection[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]]:
        toks = sorted(set(tokens))
        if not toks:
            return [], []
        scope, args = where(NO_FILTERS, "i")
        # The postings are counted once (the costly part) and ranked twice.
        sql = (
            f"WITH j AS MATERIALIZED (SELECT i.id, m.hits, i.n_tokens, i.importance, i.created_at FROM "
            f"(SELECT r, count(*) AS hits FROM ({_match_union(len(toks))}) GROUP BY r) m "
            f"JOIN insights i ON i.rowid = m.r WHERE {scope}) "
            "SELECT 0, * FROM (SELECT * FROM j ORDER BY hits DESC, importance DESC, created_at DESC, id ASC LIMIT ?) "
            "UNION ALL SELECT 1, * FROM (SELECT * FROM j "
            "ORDER BY CAST(hits AS REAL) / max(1, min(?, n_tokens)) DESC, id ASC LIMIT ?)"
        )
        tops: tuple[list[TokenHit], list[TokenHit]] = ([], [])
        for which, *row in self._exec(sql, [*map(_fts_phrase, toks), *args, limit, len(toks), limit]):
            tops[which].append(TokenHit(*row))
        return tops

    def insight_tokens(self, ids: Sequence[str]) -> dict[str, frozenset[str]]:
        out: dict[str, frozenset[str]] = {}
        ids = list(dict.fromkeys(ids))
        for chunk, q in in_chunks(ids, 900):
            for id_, terms in self.db.execute(
                f"SELECT i.id, f.terms FROM insights i JOIN insights_fts f ON f.rowid = i.rowid "
                f"WHERE i.id IN ({q})",
                chunk,
            ):
                out[id_] = frozenset(terms.split())
        return out

    def term_scores(self, term: str, length_cap: float | None = None) -> list[tuple[str, float]]:
        # bm25() of a one-term query is that term's share of any query's score (FTS5 sums over the terms),
        # so recall can memoise it per term. FTS5 returns it negated (lower is better).
        if length_cap is None:
            rows = self.db.execute(
                "SELECT i.id, -bm25(insights_bm25) FROM insights_bm25 JOIN insights i "
                "ON i.rowid = insights_bm25.rowid WHERE insights_bm25 MATCH ?",
                (_fts_phrase(term),),
            )
            return rows.fetchall()
        # FTS5's bm25() takes no cap: the same formula here, over the terms it holds and its row and term counts.
        hits = self.db.execute(
            "SELECT i.id, insights_bm25.terms FROM insights_bm25 JOIN insights i ON i.rowid = insights_bm25.rowid "
            "WHERE insights_bm25 MATCH ?",
            (_fts_phrase(term),),
        ).fetchall()
        if not hits:
            return []
        n_docs, total = self._bm25_totals()
        held = [t.split() for _, t in hits]
        return [(id_, base.bm25(ts.count(term), len(ts), n_docs, len(hits), total, length_cap))
                for (id_, _), ts in zip(hits, held)]

    def _bm25_totals(self) -> tuple[int, int]:
        """(rows, terms) of the BM25 table, as FTS5's bm25() counts them; once per graph version."""
        version = self.graph_version()
        if self._bm25_memo is None or self._bm25_memo[0] != version:
            n, total = self.db.execute(
                "SELECT count(*), coalesce(sum(length(terms) - length(replace(terms, ' ', '')) + (terms <> '')), 0) "
                "FROM insights_bm25"
            ).fetchone()
            self._bm25_memo = (version, int(n), int(total))
        return self._bm25_memo[1], self._bm25_memo[2]

    def source_hits(self, names: Collection[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name in dict.fromkeys(names):
            ids = [r[0] for r in self.db.execute(
                "SELECT id FROM insights WHERE source = ? COLLATE NOCASE AND +deleted_at IS NULL", (name,)
            )]
            if ids:
                out[name] = ids
        return out

    # ------------------------------------------------------------------ vectors

    def _next_vec_seq(self) -> int:
        return self.db.execute(
            "UPDATE mnemon_meta SET value = value + 1 WHERE key = 'vec_seq' RETURNING value"
        ).fetchone()[0]

    def set_vector(self, id: str, vector: np.ndarray, model: str) -> None:
        seq = self._next_vec_seq()
        self.db.execute(
            "UPDATE insights SET embedding = ?, embed_model = ?, vec_seq = ? WHERE id = ?",
            (encode(vector), model, seq, id),
        )

    def get_vector(self, id: str, model: str) -> np.ndarray | None:
        r = self.db.execute(
            "SELECT embedding, embed_model FROM insights WHERE id = ? AND embedding IS NOT NULL", (id,)
        ).fetchone()
        if not r or r[1] != model:
            return None
        return decode(r[0])

    def _vector_changes(self, after: int, top: int) -> Iterator[list[tuple[str, bytes | None, str | None, bool]]]:
        cur = self.db.execute(
            "SELECT id, embedding, embed_model, deleted_at IS NULL FROM insights WHERE vec_seq > ? ORDER BY vec_seq",
            (after,),
        )
        # In chunks: a first load of a million vectors must not hold every blob at once as well.
        while rows := cur.fetchmany(_VECTOR_CHUNK):
            yield [(r[0], r[1], r[2], bool(r[3])) for r in rows]

    def _vector_file_beside(self) -> Path:
        return self.path

    def ann_index(self, model: str, dim: int) -> ann.AnnIndex | None:
        """The HNSW index beside this database (`store/ann.py`) when it can serve recall's vector signal for
        (model, dim): usearch installed, the file built, at least `ANN_MIN_ROWS` vectors. None: exact scan."""
        with self._lock:
            idx = self._ann.get((model, dim))
            if idx is None:
                if not ann.available():
                    return None
                # Kept while unusable too: a small store asks on every recall and remember, and making one
                # (the module lookup, the path's hash) costs more than the stat `open` repeats.
                idx = self._ann[(model, dim)] = ann.AnnIndex(self.db, self.path, model, dim)
            try:
                return idx if idx.open() and idx.size() >= base.ANN_MIN_ROWS else None
            except (OSError, ValueError, RuntimeError):  # unreadable or foreign: the exact scan still works
                return None

    def maintain_vector_index(self, model: str, dim: int) -> int:
        """Build or refresh the HNSW file when usearch is installed and the model has `ANN_MIN_ROWS` vectors;
        returns the rows written or folded in (0: nothing to do, recall keeps the exact scan)."""
        if not ann.available():
            return 0
        n = self.db.execute(
            "SELECT count(*) FROM insights WHERE embed_model = ? AND deleted_at IS NULL AND length(embedding) = ?",
            (model, 4 * dim),
        ).fetchone()[0]
        if n < base.ANN_MIN_ROWS:
            return 0
        with self._lock:
            self._ann.pop((model, dim), None)  # reopened on the next recall
            return ann.AnnIndex(self.db, self.path, model, dim).refresh()

    def vector_counts(self) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT embed_model || ':' || (length(embedding) / 4), count(*) FROM insights "
            "WHERE deleted_at IS NULL AND embedding IS NOT NULL GROUP BY 1"
        )
        return dict(rows.fetchall())

    # ------------------------------------------------------------------ edges

    def upsert_edge(self, edge: Edge) -> None:
        self.upsert_edges([edge])

    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        self._graph_write([i for e in edges for i in (e.source_id, e.target_id)])
        self.db.executemany(
            # An upsert, not INSERT OR REPLACE: with foreign keys on, REPLACE deletes and re-inserts.
            "INSERT INTO edges (source_id, target_id, edge_type, weight, metadata, created_at) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT (source_id, target_id, edge_type) DO UPDATE SET weight = excluded.weight, "
            "metadata = excluded.metadata, created_at = excluded.created_at",
            [
                (e.source_id, e.target_id, str(e.edge_type), e.weight,
                 metadata_json(e.metadata), e.created_at)
                for e in edges
            ],
        )

    def existing_edges(self, keys: Collection[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        found: set[tuple[str, str, str]] = set()
        rows = list(dict.fromkeys(keys))
        for i in range(0, len(rows), 300):  # 900 bound parameters per statement
            chunk = rows[i : i + 300]
            values = ",".join(["(?,?,?)"] * len(chunk))
            found.update(self.db.execute(
                f"WITH k(s, t, y) AS (VALUES {values}) SELECT e.source_id, e.target_id, e.edge_type FROM k "
                "JOIN edges e ON e.source_id = k.s AND e.target_id = k.t AND e.edge_type = k.y",
                [x for key in chunk for x in key],
            ))
        return found

    def iter_edges(self) -> Iterator[Edge]:
        for r in self.db.execute(
            "SELECT source_id, target_id, edge_type, weight, metadata, created_at FROM edges "
            "ORDER BY source_id, target_id, edge_type"
        ):
            yield self._edge(r)

    def delete_edge(self, source_id: str, target_id: str, edge_type: str) -> None:
        self._graph_write([source_id, target_id])
        self.db.execute(
            "DELETE FROM edges WHERE source_id = ? AND target_id = ? AND edge_type = ?",
            (source_id, target_id, edge_type),
        )

    # ------------------------------------------------------------------ recall (plain tuples, no models)

    def graph_version(self) -> tuple[int, int]:
        # The committed 'graph' counter moves once per transaction that changed insights or edges (any
        # process; access bumps and the oplog leave it alone); _graph_gen with this connection's own writes
        # before they commit. A read-only legacy file without mnemon_meta falls back to data_version.
        try:
            r = self.db.execute("SELECT value FROM mnemon_meta WHERE key = 'graph'").fetchone()
            committed = r[0] if r else 0
        except sqlite3.OperationalError:
            committed = -self.db.execute("PRAGMA data_version").fetchone()[0]
        return committed, self._graph_gen

    def graph_changes(self, since: Hashable, now: Hashable) -> set[str] | None:
        return self._journal.changes(since, now)

    def _graph_write(self, ids: Sequence[str]) -> None:
        if self._depth == 0:  # a write outside transaction(): publish it now, as a commit of its own
            self._journal.begin(self._graph_gen)
            self._graph_gen += 1
            self._journal.touch(ids)
            counter = self._bump_graph()
            self._log_graph(counter, self._journal.pending())
            self._journal.commit(counter, self._graph_gen)
        else:
            self._graph_gen += 1
            self._journal.touch(ids)
            self._graph_dirty = True

    def _log_graph(self, counter: int, ids: frozenset[str] | None) -> None:
        """The change log row(s) of the commit moving the counter to `counter` ('*': it touched too many)."""
        self.db.executemany("INSERT INTO graph_log VALUES (?, ?)", [(counter, i) for i in (("*",) if ids is None else ids)])

    def graph_changes_since(self, since: int, now: int) -> set[str] | None:
        floor = self._meta("graph_log_floor")
        if floor is None or since < floor or since > now:
            return None
        ids = {r[0] for r in self.db.execute(
            "SELECT insight_id FROM graph_log WHERE counter > ? AND counter <= ?", (since, now))}
        return None if "*" in ids else ids

    # ------------------------------------------------------------------ the graph index file (graph/fold.py)

    def graph_place(self) -> GraphPlace:
        return GraphPlace(self.path.with_name(self.path.name + GRAPH_SUFFIX), shared=True)

    def graph_writes_pending(self) -> bool:
        with self._lock:  # another thread's open transaction on this connection ends first
            return self._graph_dirty

    @contextmanager
    def graph_snapshot(self) -> Iterator[GraphSnapshot]:
        with self._lock:
            self.db.execute("BEGIN")  # one snapshot: the counter, the rows and the edges agree
            try:
                yield GraphSnapshot(self.graph_version()[0], self.index_rows(), self.db.execute(
                    "SELECT source_id, target_id, edge_type, weight, CASE WHEN edge_type = 'temporal' "
                    "THEN json_extract(metadata, '$.sub_type') END FROM edges"
                ))
            finally:
                self.db.execute("COMMIT")

    def write_vector_files(self, min_rows: int, *, missing_only: bool) -> None:
        with self._lock:
            self.db.execute("BEGIN")  # the vectors at one vec_seq
            try:
                super().write_vector_files(min_rows, missing_only=missing_only)
            finally:
                self.db.execute("COMMIT")

    def index_rows(self, ids: Sequence[str] | None = None) -> list[IndexRow]:
        """Every active insight (or the active ones among ids) as the graph index holds it."""
        sql = (
            "SELECT i.id, i.importance, i.created_at, i.category, i.source, "
            "(SELECT terms FROM insights_fts WHERE rowid = i.rowid), "
            "(SELECT terms FROM insights_bm25 WHERE rowid = i.rowid), i.n_tokens FROM insights i "
            "WHERE +i.deleted_at IS NULL"  # unary +: the id index, not a scan of every active row (sql.where)
        )
        ent = "SELECT e.insight_id, e.entity_lower FROM insight_entities e"
        rows: list[tuple[Any, ...]] = []
        ents: dict[str, list[str]] = {}
        if ids is None:
            rows = self.db.execute(sql).fetchall()
            for i, e in self.db.execute(ent):
                ents.setdefault(i, []).append(e)
        else:
            for chunk, q in in_chunks(list(dict.fromkeys(ids)), 900):
                rows += self.db.execute(f"{sql} AND i.id IN ({q})", chunk).fetchall()
                for i, e in self.db.execute(f"{ent} WHERE e.insight_id IN ({q})", chunk):
                    ents.setdefault(i, []).append(e)
        return [
            IndexRow(r[0], r[1], r[2], r[3] or "general", r[4] or "", (r[5] or "").split(), ents.get(r[0], []),
                            None if r[6] is None else r[6].split(), r[7] or 0)
            for r in rows
        ]

    def _bump_graph(self) -> int:
        """Move the committed 'graph' counter; its new value."""
        return self.db.execute(
            "INSERT INTO mnemon_meta (key, value) VALUES ('graph', 1) "
            "ON CONFLICT(key) DO UPDATE SET value = value + 1 RETURNING value"
        ).fetchone()[0]

    # ------------------------------------------------------------------ oplog

    def in_transaction(self) -> bool:
        return self._depth > 0

    def _trim_at_commit(self, now: str) -> None:
        self._trim_due = now

    def _trim_oplog(self, now: str) -> None:
        self._trim_due = None
        for sql, args in oplog_trim(self.oplog_retention, now):
            self.db.execute(DIALECT.render(sql), args)

    # ------------------------------------------------------------------ copy (`mnemon migrate`)

    def dump_insights(self) -> Iterator[DumpRow]:
        """Every insight in rowid order with its tokens and vector. A blob that is not whole float32 values is
        dropped."""
        cols = ", ".join("i." + c for c in INSIGHT_COLUMNS)
        cur = self.db.execute(
            f"SELECT {cols}, f.terms, i.embedding, i.embed_model FROM insights i "
            "LEFT JOIN insights_fts f ON f.rowid = i.rowid ORDER BY i.rowid"
        )
        for r in cur:
            ins = self._insight(r, Insight.model_construct)
            if r[14] is None:
                toks = token_set(document(ins.content, ins.tags, ins.entities))
            else:
                toks = frozenset(r[14].split())
            blob = r[15]
            vec = np.frombuffer(blob, dtype="<f4").astype(np.float32) if blob and len(blob) % 4 == 0 else None
            yield DumpRow(ins, toks, vec, r[16] if vec is not None else None)

    def dump_tails(self) -> Iterator[tuple[str, str]]:
        # None from a file older than the table (a read-only source is not migrated).
        if self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'conversation_tails'").fetchone():
            yield from super().dump_tails()

    # ------------------------------------------------------------------ statements

    def _exec(self, sql: str, args: Sequence[Any] = (), *, binary: bool = False) -> list[tuple[Any, ...]]:
        return self.db.execute(DIALECT.render(sql), args).fetchall()


# ---------------------------------------------------------------------------------------------- the backend


def open_store(settings: Settings) -> SQLiteStore:
    migrate_legacy(settings)
    return SQLiteStore(settings.db_path, readonly=settings.readonly, oplog_retention=settings.oplog_retention)


def list_stores(data_dir: Path) -> list[str]:
    """The store directories under `<data-dir>/data/`, sorted."""
    root = data_dir / "data"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and STORE_NAME_RE.fullmatch(p.name))


class Directories:
    """`Catalog` of the stores under a data dir: one directory each, holding its `mnemon.db`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir

    def names(self) -> list[str]:
        return list_stores(self.data_dir)

    def exists(self, name: str) -> bool:
        return (self.data_dir / "data" / name).is_dir()

    def create(self, name: str) -> None:
        SQLiteStore(self.data_dir / "data" / name / "mnemon.db").close()

    def remove(self, name: str) -> None:
        shutil.rmtree(self.data_dir / "data" / name)


def catalog(settings: Settings) -> Directories:
    return Directories(settings.data_dir)


def migrate_legacy(settings: Settings) -> None:
    """A pre-store `<data-dir>/mnemon.db` moves to `data/default/mnemon.db` (with -wal, -shm)."""
    legacy = settings.data_dir / "mnemon.db"
    target = settings.data_dir / "data" / "default" / "mnemon.db"
    if settings.readonly or not legacy.exists() or target.exists():
        return
    make_private_dirs(target.parent)
    for suffix in ("", "-wal", "-shm"):
        src = legacy.with_name("mnemon.db" + suffix)
        if src.exists():
            src.rename(target.with_name("mnemon.db" + suffix))
    from ..console import err

    print(f"mnemon: migrated database to {target}", file=err())
