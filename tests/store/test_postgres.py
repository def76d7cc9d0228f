"""The Postgres store against its reference, the SQLite store: the same calls give the same answers; plus what
only a server store has — stores isolated in one database, concurrent writer processes, a pool, the HNSW
index, `mnemon migrate`. Needs a real Postgres with pgvector (tests/pg.py); skipped without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.integration

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T01:00:00Z"
T2 = "2026-01-02T00:00:00Z"


@pytest.fixture
def pg(pg_url: str, pg_store_name: str):
    from mnemon_core.store.postgres import PostgresStore

    s = PostgresStore(pg_url, store=pg_store_name)
    yield s
    s.close()


@pytest.fixture
def sq(tmp_path: Path):
    from mnemon_core.store.sqlite import SQLiteStore

    s = SQLiteStore(tmp_path / "ref.db")
    yield s
    s.close()


def full(ins) -> dict:
    """Every stored field of an insight, the excluded ones too."""
    return {k: getattr(ins, k) for k in type(ins).model_fields}


LONG = "x" * 300  # a token longer than a GIN key may be


def fill(store) -> None:
    """The same writes, through the protocol only."""
    from mnemon_core.models import Edge, Insight
    from mnemon_core.text import token_set

    rows = [
        ("a", "Redis cache because latency matters", "decision", 4, ["infra"], ["Redis"], "agent1", T0),
        ("b", "redis eviction policy allkeys-lru", "fact", 2, [], ["redis", "Redis"], "agent1", T0),  # tie on time
        ("c", "数据库 连接池 配置 Redis", "fact", 3, ["db"], ["Redis", "PostgreSQL"], "agent2", T1),
        ("d", "Café opening hours", "general", 1, [], [], "agent2", T1),
        ("e", "CAFÉ menu and café prices " + LONG, "context", 3, [], ["Cafe"], "agent1", T2),
        ("f", "Redis cache because latency matters ", "decision", 3, [], [], "agent1", T2),  # trailing space
        ("g", "to be forgotten soon", "general", 2, [], ["Redis"], "agent3", T2),
    ]
    with store.transaction():
        for id_, content, cat, imp, tags, ents, src, ts in rows:
            ins = Insight(id=id_, content=content, category=cat, importance=imp, tags=tags, entities=ents,
                          source=src, created_at=ts, updated_at=ts, stored_at=ts)
            store.insert_insight(ins, token_set(" ".join([content, *tags, *ents])))
        rng = np.random.default_rng(7)
        for id_ in "abcg":
            store.set_vector(id_, rng.standard_normal(8).astype(np.float32), "m8")
        store.set_vector("d", rng.standard_normal(4).astype(np.float32), "m4")
        for s, t, typ, w in [("a", "b", "semantic", 0.9), ("b", "a", "semantic", 0.9), ("a", "c", "causal", 0.3),
                             ("e", "d", "supersedes", 1.0), ("c", "g", "entity", 1.0), ("g", "a", "temporal", 0.5)]:
            store.upsert_edge(Edge(source_id=s, target_id=t, edge_type=typ, weight=w,
                                   metadata={"k": s + t, "z": "1"}, created_at=T1))
        store.upsert_edge(Edge(source_id="a", target_id="b", edge_type="semantic", weight=0.7, metadata={},
                               created_at=T2))  # replaces
        store.touch(["a", "a", "c"], T2)
        store.touch(["b"], T2, inc=3)
        store.set_effective_importance({"a": 0.91, "b": 0.12, "c": 0.33, "d": 0.05, "e": 0.4, "f": 0.2, "g": 0.1})
        for i in range(3):
            store.log("remember", "abc"[i], f"detail {i} café", T2)
    with store.transaction():
        store.soft_delete(["g"], T2)
        store.log("forget", "g", "", T2)


def test_same_answers_as_sqlite(sq, pg) -> None:
    from mnemon_core.lifecycle import IMMUNE_ACCESS, IMMUNE_IMPORTANCE
    from mnemon_core.store.base import Filters, rank_by_coverage

    fill(sq)
    fill(pg)

    def same(call):
        assert call(pg) == call(sq)
        return call(sq)

    assert same(lambda s: [full(i) for i in s.iter_active()])[0]["id"] == "a"
    same(lambda s: [full(i) for i in s.iter_active(Filters(category="fact"))])
    same(lambda s: full(s.get_insight("g", include_deleted=True)))
    assert same(lambda s: s.get_insight("g")) is None
    same(lambda s: {k: full(v) for k, v in s.get_insights(["c", "a", "g", "zz"]).items()})
    assert same(lambda s: (s.count_active(), s.count_deleted())) == (6, 1)
    # exact content: byte-identical only (a trailing space is another text)
    assert same(lambda s: s.find_by_content("Redis cache because latency matters")) == "a"
    assert same(lambda s: s.find_by_content("redis cache because latency matters")) is None
    assert same(lambda s: s.find_by_content("to be forgotten soon")) is None
    for q, f, ex in [
        (["redis", "cache"], Filters(), None),
        (["redis", "数据", "据库"], Filters(), None),
        (["redis"], Filters(category="fact"), "b"),
        (["redis"], Filters(source="agent1"), None),
        ([LONG, "menu"], Filters(), None),
        (["nothing"], Filters(), None),
    ]:
        hits = same(lambda s: sorted(s.token_hits(q, filters=f, exclude=ex)))
        same(lambda s: rank_by_coverage(s.token_hits(q, filters=f, exclude=ex)))
        for n in (1, 2, 10):
            assert same(lambda s: s.token_hits(q, filters=f, exclude=ex, limit=n)) == rank_by_coverage(
                sq.token_hits(q, filters=f, exclude=ex))[:n]
            same(lambda s: s.token_hits(q, filters=f, exclude=ex, limit=n, order="overlap"))
            if f == Filters() and ex is None:  # remember's one pass: both orders at once
                assert same(lambda s: s.token_tops(q, n)) == (
                    pg.token_hits(q, limit=n), pg.token_hits(q, limit=n, order="overlap"))
        assert all(h.id != "g" for h in hits)
    assert [h.id for h in pg.token_hits([LONG])] == ["e"]
    same(lambda s: s.insight_tokens(["a", "c", "g"]))
    # ties on created_at are broken by insertion order, newest first
    assert [i.id for i in same(lambda s: s.latest(limit=10))] == ["f", "e", "d", "c", "b", "a"]
    same(lambda s: [i.id for i in s.latest(source="agent1", exclude="f", limit=2)])
    same(lambda s: [i.id for i in s.latest(since=T1, limit=10, filters=Filters(category="fact"))])
    # the latest insights naming an entity: newest first, ties by insertion order, deleted ones left out
    assert same(lambda s: s.with_entity("Redis", exclude="x", limit=5)) == ["c", "b", "a"]
    assert same(lambda s: s.with_entity("Redis", exclude="c", limit=1)) == ["b"]
    same(lambda s: s.known_entities(["redis", "Redis", "Postgresql", "nope"]))
    assert same(lambda s: s.known_entities(["REDIS", "postgresql"], casefold=True)) == {
        "redis": "Redis", "postgresql": "PostgreSQL"}
    same(lambda s: s.entity_hits(["redis", "postgresql"]))
    same(lambda s: s.entity_hits(["redis"], Filters(source="agent2")))
    same(lambda s: s.top_entities(10))
    assert list(same(lambda s: s.count_by_category())) == ["context", "decision", "fact", "general"]
    # LIKE folds ASCII letters only, as SQLite does: "café" finds "CAFÉ menu" only through "caf"
    same(lambda s: [i.id for i in s.like_search("CAFÉ", Filters(), 10)])
    assert [i.id for i in same(lambda s: s.like_search("caf", Filters(), 10))] == ["e", "d"]
    same(lambda s: [i.id for i in s.like_search("100%_", Filters(), 10)])
    immune = {"immune_importance": IMMUNE_IMPORTANCE, "immune_access": IMMUNE_ACCESS}
    same(lambda s: [full(i) for i in s.prune_candidates(exclude="a", stored_before=T1, limit=5, **immune)])
    same(lambda s: [full(i) for i in s.prune_candidates(exclude=None, stored_before=None, limit=10, **immune)])
    # vectors
    ids_sq, mat_sq = sq.vector_matrix("m8", 8)
    ids_pg, mat_pg = pg.vector_matrix("m8", 8)
    assert ids_pg == ids_sq == ["a", "b", "c"] and np.array_equal(mat_pg, mat_sq)
    assert np.array_equal(pg.get_vector("a", "m8"), sq.get_vector("a", "m8"))
    assert same(lambda s: s.get_vector("a", "m4")) is None
    assert same(lambda s: s.vector_counts()) == {"m4:4": 1, "m8:8": 3}
    same(lambda s: [i.id for i in s.unembedded("m8", 10)])
    # edges
    same(lambda s: s.edges_of(["a"]))
    same(lambda s: s.edges_among(["a", "b", "c"]))
    same(lambda s: s.edges_among(["a", "b", "c"], "semantic"))
    same(lambda s: s.edge_counts(["a", "b", "g", "zz"]))
    assert same(lambda s: s.existing_edges([("a", "b", "semantic"), ("b", "a", "causal"), ("a", "c", "causal"),
                                            ("a", "b", "semantic"), ("zz", "a", "entity")])) == {
        ("a", "b", "semantic"), ("a", "c", "causal")}
    assert same(lambda s: s.existing_edges([])) == set()
    assert same(lambda s: s.count_edges()) == 4  # g's edges went with it
    same(lambda s: list(s.iter_edges()))
    pg.delete_edge("a", "c", "causal")
    sq.delete_edge("a", "c", "causal")
    same(lambda s: list(s.iter_edges()))
    # recall's plain-tuple reads
    same(lambda s: s.insight_meta(["a", "c", "g", "zz"]))
    same(lambda s: sorted(s.adjacency(["a", "b", "e"])))
    assert same(lambda s: s.superseded_ids()) == {"d"}
    # oplog (ids differ by backend only if a row was lost)
    same(lambda s: s.read_log(10))
    assert same(lambda s: s.count_log()) == 4


def test_stores_are_isolated_in_one_database(pg_url: str) -> None:
    from mnemon_core.models import Insight
    from mnemon_core.store.postgres import PostgresStore, drop_store, list_stores

    a, b = PostgresStore(pg_url, store="iso-a"), PostgresStore(pg_url, store="iso_B")
    try:
        ins = Insight(id="x", content="only in a", created_at=T0, updated_at=T0)
        with a.transaction():
            a.insert_insight(ins, ["only"])
            a.log("remember", "x", "", T0)
        assert (a.count_active(), b.count_active(), b.count_log()) == (1, 0, 0)
        assert b.token_hits(["only"]) == [] and b.get_insight("x") is None
        assert {"iso-a", "iso_B"} <= set(list_stores(pg_url))
    finally:
        a.close()
        b.close()
        assert drop_store(pg_url, "iso-a") and drop_store(pg_url, "iso_B")
    assert drop_store(pg_url, "iso-a") is False
    assert "iso-a" not in list_stores(pg_url)


def test_long_store_name_gets_a_valid_schema(pg_url: str) -> None:
    from mnemon_core.store.postgres import PostgresStore, drop_store, list_stores, schema_name

    name = "n" * 80
    assert len(schema_name(name).encode()) <= 63 and schema_name(name) != schema_name("n" * 79)
    s = PostgresStore(pg_url, store=name)
    s.close()
    assert name in list_stores(pg_url)
    drop_store(pg_url, name)


def test_transactions_nest_as_savepoints(pg) -> None:
    from mnemon_core.models import Insight

    def ins(id_: str) -> Insight:
        return Insight(id=id_, content=id_, created_at=T0, updated_at=T0)

    with pg.transaction():
        pg.insert_insight(ins("kept"), ["kept"])
        with pytest.raises(RuntimeError), pg.transaction():
            pg.insert_insight(ins("inner"), ["inner"])
            raise RuntimeError
        pg.log("remember", "kept", "", T0)
    assert pg.get_insight("kept") and pg.get_insight("inner") is None and pg.count_log() == 1
    assert pg.count_active() == 1  # the counter change of the rolled-back savepoint went with it
    # a vector stamp reserved in a rolled-back savepoint is reserved again: a fresh reader sees the vector
    with pg.transaction():
        with pytest.raises(RuntimeError), pg.transaction():
            pg.set_vector("kept", np.ones(3, dtype=np.float32), "m")
            raise RuntimeError
        pg.set_vector("kept", np.array([1, 0, 0], dtype=np.float32), "m")
    from mnemon_core.store.postgres import PostgresStore

    fresh = PostgresStore(pg.url, store=pg.name)
    assert fresh.vector_matrix("m", 3)[0] == ["kept"]
    fresh.close()
    with pytest.raises(RuntimeError), pg.transaction():
        pg.insert_insight(ins("outer"), ["outer"])
        with pg.transaction():
            pg.log("remember", "outer", "", T0)
        raise RuntimeError
    assert pg.get_insight("outer") is None and pg.count_log() == 1 and pg.count_active() == 1


def test_readonly(pg_url: str, pg_store_name: str) -> None:
    from mnemon_core.errors import StoreError
    from mnemon_core.store.postgres import PostgresStore

    with pytest.raises(StoreError, match=f'store "{pg_store_name}" not found'):
        PostgresStore(pg_url, store=pg_store_name, readonly=True)
    PostgresStore(pg_url, store=pg_store_name).close()
    ro = PostgresStore(pg_url, store=pg_store_name, readonly=True)
    try:
        assert ro.count_active() == 0
        with pytest.raises(Exception, match="read-only transaction"):
            ro.log("x", None, "", T0)
    finally:
        ro.close()


def test_bad_url_is_a_store_error() -> None:
    from mnemon_core.errors import StoreError
    from mnemon_core.store.postgres import PostgresStore

    # The one redaction of every URL shown (mnemon_core.redact): credentials, query values, fragment.
    with pytest.raises(StoreError, match=r"^cannot connect to postgresql://\*\*\*@/nowhere\?host=\*\*\*: "):
        PostgresStore("postgresql://bob:pw@/nowhere?host=/nonexistent", store="x")


def test_vector_matrix_follows_other_writers(pg_url: str, pg_store_name: str) -> None:
    from mnemon_core.models import Insight
    from mnemon_core.store.postgres import PostgresStore

    w, r = PostgresStore(pg_url, store=pg_store_name), PostgresStore(pg_url, store=pg_store_name, pool=True)
    try:
        assert r.vector_matrix("m", 3)[0] == []
        with w.transaction():
            for i in range(3):
                w.insert_insight(Insight(id=f"v{i}", content=f"v{i}", created_at=T0, updated_at=T0), [])
                w.set_vector(f"v{i}", np.array([1.0, i, 0.0], dtype=np.float32), "m")
        ids, mat = r.vector_matrix("m", 3)
        assert ids == ["v0", "v1", "v2"]
        assert np.allclose(mat[1], np.array([1, 1, 0]) / np.sqrt(2))
        with w.transaction():
            w.soft_delete(["v0"], T1)
            w.set_vector("v2", np.array([0.0, 0.0, 2.0], dtype=np.float32), "m")
            w.set_vector("v1", np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32), "m")  # another dimension
        ids, mat = r.vector_matrix("m", 3)
        assert ids == ["v2"] and np.array_equal(mat, np.array([[0, 0, 1]], dtype=np.float32))
        assert r.vector_matrix("m", 4)[0] == ["v1"]
    finally:
        w.close()
        r.close()


def test_graph_version_moves_with_any_writer(pg_url: str, pg_store_name: str) -> None:
    from mnemon_core.models import Edge, Insight
    from mnemon_core.store.postgres import PostgresStore

    w, r = PostgresStore(pg_url, store=pg_store_name), PostgresStore(pg_url, store=pg_store_name)
    try:
        seen = [r.graph_version()]

        def moved() -> bool:
            seen.append(r.graph_version())
            return seen[-1] != seen[-2]

        with w.transaction():
            for id_ in ("p", "q"):
                w.insert_insight(Insight(id=id_, content=id_, created_at=T0, updated_at=T0), [id_])
        assert moved()
        w.touch(["p"], T1)
        w.set_effective_importance({"p": 0.2})
        w.log("show", "p", "", T1)
        assert not moved()  # access counts, EI and the oplog are not the graph
        w.upsert_edge(Edge(source_id="p", target_id="q", edge_type="semantic", weight=0.5, created_at=T1))
        assert moved()
        w.upsert_edge(Edge(source_id="p", target_id="q", edge_type="semantic", weight=0.6, created_at=T1))
        assert moved()
        w.delete_edge("p", "q", "semantic")
        assert moved()
        with w.transaction():
            w.soft_delete(["q"], T1)
        assert moved()
        with pytest.raises(RuntimeError), w.transaction():
            w.upsert_edge(Edge(source_id="p", target_id="q", edge_type="causal", weight=0.5, created_at=T1))
            assert w.graph_version() != seen[-1]  # the writer sees its own change at once
            raise RuntimeError
        assert not moved()  # rolled back: nothing changed for anyone else
    finally:
        w.close()
        r.close()


def test_nearest_uses_the_hnsw_index(pg) -> None:
    from mnemon_core.models import Insight

    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((300, 16)).astype(np.float32)
    with pg.transaction():
        for i, v in enumerate(vecs):
            pg.insert_insight(Insight(id=f"n{i:03d}", content=f"n{i}", created_at=T0, updated_at=T0), [])
            pg.set_vector(f"n{i:03d}", v, "m16")
        pg.soft_delete(["n000"], T1)
    q = vecs[0] + 0.01
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    cos = unit @ (q / np.linalg.norm(q))
    want = [f"n{i:03d}" for i in np.argsort(-cos) if i != 0][:5]
    got = pg.nearest("m16", q, 5)
    assert [g[0] for g in got] == want
    assert np.allclose([g[1] for g in got], sorted(cos[[int(w[1:]) for w in want]], reverse=True), atol=1e-5)
    with pg._conn() as conn, conn.transaction():
        # At 300 rows a sort is cheaper; what matters is that the index can serve the query at all.
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(r[0] for r in conn.execute(
            f'EXPLAIN SELECT id FROM "{pg.schema}".vectors WHERE model = \'m16\' '
            "AND vector_dims(embedding) = 16 AND active "
            "ORDER BY embedding::vector(16) <=> %s LIMIT 5", (q,)).fetchall())
    assert "vectors_hnsw_" in plan


def test_pool_serves_threads_each_with_its_own_transaction(pg_url: str, pg_store_name: str) -> None:
    from mnemon_core import Memory
    from mnemon_core.store.postgres import PostgresStore

    m = Memory(database_url=pg_url, store=pg_store_name, embedder=None)
    m._store = PostgresStore(pg_url, store=pg_store_name, pool=True, pool_max=4)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(15):
                m.remember(f"thread {t} note {i} about pools", source=f"t{t % 2}", entities=["Pool"],
                           entity_mode="provided")
                m.search("pools")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert m.status().total_insights == 60
    assert m._store._pool.get_stats()["pool_size"] > 1
    chain_ok(m.store, 60, {f"t{t}": 30 for t in range(2)})
    m.close()


def backbone_errors(store) -> int:
    """Insights whose temporal backbone does not point at the row a one-at-a-time writer would have seen as
    the latest of its source: the newest by (created_at, insertion order) among those inserted before it.
    (`created_at` is taken before the write lock, so the chain itself may legitimately branch.)"""
    rows = list(store.iter_active())  # insertion order = the order writers held the lock
    prev = {e.source_id: e.target_id for e in store.iter_edges() if e.metadata.get("direction") == "succeeds"}
    best: dict[str, tuple[str, int, str]] = {}
    wrong = 0
    for pos, r in enumerate(rows):
        want = best.get(r.source)
        if prev.get(r.id) != (want[2] if want else None):
            wrong += 1
        if want is None or (r.created_at, pos) > want[:2]:
            best[r.source] = (r.created_at, pos, r.id)
    return wrong


def chain_ok(store, total: int, per_source: dict[str, int]) -> None:
    """Every backbone link is the one serial writes make, and every insight after the first five is linked
    to exactly five others of the shared entity."""
    edges = list(store.iter_edges())
    succeeds = [e for e in edges if e.metadata.get("direction") == "succeeds"]
    assert len(succeeds) == sum(n - 1 for n in per_source.values())
    assert backbone_errors(store) == 0
    entity = [e for e in edges if e.edge_type == "entity"]
    assert len(entity) == 2 * (10 + 5 * (total - 5))
    assert store.count_log() >= total


WRITER = """
import sys, time
from mnemon_core import Memory
proc, n, start, same = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "same"
m = Memory()
m.status()
while time.time() < start:
    time.sleep(0.001)
