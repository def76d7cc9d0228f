"""The store protocols in Cypher, for a graph database: insights are `Insight` nodes, each edge type a relationship
type of its own (`TEMPORAL`, `SEMANTIC`, `CAUSAL`, `ENTITY`, `SUPERSEDES`) with its weight, metadata (JSON text)
and time, the oplog `Oplog` nodes, the remember sessions' tails `Tail` nodes. A vector is a float-list property
of its insight, with the model beside it.

`CypherStore` holds every query in the openCypher a graph database shares; a backend (`store/kuzu.py`) says how
it runs one (`_run`), begins, commits and rolls back, and what its `CypherDialect` is: the few spellings that
differ between databases (the relationship-type function, the schema statements). What the store's process
keeps beside the database:
- the keyword, entity and source indexes (`store/postings.py`), which recall needs ranked exactly as on SQLite;
- the counters (insertion order, vector changes, oplog ids, graph changes), read once from the database;
- savepoints, which graph databases lack: the outermost transaction records each write call, and an inner
  `transaction()` that fails rolls the whole transaction back and replays the calls made before it began
  (a failure path only: a store's writes are deterministic given its state).
A backend whose database lets other processes write while this one holds it cannot keep these in memory; the
embedded Kùzu lets one process write at a time, and nobody writes while it reads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..config import OplogRetention
from ..models import Edge, EdgeType, Insight, OplogEntry
from ..text import document, terms
from ..timeutil import iso, parse
from . import base
from .base import NO_FILTERS, AnnSearch, DumpRow, Filters, TokenHit
from .journal import GraphJournal
from .postings import Indexed, Postings
from .sql import INSIGHT_COLUMNS, REQUEST_KEEP_S, insight_of, oplog_of
from .vectors import AnsweredAnn, VectorCache, encode, normalise
from .vectors import nearest as exact_nearest

LABELS = {str(t): str(t).upper() for t in EdgeType}  # edge type → relationship type
TYPES = {v: k for k, v in LABELS.items()}
I_COLS = ", ".join(f"i.{c}" for c in INSIGHT_COLUMNS)
PAGE = 5000  # rows per statement when a whole table is read
SCHEMA_VERSION = 1
ANN_PREFIX = "Ann"  # node types holding the vectors of an ANN index (`ann_label`)


@dataclass(frozen=True)
class CypherDialect:
    """What differs between graph databases in the statements `CypherStore` runs."""

    type_of: Callable[[str], str]  # relationship variable → its type name (Kùzu `label(e)`, Neo4j `type(e)`)
    schema: tuple[str, ...]  # the statements that make an empty store's node and relationship types
    tables: str  # a query of the store's node and relationship type names (first column)
    per_type: bool  # match one relationship type per pattern: Kùzu 0.11 repeats a relationship written in the open
    # transaction once per type in a pattern over several (`[e]`, `[e:A|B]`), so each type gets its own branch
    by_id: str  # the start of a statement matching the insights `i` whose ids are in $ids
    ann_schema: Callable[[str, int], tuple[str, ...]]  # (label, dim) → a node type `id`, `v` and its HNSW index
    ann_query: Callable[[str], str]  # label → (id, cosine distance) of the $k nodes nearest to $q, any order


class Shared:
    """What the store objects of one database in this process share: one connection, the lock that makes
    them take turns (a transaction holds it until it ends), the indexes and counters kept beside the database
    (None: not read yet, or dropped by a rollback) and the committed graph counter."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.lock = threading.RLock()
        self.handles = 0
        self.postings: Postings | None = None
        self.seq: int | None = None  # the last insertion number given
        self.vec_seq: int | None = None  # the last vector change
        self.oplog_id: int | None = None  # the last oplog id given (kept in the database: a trim may remove it)
        self.graph = 0  # moves once per committed transaction that changed insights or edges
        self.ann: set[str] | None = None  # the node types holding an ANN index's vectors (`ann_label`)
        self.prepared: dict[str, Any] = {}  # statement text → the database's prepared statement
        self.epoch = 0  # moves with every rollback: the store objects drop their vector caches
        # Accesses reads could not apply while a transaction held the lock (`record_access`), for the next one:
        # in the process, as only this process may write the database.
        self.pending: list[base.Access] = []

    def forget(self) -> None:
        """After a rollback: what was read or counted may include what it undid."""
        self.postings = None
        self.seq = self.vec_seq = self.oplog_id = None
        self.ann = None
        self.epoch += 1


F = TypeVar("F", bound=Callable[..., Any])


def write(fn: F) -> F:
    """A write: run in a transaction level of its own (a failure undoes it alone, like a SQL statement), and
    recorded, once it succeeded, for the replay a failing savepoint makes."""

    @functools.wraps(fn)
    def run(self: CypherStore, *args: Any, **kw: Any) -> Any:
        if self._replaying or self._writing:
            return fn(self, *args, **kw)
        with self.transaction():
            self._writing += 1
            try:
                out = fn(self, *args, **kw)
            finally:
                self._writing -= 1
            self._redo.append((fn, args, kw))
            return out

    return run  # type: ignore[return-value]


def _insight(r: Sequence[Any], build: Callable[..., Insight] = Insight) -> Insight:
    return insight_of(r, lambda v: list(v or []), build)


