"""The store contract (`mnemon_core/store/base.py`): every protocol method, called through the protocol on each
backend (SQLite, and Postgres where tests/pg.py can start one), with the exact answer the contract promises.
A last test keeps this file complete: a protocol method nobody calls here fails it."""

from __future__ import annotations

import inspect
import json
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BACKENDS, checked_backend
from mnemon_core.lifecycle import IMMUNE_ACCESS, IMMUNE_IMPORTANCE
from mnemon_core.models import Edge, Insight, OplogEntry
from mnemon_core.store import base, catalog, open_store
from mnemon_core.store.base import Filters, Store, TokenHit, bm25
from mnemon_core.text import document, stem, terms

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T01:00:00Z"
T2 = "2026-01-02T00:00:00Z"
IMMUNE = {"immune_importance": IMMUNE_IMPORTANCE, "immune_access": IMMUNE_ACCESS}

# id, content, category, importance, tags, entities, source, created_at, tokens
ROWS = [
    ("a", "Redis cache because latency matters", "decision", 4, ["infra"], ["Redis"], "agent1", T0,
     {"redis", "cache", "latency"}),
    ("b", "redis eviction policy", "fact", 2, [], ["Redis"], "agent1", T0, {"redis", "eviction", "policy"}),
    ("c", "Postgres pool settings", "fact", 3, [], ["Postgres"], "Agent2", T1, {"postgres", "pool"}),
    ("d", "Café opening hours", "general", 1, [], [], "agent2", T1, {"cafe", "hours"}),
    ("e", "an old redis note to forget", "general", 2, [], ["Redis"], "agent3", T2, {"redis", "note"}),
]
NO_INDEX_FILE = ("kuzu", "redis", "falkordb")  # recall reads through the Edges calls (`base.StoreDefaults`)
SERVERS = ("postgres", "redis", "falkordb")  # a database on a server: never "replaced" as a file can be
A, B, C = (np.array(v, dtype=np.float32) for v in ([1, 0, 0, 0], [0, 1, 0, 0], [0.6, 0.8, 0, 0]))


def insight(id_: str) -> Insight:
    _, content, cat, imp, tags, ents, src, ts, _ = next(r for r in ROWS if r[0] == id_)
    return Insight(id=id_, content=content, category=cat, importance=imp, tags=tags, entities=ents, source=src,
                   created_at=ts, updated_at=ts, stored_at=ts)


def edge(s: str, t: str, typ: str, w: float, meta: dict[str, str] | None = None) -> Edge:
    return Edge(source_id=s, target_id=t, edge_type=typ, weight=w, metadata=meta or {}, created_at=T1)


def keys(edges: list[Edge]) -> list[tuple[str, str, str]]:
    return [(e.source_id, e.target_id, str(e.edge_type)) for e in edges]


@pytest.fixture(params=[*BACKENDS, "milvus"])
def store_backend(request: pytest.FixtureRequest) -> str:
    """Every backend, and SQLite with its vectors in Milvus (`store/milvus.py`)."""
    return checked_backend(request.param)


@pytest.fixture
def store(mem) -> Store:
    """The store `Memory` opens for the backend (through the backend table), empty."""
    return mem.store


@pytest.fixture
def filled(store: Store) -> Store:
    """Five insights (e soft-deleted), vectors, edges, a session tail and two oplog rows, written through the
    protocol."""
    with store.transaction():
        for r in ROWS:
            store.insert_insight(insight(r[0]), r[8])
        store.set_vector("a", A, "m4")
        store.set_vector("b", B, "m4")
        store.set_vector("c", C, "m4")
        store.set_vector("d", np.array([3, 4], dtype=np.float32), "other")
        store.upsert_edge(edge("a", "b", "semantic", 0.9, {"k": "ab"}))
        store.upsert_edge(edge("a", "c", "causal", 0.3))
        store.upsert_edge(edge("c", "a", "temporal", 0.5, {"sub_type": "backbone"}))
        store.upsert_edge(edge("d", "b", "supersedes", 1.0))
        store.upsert_edge(edge("e", "a", "entity", 1.0))
        store.upsert_edge(edge("a", "b", "semantic", 0.7))  # the same key again: an update
        store.log("remember", "a", "first", T0)
    store.soft_delete(["e"], T2)
    store.log("forget", "e", "", T2)  # outside a transaction: one of its own
    store.set_session_tail("s1", "b")
    return store


# ---------------------------------------------------------------------------------------------- lifecycle


def test_claim_request_records_an_id_once_and_rolls_back_with_its_transaction(store: Store) -> None:
    with store.transaction():
        assert store.claim_request("r1", T0) is True
        assert store.claim_request("r1", T0) is False  # the same id again, even in the same transaction
    with pytest.raises(RuntimeError):
        with store.transaction():
            assert store.claim_request("r2", T0) is True
            raise RuntimeError
    with store.transaction():
        assert store.claim_request("r2", T1) is True  # the rolled-back claim left nothing
        assert store.claim_request("r1", T1) is False
    with store.transaction():  # a day later r1 and r2 are forgotten (REQUEST_KEEP_S)
        assert store.claim_request("r1", "2026-01-02T02:00:00Z") is True


def test_replaced_says_whether_the_opened_database_is_still_the_settings_one(store: Store, store_backend: str,
                                                                           mem) -> None:
    assert store.replaced() is False
    if store_backend in SERVERS:
        return  # a server's database stays the one connected to
    path = Path(store.path if store_backend == "kuzu" else mem.settings.db_path)  # type: ignore[attr-defined]
    backup = path.with_name("backup.db")
    backup.write_bytes(path.read_bytes())
    backup.replace(path)  # a restore over the file
    assert store.replaced() is True
    path.unlink()
    assert store.replaced() is True