for i in range(n):
    text = f"shared note {i} about the deploy" if same else f"process {proc} note {i} about the deploy"
    r = m.remember(text, source=f"p{proc % 3}", entities=["Deploy"], entity_mode="provided")
    print(r.action)
"""


def run_writers(pg_url: str, store: str, procs: int, n: int, same: bool) -> list[str]:
    from mnemon_core import Memory

    Memory(database_url=pg_url, store=store).status()  # create the store before the race
    env = dict(os.environ, PYTHONPATH=str(ROOT), MNEMON_DATABASE_URL=pg_url, MNEMON_STORE=store,
               MNEMON_EMBEDDER="none")
    start = time.time() + 3.0
    ps = [subprocess.Popen([sys.executable, "-c", WRITER, str(p), str(n), str(start), "same" if same else "own"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in range(procs)]
    outs = [p.communicate(timeout=300) for p in ps]
    assert [p.returncode for p in ps] == [0] * procs, [o[1][-2000:] for o in outs]
    return [line for o in outs for line in o[0].split()]


def test_concurrent_writers_lose_nothing(pg_url: str, pg_store_name: str) -> None:
    from mnemon_core import Memory

    actions = run_writers(pg_url, pg_store_name, procs=6, n=30, same=False)
    assert actions == ["added"] * 180
    m = Memory(database_url=pg_url, store=pg_store_name)
    assert m.status().total_insights == 180
    assert m.store.count_log() == 180
    chain_ok(m.store, 180, {f"p{p}": 60 for p in range(3)})  # two processes write each source
    m.close()


def test_same_text_at_once_is_stored_once(pg_url: str, pg_store_name: str) -> None:
    from mnemon_core import Memory

    actions = run_writers(pg_url, pg_store_name, procs=6, n=15, same=True)
    assert sorted(set(actions)) == ["added", "skipped"] and actions.count("added") == 15
    m = Memory(database_url=pg_url, store=pg_store_name)
    contents = [i.content for i in m.store.iter_active()]
    assert len(contents) == len(set(contents)) == 15
    assert sum(1 for e in m.store.read_log(200) if e.operation == "diff-skip") == 75
    m.close()


# ------------------------------------------------------------------ mnemon migrate


def test_migrate_sqlite_to_postgres_is_lossless(data_dir: Path, pg_url: str, pg_store_name: str) -> None:
    from mnemon_core import Memory
    from mnemon_core.store.postgres import PostgresStore, drop_store
    from mnemon_core.text import stem

    src = Memory(store=pg_store_name)
    a = src.remember("Postgres holds the team memory because agents run on many machines",
                     entities=["Postgres"], session="s1").id
    b = src.remember("pgvector serves the vector signal with an HNSW index", entities=["pgvector"],
                     session="s1").id
    c = src.remember("a note that will be forgotten, a memory of the vector index").id
    src.link(a, b, type="causal", weight=0.8, metadata={"sub_type": "enables"})
    src.forget(c)
    src.search("vector signal")
    rng = np.random.default_rng(1)
    with src.store.transaction():
        for id_ in (a, b, c):
            src.store.set_vector(id_, rng.standard_normal(12).astype(np.float32), "toy")
    before = src.status().model_dump()
    src.close()

    r = run_cli("--store", pg_store_name, "migrate", "--from", "sqlite:", "--to", pg_url)
    assert r.code == 0, r.err
    out = r.json()
    assert {k: out[k] for k in ("store", "insights", "active", "deleted", "vectors", "edges", "oplog", "tails",
                                "verified")} == {
        "store": pg_store_name, "insights": 3, "active": 2, "deleted": 1, "vectors": 3, "edges": before["edge_count"],
        "oplog": before["oplog_count"], "tails": 1, "verified": True}
    assert out["checksum"].startswith("sha256:") and len(out["checksum"]) == 71

    from mnemon_core.store.sqlite import SQLiteStore

    sq = SQLiteStore(data_dir / "data" / pg_store_name / "mnemon.db", readonly=True)
    pg = PostgresStore(pg_url, store=pg_store_name)
    try:
        for x, y in zip(sq.dump_insights(), pg.dump_insights(), strict=True):
            assert full(x.insight) == full(y.insight) and x.tokens == y.tokens and x.model == y.model
            assert (x.vector is None) == (y.vector is None)
            assert x.vector is None or np.array_equal(x.vector, y.vector)
        assert list(sq.iter_edges()) == list(pg.iter_edges())
        assert list(sq.dump_oplog()) == list(pg.dump_oplog())
        assert pg.vector_matrix("toy", 12)[0] == sq.vector_matrix("toy", 12)[0] == [a, b]
        assert pg.nearest("toy", sq.get_vector(b, "toy"), 1)[0][0] == b
        # it ranks as its source: the same BM25 (the forgotten insight counts in neither store), the same tail
        for term in [stem("memory"), stem("vector"), "postgr", "hnsw", "forgotten"]:
            assert pg.term_scores(term) == sq.term_scores(term)
        assert pg.term_scores(stem("memory")) and pg.term_scores("forgotten") == []
        assert pg.session_tail("s1") == sq.session_tail("s1") == b
    finally:
        sq.close()
        pg.close()
    # the load dropped the keys and indexes and made them again: the copy has exactly a fresh store's, plus HNSW
    fresh = PostgresStore(pg_url, store=pg_store_name + "-fresh")
    try:
        made = schema_objects(pg_url, pg.schema)
        assert made ^ schema_objects(pg_url, fresh.schema) == {("index", "vectors_hnsw_*")}
        fkey = "edges_source_id_fkey FOREIGN KEY (source_id) REFERENCES {s}.insights(id) ON DELETE CASCADE"
        assert ("constraint", fkey) in made
    finally:
        fresh.close()
        drop_store(pg_url, pg_store_name + "-fresh")
    # the copy is a working store: same status, and the next write continues its ids and counters
    after = Memory(database_url=pg_url, store=pg_store_name)
    st = after.status().model_dump()
    assert {k: v for k, v in st.items() if k not in ("db_path", "db_size_bytes")} == {
        k: v for k, v in before.items() if k not in ("db_path", "db_size_bytes")}
    last = after.log(limit=1)[0].id
    after.remember("written after the move")
    assert after.log(limit=1)[0].id == last + 1 and after.status().total_insights == 3
    after.close()

    again = run_cli("--store", pg_store_name, "migrate", "--from", "sqlite:", "--to", pg_url)
    assert again.code == 1 and again.out == ""
    assert again.err.startswith(f'Error: target store "{pg_store_name}" in ') and "is not empty (3 insights" in again.err


def test_migrate_postgres_to_postgres_keeps_ranking_and_tails(pg_url: str, pg_store_name: str) -> None:
    """A copy between two databases carries the session tails and ranks by BM25 exactly as its source."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    from mnemon_core import Memory
    from mnemon_core.store.postgres import PostgresStore
    from mnemon_core.text import stem

    other = "mnemon_copy_" + pg_store_name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        try:
            conn.execute(f'CREATE DATABASE "{other}"')
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("the test role cannot create a second database")
    target = urlunsplit(urlsplit(pg_url)._replace(path="/" + other))
    try:
        src = Memory(database_url=pg_url, store=pg_store_name)
        for n, text in enumerate(["the cache tier keeps latency low", "caching again, a cache of caches",
                                  "latency of the caching layer", "forget me, cache"]):
            last = src.remember(text, session="chat", source=f"agent{n % 2}").id
        src.forget(last)
        before = {t: src.store.term_scores(t) for t in (stem("cache"), stem("latency"), "forget")}
        tail = src.store.session_tail("chat")
        src.close()
        r = run_cli("--store", pg_store_name, "migrate", "--from", pg_url, "--to", target)
        assert r.code == 0, r.err
        assert {k: r.json()[k] for k in ("insights", "active", "tails", "verified")} == {
            "insights": 4, "active": 3, "tails": 1, "verified": True}
        dst = PostgresStore(target, store=pg_store_name)
        try:
            assert {t: dst.term_scores(t) for t in before} == before
            assert len(before[stem("cache")]) == 3 and before["forget"] == []
            assert dst.session_tail("chat") is None and tail is None  # the tail was forgotten
            assert list(dst.dump_tails()) == [("chat", last)]
        finally:
            dst.close()
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{other}" WITH (FORCE)')


