"""The SQL the two stores share: the column lists, the active-row filter, one parser per row kind, and every
query that reads the same in both dialects, written once in `SQLStore`. A backend subclasses it, says how it runs
a statement (`_exec`) and what its `Dialect` is, and writes only what its database really does differently
(SQLite's FTS5 and rowids, Postgres's GIN arrays, pgvector, advisory locks and COPY).

Shared statements are templates: `?` marks a bound parameter, `{s}.` stands before a table name (a Postgres
store's schema, nothing on SQLite), `{u}` before a filter term that must not pick the index (SQLite's unary +,
see `where`), `{seq}` names the insertion-order column. `Dialect.render` turns a template into the backend's text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..config import OplogRetention
from ..models import Edge, EdgeType, Insight, OplogEntry
from ..timeutil import iso, parse
from .base import NO_FILTERS, Access, AnnSearch, Busy, Filters, LogBehind, StoreDefaults, apply_access
from . import mapfile, vecfile
from .vectors import VectorCache, nearest

INSIGHT_COLUMNS = (
    "id", "content", "category", "importance", "tags", "entities", "source", "access_count", "created_at",
    "updated_at", "deleted_at", "last_accessed_at", "effective_importance", "stored_at",
)
INSIGHT_COLS = ", ".join(INSIGHT_COLUMNS)
EDGE_COLS = "source_id, target_id, edge_type, weight, metadata, created_at"
OPLOG_COLS = "id, operation, insight_id, detail, created_at"
# How long a write waits for another writer of the store before it fails with "locked" (both backends).
WRITE_LOCK_TIMEOUT_S = 60
# How long a served call's request id is kept (`claim_request`): far longer than a client waits to rerun it.
REQUEST_KEEP_S = 86400.0
# The edges table's closed list of types, from `EdgeType`. A new type also needs a migration that widens the
# CHECK of existing databases (SQLite rebuilds the table; Postgres replaces the constraint).
EDGE_TYPE_CHECK = "CHECK (edge_type IN ({}))".format(",".join(f"'{t.value}'" for t in EdgeType))
GRAPH_SUFFIX = ".gidx"  # the graph index file's name: the database's (or the client's key) and this


def in_chunks(items: Sequence[str], size: int) -> Iterator[tuple[Sequence[str], str]]:
    """`items` in slices small enough for one statement's bound parameters, each with its `?,?,…` list."""
    for i in range(0, len(items), size):
        chunk = items[i : i + size]
        yield chunk, ",".join("?" * len(chunk))


@dataclass(frozen=True)
class Dialect:
    """What the shared statements need to know of one database's SQL."""

    mark: str  # a bound parameter
    schema: str  # what `{s}.` becomes
    unindexed: str  # what `{u}` becomes
    seq: str  # the insertion-order column
    arrays: bool  # ids travel as one array parameter (`= ANY(?)`), not as `IN (?,?,…)` lists
    lists: Callable[[Any], list[str]]  # a stored tags / entities value → list
    mapping: Callable[[Any], dict[str, Any]]  # a stored edge metadata value → dict
    json_text: Callable[[str, str], str]  # (column, key) → SQL of that key's text in a JSON column
    fold: Callable[[str], str]  # SQL expression → the same with ASCII letters lower-cased, as SQLite's LIKE

    def render(self, sql: str) -> str:
        sql = sql.replace("{s}.", self.schema).replace("{u}", self.unindexed).replace("{seq}", self.seq)
        return sql if self.mark == "?" else sql.replace("?", self.mark)

    def any_of(self, items: Sequence[str], per: int | None = None) -> Iterator[tuple[str, list[Any]]]:
        """(`IN (?,…)` or `= ANY(?)`, its arguments) for each statement the items need: SQLite binds at most
        `per` in one statement (None: all of them); an array is one parameter however long."""
        if not items:
            return
        if self.arrays:
            yield "= ANY(?::text[])", [list(items)]
            return
        for chunk, marks in in_chunks(items, per or len(items)):
            yield f"IN ({marks})", list(chunk)

    def rows_of(self, items: Sequence[str], per: int | None = None) -> Iterator[tuple[str, list[Any]]]:
        """(a query of one text column `v` holding the items, its arguments), chunked as `any_of`."""
        if self.arrays:
            yield "SELECT unnest(?::text[])", [list(items)]
            return
        for chunk, _ in in_chunks(items, per or len(items)):
            yield "VALUES " + ",".join("(?)" for _ in chunk), list(chunk)