def test_lifecycle(store: Store, store_backend: str, mem) -> None:
    if store_backend in ("sqlite", "milvus"):
        assert store.location == str(mem.settings.db_path)
    elif store_backend == "kuzu":
        assert store.location == f"{mem.settings.database_url} (store {mem.settings.store})"
    else:  # the URL without its password, and the store
        assert store.location.endswith(f"(store {mem.settings.store})")
        assert store.location.startswith(("postgresql://", "redis://", "falkordb://"))
    with store.transaction():
        store.insert_insight(insight("a"), {"redis"})
        with pytest.raises(RuntimeError):
            with store.transaction():  # a savepoint: rolled back alone
                store.insert_insight(insight("b"), {"redis"})
                raise RuntimeError
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.insert_insight(insight("c"), {"postgres"})
            raise RuntimeError
    assert [i.id for i in store.iter_active()] == ["a"]
    assert isinstance(store.size_bytes(), int) and store.size_bytes() > 0
    store.close()
    again = open_store(mem.settings)
    try:
        assert again.get_insight("a") == insight("a")  # committed means on disk / on the server
    finally:
        again.close()


# ---------------------------------------------------------------------------------------------- insights


def test_insights(filled: Store) -> None:
    s = filled
    assert s.get_insight("a") == insight("a")
    assert s.get_insight("e") is None
    gone = s.get_insight("e", include_deleted=True)
    assert gone == insight("e").model_copy(update={"deleted_at": T2, "updated_at": T2})
    assert s.get_insight("zz") is None
    assert s.get_insights(["c", "a", "e", "zz", "a"]) == {"c": insight("c"), "a": insight("a")}
    assert s.get_insights([]) == {}
    # texts: the same active ones, as (content, category) only
    assert s.texts(["c", "a", "e", "zz", "a"]) == {i: (insight(i).content, insight(i).category) for i in ("c", "a")}
    assert s.texts([]) == {}
    assert s.find_by_content("Redis cache because latency matters") == "a"
    assert s.find_by_content("redis cache because latency matters") is None  # byte-identical only
    assert s.find_by_content("an old redis note to forget") is None
    assert (s.count_active(), s.count_deleted()) == (4, 1)
    assert [i.id for i in s.iter_active()] == ["a", "b", "c", "d"]
    assert [i.id for i in s.iter_active(Filters(category="fact"))] == ["b", "c"]
    assert [i.id for i in s.iter_active(Filters(source="agent1"))] == ["a", "b"]
    # newest first; a tie on created_at goes to the later insert
    assert [i.id for i in s.latest(limit=10)] == ["d", "c", "b", "a"]
    assert s.latest(limit=1) == [insight("d")]
    assert [i.id for i in s.latest(source="agent1", limit=1)] == ["b"]
    assert [i.id for i in s.latest(since=T1, limit=10)] == ["d", "c"]
    assert [i.id for i in s.latest(exclude="d", limit=2)] == ["c", "b"]
    assert [i.id for i in s.latest(limit=10, filters=Filters(category="fact", source="Agent2"))] == ["c"]
    assert s.latest_ids(limit=10) == ["d", "c", "b", "a"] and s.latest_ids(limit=2) == ["d", "c"]
    assert s.latest_ids(limit=10, filters=Filters(category="fact", source="Agent2")) == ["c"]
    # ids_starting: active ids by prefix, in id order, at most limit (a deleted one never)
    with s.transaction():
        for id_ in ("abc-2", "abc-1", "abd-1"):
            s.insert_insight(Insight(id=id_, content=f"prefix {id_}", created_at=T2, updated_at=T2), {"prefix"})
    s.soft_delete(["abc-2"], T2)
    assert s.ids_starting("ab", 10) == ["abc-1", "abd-1"] and s.ids_starting("ab", 1) == ["abc-1"]
    assert (s.ids_starting("abc-", 10), s.ids_starting("abc-2", 10), s.ids_starting("abe", 10)) == (["abc-1"], [], [])


def test_writes_to_insights(filled: Store) -> None:
    s = filled
    s.touch(["a", "a", "b"], T2)  # an id listed twice counts twice
    s.touch(["c"], T2, inc=3)
    got = s.get_insights(["a", "b", "c", "d"])
    assert {k: (v.access_count, v.last_accessed_at) for k, v in got.items()} == {
        "a": (2, T2), "b": (1, T2), "c": (3, T2), "d": (0, None)}
    s.set_effective_importance({"a": 0.9, "b": 0.1})
    assert [s.get_insight(i).effective_importance for i in "abcd"] == [0.9, 0.1, 0.5, 0.5]
    # b (EI 0.1) before d (0.5); a is important, c was read three times: immune
    assert [i.id for i in s.prune_candidates(exclude=None, stored_before=None, limit=10, **IMMUNE)] == ["b", "d"]
    assert s.prune_candidates(exclude=None, stored_before=None, limit=1, **IMMUNE) == [s.get_insight("b")]
    assert [i.id for i in s.prune_candidates(exclude="b", stored_before=None, limit=10, **IMMUNE)] == ["d"]
    assert [i.id for i in s.prune_candidates(exclude=None, stored_before=T0, limit=10, **IMMUNE)] == ["b"]
    # the thresholds are the caller's
    assert [i.id for i in s.prune_candidates(exclude=None, stored_before=None, limit=10, immune_importance=2,
                                             immune_access=3)] == ["d"]
    assert [i.id for i in s.prune_candidates(exclude=None, stored_before=None, limit=10, immune_importance=5,
                                             immune_access=4)] == ["b", "c", "d", "a"]
    s.soft_delete(["b", "zz"], T2)
    assert s.get_insight("b") is None and s.count_active() == 3 and s.count_deleted() == 2
    assert keys(s.edges_of(["b"])) == []  # its edges went with it


def test_like_search(filled: Store) -> None:
    s = filled
    assert [i.id for i in s.like_search("CACHE", Filters(), 10)] == ["a"]  # ASCII letters fold
    assert [i.id for i in s.like_search("café", Filters(), 10)] == ["d"]
    assert s.like_search("CAFÉ", Filters(), 10) == []  # other letters do not
    assert s.like_search("%", Filters(), 10) == [] and s.like_search("_", Filters(), 10) == []  # literal
    assert [i.id for i in s.like_search("redis", Filters(), 10)] == ["a", "b"]  # by importance; not e (deleted)
    assert [i.id for i in s.like_search("redis", Filters(category="fact"), 10)] == ["b"]
    assert [i.id for i in s.like_search("s", Filters(), 2)] == ["a", "c"]