def test_sqlite_file_without_session_tails_copies_none(tmp_path: Path) -> None:
    """A read-only source is not migrated: a file from before the tails table has none to copy."""
    import sqlite3

    from mnemon_core.store.sqlite import SQLiteStore

    path = tmp_path / "old.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE conversation_tails")
    old = SQLiteStore(path, readonly=True)
    try:
        assert list(old.dump_tails()) == []
    finally:
        old.close()


def test_migrations_backfill_a_version_1_store(sq, pg_url: str, pg_store_name: str) -> None:
    """A store made before migration 2 (entities without created_at/seq) and 3 (no stems, term counter or session
    tails) gets them from its insights, ranks by BM25 exactly as SQLite does, and ends with exactly a fresh store's
    indexes and constraints."""
    import psycopg

    from mnemon_core.store.postgres import PostgresStore, drop_store
    from mnemon_core.text import stem

    fill(sq)
    st = PostgresStore(pg_url, store=pg_store_name)
    fill(st)
    schema = st.schema
    st.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # back to what migration 1 left
        s = '"' + schema + '"'
        conn.execute(f"DROP INDEX {s}.insights_stems, {s}.insights_source_lower")
        conn.execute(f"ALTER TABLE {s}.insights DROP COLUMN stems, DROP COLUMN n_stems")
        conn.execute(f"DROP TABLE {s}.conversation_tails")
        conn.execute(f"DELETE FROM {s}.mnemon_meta WHERE key = 'active_stems'")
        conn.execute(f"DROP INDEX {s}.entities_recent")
        conn.execute(f"ALTER TABLE {s}.insight_entities DROP COLUMN created_at, DROP COLUMN seq")
        conn.execute(f"CREATE INDEX entities_entity ON {s}.insight_entities (entity)")
        conn.execute(f"UPDATE {s}.mnemon_meta SET value = 1 WHERE key = 'schema_version'")
    st = PostgresStore(pg_url, store=pg_store_name)
    try:
        assert st.with_entity("Redis", exclude="x", limit=5) == ["c", "b", "a"]
        rows = st._exec("SELECT e.created_at = i.created_at AND e.seq = i.seq FROM {s}.insight_entities e "
                        "JOIN {s}.insights i ON i.id = e.insight_id")
        assert len(rows) == 7 and all(r[0] for r in rows)
        # the soft-deleted g has its stems too, but only active insights count
        assert st._one("SELECT value FROM {s}.mnemon_meta WHERE key = 'active_stems'")[0] == sq.db.execute(
            "SELECT sum(length(terms) - length(replace(terms, ' ', '')) + (terms <> '')) FROM insights_bm25"
        ).fetchone()[0] == 37
        for term in [stem("redis"), stem("latency"), "数据", stem(LONG), "forgotten"]:
            assert st.term_scores(term) == sq.term_scores(term)
        assert st.term_scores(stem("redis")) and st.term_scores("forgotten") == []
        st.set_session_tail("s", "a")
        assert st.session_tail("s") == "a"
        fresh = PostgresStore(pg_url, store=pg_store_name + "-fresh")
        fresh.close()
        # the same but for the HNSW index of fill()'s vectors
        assert schema_objects(pg_url, schema) ^ schema_objects(pg_url, fresh.schema) == {("index", "vectors_hnsw_*")}
    finally:
        st.close()
        drop_store(pg_url, pg_store_name + "-fresh")