def _edge(r: Sequence[Any]) -> Edge:
    return Edge(source_id=r[0], target_id=r[1], edge_type=TYPES[r[2]], weight=r[3],
                metadata=json.loads(r[4] or "{}"), created_at=r[5])


def _vector(v: Sequence[float] | None) -> np.ndarray | None:
    return None if v is None else np.asarray(v, dtype=np.float32)


def _scope(filters: Filters, params: dict[str, Any]) -> str:
    """The active insights `i` in scope (`--cat`, `--source`)."""
    sql = "i.deleted_at IS NULL"
    if filters.category is not None:
        sql += " AND i.category = $cat"
        params["cat"] = filters.category
    if filters.source is not None:
        sql += " AND i.source = $src"
        params["src"] = filters.source
    return sql


class CypherStore(base.StoreDefaults):
    """`Store` over a graph database spoken to in Cypher. A backend implements `_run`, `_begin`, `_commit`,
    `_rollback`, `close`, `size_bytes` and sets `dialect`, `shared`, `location`, `readonly`."""

    dialect: CypherDialect
    shared: Shared
    location: str
    readonly: bool
    oplog_retention: OplogRetention
    parallel_reads = False  # one connection: calls take turns on it

    def __init__(self) -> None:
        self._depth = 0
        self._redo: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []
        self._replaying = False
        self._writing = 0
        self._trim_due: str | None = None
        self._graph_gen = 0  # this object's graph writes and rollbacks (graph_version)
        self._graph_dirty = False
        self._journal = GraphJournal()
        self._vectors: dict[tuple[str, int], VectorCache] = {}
        self._epoch = 0
        self._edge_buf: dict[tuple[str, str, str], dict[str, Any]] = {}  # upserts not sent yet (`upsert_edge`)

    # ------------------------------------------------------------------ the backend's part

    def _run(self, query: str, params: dict[str, Any] | None = None, *, prepare: bool = True) -> list[list[Any]]:
        """One statement, its rows; `prepare=False`: a schema or transaction statement, run as it is."""
        raise NotImplementedError

    def _begin(self) -> None:
        raise NotImplementedError

    def _commit(self) -> None:
        raise NotImplementedError

    def _rollback(self) -> None:
        """End the open transaction, undoing it (nothing when the database already ended it after an error)."""
        raise NotImplementedError

    def _q(self, query: str, params: dict[str, Any] | None = None, *, ddl: bool = False) -> list[list[Any]]:
        """`_run` under the shared lock; a statement that fails inside a transaction (the database ends the
        transaction) restores it by replay before the error goes up, so the caller's transaction goes on."""
        with self.shared.lock:
            try:
                if self._edge_buf:
                    self._send_edges()
                return self._run(query, params, prepare=not ddl)
            except Exception:
                if self._depth and not self._writing and not self._replaying:
                    self._restore(len(self._redo))
                raise

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Outermost: one database transaction (this process's other store objects wait for it); inner: a
        savepoint, by replay (see the module's docstring)."""
        with self.shared.lock:
            pending: list[base.Access] = []
            if self._depth == 0:
                self._begin()
                self._redo = []
                self._journal.begin(self._graph_gen)
                pending = list(self.shared.pending)  # what reads left for the next writer comes first
            mark = len(self._redo)
            self._depth += 1
            try:
                for access in pending:
                    base.apply_access(self, access)
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0:
                    self._abort()
                else:
                    self._restore(mark)
                raise
            self._depth -= 1
            if self._depth == 0:
                self._finish()
                del self.shared.pending[:len(pending)]  # kept by a transaction that rolled back

    def _finish(self) -> None:
        try:
            if self._edge_buf:
                self._send_edges()
            if self._trim_due is not None:
                self._trim_oplog(self._trim_due)
            self._commit()
        except BaseException:
            self._abort()
            raise
        self._redo = []
        if self._graph_dirty:
            self._graph_dirty = False
            self.shared.graph += 1
            self._journal.commit(self.shared.graph, self._graph_gen)
        else:
            self._journal.abort()

    def _abort(self) -> None:
        self._edge_buf = {}
        self._rollback()
        self._redo = []
        self._trim_due = None
        self._graph_dirty = False
        self._graph_gen += 1
        self._journal.abort()
        self.shared.forget()

    def _restore(self, mark: int) -> None:
        """Roll the transaction back and redo its first `mark` writes: a savepoint's rollback."""
        done = self._redo[:mark]
        self._edge_buf = {}
        self._rollback()
        self.shared.forget()
        self._graph_gen += 1
        self._trim_due = None
        self._graph_dirty = False
        self._journal.abort()
        self._begin()
        self._journal.begin(self._graph_gen)
        self._redo = done
        self._replaying = True
        try:
            for fn, args, kw in done:
                fn(self, *args, **kw)
        finally:
            self._replaying = False

    def _graph_write(self, ids: Sequence[str] | None) -> None:
        self._graph_gen += 1
        self._graph_dirty = True
        self._journal.touch(ids)

    # ------------------------------------------------------------------ what the process keeps

    def _postings(self) -> Postings:
        sh = self.shared
        with sh.lock:
            if sh.postings is None:
                rows = []
                last = -1
                while page := self._q(
                    "MATCH (i:Insight) WHERE i.deleted_at IS NULL AND i.seq > $last RETURN i.id, i.seq, "
                    "i.importance, i.created_at, i.category, i.source, i.terms, i.stems, i.entities, i.content "
                    "ORDER BY i.seq LIMIT $n", {"last": last, "n": PAGE}
                ):
                    rows.extend((r[0], _indexed(r)) for r in page)
                    last = page[-1][1]
                sh.postings = Postings(rows)
            return sh.postings

    def _counter(self, name: str, query: str) -> int:
        """The next value of a counter (its last value read from the database the first time)."""
        sh = self.shared
        value = getattr(sh, name)
        if value is None:
            value = int(self._q(query)[0][0] or 0)
        setattr(sh, name, value + 1)
        return value + 1

    def _next_seq(self) -> int:
        return self._counter("seq", "MATCH (i:Insight) RETURN max(i.seq)")

    def _next_vec_seq(self) -> int:
        return self._counter("vec_seq", "MATCH (i:Insight) RETURN max(i.vec_seq)")

    # ------------------------------------------------------------------ insights

    @write
    def insert_insight(self, ins: Insight, tokens: Collection[str]) -> None:
        toks = sorted(set(tokens))
        stems = terms(document(ins.content, ins.tags, ins.entities))
        seq = self._next_seq()
        self._graph_write([ins.id])
        self._q(
            "CREATE (:Insight {id: $id, seq: $seq, content: $content, category: $category, importance: $importance, "
            "tags: $tags, entities: $entities, source: $source, access_count: $access_count, "
            "created_at: $created_at, updated_at: $updated_at, deleted_at: $deleted_at, "
            "last_accessed_at: $last_accessed_at, effective_importance: $ei, stored_at: $stored_at, terms: $terms, "
            "stems: $stems})",
            {**_insight_params(ins), "seq": seq, "terms": toks, "stems": stems},
        )
        if ins.deleted_at is None and self.shared.postings is not None:
            self.shared.postings.add(ins.id, _indexed(
                [ins.id, seq, ins.importance, ins.created_at, str(ins.category), ins.source, toks, stems,
                 ins.entities, ins.content]))

    def get_insight(self, id: str, *, include_deleted: bool = False) -> Insight | None:
        rows = self._q(f"MATCH (i:Insight {{id: $id}}) RETURN {I_COLS}", {"id": id})
        if not rows or (rows[0][10] is not None and not include_deleted):
            return None
        return _insight(rows[0])

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        rows = self._q("MATCH (i:Insight) WHERE i.id STARTS WITH $p AND i.deleted_at IS NULL "
                       "RETURN i.id ORDER BY i.id LIMIT $n", {"p": prefix, "n": limit})
        return [r[0] for r in rows]

    def get_insights(self, ids: Sequence[str]) -> dict[str, Insight]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._q(f"{self.dialect.by_id} WHERE i.deleted_at IS NULL RETURN {I_COLS}",
                       {"ids": ids})
        return {r[0]: _insight(r) for r in rows}

    def find_by_content(self, content: str) -> str | None:
        return self._postings().by_content(content)

    def count_active(self) -> int:
        return len(self._postings().rows)

    def count_deleted(self) -> int:
        return int(self._q("MATCH (i:Insight) WHERE i.deleted_at IS NOT NULL RETURN count(*)")[0][0])

    def iter_active(self, filters: Filters = NO_FILTERS) -> Iterator[Insight]:
        last = -1
        while True:
            params: dict[str, Any] = {"last": last, "n": PAGE}
            rows = self._q(f"MATCH (i:Insight) WHERE {_scope(filters, params)} AND i.seq > $last "
                           f"RETURN {I_COLS}, i.seq ORDER BY i.seq LIMIT $n", params)
            yield from (_insight(r) for r in rows)
            if len(rows) < PAGE:
                return
            last = rows[-1][-1]

    def latest(
        self, *, source: str | None = None, since: str | None = None, exclude: str | None = None,
        limit: int, filters: Filters = NO_FILTERS,
    ) -> list[Insight]:
        params: dict[str, Any] = {"n": limit}
        rows = self._q(f"MATCH (i:Insight) WHERE {_latest(filters, params, source, since, exclude)} "
                       f"RETURN {I_COLS} ORDER BY i.created_at DESC, i.seq DESC LIMIT $n", params)
        return [_insight(r) for r in rows]

    def latest_ids(self, *, limit: int, filters: Filters = NO_FILTERS) -> list[str]:
        params: dict[str, Any] = {"n": limit}
        rows = self._q(f"MATCH (i:Insight) WHERE {_scope(filters, params)} "
                       "RETURN i.id ORDER BY i.created_at DESC, i.seq DESC LIMIT $n", params)
        return [r[0] for r in rows]

    @write
    def soft_delete(self, ids: Sequence[str], now: str) -> None:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return
        seq = self._next_vec_seq()
        self._graph_write(ids)
        self._q(
            f"{self.dialect.by_id} SET i.deleted_at = $now, i.updated_at = $now, "
            "i.vec_seq = CASE WHEN i.embed_model IS NULL THEN i.vec_seq ELSE $seq END",
            {"ids": ids, "now": now, "seq": seq},
        )
        self._delete_edges_of(ids)
        if self.shared.postings is not None:
            for id_ in ids:
                self.shared.postings.remove(id_)
        self._ann_drop(ids)

    @write
    def touch(self, ids: Sequence[str], now: str, inc: int = 1) -> None:
        counts = Counter(ids)  # an id listed twice counts twice, as on SQLite
        if counts:
            self._q("UNWIND $rows AS r MATCH (i:Insight {id: r.id}) "
                    "SET i.access_count = i.access_count + $inc * r.n, i.last_accessed_at = CASE WHEN "
                    "i.last_accessed_at IS NULL OR i.last_accessed_at < $now THEN $now ELSE i.last_accessed_at END",
                    {"rows": [{"id": k, "n": n} for k, n in counts.items()], "inc": inc, "now": now})

    def record_access(self, access: base.Access) -> bool:
        """Applied at once when no transaction of this process holds the database (the lock its store objects
        share), else kept in the process (`Shared.pending`) for the next transaction, or `close`."""
        if not self.shared.lock.acquire(blocking=False):
            self.shared.pending.append(access)
            return False
        try:
            with self.transaction():
                base.apply_access(self, access)
            return True
        finally:
            self.shared.lock.release()

    @write
    def set_effective_importance(self, values: dict[str, float]) -> None:
        if values:
            self._q("UNWIND $rows AS r MATCH (i:Insight {id: r.id}) SET i.effective_importance = r.v",
                    {"rows": [{"id": k, "v": float(v)} for k, v in values.items()]})

    def prune_candidates(
        self, *, exclude: str | None, stored_before: str | None, limit: int, immune_importance: int,
        immune_access: int,
    ) -> list[Insight]:
        params: dict[str, Any] = {"imp": immune_importance, "acc": immune_access, "n": limit}
        where = "i.deleted_at IS NULL AND i.importance < $imp AND i.access_count < $acc"
        if exclude is not None:
            where += " AND i.id <> $exclude"
            params["exclude"] = exclude
        if stored_before is not None:
            where += " AND coalesce(i.stored_at, i.created_at) <= $before"
            params["before"] = stored_before
        rows = self._q(f"MATCH (i:Insight) WHERE {where} RETURN {I_COLS} "
                       "ORDER BY i.effective_importance ASC, i.created_at ASC, i.id ASC LIMIT $n", params)
        return [_insight(r) for r in rows]

    def like_search(self, query: str, filters: Filters, limit: int) -> list[Insight]:
        """Content holding `query` with ASCII letters folded, as SQLite's LIKE (a graph database's `lower()`
        folds every script): tested over the active contents the process keeps."""
        ids = self._postings().like(query, filters, limit)
        got = self.get_insights(ids)
        return [got[i] for i in ids if i in got]

    # ------------------------------------------------------------------ keyword, entity, source, session

    def token_hits(
        self, tokens: Collection[str], *, filters: Filters = NO_FILTERS, exclude: str | None = None,
        limit: int | None = None, order: str = "coverage",
    ) -> list[TokenHit]:
        return self._postings().token_hits(tokens, filters=filters, exclude=exclude, limit=limit, order=order)

    def token_tops(self, tokens: Collection[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]]:
        return self._postings().token_tops(tokens, limit)

    def insight_tokens(self, ids: Sequence[str]) -> dict[str, frozenset[str]]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        return {r[0]: frozenset(r[1]) for r in self._q(f"{self.dialect.by_id} RETURN i.id, i.terms",
                                                      {"ids": ids})}

    def term_scores(self, term: str, length_cap: float | None = None) -> list[tuple[str, float]]:
        return self._postings().term_scores(term, length_cap)

    def source_hits(self, names: Collection[str]) -> dict[str, list[str]]:
        return self._postings().source_hits(names)

    def with_entity(self, entity: str, *, exclude: str, limit: int) -> list[str]:
        return self._postings().with_entity(entity, exclude=exclude, limit=limit)

    def known_entities(self, candidates: Collection[str], *, casefold: bool = False) -> dict[str, str]:
        return self._postings().known_entities(candidates, casefold=casefold)

    def entity_hits(self, entities_lower: Collection[str], filters: Filters = NO_FILTERS) -> dict[str, int]:
        return self._postings().entity_hits(entities_lower, filters)

    def top_entities(self, limit: int) -> list[tuple[str, int]]:
        return self._postings().top_entities(limit)

    def count_by_category(self) -> dict[str, int]:
        rows = self._q("MATCH (i:Insight) WHERE i.deleted_at IS NULL RETURN i.category, count(*) ORDER BY i.category")
        return {r[0]: int(r[1]) for r in rows}

    def session_tail(self, session: str) -> str | None:
        rows = self._q("MATCH (t:Tail {session: $s}) RETURN t.insight_id", {"s": session})
        if not rows:
            return None
        return rows[0][0] if rows[0][0] in self._postings().rows else None

    @write
    def set_session_tail(self, session: str, insight_id: str) -> None:
        self._q("MERGE (t:Tail {session: $s}) SET t.insight_id = $i", {"s": session, "i": insight_id})

    # ------------------------------------------------------------------ vectors

    @write
    def set_vector(self, id: str, vector: np.ndarray, model: str) -> None:
        vec = np.asarray(vector, dtype=np.float32).tolist()
        self._q("MATCH (i:Insight {id: $id}) SET i.embedding = $v, i.embed_model = $m, i.vec_seq = $seq",
                {"id": id, "v": vec, "m": model, "seq": self._next_vec_seq()})
        label = ann_label(model, len(vec))
        self._ann_drop([id])
        if label in self._ann_labels():
            self._q(f"MATCH (i:Insight {{id: $id}}) WHERE i.deleted_at IS NULL CREATE (:{label} {{id: $id, v: $v}})",
                    {"id": id, "v": vec})

    def get_vector(self, id: str, model: str) -> np.ndarray | None:
        rows = self._q("MATCH (i:Insight {id: $id}) WHERE i.embed_model = $m RETURN i.embedding", {"id": id, "m": model})
        return _vector(rows[0][0]) if rows else None

    def vector_matrix(self, model: str, dim: int) -> tuple[list[str], np.ndarray]:
        """(ids, unit vectors) of active insights embedded by `model` with `dim` dimensions, refreshed from the
        rows whose vector changed since the last call."""
        with self.shared.lock:
            if self._epoch != self.shared.epoch:
                self._vectors.clear()
                self._epoch = self.shared.epoch
            cache = self._vectors.get((model, dim))
            if cache is None:
                cache = self._vectors[(model, dim)] = VectorCache(model, dim)
            if self.shared.vec_seq is None or self.shared.vec_seq > cache.high_water:
                top = cache.high_water
                while rows := self._q(
                    "MATCH (i:Insight) WHERE i.vec_seq > $after RETURN i.id, i.embedding, i.embed_model, "
                    "i.deleted_at IS NULL, i.vec_seq ORDER BY i.vec_seq LIMIT $n", {"after": top, "n": PAGE}
                ):
                    top = int(rows[-1][4])
                    cache.apply([(r[0], None if r[1] is None else encode(np.asarray(r[1], dtype=np.float32)), r[2],
                                  bool(r[3])) for r in rows], top)
                    if len(rows) < PAGE:
                        break
                if self.shared.vec_seq is None:
                    self.shared.vec_seq = max(top, 0)
                cache.apply([], self.shared.vec_seq)
            return cache.snapshot()

    def _ann_labels(self) -> set[str]:
        sh = self.shared
        if sh.ann is None:
            sh.ann = {r[0] for r in self._q(self.dialect.tables) if str(r[0]).startswith(ANN_PREFIX)}
        return sh.ann

    def _ann_drop(self, ids: list[str]) -> None:
        """Take insights out of every ANN index (a changed vector goes back in; a deleted insight does not)."""
        for label in sorted(self._ann_labels()):
            self._q(f"UNWIND $ids AS x MATCH (v:{label} {{id: x}}) DELETE v", {"ids": ids})

    def ann_index(self, model: str, dim: int) -> AnnSearch | None:
        """The database's HNSW index over (model, dim) once `maintain_vector_index` built it and it holds
        `ANN_MIN_ROWS` vectors; it follows every write from then on. None: recall scans the matrix exactly."""
        label = ann_label(model, dim)
        if label not in self._ann_labels():
            return None
        if int(self._q(f"MATCH (v:{label}) RETURN count(*)")[0][0]) < max(1, base.ANN_MIN_ROWS):
            return None
        return CypherAnn(self, model, dim, label)

    def nearest(self, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        return exact_nearest(self, model, vector, k)

    def maintain_vector_index(self, model: str, dim: int) -> int:
        """Build the HNSW index of (model, dim) once it has `ANN_MIN_ROWS` active vectors: a node type of its
        own holding them (an index needs a fixed dimension); the rows copied, 0 when there is nothing to do.
        Outside a transaction only (a database may build indexes in none)."""
        label = ann_label(model, dim)
        with self.shared.lock:
            if self._depth or self.readonly or label in self._ann_labels():
                return 0
            n = int(self._q("MATCH (i:Insight) WHERE i.deleted_at IS NULL AND i.embed_model = $m AND "
                            "size(i.embedding) = $d RETURN count(*)", {"m": model, "d": dim})[0][0])
            if n < max(1, base.ANN_MIN_ROWS):
                return 0
            make_table, *make_index = self.dialect.ann_schema(label, dim)
            with self.transaction():
                self._q(make_table, ddl=True)
                last = -1
                while rows := self._q("MATCH (i:Insight) WHERE i.deleted_at IS NULL AND i.embed_model = $m AND "
                                      "size(i.embedding) = $d AND i.seq > $last RETURN i.id, i.embedding, i.seq "
                                      "ORDER BY i.seq LIMIT $n", {"m": model, "d": dim, "last": last, "n": PAGE}):
                    self._q(f"UNWIND $rows AS r CREATE (:{label} {{id: r.id, v: r.v}})",
                            {"rows": [{"id": r[0], "v": r[1]} for r in rows]})
                    last = rows[-1][2]
            try:
                for stmt in make_index:
                    self._q(stmt, ddl=True)
            except BaseException:
                self._q(f"DROP TABLE {label}", ddl=True)
                raise
            self._ann_labels().add(label)
            return n

    def vector_counts(self) -> dict[str, int]:
        rows = self._q("MATCH (i:Insight) WHERE i.deleted_at IS NULL AND i.embed_model IS NOT NULL "
                       "RETURN i.embed_model, size(i.embedding), count(*)")
        return {f"{r[0]}:{r[1]}": int(r[2]) for r in rows}

    def unembedded(self, model: str, limit: int) -> list[Insight]:
        rows = self._q(f"MATCH (i:Insight) WHERE i.deleted_at IS NULL AND (i.embed_model IS NULL OR "
                       f"i.embed_model <> $m) RETURN {I_COLS} ORDER BY i.importance DESC, i.created_at DESC, i.id "
                       "LIMIT $n", {"m": model, "n": limit})
        return [_insight(r) for r in rows]

    # ------------------------------------------------------------------ edges

    def _each_type(self, match: str, ret: str, params: dict[str, Any]) -> list[list[Any]]:
        """`match` + RETURN `ret` over every edge type: `<rel>` in `match` is the relationship variable `e` with
        its type pattern, `<type>` in `ret` its type name. Where the dialect must (`per_type`), one UNION ALL
        branch per type, each naming its type; the rows in no order."""
        if not self.dialect.per_type:
            return self._q(f"{match.replace('<rel>', 'e')} RETURN {ret.replace('<type>', self.dialect.type_of('e'))}",
                           params)
        return self._q(" UNION ALL ".join(
            f"{match.replace('<rel>', f'e:{label}')} RETURN {ret.replace('<type>', repr(label))}"
            for label in LABELS.values()), params)

    def _edges_at(self, ids: list[str], end: str) -> list[list[Any]]:
        """The rows (source, target, type, weight, metadata, time) of the edges whose `end` ("a": source, "b":
        target) is one of ids."""
        return self._each_type(f"UNWIND $ids AS x MATCH {_at(end)}",
                               "a.id, b.id, <type>, e.weight, e.metadata, e.created_at", {"ids": ids})

    @write
    def upsert_edge(self, edge: Edge) -> None:
        """Waits with the transaction's other upserts until its next statement or commit (`_send_edges`): a graph
        builder writes tens of edges between two reads."""
        self._graph_write([edge.source_id, edge.target_id])
        self._edge_buf[(edge.source_id, edge.target_id, LABELS[str(edge.edge_type)])] = {
            "s": edge.source_id, "t": edge.target_id, "w": float(edge.weight),
            "m": json.dumps(edge.metadata, ensure_ascii=False, sort_keys=True), "c": edge.created_at}

    def _send_edges(self) -> None:
        """The waiting upserts, per type: the existing edges updated in one statement, the others created in a
        second (a MERGE costs three times as much in Kùzu, and grows with the transaction's edges)."""
        by_label: dict[str, list[dict[str, Any]]] = {}
        for (_, _, label), row in self._edge_buf.items():
            by_label.setdefault(label, []).append(row)
        self._edge_buf = {}
        for label, rows in by_label.items():
            found = {(r[0], r[1]) for r in self._run(
                f"UNWIND $rows AS r MATCH (a:Insight {{id: r.s}})-[e:{label}]->(b:Insight {{id: r.t}}) "
                "SET e.weight = r.w, e.metadata = r.m, e.created_at = r.c RETURN a.id, b.id", {"rows": rows})}
            new = [r for r in rows if (r["s"], r["t"]) not in found]
            if new:
                self._run(f"UNWIND $rows AS r MATCH (a:Insight {{id: r.s}}), (b:Insight {{id: r.t}}) "
                          f"CREATE (a)-[:{label} {{weight: r.w, metadata: r.m, created_at: r.c}}]->(b)", {"rows": new})

    @write
    def delete_edge(self, source_id: str, target_id: str, edge_type: str) -> None:
        self._graph_write([source_id, target_id])
        self._q(f"MATCH (a:Insight {{id: $s}})-[e:{LABELS[str(edge_type)]}]->(b:Insight {{id: $t}}) DELETE e",
                {"s": source_id, "t": target_id})

    def _delete_edges_of(self, ids: list[str]) -> None:
        """Every edge touching one of ids goes; their other ends are journaled (their adjacency changed)."""
        self._journal.touch(r[1] for r in self._edges_at(ids, "a"))
        self._journal.touch(r[0] for r in self._edges_at(ids, "b"))
        for near in ("a", "b"):
            for label in LABELS.values():  # one type per statement (`per_type`), as a DELETE cannot be a UNION
                self._q(f"UNWIND $ids AS x MATCH {_at(near, f'e:{label}')} DELETE e", {"ids": ids})

    def edges_of(self, ids: Sequence[str]) -> list[Edge]:
        ids = list(dict.fromkeys(ids))
        rows = {(r[0], r[1], r[2]): r for end in ("a", "b") for r in self._edges_at(ids, end)} if ids else {}
        return [_edge(rows[k]) for k in sorted(rows)]

    def edges_among(self, ids: Sequence[str], edge_type: str | None = None) -> list[Edge]:
        ids = list(dict.fromkeys(ids))
        among = set(ids)
        rows = sorted(r for r in self._edges_at(ids, "a") if r[1] in among
                      and (edge_type is None or r[2] == LABELS[str(edge_type)])) if ids else []
        return [_edge(r) for r in rows]

    def existing_edges(self, keys: Collection[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        by_type: dict[str, list[dict[str, str]]] = {}
        for s, t, y in dict.fromkeys(keys):
            by_type.setdefault(LABELS[str(y)], []).append({"s": s, "t": t})
        found: set[tuple[str, str, str]] = set()
        for label, rows in by_type.items():
            found.update((r[0], r[1], TYPES[label]) for r in self._q(
                f"UNWIND $rows AS k MATCH (a:Insight {{id: k.s}})-[e:{label}]->(b:Insight {{id: k.t}}) "
                "RETURN a.id, b.id", {"rows": rows}))
        return found

    def edge_counts(self, ids: Sequence[str]) -> dict[str, int]:
        out = dict.fromkeys(ids, 0)
        if out:
            for end in ("a", "b"):
                for id_, n in self._each_type(f"UNWIND $ids AS x MATCH {_at(end)}", "x, count(*)",
                                              {"ids": list(out)}):
                    out[id_] += int(n)
        return out

    def count_edges(self) -> int:
        return sum(int(r[0]) for r in self._each_type("MATCH (:Insight)-[<rel>]->(:Insight)", "count(*)", {}))

    def iter_edges(self) -> Iterator[Edge]:
        """Primary-key order, a page at a time: after the last (source, target, type) given."""
        last: tuple[str, str, str] | None = None
        while True:
            if last is None:
                where, params = "true", {}
            else:  # the page's last pair may have edges of later types left
                where = "(a.id > $s OR (a.id = $s AND b.id >= $t))"
                params = {"s": last[0], "t": last[1]}
            rows = self._each_type(f"MATCH (a:Insight)-[<rel>]->(b:Insight) WHERE {where} WITH a, b, e "
                                   f"ORDER BY a.id, b.id LIMIT {PAGE + 1}",  # + the pair the last page ended on
                                   "a.id, b.id, <type>, e.weight, e.metadata, e.created_at", params)
            rows.sort(key=lambda r: (r[0], r[1], r[2]))
            if last is not None:
                rows = [r for r in rows if (r[0], r[1], r[2]) > last]
            rows = rows[:PAGE]
            yield from (_edge(r) for r in rows)
            if len(rows) < PAGE:
                return
            last = (rows[-1][0], rows[-1][1], rows[-1][2])

    # ------------------------------------------------------------------ recall (plain tuples)

    def graph_version(self) -> tuple[int, int]:
        return self.shared.graph, self._graph_gen

    def graph_changes(self, since: Hashable, now: Hashable) -> set[str] | None:
        return self._journal.changes(since, now)

    def insight_meta(self, ids: Sequence[str]) -> dict[str, tuple[int, str, str, str]]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._q(f"{self.dialect.by_id} WHERE i.deleted_at IS NULL "
                       "RETURN i.id, i.importance, i.created_at, i.category, i.source", {"ids": ids})
        return {r[0]: (r[1], r[2], r[3] or "general", r[4] or "") for r in rows}

    def adjacency(self, ids: Sequence[str]) -> list[tuple[str, str, str, float, str | None]]:
        ids = list(dict.fromkeys(ids))
        out: list[tuple[str, str, str, float, str | None]] = []
        for near, far in (("a", "b"), ("b", "a")) if ids else ():
            for r in self._each_type(f"UNWIND $ids AS x MATCH {_at(near)} WHERE {far}.deleted_at IS NULL",
                                     f"x, {far}.id, <type>, e.weight, e.metadata", {"ids": ids}):
                typ = TYPES[r[2]]
                sub = json.loads(r[4] or "{}").get("sub_type") if typ == "temporal" else None
                out.append((r[0], r[1], typ, r[3], sub))
        return out

    def superseded_ids(self, among: Sequence[str] | None = None) -> set[str]:
        if among is None:
            return {r[0] for r in self._q(
                "MATCH (:Insight)-[:SUPERSEDES]->(b:Insight) WHERE b.deleted_at IS NULL RETURN DISTINCT b.id")}
        among = list(dict.fromkeys(among))
        return {r[0] for r in self._q(
            "UNWIND $ids AS x MATCH (:Insight)-[:SUPERSEDES]->(b:Insight {id: x}) WHERE b.deleted_at IS NULL "
            "RETURN DISTINCT b.id", {"ids": among})} if among else set()

    # ------------------------------------------------------------------ oplog

    @write
    def log(self, operation: str, insight_id: str | None, detail: str, now: str) -> None:
        id_ = self._counter("oplog_id", "MATCH (m:Meta) WHERE m.key = 'oplog' RETURN max(m.value)")
        self._q("CREATE (:Oplog {id: $id, operation: $op, insight_id: $ins, detail: $detail, created_at: $now})",
                {"id": id_, "op": operation, "ins": insight_id, "detail": detail, "now": now})
        self._q("MERGE (m:Meta {key: 'oplog'}) SET m.value = $id", {"id": id_})
        self._trim_due = now  # trimmed once at commit, as of now

    @write
    def claim_request(self, request_id: str, now: str) -> bool:
        """Record a served call's request id (`once.py`); False when it is there already. Ids older than
        REQUEST_KEEP_S go at the same time."""
        self._q("MATCH (r:Request) WHERE r.created_at < $cut DELETE r",
                {"cut": iso(parse(now).timestamp() - REQUEST_KEEP_S)})
        if int(self._q("MATCH (r:Request {id: $id}) RETURN count(*)", {"id": request_id})[0][0]):
            return False
        self._q("CREATE (:Request {id: $id, created_at: $now})", {"id": request_id, "now": now})
        return True

    def _trim_oplog(self, now: str) -> None:
        self._trim_due = None
        retention = self.oplog_retention
        cutoff = retention.cutoff(now)
        if cutoff is not None:
            self._q("MATCH (o:Oplog) WHERE o.created_at < $cut DELETE o", {"cut": cutoff})
        if retention.max_rows > 0:
            top = self._q("MATCH (o:Oplog) RETURN max(o.id)")[0][0]
            if top is not None:
                self._q("MATCH (o:Oplog) WHERE o.id <= $last DELETE o", {"last": int(top) - retention.max_rows})

    def read_log(self, limit: int) -> list[OplogEntry]:
        rows = self._q("MATCH (o:Oplog) RETURN o.id, o.operation, o.insight_id, o.detail, o.created_at "
                       "ORDER BY o.id DESC LIMIT $n", {"n": limit})
        return [oplog_of(r) for r in rows]

    def count_log(self) -> int:
        return int(self._q("MATCH (o:Oplog) RETURN count(*)")[0][0])

    def oplog_oldest(self) -> str | None:
        return self._q("MATCH (o:Oplog) RETURN min(o.created_at)")[0][0]

    # ------------------------------------------------------------------ copy (`mnemon migrate`)

    def dump_insights(self) -> Iterator[DumpRow]:
        last = -1
        while rows := self._q(f"MATCH (i:Insight) WHERE i.seq > $last RETURN {I_COLS}, i.terms, i.embedding, "
                              "i.embed_model, i.seq ORDER BY i.seq LIMIT $n", {"last": last, "n": PAGE}):
            for r in rows:
                vec = _vector(r[15]) if r[16] is not None else None
                yield DumpRow(_insight(r, Insight.model_construct), frozenset(r[14] or ()), vec,
                              r[16] if vec is not None else None)
            last = rows[-1][-1]

    def dump_oplog(self) -> Iterator[OplogEntry]:
        last = -1
        while rows := self._q("MATCH (o:Oplog) WHERE o.id > $last RETURN o.id, o.operation, o.insight_id, o.detail, "
                              "o.created_at ORDER BY o.id LIMIT $n", {"last": last, "n": PAGE}):
            yield from (oplog_of(r, OplogEntry.model_construct) for r in rows)
            last = rows[-1][0]

    def dump_tails(self) -> Iterator[tuple[str, str]]:
        for r in self._q("MATCH (t:Tail) RETURN t.session, t.insight_id ORDER BY t.session"):
            yield r[0], r[1]


def ann_label(model: str, dim: int) -> str:
    """The node type of the ANN index over (model, dim)."""
    return f"{ANN_PREFIX}{dim}_{hashlib.sha1(model.encode()).hexdigest()[:12]}"


class CypherAnn(AnsweredAnn):
    """The database's HNSW index over a node type per (model, dim); cosines are exact, from the insights' own
    vectors."""

    store: CypherStore

    def __init__(self, store: CypherStore, model: str, dim: int, label: str) -> None:
        super().__init__(store, model, dim)
        self.label = label

    def _nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        rows = self.store._q(self.store.dialect.ann_query(self.label),
                             {"q": np.asarray(query, dtype=np.float32).tolist(), "k": int(k)})
        rows.sort(key=lambda r: (r[1], r[0]))
        return [(r[0], 1.0 - r[1]) for r in rows]

    def cosines(self, ids: list[str], query: np.ndarray) -> np.ndarray:
        out = np.full(len(ids), np.nan, dtype=np.float32)
        if not ids:
            return out
        rows = self.store._q(f"{self.store.dialect.by_id} WHERE i.deleted_at IS NULL AND i.embed_model = $m "
                             "AND size(i.embedding) = $d RETURN i.id, i.embedding",
                             {"ids": list(dict.fromkeys(ids)), "m": self.model, "d": self.dim})
        q = normalise(query)
        found = {r[0]: float(normalise(np.asarray(r[1], dtype=np.float32)) @ q) for r in rows}
        for n, id_ in enumerate(ids):
            if id_ in found:
                out[n] = found[id_]
        return out


def _at(end: str, rel: str = "<rel>") -> str:
    """The pattern `a -[rel]-> b` with `end` ("a" or "b") the insight of id `x`, found through the key."""
    a, b = ("(a:Insight {id: x})", "(b:Insight)") if end == "a" else ("(a:Insight)", "(b:Insight {id: x})")
    return f"{a}-[{rel}]->{b}"


def _insight_params(ins: Insight) -> dict[str, Any]:
    return {
        "id": ins.id, "content": ins.content, "category": str(ins.category), "importance": ins.importance,
        "tags": list(ins.tags), "entities": list(ins.entities), "source": ins.source,
        "access_count": ins.access_count, "created_at": ins.created_at, "updated_at": ins.updated_at,
        "deleted_at": ins.deleted_at, "last_accessed_at": ins.last_accessed_at,
        "ei": float(ins.effective_importance), "stored_at": ins.stored_at,
    }


def _indexed(r: Sequence[Any]) -> Indexed:
    """(id, seq, importance, created_at, category, source, terms, stems, entities, content) → `Indexed`."""
    return Indexed(seq=r[1], importance=r[2], created_at=r[3], category=r[4] or "general", source=r[5] or "",
                   tokens=frozenset(r[6] or ()), stems=tuple(r[7] or ()),
                   entities=tuple(dict.fromkeys(r[8] or ())), content=r[9])


def _latest(filters: Filters, params: dict[str, Any], source: str | None, since: str | None,
            exclude: str | None) -> str:
    where = _scope(filters, params)
    for term, key, value in (("i.source = $source", "source", source), ("i.created_at >= $since", "since", since),
                             ("i.id <> $exclude", "exclude", exclude)):
        if value is not None:
            where += f" AND {term}"
            params[key] = value
    return where