def _ascii_lower(text: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(alphabet="aAcCéÉ%_\\ sdR", max_size=4))
def test_like_search_is_an_ascii_folded_substring_test(filled: Store, query: str) -> None:
    """Whatever the query (LIKE's wildcards and escape included): the active insights whose content holds it,
    ASCII letters folded, by importance."""
    want = [r[0] for r in sorted(ROWS, key=lambda r: -r[3])
            if r[0] != "e" and _ascii_lower(query) in _ascii_lower(r[1])]
    assert [i.id for i in filled.like_search(query, Filters(), 10)] == want


def test_long_id_lists_span_statements(filled: Store) -> None:
    """SQLite binds a few hundred ids per statement, Postgres one array: past those limits the answers are
    those of the short lists."""
    many = [f"x{i}" for i in range(1500)]
    ids = [*many[:700], "c", *many[700:], "a", "e"]
    assert s_keys(filled.get_insights(ids)) == ["a", "c"]
    assert filled.insight_meta(ids) == filled.insight_meta(["a", "c"])
    assert {k: v for k, v in filled.edge_counts(ids).items() if v} == {"a": 3, "c": 2}
    assert sorted(keys(filled.edges_of(ids))) == sorted(keys(filled.edges_of(["a", "c"])))
    assert sorted(filled.adjacency(ids)) == sorted(filled.adjacency(["a", "c"]))
    assert filled.known_entities([*many, "Postgres"]) == {"Postgres": "Postgres"}


def s_keys(found: dict[str, Insight]) -> list[str]:
    return sorted(found)


# ---------------------------------------------------------------------------------------------- search


def test_tokens(filled: Store) -> None:
    s = filled
    a, b = TokenHit("a", 2, 3, 4, T0), TokenHit("b", 1, 3, 2, T0)
    assert sorted(s.token_hits(["redis", "cache"])) == [a, b]
    assert s.token_hits(["redis", "cache"], limit=1) == [a]
    assert s.token_hits(["redis", "cache", "cache"], limit=5) == [a, b]
    assert s.token_hits(["redis", "cache"], limit=5, order="overlap") == [a, b]  # 2/2, then 1/2
    # overlap: hits / min(3, n_tokens), c's 1/2 before a's and b's 1/3 (then by id); coverage: importance breaks ties
    assert s.token_hits(["redis", "pool", "x"], limit=5, order="overlap") == [
        TokenHit("c", 1, 2, 3, T1), TokenHit("a", 1, 3, 4, T0), TokenHit("b", 1, 3, 2, T0)]
    assert s.token_hits(["redis", "pool", "x"], limit=5) == [
        TokenHit("a", 1, 3, 4, T0), TokenHit("c", 1, 2, 3, T1), TokenHit("b", 1, 3, 2, T0)]
    assert s.token_hits(["redis"], filters=Filters(category="fact")) == [b]
    assert s.token_hits(["redis"], exclude="a") == [b]
    assert s.token_hits(["note"]) == [] and s.token_hits([]) == []  # e is deleted
    assert s.token_tops(["redis", "cache"], 1) == ([a], [a])
    assert s.token_tops([], 1) == ([], [])
    assert s.insight_tokens(["a", "zz"]) == {"a": frozenset({"redis", "cache", "latency"})}
    assert s.insight_tokens([]) == {}


def test_term_scores_are_fts5_bm25(filled: Store) -> None:
    """The oracle: `base.bm25` (held bit-identical to FTS5 by test_bm25_stores) over the active insights' terms."""
    docs = {r[0]: terms(document(r[1], r[4], r[5])) for r in ROWS if r[0] != "e"}
    total = sum(len(t) for t in docs.values())
    term = stem("redis")
    holders = {i: t for i, t in docs.items() if term in t}
    want = [(i, bm25(t.count(term), len(t), len(docs), len(holders), total)) for i, t in holders.items()]
    assert sorted(holders) == ["a", "b"]
    assert sorted(filled.term_scores(term)) == want
    assert filled.term_scores("nothing") == []


def test_sources_sessions_entities(filled: Store) -> None:
    s = filled
    assert s.source_hits(["AGENT1", "agent2", "agent3", "nobody"]) == {"AGENT1": ["a", "b"], "agent2": ["c", "d"]}
    assert s.source_hits([]) == {}
    assert s.session_tail("s1") == "b"
    assert s.session_tail("s2") is None
    s.set_session_tail("s1", "c")
    s.set_session_tail("s2", "e")
    assert (s.session_tail("s1"), s.session_tail("s2")) == ("c", None)  # a deleted tail is no tail
    assert s.with_entity("Redis", exclude="zz", limit=5) == ["b", "a"]
    assert s.with_entity("Redis", exclude="zz", limit=1) == ["b"]
    assert s.with_entity("Redis", exclude="b", limit=5) == ["a"]
    assert s.with_entity("redis", exclude="zz", limit=5) == []
    assert s.known_entities(["Redis", "redis", "Nope"]) == {"Redis": "Redis"}
    assert s.known_entities(["REDIS", "postgres"], casefold=True) == {"redis": "Redis", "postgres": "Postgres"}
    assert s.known_entities([]) == {}
    assert s.entity_hits(["redis", "postgres"]) == {"a": 1, "b": 1, "c": 1}
    assert s.entity_hits(["redis", "postgres"], Filters(source="agent1")) == {"a": 1, "b": 1}
    assert s.entity_hits([]) == {}
    assert s.top_entities(10) == [("Redis", 2), ("Postgres", 1)]
    assert s.top_entities(1) == [("Redis", 2)]
    assert s.count_by_category() == {"decision": 1, "fact": 2, "general": 1}
    s.soft_delete(["c"], T2)  # the only insight naming Postgres: it is no longer a known entity
    assert s.known_entities(["Postgres", "Redis", "Postgres"]) == {"Redis": "Redis"}
    assert s.known_entities(["postgres", "redis"], casefold=True) == {"redis": "Redis"}


# ---------------------------------------------------------------------------------------------- vectors