def test_entities_beyond_ascii_fold_as_on_sqlite(data_dir: Path, pg_url: str, pg_store_name: str) -> None:
    """Entity lookups fold case as SQLite's do (Python's `str.lower`) through `mnemon migrate`, on remember, and
    on a store written before migration 4 (SQL lower() under the C collation left "Émile" as it was)."""
    import psycopg

    from mnemon_core import Memory
    from mnemon_core.store.postgres import PostgresStore

    wanted = {"émile": "Émile", "москва": "Москва", "redis": "Redis"}
    sq = Memory(store=pg_store_name)  # SQLite
    sq.remember("Émile moved to Москва and runs Redis there", entities=["Émile", "Москва", "Redis"])
    assert sq.store.known_entities(list(wanted), casefold=True) == wanted
    sq.close()
    r = run_cli("--store", pg_store_name, "migrate", "--from", "sqlite:", "--to", pg_url)
    assert r.code == 0, r.err

    mem = Memory(database_url=pg_url, store=pg_store_name)
    assert mem.store.known_entities(list(wanted), casefold=True) == wanted
    mem.remember("Ærø is an island Émile sails to", entities=["Ærø", "Émile"])
    wanted["ærø"] = "Ærø"
    assert mem.store.known_entities(list(wanted), casefold=True) == wanted
    schema = mem.store.schema
    mem.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as the write path left them before migration 4
        s = '"' + schema + '"'
        conn.execute(f"UPDATE {s}.insight_entities SET entity_lower = entity WHERE entity <> 'Redis'")
        conn.execute(f"UPDATE {s}.mnemon_meta SET value = 3 WHERE key = 'schema_version'")
    st = PostgresStore(pg_url, store=pg_store_name)
    try:
        assert st.known_entities(list(wanted), casefold=True) == wanted
    finally:
        st.close()


