"""FalkorDB as a store: `MNEMON_DATABASE_URL=falkordb://[:password@]host:port`; extra `mnemon-core[falkordb]`.

FalkorDB is a graph database served by Redis (a module), spoken to in openCypher. Each store is a graph of its own
(the key `mnemon:graph:{<store>}:g`): its insights are `Insight` nodes, the four graphs and `supersedes` a
relationship type each (`TEMPORAL`, `ENTITY`, `CAUSAL`, `SEMANTIC`, `SUPERSEDES`, as on Kùzu) with the edge's
`weight`, `metadata` (JSON text) and `created_at`. An insight's vector is kept twice: exactly on its node, as the
float32 bytes in base64 (`vec`, with `model`: what a process reads back), and, while the insight is active, as a
node of its own per model and dimension (`Vec<dim>_<model hash> {id, v: vecf32}`) under FalkorDB's HNSW vector
index (`CREATE VECTOR INDEX … similarityFunction: 'cosine'`, `db.idx.vector.queryNodes`), which answers recall's
nearest neighbours past `ANN_MIN_ROWS` vectors. (A label of their own: an index over `Insight` nodes, some
without the property, answered fewer than k of those that have it.) FalkorDB answers a double with 15
significant digits (0.4999999519786024 comes back 0.499999951978602), so the two doubles a store keeps, an edge's
`weight` and an insight's `effective_importance`, are stored as numbers (what a Cypher query compares) and beside
them as their exact text (`weight_exact`, `effective_importance_exact`: what mnemon reads back).

FalkorDB has no transaction a writer can read inside (each `GRAPH.QUERY` is atomic on its own), so this store
keeps the rows in the process as the Redis store does (`store/mirrored.py`: reads from the mirror, a commit in one
`MULTI`/`EXEC` of one `GRAPH.QUERY` per kind of change beside the oplog, change log and version keys, writers
taking turns on the lock key). Keyword, entity and source recall come from the postings the process keeps, so
they rank exactly as on SQLite. Queries go through the `falkordb` client's parameters and result parser, over the
Redis connection the shared keys use.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import StoreError, import_extra
from ..models import Edge, Insight
from ..redact import redact
from .cypher import LABELS, TYPES
from .mirror import Mirror, Row, row_of
from .mirrored import MirroredStore, Stores, _redis, faults
from .sql import INSIGHT_COLUMNS, WRITE_LOCK_TIMEOUT_S, insight_of, json_mapping, metadata_json

SCHEMES = {"falkordb://": "redis://", "falkordbs://": "rediss://"}  # → the Redis URL of the same server
NEEDS = "a Redis with the FalkorDB module (redis-server --loadmodule falkordb.so)"
GRAPH = "g"  # the graph's key under the store's prefix (`graph` is the change counter)
EXACT = "_exact"  # the suffix of a double's exact text (`repr`)
ROW = ", ".join(f"i.{c}" for c in (*INSIGHT_COLUMNS, "seq", "terms", "model", "vec")).replace(
    "i.effective_importance", f"i.effective_importance{EXACT}")
EI = INSIGHT_COLUMNS.index("effective_importance")
EDGE = f"startNode(e).id, endNode(e).id, type(e), e.weight{EXACT}, e.metadata, e.created_at"


def _falkordb() -> Any:
    return import_extra("falkordb", "falkordb")


def redis_url(url: str) -> str:
    """The Redis URL of a falkordb:// one (FalkorDB is a Redis server with a module)."""
    scheme = next((s for s in SCHEMES if url.startswith(s)), None)
    if scheme is None:
        raise StoreError(f"a FalkorDB URL is falkordb://[:password@]host:port; got {redact(url)!r}")
    return SCHEMES[scheme] + url[len(scheme):]


class Floats:
    """A vector as a Cypher list literal, written once with `repr` (exact for float32) rather than element by
    element by the client's parameter encoder (`stringify_param_value` takes `str` of what it does not know)."""

    def __init__(self, vector: np.ndarray) -> None:
        self.text = "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"

    def __str__(self) -> str:
        return self.text


def vector_label(model: str, dim: int) -> str:
    """The label of the nodes under the vector index of (model, dim)."""
    return f"Vec{dim}_{hashlib.sha1(model.encode()).hexdigest()[:12]}"


def _props(row: Row) -> dict[str, Any]:
    """An insight's node properties (a null one is not stored)."""
    ins = row.insight
    out: dict[str, Any] = {c: getattr(ins, c) for c in INSIGHT_COLUMNS}
    out.update(category=str(ins.category), tags=list(ins.tags), entities=list(ins.entities), seq=row.seq,
               terms=sorted(row.tokens))
    out["effective_importance" + EXACT] = repr(float(ins.effective_importance))
    if row.vector is not None:
        out.update(model=row.model or "", vec=base64.b64encode(row.vector).decode())
    return {k: v for k, v in out.items() if v is not None}