def where(filters: Filters, alias: str = "") -> tuple[str, list[Any]]:
    """The active rows in scope. `{u}` keeps these terms off SQLite's indexes: without ANALYZE stats it takes
    `deleted_at IS NULL` (or a two-valued source) for selective and scans every active row instead of using the
    id / created_at index."""
    p = f"{alias}." if alias else ""
    sql, args = f"{{u}}{p}deleted_at IS NULL", []
    if filters.category is not None:
        sql += f" AND {{u}}{p}category = ?"
        args.append(filters.category)
    if filters.source is not None:
        sql += f" AND {{u}}{p}source = ?"
        args.append(filters.source)
    return sql, args


def and_given(sql: str, args: list[Any], *terms: tuple[str, Any]) -> tuple[str, list[Any]]:
    """`sql AND term` for each (term, value) whose value is not None, the value bound to the term's `?`."""
    for term, value in terms:
        if value is not None:
            sql += f" AND {term}"
            args.append(value)
    return sql, args


def like_pattern(query: str) -> str:
    """`%query%` with LIKE's wildcards in the query escaped (`ESCAPE '\\'`)."""
    return "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def insight_of(r: Sequence[Any], lists: Callable[[Any], list[str]], build: Callable[..., Insight] = Insight) -> Insight:
    """An insight from the `INSIGHT_COLUMNS` of a row; `build=Insight.model_construct` skips validation (a copy
    carries what is stored, even values today's validation would refuse)."""
    return build(
        id=r[0], content=r[1], category=r[2] or "general", importance=r[3], tags=lists(r[4]),
        entities=lists(r[5]), source=r[6] or "", access_count=r[7] or 0, created_at=r[8],
        updated_at=r[9], deleted_at=r[10], last_accessed_at=r[11],
        effective_importance=r[12] if r[12] is not None else 0.5, stored_at=r[13],
    )


def oplog_of(r: Sequence[Any], build: Callable[..., OplogEntry] = OplogEntry) -> OplogEntry:
    return build(id=r[0], operation=r[1], insight_id=r[2], detail=r[3] or "", created_at=r[4])


def json_lists(value: str | None) -> list[str]:
    """A stored JSON list (tags, entities) as a new list. The same few texts come back on every read (most rows
    say `[]`; a remember reads ~150 rows), so each distinct one is decoded once."""
    return list(_decoded(value or "[]"))


def json_mapping(value: str | None) -> dict[str, Any]:
    """A stored JSON object (edge metadata) as a new dict, each distinct text decoded once (`json_lists`)."""
    return dict(_decoded(value or "{}"))


@lru_cache(maxsize=8192)
def _decoded(text: str) -> Any:
    """The JSON text's list as a tuple or object as a tuple of items: immutable, so a cached value is never
    changed by a caller."""
    value = json.loads(text)
    return tuple(value.items()) if isinstance(value, dict) else tuple(value)


def metadata_json(value: dict[str, Any]) -> str:
    """An edge's metadata as stored (keys sorted). The builders write the same few small mappings over and
    over (an entity edge's name, twice per pair), so all-string ones are encoded once (strings only: as cache
    keys 1, 1.0 and True are one)."""
    if not value:
        return "{}"
    items = tuple(value.items())
    for _, v in items:
        if type(v) is not str:
            return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return _items_json(items)


@lru_cache(maxsize=4096)
def _items_json(items: tuple[tuple[str, Any], ...]) -> str:
    return json.dumps(dict(items), ensure_ascii=False, sort_keys=True)