def test_a_writer_waits_for_another_at_most_the_lock_timeout(pg_url: str, pg_store_name: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """As SQLite's busy timeout: a write fails with one "locked" line after WRITE_LOCK_TIMEOUT_S, nothing
    written, and a read still answers (without its access bump)."""
    from mnemon_core import Memory
    from mnemon_core.errors import StoreError
    from mnemon_core.store import postgres

    monkeypatch.setattr(postgres, "WRITE_LOCK_TIMEOUT_S", 0.3)
    holder = Memory(database_url=pg_url, store=pg_store_name)
    holder.remember("the lock holder was here first")
    other = Memory(database_url=pg_url, store=pg_store_name)
    try:
        with holder.store.transaction():
            with pytest.raises(StoreError, match=r"store is locked: .* longer than the 0.3 s lock timeout"):
                other.remember("a write that has to wait")
            assert [h.content for h in other.recall("holder").results] == ["the lock holder was here first"]
        assert other.store.count_active() == 1
        assert other.remember("after the lock is gone").action == "added"
    finally:
        holder.close()
        other.close()


def schema_objects(url: str, schema: str) -> set[tuple[str, str]]:
    """A store's indexes and constraints as definitions with its schema written `{s}` (HNSW indexes by prefix)."""
    import re

    import psycopg

    with psycopg.connect(url) as conn:
        idx = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (schema,)).fetchall()
        cons = conn.execute(
            "SELECT conname || ' ' || pg_get_constraintdef(c.oid) FROM pg_constraint c "
            "JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = %s", (schema,)).fetchall()
    q = re.escape(schema if re.fullmatch(r"[a-z_][a-z0-9_]*", schema) else f'"{schema}"')
    out = {("index", "vectors_hnsw_*" if n.startswith("vectors_hnsw_") else re.sub(q, "{s}", d)) for n, d in idx}
    return out | {("constraint", re.sub(q, "{s}", c)) for (c,) in cons}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "sqlite:/nonexistent/x.db", "--to", "PGURL"], "Error: database not found: /nonexistent/x.db\n"),
        (["--from", "sqlite:", "--to", "sqlite:/tmp/x.db"],
         "Error: --to must be a postgresql://, kuzu:///, redis:// or falkordb:// URL, got 'sqlite:/tmp/x.db'\n"),
        (["--from", "mysql://x", "--to", "PGURL"],
         "Error: --from must be sqlite:PATH or a postgresql://, kuzu:///, redis:// or falkordb:// URL, got 'mysql://x'\n"),
    ],
)
def test_migrate_refuses_bad_endpoints(args: list[str], message: str, pg_url: str) -> None:
    r = run_cli("migrate", *[pg_url if a == "PGURL" else a for a in args])
    assert (r.code, r.out, r.err) == (1, "", message)