def _row(r: Sequence[Any]) -> Row:
    n = len(INSIGHT_COLUMNS)
    r = [*r[:EI], float(r[EI]), *r[EI + 1:]]
    ins = insight_of(r, lambda v: list(v or []), Insight.model_construct)
    vec = None if r[n + 3] is None else base64.b64decode(r[n + 3])
    return row_of(ins, r[n], r[n + 1] or (), r[n + 2] if vec is not None else None, vec)


def _edge(r: Sequence[Any]) -> Edge:
    return Edge.model_construct(source_id=r[0], target_id=r[1], edge_type=TYPES[r[2]], weight=float(r[3]),
                                metadata=json_mapping(r[4]), created_at=r[5])


class FalkorStore(MirroredStore):
    """`Store` over one store's graph (and keys) in a FalkorDB."""

    ROOT = "mnemon:graph"
    SERVER = "FalkorDB"
    NEEDS = NEEDS

    @classmethod
    def connect(cls, url: str) -> Any:
        """A client of the server, checked: it answers, and has the FalkorDB module (`GRAPH.*` commands)."""
        target = redis_url(url)
        _falkordb()
        redis = _redis()
        with faults(url, cls.SERVER, NEEDS):
            client = redis.Redis.from_url(target, protocol=2, socket_connect_timeout=5,
                                          socket_timeout=WRITE_LOCK_TIMEOUT_S)
            client.ping()
            try:
                client.execute_command("GRAPH.LIST")
            except redis.exceptions.ResponseError as e:
                client.close()
                if "unknown command" not in str(e).lower():
                    raise
                raise StoreError(f"FalkorDB at {redact(url)} does not know GRAPH.QUERY: {NEEDS} is needed") from e
        return client

    @property
    def graph(self) -> Any:
        """The store's graph, through the `falkordb` client (its parameters and result parser)."""
        return _falkordb().Graph(self.r, self.p + GRAPH)

    def _query(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return self.graph.ro_query(query, params).result_set  # type: ignore[no-any-return]

    def _create(self) -> None:
        for prop in ("id", "seq"):
            self._index(f"CREATE INDEX FOR (i:Insight) ON (i.{prop})")

    def _all_ids(self) -> list[str]:
        return [r[0] for r in self._query("MATCH (i:Insight) RETURN i.id ORDER BY i.seq")]

    def _read(self, ids: Sequence[str]) -> list[tuple[Row | None, list[Edge]]]:
        rows = {r[0]: _row(r) for r in self._query(f"UNWIND $ids AS x MATCH (i:Insight {{id: x}}) RETURN {ROW}",
                                                     {"ids": list(ids)})}
        edges: dict[str, dict[tuple[str, str, str], Edge]] = {i: {} for i in ids}
        for r in self._query(f"UNWIND $ids AS x MATCH (:Insight {{id: x}})-[e]-(:Insight) RETURN x, {EDGE}",
                             {"ids": list(ids)}):
            e = _edge(r[1:])
            edges[r[0]][(e.source_id, e.target_id, str(e.edge_type))] = e
        return [(rows.get(i), list(edges[i].values())) for i in ids]

    def _queue_rows(self, pipe: Any, mirror: Mirror) -> None:
        p = self.p
        gone = sorted(i for i in mirror.changed_rows if i not in mirror.rows)
        rows = [mirror.rows[i] for i in sorted(mirror.changed_rows) if i in mirror.rows]
        moved = sorted(mirror.vectors_moved())
        vectors: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for row in (mirror.rows[i] for i in moved if i in mirror.rows):
            if row.active and row.vector is not None:
                vectors.setdefault((row.model or "", len(row.vector) // 4), []).append(
                    {"id": row.insight.id, "v": Floats(np.frombuffer(row.vector, dtype="<f4"))})
        labels = {v.decode() for v in self.r.smembers(p + "vlabels")}
        for model, dim in sorted(vectors):
            if vector_label(model, dim) not in labels:
                labels.add(self._vector_index(model, dim))
        statements: list[tuple[str, dict[str, Any]]] = []
        for label in sorted(labels) if moved else ():  # a moved vector goes, and comes back below while indexed
            statements.append((f"UNWIND $ids AS x MATCH (v:{label} {{id: x}}) DELETE v", {"ids": moved}))
        if gone:
            statements.append(("UNWIND $ids AS x MATCH (i:Insight {id: x}) DETACH DELETE i", {"ids": gone}))
        if rows:  # `SET i = …` replaces every property
            statements.append(("UNWIND $rows AS r MERGE (i:Insight {id: r.id}) SET i = r",
                               {"rows": [_props(r) for r in rows]}))
        for (model, dim), items in sorted(vectors.items()):
            statements.append((f"UNWIND $rows AS r CREATE (:{vector_label(model, dim)} {{id: r.id, v: vecf32(r.v)}})",
                               {"rows": items}))
        dropped: dict[str, list[dict[str, str]]] = {}
        kept: dict[str, list[dict[str, Any]]] = {}
        for s, t, y in sorted(mirror.changed_edges):
            e = mirror.edges.get((s, t, y))
            dropped.setdefault(LABELS[y], []).append({"s": s, "t": t})
            if e is not None:
                w = float(e.weight)
                kept.setdefault(LABELS[y], []).append({"s": s, "t": t, "w": w, "x": repr(w),
                                                       "m": metadata_json(e.metadata), "at": e.created_at})
        for label, keys in sorted(dropped.items()):
            statements.append((f"UNWIND $keys AS k MATCH (:Insight {{id: k.s}})-[e:{label}]->(:Insight {{id: k.t}}) "
                               "DELETE e", {"keys": keys}))
        for label, items in sorted(kept.items()):
            statements.append((f"UNWIND $edges AS k MATCH (s:Insight {{id: k.s}}), (t:Insight {{id: k.t}}) CREATE (s)-"
                               f"[:{label} {{weight: k.w, weight{EXACT}: k.x, metadata: k.m, created_at: k.at}}]->(t)",
                               {"edges": items}))
        encode = _falkordb().helpers.stringify_param_value
        for query, params in statements:
            head = "CYPHER " + " ".join(f"{k}={encode(v)}" for k, v in params.items()) + " " if params else ""
            pipe.execute_command("GRAPH.QUERY", p + GRAPH, head + query, "--compact")

    def size_bytes(self) -> int:
        """The store's keys, and its graph as FalkorDB counts it (`GRAPH.MEMORY USAGE`, whole MB: the key's own
        `MEMORY USAGE` says a few bytes; an older FalkorDB without `GRAPH.MEMORY`: the keys alone)."""
        with self._faults(self.url):
            try:
                usage = self.r.execute_command("GRAPH.MEMORY", "USAGE", self.p + GRAPH)
            except _redis().exceptions.ResponseError:
                usage = {}
        sizes = usage if isinstance(usage, dict) else dict(zip(usage[::2], usage[1::2]))
        return super().size_bytes() + int(sizes.get(b"total_graph_sz_mb", 0)) * 2**20

    def _vector_index(self, model: str, dim: int) -> str:
        """Make the indexes of (model, dim)'s vector nodes, now, before the commit writes any: an index made in
        the `MULTI` that writes its first nodes is filled in the background, and answered short until then. Its
        label is named in `vlabels` once made (this process holds the write lock: nobody makes it meanwhile)."""
        label = vector_label(model, dim)
        self._index(f"CREATE INDEX FOR (v:{label}) ON (v.id)")
        self._index(f"CREATE VECTOR INDEX FOR (v:{label}) ON (v.v) OPTIONS {{dimension: {dim}, "
                    "similarityFunction: 'cosine'}")
        deadline = time.monotonic() + WRITE_LOCK_TIMEOUT_S
        while any(r[1] != "OPERATIONAL" for r in self._query("CALL db.indexes() YIELD label, status RETURN label, "
                                                             "status")) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.r.sadd(self.p + "vlabels", label)
        return label

    def _index(self, statement: str) -> None:
        """An index statement; one another process made already is there."""
        try:
            self.graph.query(statement)
        except _redis().exceptions.ResponseError as e:
            if "already indexed" not in str(e):
                raise

    def _index_nearest(self, model: str, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        rows = self._query(f"CALL db.idx.vector.queryNodes('{vector_label(model, int(vec.shape[0]))}', 'v', $k, "
                           "vecf32($q)) YIELD node, score RETURN node.id, score", {"k": k, "q": Floats(vec)})
        return [(r[0], 1.0 - float(r[1])) for r in rows]  # the index's score is the cosine distance


def open_store(settings: Settings) -> FalkorStore:
    return FalkorStore(settings.database_url or "", store=settings.store, readonly=settings.readonly,
                       oplog_retention=settings.oplog_retention)


def catalog(settings: Settings) -> Stores:
    return Stores(settings.database_url or "", FalkorStore)
