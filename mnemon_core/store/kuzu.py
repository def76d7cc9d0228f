"""The graph-database store: Kùzu, embedded, spoken to in Cypher (`store/cypher.py`); extra `mnemon-core[kuzu]`.

Selected by `MNEMON_DATABASE_URL=kuzu:///abs/dir` (or `--database-url`). Each store is one Kùzu database in that
directory, `<dir>/<store>.kuzu`, so stores are isolated from each other as Postgres schemas are in one database.

What is Kùzu's own: its schema (typed node and relationship tables, `KUZU.schema`), `label(e)` for a
relationship's type, `BEGIN TRANSACTION` / `COMMIT` / `ROLLBACK` on a connection, and its file lock: one process
holds a database for writing, or several for reading while nobody writes. A process that finds it held waits for it
and asks the resident engine to let it go (`store/holder.py`), then fails with one "locked" line. Inside a process
every store object of one database shares its `kuzu.Database`, connection and lock (`Shared`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..config import STORE_NAME_RE, OplogRetention, Settings
from ..errors import StoreError, import_extra
from ..models import Edge, OplogEntry
from ..text import document, terms
from .base import DumpRow
from .cypher import LABELS, PAGE, SCHEMA_VERSION, CypherDialect, CypherStore, Shared, _insight_params
from .holder import open_held

SCHEME = "kuzu://"
SUFFIX = ".kuzu"
BUFFER_POOL_BYTES = 1 << 30  # page cache per open database (Kùzu's default is most of the machine's memory)
MAX_DB_BYTES = 1 << 40  # address space reserved per open database (the default 8 TiB allows ~16 at once)
# One thread per query: mnemon's queries are small (threads cost more than they save), and with several an
# aggregate over a UNION ALL now and then came back with a row of another branch (Kùzu 0.11.3).
QUERY_THREADS = 1

_EDGE_PROPS = "weight DOUBLE, metadata STRING, created_at STRING"
KUZU = CypherDialect(
    type_of=lambda e: f"label({e})",
    schema=(
        "CREATE NODE TABLE Insight(id STRING PRIMARY KEY, seq INT64, content STRING, category STRING, "
        "importance INT64, tags STRING[], entities STRING[], source STRING, access_count INT64, created_at STRING, "
        "updated_at STRING, deleted_at STRING, last_accessed_at STRING, effective_importance DOUBLE, "
        "stored_at STRING, terms STRING[], stems STRING[], embedding FLOAT[], embed_model STRING, vec_seq INT64)",
        *(f"CREATE REL TABLE {label}(FROM Insight TO Insight, {_EDGE_PROPS})" for label in LABELS.values()),
        "CREATE NODE TABLE Oplog(id INT64 PRIMARY KEY, operation STRING, insight_id STRING, detail STRING, "
        "created_at STRING)",
        "CREATE NODE TABLE Tail(session STRING PRIMARY KEY, insight_id STRING)",
        "CREATE NODE TABLE Meta(key STRING PRIMARY KEY, value INT64)",
        "CREATE NODE TABLE Request(id STRING PRIMARY KEY, created_at STRING)",
    ),
    tables="CALL show_tables() RETURN name",
    per_type=True,
    # Each through the primary key. Not `WHERE i.id IN $ids`: in Kùzu 0.11.3 that scan returns garbled strings of a
    # node written in the open transaction (one longer than every committed one in the column).
    by_id="UNWIND $ids AS x MATCH (i:Insight {id: x})",
    ann_schema=lambda label, dim: (
        f"CREATE NODE TABLE {label}(id STRING PRIMARY KEY, v FLOAT[{dim}])",
        f"CALL CREATE_VECTOR_INDEX('{label}', 'hnsw', 'v', metric := 'cosine')",
    ),
    ann_query=lambda label: f"CALL QUERY_VECTOR_INDEX('{label}', 'hnsw', $q, $k) RETURN node.id, distance",
)


def _kuzu() -> Any:
    return import_extra("kuzu", "kuzu")


def directory(url: str) -> Path:
    """The directory a `kuzu:///abs/dir` URL names."""
    path = url[len(SCHEME):] if url.startswith(SCHEME) else ""
    if not path.startswith("/"):
        raise StoreError(f"a Kùzu URL names an absolute directory, kuzu:///abs/dir; got {url!r}")
    return Path(path)


# ---------------------------------------------------------------------------------------------- databases

_open: dict[Path, tuple[Any, Shared, bool]] = {}  # path → (kuzu.Database, its Shared, read-only)
_open_lock = threading.Lock()


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _database(path: Path, readonly: bool, data_dir: str | None) -> Any:
    """A `kuzu.Database`, waiting for another process to let the file go (`store/holder.py`)."""
    kuzu = _kuzu()

    def database() -> Any:
        try:
            return kuzu.Database(str(path), read_only=readonly, buffer_pool_size=BUFFER_POOL_BYTES,
                                 max_db_size=MAX_DB_BYTES, max_num_threads=QUERY_THREADS)
        except RuntimeError as e:
            if "Could not set lock" in str(e):
                raise
            raise StoreError(f"cannot open database {path}: {_first_line(e)}", path=str(path)) from e

    return open_held(database, lambda e: "Could not set lock" in str(e), str(path), "Kùzu", data_dir)


def _attach(path: Path, readonly: bool, data_dir: str | None) -> Shared:
    """This process's `Shared` of the database at path, opening it. A database this process holds read-only
    is reopened for writing when a writer comes (the resident engine serves `--readonly` and other calls alike);
    its read-only store objects go on over the new connection, their transactions read-only."""
    kuzu = _kuzu()
    with _open_lock:
        entry = _open.get(path)
        if entry is not None:
            db, shared, ro = entry
            if ro and not readonly:
                with shared.lock:
                    shared.conn.close()
                    db.close()
                    try:
                        db = _database(path, False, data_dir)
                    except BaseException:
                        db = _database(path, True, data_dir)  # as it was
                        shared.conn = kuzu.Connection(db)
                        _open[path] = (db, shared, True)
                        raise
                    shared.conn = kuzu.Connection(db)
                    shared.prepared.clear()  # prepared on the closed connection
                    _open[path] = (db, shared, False)
            shared.handles += 1
            return shared
        db = _database(path, readonly, data_dir)
        shared = Shared(kuzu.Connection(db))
        shared.handles = 1
        _open[path] = (db, shared, readonly)
        return shared


def _detach(path: Path) -> None:
    with _open_lock:
        entry = _open.get(path)
        if entry is None:
            return
        entry[1].handles -= 1
        if entry[1].handles <= 0:
            del _open[path]
            entry[1].conn.close()
            entry[0].close()


# ---------------------------------------------------------------------------------------------- the store


class KuzuStore(CypherStore):
    """`Store` over one Kùzu database file."""

    dialect = KUZU

    def __init__(
        self, path: str | Path, *, readonly: bool = False, oplog_retention: OplogRetention = OplogRetention(),
        label: str | None = None, data_dir: str | None = None,
    ) -> None:
        """`data_dir`: whose resident engines are asked to let the file go when it is held (`store/holder.py`)."""
        super().__init__()
        self.path = Path(path)
        self.readonly = readonly
        self.oplog_retention = oplog_retention
        self.location = label or str(self.path)
        if readonly and not self.path.exists():
            raise StoreError(f"database not found: {self.path}", path=str(self.path))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the store directory {self.path.parent}: {e.strerror}",
                             path=str(self.path)) from e
        self.shared = _attach(self.path, readonly, data_dir)
        self._file = _file_id(self.path)
        self._closed = False
        try:
            self._bootstrap()
        except BaseException:
            self.close()
            raise

    def _bootstrap(self) -> None:
        """Make the schema of a new database; refuse one a newer mnemon made."""
        with self.shared.lock:
            tables = {r[0] for r in self._run(self.dialect.tables)}
            if "Meta" in tables:
                rows = self._run("MATCH (m:Meta {key: 'schema'}) RETURN m.value")
                version = int(rows[0][0]) if rows else 0
                if version > SCHEMA_VERSION:
                    raise StoreError(f"{self.path} was made by a newer mnemon (schema {version}); upgrade mnemon",
                                     path=str(self.path))
                return
            if self.readonly:
                raise StoreError(f"{self.path} is not a mnemon store", path=str(self.path))
            with self.transaction():
                for stmt in self.dialect.schema:
                    self._run(stmt, prepare=False)
                self._run("CREATE (:Meta {key: 'schema', value: $v})", {"v": SCHEMA_VERSION})

    # ------------------------------------------------------------------ statements and transactions

    def _run(self, query: str, params: dict[str, Any] | None = None, *, prepare: bool = True) -> list[list[Any]]:
        """One statement, prepared once per process and reused (preparing costs more than running most of
        mnemon's: 10.5 ms vs 1.5 ms for an edge upsert); `prepare=False` for transaction control and DDL."""
        conn = self.shared.conn
        try:
            if prepare:
                statement = self.shared.prepared.get(query)
                if statement is None:
                    with warnings.catch_warnings():  # "use execute()": which prepares on every call
                        warnings.simplefilter("ignore", DeprecationWarning)
                        statement = self.shared.prepared[query] = conn.prepare(query)
                result = conn.execute(statement, params or {})
            else:
                result = conn.execute(query, params or {})
        except RuntimeError as e:
            if str(e).startswith("IO exception"):  # the disk, not mnemon
                raise StoreError(f"database error: {_first_line(e)}", path=str(self.path)) from e
            raise
        try:
            return result.get_all()
        finally:
            result.close()

    def _begin(self) -> None:
        self._run("BEGIN TRANSACTION READ ONLY" if self.readonly else "BEGIN TRANSACTION", prepare=False)

    def _commit(self) -> None:
        self._run("COMMIT", prepare=False)

    def _rollback(self) -> None:
        try:
            self._run("ROLLBACK", prepare=False)
        except RuntimeError as e:
            if "No active transaction" not in str(e):
                raise

    def close(self) -> None:
        if not self._closed:
            if self.shared.pending and not self.readonly:  # reads' accesses no transaction applied yet
                with self.transaction():
                    pass
            self._closed = True
            _detach(self.path)

    def replaced(self) -> bool:
        """The file at the store's path is no longer the one opened (removed, or restored over)."""
        return _file_id(self.path) != self._file

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.path, self.path.with_name(self.path.name + ".wal")) if p.exists())

    # ------------------------------------------------------------------ copy into (`mnemon migrate`)

    def load(
        self, insights: Iterable[DumpRow], edges: Iterable[Edge], oplog: Iterable[OplogEntry],
        tails: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Copy `Dump`'s rows into this empty store in one transaction, a page of rows per statement."""
        with self.transaction():
            self._graph_write(None)
            seq = 0
            for page in _pages(insights):
                rows = []
                for row in page:
                    seq += 1
                    ins = row.insight
                    vec = None if row.vector is None else [float(x) for x in row.vector]
                    rows.append({**_insight_params(ins), "seq": seq, "terms": sorted(row.tokens),
                                 "stems": terms(document(ins.content, ins.tags, ins.entities)), "embedding": vec,
                                 "embed_model": (row.model or "unknown") if vec is not None else None,
                                 "vec_seq": seq if vec is not None else None})
                self._run(
                    "UNWIND $rows AS r CREATE (:Insight {id: r.id, seq: r.seq, content: r.content, "
                    "category: r.category, importance: r.importance, tags: r.tags, entities: r.entities, "
                    "source: r.source, access_count: r.access_count, created_at: r.created_at, "
                    "updated_at: r.updated_at, deleted_at: r.deleted_at, last_accessed_at: r.last_accessed_at, "
                    "effective_importance: r.ei, stored_at: r.stored_at, terms: r.terms, stems: r.stems, "
                    "embedding: CAST(r.embedding AS FLOAT[]), embed_model: r.embed_model, "
                    "vec_seq: CAST(r.vec_seq AS INT64)})", {"rows": rows})
            for page in _pages(edges):
                by_type: dict[str, list[dict[str, Any]]] = {}
                for e in page:
                    by_type.setdefault(LABELS[str(e.edge_type)], []).append(
                        {"s": e.source_id, "t": e.target_id, "w": float(e.weight), "c": e.created_at,
                         "m": _json(e.metadata)})
                for label, rows in by_type.items():
                    self._run(f"UNWIND $rows AS r MATCH (a:Insight {{id: r.s}}), (b:Insight {{id: r.t}}) "
                              f"CREATE (a)-[:{label} {{weight: r.w, metadata: r.m, created_at: r.c}}]->(b)",
                              {"rows": rows})
            last = 0
            for page in _pages(oplog):
                self._run("UNWIND $rows AS r CREATE (:Oplog {id: r.id, operation: r.op, insight_id: r.ins, "
                          "detail: r.detail, created_at: r.at})",
                          {"rows": [{"id": o.id, "op": o.operation, "ins": o.insight_id, "detail": o.detail,
                                     "at": o.created_at} for o in page]})
                last = max(last, *(o.id for o in page))
            self._run("MERGE (m:Meta {key: 'oplog'}) SET m.value = $v", {"v": last})
            for page in _pages(tails):
                self._run("UNWIND $rows AS r CREATE (:Tail {session: r.s, insight_id: r.i})",
                          {"rows": [{"s": s, "i": i} for s, i in page]})
        self.shared.forget()  # counters and indexes are read again from what was loaded


def _pages(rows: Iterable[Any]) -> Iterable[list[Any]]:
    page: list[Any] = []
    for row in rows:
        page.append(row)
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def _json(value: dict[str, Any]) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# ---------------------------------------------------------------------------------------------- the backend


def store_path(url: str, store: str) -> Path:
    return directory(url) / f"{store}{SUFFIX}"


def open_store(settings: Settings) -> KuzuStore:
    url = settings.database_url or ""
    return KuzuStore(store_path(url, settings.store), readonly=settings.readonly,
                     oplog_retention=settings.oplog_retention, label=f"{url} (store {settings.store})",
                     data_dir=str(settings.data_dir))


class Files:
    """`Catalog` of the stores in one directory: a Kùzu database file each."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.dir = directory(url)

    def names(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        return sorted(p.name[: -len(SUFFIX)] for p in self.dir.iterdir()
                      if p.name.endswith(SUFFIX) and STORE_NAME_RE.fullmatch(p.name[: -len(SUFFIX)]))

    def exists(self, name: str) -> bool:
        return store_path(self.url, name).exists()

    def create(self, name: str) -> None:
        KuzuStore(store_path(self.url, name)).close()

    def remove(self, name: str) -> None:
        path = store_path(self.url, name)
        with _open_lock:
            if path in _open:
                raise StoreError(f'cannot remove store "{name}": it is open in this process', path=str(path))
        for p in path.parent.glob(path.name + "*"):  # the database and its write-ahead log
            if p.is_dir():
                import shutil

                shutil.rmtree(p)
            else:
                p.unlink()


def catalog(settings: Settings) -> Files:
    return Files(settings.database_url or "")