def test_cli_reaches_postgres_with_database_url(pg_url: str, pg_store_name: str) -> None:
    r = run_cli("--database-url", pg_url, "--store", pg_store_name, "remember", "the CLI talks to Postgres",
                "--cat", "fact")
    assert r.code == 0, r.err
    assert r.json()["action"] == "added"
    st = run_cli("status", env={"MNEMON_DATABASE_URL": pg_url, "MNEMON_STORE": pg_store_name}).json()
    assert st["total_insights"] == 1 and st["by_category"] == {"fact": 1}
    assert st["db_path"].endswith(f"(store {pg_store_name})") and ":@" not in st["db_path"]
    hits = json.loads(run_cli("--database-url", pg_url, "--store", pg_store_name, "search", "postgres").out)
    assert [h["content"] for h in hits] == ["the CLI talks to Postgres"]


def test_store_commands_manage_postgres_stores(pg_url: str, data_dir: Path) -> None:
    """With a database URL, `mnemon store` lists, creates and removes the database's stores; the active
    store stays a local choice (the `active` file)."""
    from pg import fresh_store

    from mnemon_core.store.postgres import drop_store, list_stores

    a, b = sorted([fresh_store(), fresh_store()])
    env = {"MNEMON_DATABASE_URL": pg_url}

    def listed() -> list[str]:
        out = run_cli("store", "list", env=env).out.splitlines()
        return [line for line in out if line[2:] in (a, b, "default")]

    try:
        assert run_cli("store", "create", a, env=env).out == f'Created store "{a}"\n'
        assert run_cli("--database-url", pg_url, "store", "create", b).out == f'Created store "{b}"\n'
        assert {a, b} <= set(list_stores(pg_url))
        r = run_cli("store", "create", a, env=env)
        assert r.code == 1 and r.err == f'Error: store "{a}" already exists\n'
        assert listed() == [f"  {a}", f"  {b}"]
        assert run_cli("store", "set", a, env=env).out == f'Active store set to "{a}"\n'
        assert listed() == [f"* {a}", f"  {b}"]
        assert run_cli("remember", "kept in the active Postgres store", env=env).json()["action"] == "added"
        assert run_cli("--store", a, "status", env=env).json()["total_insights"] == 1
        r = run_cli("store", "remove", a, env=env)
        assert r.code == 1 and f'cannot remove the active store "{a}"' in r.err
        assert run_cli("store", "remove", b, env=env).out == f'Removed store "{b}"\n'
        assert b not in list_stores(pg_url) and listed() == [f"* {a}"]
        r = run_cli("store", "set", b, env=env)
        assert r.code == 1 and r.err == f"Error: store \"{b}\" does not exist (use 'mnemon store create {b}' first)\n"
        assert not (data_dir / "data").exists()  # nothing was made on the local disk
    finally:
        drop_store(pg_url, a)
        drop_store(pg_url, b)