def test_vectors(filled: Store) -> None:
    s = filled
    assert np.array_equal(s.get_vector("a", "m4"), A)
    assert s.get_vector("a", "other") is None and s.get_vector("zz", "m4") is None
    ids, mat = s.vector_matrix("m4", 4)
    assert ids == ["a", "b", "c"] and np.allclose(mat, np.stack([A, B, C]), atol=1e-7)
    ids, mat = s.vector_matrix("other", 2)
    assert ids == ["d"] and np.allclose(mat, [[0.6, 0.8]], atol=1e-7)  # unit rows
    assert s.vector_matrix("m4", 8)[0] == []
    assert s.ann_index("m4", 4) is None  # 3 vectors: below ANN_MIN_ROWS, the exact scan
    got = s.nearest("m4", np.array([2, 0, 0, 0], dtype=np.float32), 2)
    assert [i for i, _ in got] == ["a", "c"] and [c for _, c in got] == pytest.approx([1.0, 0.6], abs=1e-6)
    assert s.maintain_vector_index("m4", 4) == 0
    assert s.vector_counts() == {"m4:4": 3, "other:2": 1}
    assert [i.id for i in s.unembedded("m4", 10)] == ["d"]
    assert [i.id for i in s.unembedded("other", 2)] == ["a", "c"]  # by importance
    s.set_vector("a", C, "m4")  # replaced
    assert np.array_equal(s.get_vector("a", "m4"), C)
    s.soft_delete(["c"], T2)
    assert s.vector_matrix("m4", 4)[0] == ["a", "b"] and s.vector_counts() == {"m4:4": 2, "other:2": 1}
    ids, mat = s.vector_matrix("m4", 4)  # the same again (a snapshot made once per change)
    assert ids == ["a", "b"] and np.allclose(mat, np.stack([C, B]), atol=1e-7)
    s.set_vector("b", A, "m4")  # a change after the snapshot: the next one has it
    ids, mat = s.vector_matrix("m4", 4)
    assert ids == ["a", "b"] and np.allclose(mat, np.stack([C, A]), atol=1e-7)


def test_the_vector_queue(filled: Store) -> None:
    """A large import's queue (`write/importer.py`): batches in order, each in its queue order, forgotten insights
    left out, a batch taken off once; a backend without one says so and the import waits for its vectors."""
    s = filled
    if not s.queues_vectors:
        assert s.count_queued() == 0 and s.queued_vectors() == (0, [])
        return
    assert s.queued_vectors() == (0, []) and s.count_queued() == 0
    with s.transaction():
        s.queue_vectors(["e", "d"])  # e was forgotten: a batch with nothing left to fill
        s.queue_vectors(["c", "a", "b"])
    assert s.count_queued() == 5
    batch, rows = s.queued_vectors()
    assert [r.id for r in rows] == ["d"]
    with s.transaction():
        assert s.unqueue_vectors(batch)
    assert not s.unqueue_vectors(batch)  # another process filled it meanwhile
    batch, rows = s.queued_vectors()
    assert [r.id for r in rows] == ["c", "a", "b"] and s.count_queued() == 3
    with s.transaction():
        s.unqueue_vectors(batch)
    assert s.queued_vectors() == (0, []) and s.count_queued() == 0