def oplog_trim(retention: OplogRetention, now: str) -> list[tuple[str, tuple[Any, ...]]]:
    """`OplogRetention` as statements: two index range deletes (created_at, then the id primary key)."""
    out: list[tuple[str, tuple[Any, ...]]] = []
    cutoff = retention.cutoff(now)
    if cutoff is not None:
        out.append(("DELETE FROM {s}.oplog WHERE created_at < ?", (cutoff,)))
    if retention.max_rows > 0:
        out.append(("DELETE FROM {s}.oplog WHERE id <= (SELECT max(id) FROM {s}.oplog) - ?", (retention.max_rows,)))
    return out


class SQLStore(StoreDefaults):
    """The `Store` methods whose SQL is the same on every backend. A backend sets `dialect`, implements `_exec`
    (one statement, its rows as tuples) and the methods its database does its own way."""

    dialect: Dialect
    without_vector: str  # SQL: insight `i` has no vector of the model bound to its `?`
    _vectors: dict[tuple[str, int], VectorCache]  # the vector matrices, by (model, dim)
    _vector_lock: AbstractContextManager[Any]

    def _exec(self, sql: str, args: Sequence[Any] = (), *, binary: bool = False) -> list[tuple[Any, ...]]:
        """Run a template (`Dialect.render`); `binary` may fetch in the backend's binary form (Postgres)."""
        raise NotImplementedError

    def _one(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self._exec(sql, args)
        return rows[0] if rows else None

    def _insight(self, r: Sequence[Any], build: Callable[..., Insight] = Insight) -> Insight:
        return insight_of(r, self.dialect.lists, build)

    def _edge(self, r: Sequence[Any]) -> Edge:
        return Edge(source_id=r[0], target_id=r[1], edge_type=r[2], weight=r[3], metadata=self.dialect.mapping(r[4]),
                    created_at=r[5])

    # ------------------------------------------------------------------ insights

    def get_insight(self, id: str, *, include_deleted: bool = False) -> Insight | None:
        sql = f"SELECT {INSIGHT_COLS} FROM {{s}}.insights WHERE id = ?"
        if not include_deleted:
            sql += " AND deleted_at IS NULL"
        r = self._one(sql, (id,))
        return self._insight(r) if r else None

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        # A range of the primary key (ids compare byte-wise on both backends): [prefix, prefix with its last
        # character's successor).
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self._exec(
            "SELECT id FROM {s}.insights WHERE id >= ? AND id < ? AND {u}deleted_at IS NULL ORDER BY id LIMIT ?",
            (prefix, upper, limit),
        )
        return [r[0] for r in rows]

    def get_insights(self, ids: Sequence[str]) -> dict[str, Insight]:
        out: dict[str, Insight] = {}
        for match, args in self.dialect.any_of(list(dict.fromkeys(ids)), 900):
            for r in self._exec(
                f"SELECT {INSIGHT_COLS} FROM {{s}}.insights WHERE id {match} AND {{u}}deleted_at IS NULL", args
            ):
                out[r[0]] = self._insight(r)
        return out

    def texts(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for match, args in self.dialect.any_of(list(dict.fromkeys(ids)), 900):
            for r in self._exec(
                f"SELECT id, content, category FROM {{s}}.insights WHERE id {match} AND {{u}}deleted_at IS NULL", args
            ):
                out[r[0]] = (r[1], r[2] or "general")
        return out

    def find_by_content(self, content: str) -> str | None:
        # Byte-identical: SQLite compares TEXT with memcmp (BINARY collation), Postgres under "C" (a hash
        # index finds the candidates).
        r = self._one(
            "SELECT id FROM {s}.insights WHERE content = ? AND deleted_at IS NULL ORDER BY {seq} LIMIT 1", (content,)
        )
        return r[0] if r else None

    def count_deleted(self) -> int:
        return int(self._exec("SELECT count(*) FROM {s}.insights WHERE deleted_at IS NOT NULL")[0][0])

    def latest(
        self, *, source: str | None = None, since: str | None = None, exclude: str | None = None,
        limit: int, filters: Filters = NO_FILTERS,
    ) -> list[Insight]:
        sql, args = and_given(*where(filters), ("source = ?", source), ("created_at >= ?", since), ("id <> ?", exclude))
        rows = self._exec(
            f"SELECT {INSIGHT_COLS} FROM {{s}}.insights WHERE {sql} ORDER BY created_at DESC, {{seq}} DESC LIMIT ?",
            [*args, limit],
        )
        return [self._insight(r) for r in rows]

    def latest_ids(self, *, limit: int, filters: Filters = NO_FILTERS) -> list[str]:
        sql, args = where(filters)
        rows = self._exec(
            f"SELECT id FROM {{s}}.insights WHERE {sql} ORDER BY created_at DESC, {{seq}} DESC LIMIT ?", [*args, limit]
        )
        return [r[0] for r in rows]

    def prune_candidates(
        self, *, exclude: str | None, stored_before: str | None, limit: int, immune_importance: int,
        immune_access: int,
    ) -> list[Insight]:
        sql, args = and_given(
            "deleted_at IS NULL AND importance < ? AND access_count < ?", [immune_importance, immune_access],
            ("id <> ?", exclude), ("COALESCE(stored_at, created_at) <= ?", stored_before),
        )
        rows = self._exec(
            f"SELECT {INSIGHT_COLS} FROM {{s}}.insights WHERE {sql} "
            "ORDER BY effective_importance ASC, created_at ASC, id ASC LIMIT ?",
            [*args, limit],
        )
        return [self._insight(r) for r in rows]

    def like_search(self, query: str, filters: Filters, limit: int) -> list[Insight]:
        sql, args = where(filters)
        fold = self.dialect.fold
        rows = self._exec(
            f"SELECT {INSIGHT_COLS} FROM {{s}}.insights WHERE {sql} AND {fold('content')} LIKE {fold('?')} "
            "ESCAPE '\\' ORDER BY importance DESC, created_at DESC, id LIMIT ?",
            [*args, like_pattern(query), limit],
        )
        return [self._insight(r) for r in rows]

    # ------------------------------------------------------------------ sessions and entities

    def session_tail(self, session: str) -> str | None:
        r = self._one(
            "SELECT t.insight_id FROM {s}.conversation_tails t JOIN {s}.insights i ON i.id = t.insight_id "
            "WHERE t.session = ? AND i.deleted_at IS NULL", (session,)
        )
        return r[0] if r else None

    def set_session_tail(self, session: str, insight_id: str) -> None:
        self._exec(
            "INSERT INTO {s}.conversation_tails (session, insight_id) VALUES (?, ?) "
            "ON CONFLICT (session) DO UPDATE SET insight_id = excluded.insight_id", (session, insight_id)
        )

    def with_entity(self, entity: str, *, exclude: str, limit: int) -> list[str]:
        rows = self._exec(
            "SELECT i.id FROM {s}.insight_entities e JOIN {s}.insights i ON i.id = e.insight_id "
            "WHERE e.entity = ? AND i.deleted_at IS NULL AND i.id <> ? "
            "ORDER BY e.created_at DESC, e.seq DESC LIMIT ?",  # the (entity, created_at, seq) index, in order
            (entity, exclude, limit),
        )
        return [r[0] for r in rows]

    def known_entities(self, candidates: Collection[str], *, casefold: bool = False) -> dict[str, str]:
        """Which candidates are entities of an active insight: {candidate: stored spelling}."""
        cands = list(dict.fromkeys(c.lower() if casefold else c for c in candidates))
        out: dict[str, str] = {}
        if not casefold:
            # The stored spelling is the candidate: whether one active insight names it is enough, and EXISTS
            # stops at the first, where grouping read every row of a common entity (0.4 s at 100k insights,
            # one in five naming it), on every remember.
            for rows, args in self.dialect.rows_of(cands, 900):
                for (ent,) in self._exec(
                    f"WITH c(v) AS ({rows}) SELECT v FROM c WHERE EXISTS (SELECT 1 FROM {{s}}.insight_entities e "
                    "JOIN {s}.insights i ON i.id = e.insight_id WHERE e.entity = c.v AND i.deleted_at IS NULL)",
                    args,
                ):
                    out[ent] = ent
            return out
        for match, args in self.dialect.any_of(cands, 900):
            for key, ent in self._exec(
                "SELECT e.entity_lower, min(e.entity) FROM {s}.insight_entities e JOIN {s}.insights i "
                f"ON i.id = e.insight_id WHERE e.entity_lower {match} AND i.deleted_at IS NULL GROUP BY e.entity_lower",
                args,
            ):
                out[key] = ent
        return out

    def entity_hits(self, entities_lower: Collection[str], filters: Filters = NO_FILTERS) -> dict[str, int]:
        sql, scope = where(filters, "i")
        out: dict[str, int] = {}
        for match, args in self.dialect.any_of(sorted(set(entities_lower))):
            for id_, n in self._exec(
                "SELECT i.id, count(DISTINCT e.entity_lower) FROM {s}.insight_entities e "
                f"JOIN {{s}}.insights i ON i.id = e.insight_id WHERE e.entity_lower {match} AND {sql} GROUP BY i.id",
                [*args, *scope],
            ):
                out[id_] = n
        return out

    def top_entities(self, limit: int) -> list[tuple[str, int]]:
        rows = self._exec(
            "SELECT e.entity, count(*) AS n FROM {s}.insight_entities e JOIN {s}.insights i ON i.id = e.insight_id "
            "WHERE i.deleted_at IS NULL GROUP BY e.entity ORDER BY n DESC, e.entity ASC LIMIT ?",
            (limit,),
        )
        return [(r[0], r[1]) for r in rows]

    def count_by_category(self) -> dict[str, int]:
        rows = self._exec(
            "SELECT category, count(*) FROM {s}.insights WHERE deleted_at IS NULL GROUP BY category ORDER BY category"
        )
        return dict(rows)

    # ------------------------------------------------------------------ vectors

    def ann_index(self, model: str, dim: int) -> AnnSearch | None:
        return None  # no index: recall scans the matrix

    def nearest(self, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The exact answer from the matrix, or the ANN index's where one serves (a backend whose database
        searches by itself overrides this)."""
        return nearest(self, model, vector, k)

    def unembedded(self, model: str, limit: int) -> list[Insight]:
        rows = self._exec(
            f"SELECT {INSIGHT_COLS} FROM {{s}}.insights i WHERE deleted_at IS NULL AND {self.without_vector} "
            "ORDER BY importance DESC, created_at DESC, id LIMIT ?",
            (model, limit),
        )
        return [self._insight(r) for r in rows]

    queues_vectors = True

    def queue_vectors(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        r = self._one("SELECT coalesce(max(batch), 0) + 1 FROM {s}.vector_queue")
        batch = int(r[0]) if r else 1
        for pos, id_ in enumerate(ids):
            self._exec("INSERT INTO {s}.vector_queue (insight_id, batch, pos) VALUES (?, ?, ?)", (id_, batch, pos))

    def queued_vectors(self) -> tuple[int, list[Insight]]:
        """Batches whose insights were all forgotten meanwhile are skipped (the fill takes them off)."""
        rows = self._exec(
            f"SELECT q.batch, {', '.join('i.' + c for c in INSIGHT_COLUMNS)} FROM {{s}}.vector_queue q "
            "JOIN {s}.insights i ON i.id = q.insight_id WHERE i.deleted_at IS NULL AND q.batch = "
            "(SELECT min(q2.batch) FROM {s}.vector_queue q2 JOIN {s}.insights i2 ON i2.id = q2.insight_id "
            "WHERE i2.deleted_at IS NULL) ORDER BY q.pos"
        )
        return (int(rows[0][0]), [self._insight(r[1:]) for r in rows]) if rows else (0, [])

    def unqueue_vectors(self, batch: int) -> bool:
        if self._one("SELECT 1 FROM {s}.vector_queue WHERE batch = ? LIMIT 1", (batch,)) is None:
            return False
        # With it, the batches before it whose insights were all forgotten.
        self._exec("DELETE FROM {s}.vector_queue WHERE batch <= ?", (batch,))
        return True

    def count_queued(self) -> int:
        # The queue's rows alone (recall asks on every call; a join would read each queued insight's row): an
        # insight forgotten while queued still counts until its batch is filled.
        r = self._one("SELECT count(*) FROM {s}.vector_queue")
        return int(r[0]) if r else 0

    def vector_matrix(self, model: str, dim: int) -> tuple[list[str], np.ndarray]:
        """(ids, unit vectors) of active insights embedded by `model` with `dim` dimensions, refreshed
        incrementally from rows whose `vec_seq` moved since the last call (by this or another process)."""
        with self._vector_lock:
            top = self._one("SELECT value FROM {s}.mnemon_meta WHERE key = 'vec_seq'")
            top_seq = int(top[0]) if top else 0
            cache = self._vectors.get((model, dim))
            if cache is None:
                cache = self._vectors[(model, dim)] = self._mapped_vectors(model, dim, top_seq) or VectorCache(model, dim)
            if top_seq > cache.high_water:
                for rows in self._vector_changes(cache.high_water, top_seq):
                    cache.apply(rows, cache.high_water)
                cache.apply([], top_seq)
            return cache.snapshot()

    def _meta(self, key: str) -> int | None:
        """A value of the store's `mnemon_meta` (the store's id, counters), None when it has none."""
        r = self._one("SELECT value FROM {s}.mnemon_meta WHERE key = ?", (key,))
        return int(r[0]) if r else None

    def store_uid(self) -> int | None:
        return self._meta("store_uid")

    def _vector_file_beside(self) -> Path | None:
        """The file the vector matrix files are named after (the database, or a Postgres client's graph index
        file), None: this store keeps none."""
        return None

    def _mapped_vectors(self, model: str, dim: int, top_seq: int) -> VectorCache | None:
        """A cache started from a vector matrix file at or before `top_seq` (`vecfile.py`), None: none."""
        beside = self._vector_file_beside()
        if beside is None:
            return None
        got = vecfile.load(vecfile.path_for(beside, model, dim), model, dim, uid=self._meta("store_uid"),
                           counter=top_seq)
        return got if isinstance(got, VectorCache) else None

    def _models_without_file(self, min_rows: int) -> list[tuple[str, int]]:
        beside = self._vector_file_beside()
        return [] if beside is None else [k for k, c in self._vectors.items()
                                          if c.rows() >= min_rows and not vecfile.path_for(beside, *k).exists()]

    def vector_files_missing(self, min_rows: int) -> bool:
        return bool(self._models_without_file(min_rows))

    def write_vector_files(self, min_rows: int, *, missing_only: bool) -> None:
        beside = self._vector_file_beside()
        if beside is None:
            return
        if missing_only:
            models = self._models_without_file(min_rows)
        else:
            models = [(m, int(d)) for m, d in (k.rsplit(":", 1) for k, c in self.vector_counts().items()
                                               if c >= min_rows)]
        for model, dim in models:
            ids, _ = self.vector_matrix(model, dim)
            if len(ids) < min_rows:
                continue
            cache = self._vectors[(model, dim)]
            path = vecfile.path_for(beside, model, dim)
            mapfile.remove_leftovers(path)
            vecfile.write(path, cache, uid=self._meta("store_uid") or 0, counter=cache.high_water)

    def _vector_changes(self, after: int, top: int) -> Iterator[list[tuple[str, bytes | None, str | None, bool]]]:
        """(id, float32 blob, model, active) of every row whose vector changed after `after`, in batches."""
        raise NotImplementedError

    # ------------------------------------------------------------------ edges

    def edges_of(self, ids: Sequence[str]) -> list[Edge]:
        out: dict[tuple[str, str, str], Edge] = {}  # by key: an edge between two statements' ids comes twice
        for match, args in self.dialect.any_of(list(dict.fromkeys(ids)), 400):
            for r in self._exec(
                f"SELECT {EDGE_COLS} FROM {{s}}.edges WHERE source_id {match} UNION "
                f"SELECT {EDGE_COLS} FROM {{s}}.edges WHERE target_id {match} ORDER BY source_id, target_id, edge_type",
                [*args, *args],
            ):
                out.setdefault((r[0], r[1], r[2]), self._edge(r))
        return list(out.values())

    def edges_among(self, ids: Sequence[str], edge_type: str | None = None) -> list[Edge]:
        out: list[Edge] = []
        for match, ids_args in self.dialect.any_of(list(dict.fromkeys(ids))):
            sql = f"SELECT {EDGE_COLS} FROM {{s}}.edges WHERE source_id {match} AND target_id {match}"
            args: list[Any] = [*ids_args, *ids_args]
            if edge_type is not None:
                sql += " AND edge_type = ?"
                args.append(str(edge_type))
            out.extend(self._edge(r) for r in self._exec(sql + " ORDER BY source_id, target_id", args))
        return out

    def edge_counts(self, ids: Sequence[str]) -> dict[str, int]:
        out = dict.fromkeys(ids, 0)
        for match, args in self.dialect.any_of(list(out), 400):
            for id_, n in self._exec(
                f"SELECT source_id, count(*) FROM {{s}}.edges WHERE source_id {match} GROUP BY source_id "
                f"UNION ALL SELECT target_id, count(*) FROM {{s}}.edges WHERE target_id {match} GROUP BY target_id",
                [*args, *args],
            ):
                out[id_] += n
        return out

    def count_edges(self) -> int:
        return int(self._exec("SELECT count(*) FROM {s}.edges")[0][0])

    # ------------------------------------------------------------------ recall (plain tuples, no models)

    def insight_meta(self, ids: Sequence[str]) -> dict[str, tuple[int, str, str, str]]:
        out: dict[str, tuple[int, str, str, str]] = {}
        for match, args in self.dialect.any_of(list(dict.fromkeys(ids)), 900):
            for r in self._exec(
                f"SELECT id, importance, created_at, category, source FROM {{s}}.insights "
                f"WHERE id {match} AND {{u}}deleted_at IS NULL",
                args, binary=True,
            ):
                out[r[0]] = (r[1], r[2], r[3] or "general", r[4] or "")
        return out

    def adjacency(self, ids: Sequence[str]) -> list[tuple[str, str, str, float, str | None]]:
        out: list[tuple[str, str, str, float, str | None]] = []
        sub = f"CASE WHEN e.edge_type = 'temporal' THEN {self.dialect.json_text('e.metadata', 'sub_type')} END"
        for match, args in self.dialect.any_of(list(dict.fromkeys(ids)), 400):
            out.extend(
                self._exec(
                    f"SELECT e.source_id, e.target_id, e.edge_type, e.weight, {sub} FROM {{s}}.edges e "
                    "JOIN {s}.insights i ON i.id = e.target_id AND {u}i.deleted_at IS NULL "
                    f"WHERE e.source_id {match} UNION ALL "
                    f"SELECT e.target_id, e.source_id, e.edge_type, e.weight, {sub} FROM {{s}}.edges e "
                    "JOIN {s}.insights i ON i.id = e.source_id AND {u}i.deleted_at IS NULL "
                    f"WHERE e.target_id {match}",
                    [*args, *args], binary=True,  # tens of thousands of rows per beam level: binary parses faster
                )
            )
        return out

    def superseded_ids(self, among: Sequence[str] | None = None) -> set[str]:
        sql = ("SELECT DISTINCT e.target_id FROM {s}.edges e JOIN {s}.insights i ON i.id = e.target_id "
               "WHERE e.edge_type = 'supersedes' AND {u}i.deleted_at IS NULL")
        if among is None:  # a scan of every edge
            return {r[0] for r in self._exec(sql)}
        out: set[str] = set()
        for match, args in self.dialect.any_of(list(dict.fromkeys(among)), 900):  # the target index
            out.update(r[0] for r in self._exec(f"{sql} AND e.target_id {match}", args))
        return out

    # ------------------------------------------------------------------ the change log (graph/fold.py)

    def graph_log_since(self, counter: int) -> LogBehind:
        r = self._exec(
            "SELECT count(*), count(CASE WHEN insight_id = '*' THEN 1 END), "
            "(SELECT value FROM {s}.mnemon_meta WHERE key = 'graph_log_floor') FROM {s}.graph_log WHERE counter > ?",
            (counter,),
        )[0]
        return LogBehind(int(r[0]), bool(r[1]), int(r[2] or 0))

    def graph_log_counter(self, at_most: int, skip: int) -> int | None:
        r = self._exec("SELECT counter FROM {s}.graph_log WHERE counter <= ? ORDER BY counter DESC LIMIT 1 OFFSET ?",
                       (at_most, skip))
        return int(r[0][0]) if r else None

    def cut_graph_log(self, through: int) -> None:
        # The floor only rises: a fold that read an older snapshot never lowers what a later one cut.
        with self.transaction():  # type: ignore[attr-defined]
            self._exec("DELETE FROM {s}.graph_log WHERE counter <= ?", (through,))
            self._exec("UPDATE {s}.mnemon_meta SET value = CASE WHEN value < ? THEN ? ELSE value END "
                       "WHERE key = 'graph_log_floor'", (through, through))

    # ------------------------------------------------------------------ oplog

    def in_transaction(self) -> bool:
        raise NotImplementedError

    def _trim_at_commit(self, now: str) -> None:
        """Oplog rows were written: trim once at commit, as of `now`, however many rows the transaction logs."""
        raise NotImplementedError

    def log(self, operation: str, insight_id: str | None, detail: str, now: str) -> None:
        if not self.in_transaction():  # alone: a transaction of its own, as the retention trim runs at a commit
            with self.transaction():  # type: ignore[attr-defined]
                return self.log(operation, insight_id, detail, now)
        self._exec(
            "INSERT INTO {s}.oplog (operation, insight_id, detail, created_at) VALUES (?,?,?,?)",
            (operation, insight_id, detail, now),
        )
        self._trim_at_commit(now)

    def replaced(self) -> bool:
        """The database this store opened is no longer the one its settings name (a file store's file removed or
        restored over); a server's database stays the same."""
        return False

    def record_access(self, access: Access) -> bool:
        """Applied at once in a transaction of its own when the write lock is free, else kept (`_keep`) for the
        next write transaction, which applies it first: never waits for another writer."""
        try:
            with self._transaction(wait=False):
                apply_access(self, access)  # type: ignore[arg-type]
            return True
        except Busy:
            self._keep(access)
            return False

    def _transaction(self, *, wait: bool) -> AbstractContextManager[None]:
        """`transaction()`, or with `wait=False` `Busy` when another writer holds the store's write lock."""
        raise NotImplementedError

    def _keep(self, access: Access) -> None:
        """Keep an access beside the store for its next write transaction, taking no lock of the database."""
        raise NotImplementedError

    def claim_request(self, request_id: str, now: str) -> bool:
        """Record a served call's request id in the open write transaction (`once.py`); False when it is there
        already. Ids older than REQUEST_KEEP_S go at the same time (a table of a day's served writes)."""
        self._exec("DELETE FROM {s}.requests WHERE created_at < ?", (iso(parse(now).timestamp() - REQUEST_KEEP_S),))
        rows = self._exec(
            "INSERT INTO {s}.requests (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING RETURNING id",
            (request_id, now),
        )
        return bool(rows)

    def oplog_oldest(self) -> str | None:
        return self._exec("SELECT min(created_at) FROM {s}.oplog")[0][0]

    def read_log(self, limit: int) -> list[OplogEntry]:
        rows = self._exec(f"SELECT {OPLOG_COLS} FROM {{s}}.oplog ORDER BY id DESC LIMIT ?", (limit,))
        return [oplog_of(r) for r in rows]

    def count_log(self) -> int:
        return int(self._exec("SELECT count(*) FROM {s}.oplog")[0][0])

    # ------------------------------------------------------------------ copy (`mnemon migrate`)

    def dump_oplog(self) -> Iterator[OplogEntry]:
        for r in self._exec(f"SELECT {OPLOG_COLS} FROM {{s}}.oplog ORDER BY id"):
            yield oplog_of(r, OplogEntry.model_construct)

    def dump_tails(self) -> Iterator[tuple[str, str]]:
        """(session, insight id) of every remember session's tail, by session."""
        for r in self._exec("SELECT session, insight_id FROM {s}.conversation_tails ORDER BY session"):
            yield r[0], r[1]