def test_pgvector_in_another_schema(pg_url: str) -> None:
    """Hosted Postgres often installs extensions into a schema of their own, off the search path."""
    import psycopg

    from mnemon_core.models import Insight
    from mnemon_core.store.postgres import PostgresStore

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS mnemon_ext")
        conn.execute("CREATE DATABASE mnemon_ext")
    url = pg_url.replace("/postgres?", "/mnemon_ext?")
    assert url != pg_url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA extensions")
        conn.execute("CREATE EXTENSION vector SCHEMA extensions")
    s = PostgresStore(url, store="ext")
    try:
        with s.transaction():
            s.insert_insight(Insight(id="a", content="a", created_at=T0, updated_at=T0), ["a"])
            s.set_vector("a", np.array([1, 2, 3], dtype=np.float32), "m")
        assert np.array_equal(s.get_vector("a", "m"), np.array([1, 2, 3], dtype=np.float32))
        assert s.nearest("m", np.array([1, 2, 3], dtype=np.float32), 1)[0][0] == "a"
        assert s.vector_matrix("m", 3)[0] == ["a"]
    finally:
        s.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP DATABASE mnemon_ext")


def test_buffered_edges_keep_transaction_semantics(pg) -> None:
    """Edge upserts travel to the server in batches; a bad one still fails its own transaction, and edges of
    a rolled-back savepoint are never written."""
    import psycopg

    from mnemon_core.models import Edge, Insight

    with pg.transaction():
        for id_ in ("a", "b"):
            pg.insert_insight(Insight(id=id_, content=id_, created_at=T0, updated_at=T0), [id_])
    good = Edge(source_id="a", target_id="b", edge_type="semantic", weight=0.5, created_at=T0)
    bad = Edge(source_id="a", target_id="missing", edge_type="semantic", weight=0.5, created_at=T0)
    with pytest.raises(psycopg.errors.ForeignKeyViolation), pg.transaction():
        pg.upsert_edge(good)
        pg.upsert_edge(bad)
    assert pg.count_edges() == 0
    with pg.transaction():
        with pytest.raises(RuntimeError), pg.transaction():
            pg.upsert_edge(good)
            raise RuntimeError
        with pytest.raises(psycopg.errors.ForeignKeyViolation), pg.transaction():
            pg.upsert_edge(bad)
        pg.upsert_edge(good.model_copy(update={"weight": 0.7}))
        assert [e.weight for e in pg.edges_of(["a"])] == [0.7]  # a read sees the batch first
        pg.upsert_edge(good.model_copy(update={"weight": 0.9}))
    assert [e.weight for e in pg.edges_of(["a"])] == [0.9]