def test_ann_index_serves_from_the_threshold(
    filled: Store, store_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above `ANN_MIN_ROWS` a backend with an index hands it out; it answers as the exact scan on three rows.
    SQLite keeps its index in a usearch file (built by `maintain_vector_index`), Postgres in an HNSW index, Kùzu
    in its HNSW index over a node type `maintain_vector_index` fills, which follows every write from then on."""
    s = filled
    monkeypatch.setattr(base, "ANN_MIN_ROWS", 2)
    if store_backend in ("sqlite", "kuzu"):
        if store_backend == "sqlite":
            pytest.importorskip("usearch")
        assert s.ann_index("m4", 4) is None  # no file yet
        assert s.maintain_vector_index("m4", 4) == 3
        if store_backend == "kuzu":
            assert s.maintain_vector_index("m4", 4) == 0  # built: it follows every write
            s.set_vector("d", np.array([0, 0, 1, 0], dtype=np.float32), "m4")  # joins it (of model "other" before)
            index = s.ann_index("m4", 4)
            keys, cos = index.search(np.array([0, 0, 1, 0], dtype=np.float32), 1)
            # d itself, at its own cosine (Kùzu answers it in float32: 0.99999994 on some runs)
            assert index.ids(keys) == ["d"] and cos.tolist() == pytest.approx([1.0], abs=1e-6)
            s.soft_delete(["d"], T2)  # and leaves it
    else:
        assert s.maintain_vector_index("m4", 4) == 0  # the index follows every write
        if store_backend == "postgres":
            s._exec("ANALYZE {s}.vectors")  # type: ignore[attr-defined]  # its size comes from the statistics
    index = s.ann_index("m4", 4)
    assert index is not None and index.stale() is False
    found, cos = index.search(np.array([1, 0, 0, 0], dtype=np.float32), 2)
    assert index.ids(found) == ["a", "c"] and list(cos) == pytest.approx([1.0, 0.6], abs=1e-6)
    got = index.cosines(["c", "zz", "a"], np.array([1, 0, 0, 0], dtype=np.float32))
    assert got[0] == pytest.approx(0.6, abs=1e-6) and np.isnan(got[1]) and got[2] == pytest.approx(1.0, abs=1e-6)
    assert [i for i, _ in s.nearest("m4", np.array([0, 1, 0, 0], dtype=np.float32), 2)] == ["b", "c"]
    s.touch(["a", "c"], T2)  # an access bump leaves what the index holds as it was
    index = s.ann_index("m4", 4)
    assert index.ids(index.search(np.array([1, 0, 0, 0], dtype=np.float32), 2)[0]) == ["a", "c"]


# ---------------------------------------------------------------------------------------------- edges


def test_edges(filled: Store) -> None:
    s = filled
    assert keys(s.iter_edges()) == [  # primary-key order; e's edge went with it
        ("a", "b", "semantic"), ("a", "c", "causal"), ("c", "a", "temporal"), ("d", "b", "supersedes")]
    ab = next(e for e in s.edges_of(["a"]) if e.target_id == "b")
    assert ab == edge("a", "b", "semantic", 0.7)  # the upsert replaced weight and metadata
    assert sorted(keys(s.edges_of(["a", "a"]))) == [("a", "b", "semantic"), ("a", "c", "causal"),
                                                    ("c", "a", "temporal")]
    assert s.edges_of([]) == []
    assert keys(s.edges_among(["a", "b", "c"])) == [("a", "b", "semantic"), ("a", "c", "causal"),
                                                    ("c", "a", "temporal")]
    assert s.edges_among(["a", "b", "c"], "causal") == [edge("a", "c", "causal", 0.3)]
    assert s.edges_among([]) == []
    assert s.existing_edges([("a", "b", "semantic"), ("b", "a", "semantic"), ("a", "c", "causal"),
                             ("a", "b", "semantic"), ("zz", "a", "entity")]) == {
        ("a", "b", "semantic"), ("a", "c", "causal")}
    assert s.existing_edges([]) == set()
    assert s.edge_counts(["a", "b", "zz", "a"]) == {"a": 3, "b": 2, "zz": 0}
    assert s.count_edges() == 4
    before = s.graph_version()
    assert s.graph_version() == before  # reading changes nothing
    s.delete_edge("a", "c", "causal")
    assert s.graph_version() != before
    assert s.count_edges() == 3 and s.edges_among(["a", "c"], "causal") == []
    s.delete_edge("a", "c", "causal")  # gone already: nothing to do
    assert s.count_edges() == 3


def test_recall_reads(filled: Store) -> None:
    s = filled
    assert s.insight_meta(["a", "e", "zz", "c"]) == {"a": (4, T0, "decision", "agent1"), "c": (3, T1, "fact", "Agent2")}
    assert s.insight_meta([]) == {}
    assert sorted(s.adjacency(["a"])) == [
        ("a", "b", "semantic", 0.7, None), ("a", "c", "causal", 0.3, None), ("a", "c", "temporal", 0.5, "backbone")]
    assert sorted(s.adjacency(["b", "b"])) == [("b", "a", "semantic", 0.7, None), ("b", "d", "supersedes", 1.0, None)]
    assert s.adjacency([]) == []
    assert s.superseded_ids() == {"b"}
    assert s.superseded_ids(["zz", "b", "a", "b"]) == {"b"} and s.superseded_ids(["a", "d"]) == set()
    assert s.superseded_ids([]) == set()
    before = s.graph_version()
    s.upsert_edge(edge("b", "c", "causal", 0.2))
    after = s.graph_version()
    assert after != before
    s.insert_insight(Insight(id="f", content="f", created_at=T2, updated_at=T2), {"f"})
    assert s.graph_version() != after
    # a store that journals its own commits names what they touched; one that does not says it cannot tell
    assert s.graph_changes(before, s.graph_version()) in (None, {"b", "c", "f"})
    assert s.graph_changes(object(), s.graph_version()) is None


def test_upsert_edges_in_order(filled: Store) -> None:
    s = filled
    before = s.graph_version()
    s.upsert_edges([edge("b", "c", "causal", 0.2), edge("c", "d", "semantic", 0.5), edge("b", "c", "causal", 0.4)])
    after = s.graph_version()
    assert after != before and [e.weight for e in s.edges_among(["b", "c"], "causal")] == [0.4]
    assert [e.weight for e in s.edges_among(["c", "d"], "semantic")] == [0.5]
    s.upsert_edges([])
    assert s.graph_version() == after


def test_a_backend_without_an_index_file_says_so(filled: Store, store_backend: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Kùzu, Redis and FalkorDB keep no graph index file (`store.base.StoreDefaults`): recall reads through the
    Edges calls."""
    if store_backend not in NO_INDEX_FILE:
        pytest.skip("this backend keeps an index file (test_graph_index_reads)")
    from mnemon_core.graph import fold, fold_index, index_file, index_state

    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    assert filled.graph_place() is None
    assert fold_index(filled, force=True) == 0
    assert index_file(filled) is None and index_state(filled) is None


def test_graph_index_reads(filled: Store, store_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The change log names what each commit touched (any process); the index file (beside the database, or
    beside a Postgres client) is built from a snapshot of `index_rows` and the edges, and written anew when
    behind; the log is cut after it (the floor only rises)."""
    from mnemon_core.graph import fold, fold_index, index_file, index_state

    if store_backend in NO_INDEX_FILE:
        pytest.skip("no graph index file here (test_a_backend_without_an_index_file_says_so)")
    s = filled
    before = s.graph_version()
    s.upsert_edges([edge("b", "c", "causal", 0.2), edge("c", "d", "semantic", 0.5), edge("b", "c", "causal", 0.4)])
    after = s.graph_version()
    rows = {r.id: r for r in s.index_rows()}
    assert sorted(rows) == ["a", "b", "c", "d"]
    a = rows["a"]
    assert (a.importance, a.created_at, a.category, a.source, sorted(a.tokens), a.entities) == (
        4, T0, "decision", "agent1", sorted(ROWS[0][8]), ["redis"])
    assert a.terms == terms(document(ROWS[0][1], ROWS[0][4], ROWS[0][5]))
    assert [r.id for r in s.index_rows(["c", "e", "zz", "c"])] == ["c"]
    assert s.graph_changes_since(before[0], after[0]) == {"b", "c", "d"}
    assert s.graph_changes_since(after[0], after[0]) == set()
    assert s.graph_changes_since(after[0], before[0]) is None  # backwards: nothing can say
    assert s.store_uid() is not None and not s.in_transaction() and not s.graph_writes_pending()
    behind = s.graph_log_since(before[0])  # an insight touched twice may count twice: an upper bound
    assert s.graph_log_counter(after[0], 0) == after[0] and s.graph_log_counter(after[0], 10**6) is None
    assert behind.rows >= 3 and (behind.unknown, behind.floor) == (False, 0) and s.graph_log_since(after[0]).rows == 0
    with s.graph_snapshot() as snap:
        assert snap.counter == after[0] and snap.rows == s.index_rows()
        assert sorted(e[:4] for e in snap.edges) == sorted(
            (e.source_id, e.target_id, str(e.edge_type), e.weight) for e in s.iter_edges())
    assert index_file(s) is None and index_state(s) is None
    monkeypatch.setattr(fold, "MIN_ROWS", 100)
    assert fold_index(s) == 0  # four insights: no file
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    s.vector_matrix("m4", 4)  # held by this process: its vector matrix file is written with the graph's
    assert s.vector_files_missing(1) is (store_backend != "milvus")  # Milvus's vectors are not the store's
    assert fold_index(s) > 0
    assert not s.vector_files_missing(1)
    gx = index_file(s)
    assert gx is not None and index_state(s) is gx
    assert (gx.n, gx.counter, [i.decode() for i in gx.ids]) == (4, after[0], ["a", "b", "c", "d"])
    assert fold_index(s) == 0 and fold_index(s, force=True) == 0  # not behind
    s.upsert_edge(edge("a", "d", "semantic", 0.6))
    assert s.graph_changes_since(gx.counter, s.graph_version()[0]) == {"a", "d"}
    assert fold_index(s) == 0 and fold_index(s, force=True) > 0
    assert index_file(s) is not gx and index_file(s).counter == s.graph_version()[0]
    since_old = s.graph_changes_since(gx.counter, s.graph_version()[0])
    if store_backend == "postgres":  # each client keeps its own file: the log stays for the others' (fold_rows)
        assert since_old == {"a", "d"}
    else:
        assert since_old is None  # one file for every process: the log was folded past it
    floor = s.graph_log_since(0).floor
    s.cut_graph_log(floor - 1)  # an older fold's cut never lowers the floor
    assert s.graph_log_since(0).floor == floor
    s.write_vector_files(1, missing_only=True)  # none missing: nothing written
    with s.transaction():
        s.upsert_edge(edge("b", "d", "semantic", 0.1))
        assert s.in_transaction() and s.graph_writes_pending() and index_file(s) is None


# ---------------------------------------------------------------------------------------------- oplog, dump


def test_oplog(filled: Store) -> None:
    s = filled
    assert s.count_log() == 2
    assert [(o.operation, o.insight_id, o.detail, o.created_at) for o in s.read_log(10)] == [
        ("forget", "e", "", T2), ("remember", "a", "first", T0)]
    assert [o.operation for o in s.read_log(1)] == ["forget"]
    assert s.oplog_oldest() == T0
    first, second = s.read_log(10)[::-1]
    assert second.id > first.id


def reads(s: Store) -> tuple[dict[str, tuple[int, str | None]], list[tuple[str, str | None, str, str]]]:
    """Access counts and last access of a and b; the oplog's rows other than `filled`'s, oldest first."""
    got = s.get_insights(["a", "b"])
    rows = [(o.operation, o.insight_id, o.detail, o.created_at) for o in s.read_log(20)[::-1]]
    return {k: (v.access_count, v.last_accessed_at) for k, v in got.items()}, rows[2:]


def test_record_access_never_waits_for_a_writer(filled: Store, mem) -> None:
    """Issue 37, item 1: while another store object (another connection, another client) holds the write
    transaction, `record_access` answers at once and keeps the access; the next write transaction, of either,
    applies it first. With the lock free, at once. A key counts once (a served call run again)."""
    s = filled
    assert s.record_access(base.Access(None, ("a", "b"), T1, "recall", None, "q=redis hits=2")) is True
    assert reads(s) == ({"a": (1, T1), "b": (1, T1)}, [("recall", None, "q=redis hits=2", T1)])
    writer = open_store(mem.settings)
    holding, release, done = threading.Event(), threading.Event(), threading.Event()

    def write() -> None:
        with writer.transaction():
            writer.log("import", None, "a long import", T2)
            holding.set()
            release.wait(60)

    def read() -> None:
        answers.append(s.record_access(base.Access("req-1", ("a",), T2, "show", "a", "full insight")))
        answers.append(s.record_access(base.Access("req-1", ("a",), T2, "show", "a", "full insight")))  # its rerun
        done.set()

    answers: list[bool] = []
    holder = threading.Thread(target=write)
    holder.start()
    try:
        assert holding.wait(30)
        threading.Thread(target=read, daemon=True).start()
        assert done.wait(30), "record_access waited for the writer"
        assert answers == [False, False] and holder.is_alive()  # kept while the writer still holds the lock
    finally:
        release.set()
        holder.join(60)
    assert reads(s)[0]["a"] == (1, T1)  # not applied yet: the writer's transaction had begun before it was kept
    writer.close()  # (Kùzu: the last transaction of the process applies what is left, here)
    with s.transaction():
        s.log("remember", "b", "the next write", T2)
    assert reads(s) == ({"a": (2, T2), "b": (1, T1)}, [
        ("recall", None, "q=redis hits=2", T1), ("import", None, "a long import", T2),
        ("show", "a", "full insight", T2), ("remember", "b", "the next write", T2)])
    # An older access applied after a newer one leaves the newer time; an applied key is not applied again.
    assert s.record_access(base.Access(None, ("a",), T0, "search", None, "q=old hits=1")) is True
    assert s.record_access(base.Access("req-1", ("a",), T2, "show", "a", "full insight")) is True
    assert reads(s)[0]["a"] == (3, T2)


def test_empty_store(store: Store) -> None:
    assert (store.count_active(), store.count_deleted(), store.count_edges(), store.count_log()) == (0, 0, 0, 0)
    assert store.oplog_oldest() is None and store.read_log(5) == []
    ids, mat = store.vector_matrix("m4", 4)
    assert ids == [] and mat.shape == (0, 4)
    assert store.nearest("m4", A, 3) == [] and store.vector_counts() == {}
    assert store.top_entities(5) == [] and store.count_by_category() == {} and store.superseded_ids() == set()
    assert list(store.dump_insights()) == [] and list(store.dump_oplog()) == [] and list(store.dump_tails()) == []


def dumped(s: Store) -> tuple[list, list, list, list]:
    rows = [(r.insight, r.tokens, None if r.vector is None else r.vector.tolist(), r.model) for r in s.dump_insights()]
    return rows, list(s.iter_edges()), list(s.dump_oplog()), list(s.dump_tails())


def test_dump(filled: Store) -> None:
    rows, edges, oplog, tails = dumped(filled)
    assert [r[0].id for r in rows] == ["a", "b", "c", "d", "e"]  # insertion order, deleted ones too
    assert rows[4][0] == insight("e").model_copy(update={"deleted_at": T2, "updated_at": T2})
    assert [r[1] for r in rows] == [frozenset(r[8]) for r in ROWS]
    assert [r[2] for r in rows] == [A.tolist(), B.tolist(), C.tolist(), [3.0, 4.0], None]
    assert [r[3] for r in rows] == ["m4", "m4", "m4", "other", None]
    assert len(edges) == 4
    assert [(o.operation, o.insight_id) for o in oplog] == [("remember", "a"), ("forget", "e")]
    assert all(type(o) is OplogEntry for o in oplog)
    assert tails == [("s1", "b")]


def test_bulk_load_copies_what_dump_gives(filled: Store, pg_url: str) -> None:
    """`BulkLoad` (Postgres, `mnemon migrate`'s target) from either backend's `Dump`: read back the same."""
    from pg import fresh_store

    from mnemon_core.store.postgres import PostgresStore, drop_store

    name = fresh_store()
    target = PostgresStore(pg_url, store=name)
    try:
        rows, edges, oplog, tails = (filled.dump_insights(), filled.iter_edges(), filled.dump_oplog(),
                                     filled.dump_tails())
        target.load(rows, edges, oplog, tails)
        assert dumped(target) == dumped(filled)
        assert (target.count_active(), target.count_deleted()) == (4, 1)
    finally:
        target.close()
        drop_store(pg_url, name)


def test_bulk_load_into_kuzu_copies_what_dump_gives(filled: Store, tmp_path: Path) -> None:
    """`BulkLoad` on Kùzu (`mnemon migrate --to kuzu:///…`) from each backend's `Dump`: read back the same, and
    the copy ranks as its source."""
    pytest.importorskip("kuzu")
    from mnemon_core.store.kuzu import KuzuStore

    target = KuzuStore(tmp_path / "copy.kuzu")
    try:
        target.load(filled.dump_insights(), filled.iter_edges(), filled.dump_oplog(), filled.dump_tails())
        assert dumped(target) == dumped(filled)
        assert (target.count_active(), target.count_deleted()) == (4, 1)
        assert target.term_scores(stem("redis")) == filled.term_scores(stem("redis"))
        assert target.vector_matrix("m4", 4)[0] == ["a", "b", "c"]
        target.log("after", None, "", T2)  # ids go on after the copied ones
        assert [o.id for o in target.read_log(3)][0] > max(o.id for o in filled.read_log(10))
    finally:
        target.close()


@pytest.mark.parametrize("server", ["redis", "falkordb"])
def test_bulk_load_into_a_server_copies_what_dump_gives(filled: Store, server: str,
                                                        request: pytest.FixtureRequest) -> None:
    """`BulkLoad` on Redis and FalkorDB (`mnemon migrate --to redis://… | falkordb://…`) from each backend's
    `Dump`: one MULTI/EXEC, read back the same (by this object and by a fresh one that reads the server), ranked
    as its source."""
    from redis_server import fresh_store

    from mnemon_core.store.mirrored import Stores

    checked_backend(server)
    url = request.getfixturevalue(f"{server}_url")
    if server == "redis":
        from mnemon_core.store.redis import RedisStore as cls
    else:
        from mnemon_core.store.falkordb import FalkorStore as cls
    name = fresh_store()
    stores = Stores(url, cls)
    target = cls(url, store=name)
    try:
        target.load(filled.dump_insights(), filled.iter_edges(), filled.dump_oplog(), filled.dump_tails())
        assert dumped(target) == dumped(filled)
        target.shared.mirror = None  # read back from the server, not from what this process wrote
        assert dumped(target) == dumped(filled)
        assert target.term_scores(stem("redis")) == filled.term_scores(stem("redis"))
        target.log("after", None, "", T2)  # ids go on after the copied ones
        assert [o.id for o in target.read_log(3)][0] > max(o.id for o in filled.read_log(10))
    finally:
        target.close()
        stores.remove(name)


# ---------------------------------------------------------------------------------------------- catalog


def test_catalog(mem, store_backend: str) -> None:
    stores = catalog(mem.settings)
    assert mem.store.count_active() == 0  # the current store exists once opened
    assert stores.exists(mem.settings.store)
    extra = mem.settings.store + "x"
    assert not stores.exists(extra) and extra not in stores.names()
    stores.create(extra)
    assert stores.exists(extra)
    names = stores.names()
    assert names == sorted(names) and {mem.settings.store, extra} <= set(names)
    stores.remove(extra)
    assert not stores.exists(extra) and extra not in stores.names()


# ---------------------------------------------------------------------------------------------- across processes
# Agents call the CLI once per turn: each call is a process of its own, served by the data directory's engine or
# run in-process. Every backend must show each call what the calls before it wrote, whoever holds the database.

# Vectors matter to these (Milvus holds only vectors; Redis keeps them in vector sets, FalkorDB in vector nodes):
# they embed for real.
EMBEDS = {"milvus": "local", "redis": "local", "falkordb": "local"}


@pytest.mark.parametrize("daemon", ["off", "on"])
def test_calls_in_turn_from_separate_processes(mem, store_backend: str, daemon: str, tmp_path: Path) -> None:
    """remember, recall, search, import (always in-process), forget, status and a --readonly recall, each a
    process of its own, in turn on one store; with the engine on, served calls and in-process ones mix."""
    from conftest import run_cli, stop_engines

    mem.store.close()  # made, and let go: this test's processes are its only users
    env = {"MNEMON_DAEMON": daemon, "MNEMON_EMBEDDER": EMBEDS.get(store_backend, "none")}
    draft = tmp_path / "d.json"
    draft.write_text(json.dumps({"schema_version": "1", "insights": [
        {"content": "Imported: the deploy pipeline runs on Buildkite", "entities": ["Buildkite"]},
        {"content": "Imported: staging deploys go out at noon"}]}), encoding="utf-8")

    def call(*args: str, **extra: str):
        r = run_cli(*args, env={**env, **extra})
        assert (r.code, r.err) == (0, ""), (args, r.err)
        return r.json() if r.out.startswith(("{", "[")) else r.out

    try:
        a = call("remember", "Alice chose SQLite for the cache", "--cat", "decision", "--entities", "Alice")["id"]
        b = call("remember", "Bob moved the cache to Redis because of latency", "--entities", "Bob")["id"]
        found = call("recall", "why did the cache move to Redis")["results"]
        assert b in [h["id"] for h in found]
        assert [h["id"] for h in call("search", "Alice chose")] == [a]
        assert call("import", str(draft))["imported"] == 2
        c = call("remember", "Carol keeps the cache warm at night", "--entities", "Carol")["id"]
        call("forget", a)
        assert [h["content"] for h in call("recall", "deploy pipeline Buildkite")["results"]][0] == \
            "Imported: the deploy pipeline runs on Buildkite"
        assert call("search", "Alice chose") == []
        status = call("status", MNEMON_DAEMON="off")
        assert status["total_insights"] == 4 and status["deleted_insights"] == 1
        assert c in [h["id"] for h in call("--readonly", "recall", "who keeps the cache warm")["results"]]
    finally:
        stop_engines(tmp_path)
    again = open_store(mem.settings)
    try:
        assert sorted(i.content for i in again.iter_active()) == sorted([
            "Bob moved the cache to Redis because of latency", "Carol keeps the cache warm at night",
            "Imported: the deploy pipeline runs on Buildkite", "Imported: staging deploys go out at noon"])
        if env["MNEMON_EMBEDDER"] == "local":  # every insight embedded, in the vector store
            assert next(iter(again.vector_counts().values())) == 4
    finally:
        again.close()


def _committed(store_backend: str, settings, watcher: Store | None) -> int | None:  # noqa: ANN001
    """Insights another process has committed so far, read without waiting for the importer (on a server through
    `watcher`, a store kept open, by its oplog rows, one per imported insight: a Redis or FalkorDB store counts
    them without reading the insights back, which took long enough for a fast import to finish meanwhile)."""
    if watcher is not None:
        return watcher.count_log()
    if store_backend == "milvus":  # the SQLite file beside the vectors (Milvus Lite is the importer's)
        import sqlite3

        if not settings.db_path.exists():
            return None
        try:
            with sqlite3.connect(f"file:{settings.db_path}?mode=ro", uri=True, timeout=5) as db:
                return db.execute("SELECT count(*) FROM insights").fetchone()[0]
        except sqlite3.Error:
            return None
    s = open_store(settings)
    try:
        return s.count_active()
    finally:
        s.close()


def test_import_killed_midway_then_again(mem, store_backend: str, tmp_path: Path) -> None:
    """SIGKILL after the first batch committed leaves whole batches only (each insight with its terms, oplog row
    and vector), and the same import again finishes it: every insight once, the backbone whole. SQLite's and
    Kùzu's are tests/write/test_import_kill.py and tests/store/test_kuzu.py (a reader there waits for the writer)."""
    import dataclasses
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT
    from conftest import make_draft

    from mnemon_core.write.importer import IMPORT_BATCH

    if store_backend in ("sqlite", "kuzu"):
        pytest.skip("tests/write/test_import_kill.py, tests/store/test_kuzu.py")
    mem.store.close()
    n = 3 * IMPORT_BATCH
    draft = tmp_path / "big.json"
    draft.write_text(json.dumps(make_draft(n)), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               MNEMON_EMBEDDER="local" if store_backend == "milvus" else "none")  # Milvus holds only vectors
    cmd = [sys.executable, "-m", "mnemon_core", "import", str(draft)]
    watcher = open_store(dataclasses.replace(mem.settings, readonly=True)) if store_backend in SERVERS else None
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    try:
        while not _committed(store_backend, mem.settings, watcher):
            assert proc.poll() is None, "the import finished before it could be killed"
            assert time.monotonic() < deadline, "no batch committed in time"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        if watcher is not None:
            watcher.close()
    assert proc.returncode == -signal.SIGKILL

    s = open_store(dataclasses.replace(mem.settings, readonly=True))
    try:
        killed_at = s.count_active()
        assert 0 < killed_at < n and killed_at % IMPORT_BATCH == 0  # whole batches only
        ids = [i.id for i in s.iter_active()]
        assert s.count_log() == killed_at and len(s.insight_tokens(ids)) == killed_at
        if env["MNEMON_EMBEDDER"] == "local":
            assert list(s.vector_counts().values()) == [killed_at]
    finally:
        s.close()
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr
    out = json.loads(rerun.stdout)
    assert (out["imported"], out["skipped"], out["errors"]) == (n - killed_at, killed_at, 0)
    s = open_store(mem.settings)
    try:
        assert s.count_active() == n
        assert sum(1 for e in s.iter_edges() if e.edge_type == "temporal") == 2 * (n - 1)
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------- completeness


def protocol_methods(proto: type) -> set[str]:
    return {n for cls in proto.__mro__ if cls.__module__ == base.__name__ for n, v in vars(cls).items()
            if inspect.isfunction(v) and not n.startswith("_")}


def test_this_file_calls_every_protocol_method() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    called = set(re.findall(r"\.(\w+)\(", source))
    declared = protocol_methods(Store) | protocol_methods(base.BulkLoad) | protocol_methods(base.Catalog)
    declared |= protocol_methods(base.AnnSearch) | protocol_methods(base.GraphLog)
    assert declared - called == set()


@pytest.mark.parametrize("module, cls", [("sqlite", "SQLiteStore"), ("postgres", "PostgresStore"),
                                         ("kuzu", "KuzuStore"), ("redis", "RedisStore"),
                                         ("falkordb", "FalkorStore")])
def test_backends_implement_the_protocols_and_no_more(module: str, cls: str) -> None:
    """Every public method of a backend is one the protocols declare (`load` on the migration targets, the
    `GraphLog` calls on the backends that keep a graph index file)."""
    import importlib

    if module in ("kuzu", "redis", "falkordb"):
        pytest.importorskip(module)

    store_cls = getattr(importlib.import_module(f"mnemon_core.store.{module}"), cls)
    public = {n for n, v in inspect.getmembers(store_cls, inspect.isfunction) if not n.startswith("_")}
    declared = protocol_methods(Store) | protocol_methods(base.BulkLoad)
    if module in ("sqlite", "postgres"):
        declared |= protocol_methods(base.GraphLog)
        assert protocol_methods(base.GraphLog) <= public
    assert protocol_methods(Store) <= public
    assert public - declared == set()