class _Toy:
    """A registered-object embedder: hash-seeded 16-d vectors, identity calibration."""

    @staticmethod
    def make():
        import hashlib

        from mnemon_core.embed.base import IDENTITY, BaseEmbedder

        class Toy(BaseEmbedder):
            def __init__(self) -> None:
                super().__init__("toy-16", dimensions=16, calibration=IDENTITY)

            def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
                out = []
                for t in texts:
                    seed = int.from_bytes(hashlib.sha256(t.split()[0].encode()).digest()[:8], "little")
                    base = np.random.default_rng(seed).standard_normal(16)
                    noise = np.random.default_rng(len(t)).standard_normal(16) * 0.3
                    out.append((base + noise).astype(np.float32))
                return np.stack(out)

            def available(self) -> bool:
                return True

        return Toy()


def test_recall_through_the_hnsw_index_matches_the_matrix(pg_url: str, pg_store_name: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the ANN threshold recall takes its vector signal from the HNSW index (no matrix load); on a small
    store the index's answer is exact, so the results are the matrix path's."""
    from mnemon_core import Memory
    from mnemon_core.store import base

    topics = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    m = Memory(database_url=pg_url, store=pg_store_name, embedder=_Toy.make())
    for i in range(60):
        m.remember(f"{topics[i % 6]} note {i} about item{i % 9} and more", source=f"s{i % 3}")
    with m.store._conn() as conn:
        conn.execute(f'ANALYZE "{m.store.schema}".vectors')
    queries = ["alpha item3", "why delta", "echo note", "charlie item7 more"]
    exact = [m.recall(q, limit=5).model_dump() for q in queries]
    assert m.store.ann_index("toy-16", 16) is None  # 60 vectors: below the threshold
    monkeypatch.setattr(base, "ANN_MIN_ROWS", 10)
    assert m.store.ann_index("toy-16", 16) is not None
    fresh = Memory(database_url=pg_url, store=pg_store_name, embedder=_Toy.make(), readonly=True)
    assert [fresh.recall(q, limit=5).model_dump() for q in queries] == exact
    assert fresh.store._vectors == {}  # the matrix was never loaded
    fresh.close()
    m.close()
