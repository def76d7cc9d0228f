"""link, forget, show, search, related, status, log, gc (reference §1.2, §5, §6)."""

from __future__ import annotations

import pytest

from mnemon_core import Memory, NotFoundError, ValidationError
from mnemon_core.faces.cli import format_log


@pytest.fixture
def pair(mem: Memory) -> tuple[str, str]:
    a = mem.remember("first fact about caching", source="a").id
    b = mem.remember("second fact about queues", source="b").id
    return a, b


def test_link_writes_both_directions(mem: Memory, pair) -> None:
    a, b = pair
    r = mem.link(a, b, type="causal", weight=0.8, metadata={"sub_type": "causes", "created_by": "someone"})
    assert r.model_dump(mode="json") == {
        "edge_type": "causal", "metadata": {"sub_type": "causes", "created_by": "agent"}, "source_id": a,
        "status": "linked", "target_id": b, "weight": 0.8,
    }
    causal = {(e.source_id, e.target_id): e.metadata for e in mem.store.edges_of([a]) if e.edge_type == "causal"}
    assert set(causal) == {(a, b), (b, a)}
    assert "direction" not in causal[(a, b)]
    assert causal[(b, a)]["direction"] == "reverse"  # the WHY order keeps the agent's cause → effect
    assert mem.log()[0].detail == f"{a[:8]}→{b[:8]} type=causal weight=0.80"


def test_supersedes_is_one_way(mem: Memory, pair) -> None:
    old, new = pair
    mem.link(new, old, type="supersedes", weight=1.0)
    sup = [(e.source_id, e.target_id) for e in mem.store.edges_of([old]) if e.edge_type == "supersedes"]
    assert sup == [(new, old)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "narrative"}, 'invalid edge type "narrative"; valid: temporal, semantic, causal, entity, supersedes'),
        ({"weight": 1.5}, "weight must be between 0.0 and 1.0, got 1.50"),
        ({"weight": -0.1}, "weight must be between 0.0 and 1.0, got -0.10"),
        ({"metadata": "{not json"}, "invalid metadata JSON"),
        ({"metadata": '{"a": 1}'}, "invalid metadata JSON: must be an object of string values"),
    ],
)
def test_link_validation(mem: Memory, pair, kwargs, message) -> None:
    a, b = pair
    with pytest.raises(ValidationError) as err:
        mem.link(a, b, **kwargs)
    assert str(err.value).startswith(message)


def test_link_refuses_self_and_missing(mem: Memory, pair) -> None:
    a, _ = pair
    with pytest.raises(ValidationError, match="to itself"):
        mem.link(a, a, type="supersedes")
    with pytest.raises(NotFoundError, match="target insight nope not found"):
        mem.link(a, "nope")
    with pytest.raises(NotFoundError, match="source insight nope not found"):
        mem.link("nope", a)


def test_link_weight_bounds_inclusive(mem: Memory, pair) -> None:
    a, b = pair
    assert mem.link(a, b, weight=0.0).weight == 0.0
    assert mem.link(a, b, weight=1.0).weight == 1.0  # INSERT OR REPLACE on (source, target, type)
    assert sum(1 for e in mem.store.edges_of([a]) if e.edge_type == "semantic") == 2


def test_forget_soft_deletes_and_drops_edges(mem: Memory, pair) -> None:
    a, b = pair
    mem.link(a, b)
    assert mem.forget(a).model_dump() == {"id": a, "message": "Insight soft-deleted successfully", "status": "deleted"}
    assert mem.store.edges_of([a]) == []
    assert mem.store.get_insight(a, include_deleted=True).deleted_at is not None
    assert mem.status().deleted_insights == 1
    with pytest.raises(NotFoundError, match=f"forget: insight {a} not found or already deleted"):
        mem.forget(a)


def test_show_bumps_access(mem: Memory, pair) -> None:
    a, _ = pair
    assert mem.show(a).access_count == 1
    shown = mem.show(a)
    assert shown.access_count == 2
    assert "deleted_at" not in shown.model_dump()
    assert mem.log()[0].operation == "show"
    with pytest.raises(NotFoundError, match="insight zzz not found"):
        mem.show("zzz")


def test_search_scores_by_bm25_over_the_best(mem: Memory) -> None:
    a = mem.remember("redis cache eviction policy", importance=2).id
    b = mem.remember("redis cluster failover", importance=4).id
    mem.remember("postgres vacuum settings")
    hits = mem.search("redis caches")  # stemmed: "caches" finds "cache"
    assert [h.id for h in hits] == [a, b] and hits[0].score == 1.0 and 0 < hits[1].score < 0.5
    assert mem.show(a).access_count == 2  # search +1, show +1
    assert mem.search("nothing matches this") == []
    with pytest.raises(ValidationError, match="--limit must be at least 1, got 0"):
        mem.search("redis", limit=0)


def test_related_walks_depth(mem: Memory) -> None:
    a = mem.remember("a", source="1").id
    b = mem.remember("b", source="2").id
    c = mem.remember("c", source="3").id
    store = mem.store
    # Leave only a causal chain a → b → c.
    for e in list(store.iter_edges()):
        store.delete_edge(e.source_id, e.target_id, e.edge_type)
    mem.link(a, b, type="causal")
    mem.link(b, c, type="causal")
    got = [(h.id, h.depth, h.via_edge_type) for h in mem.related(a, depth=2)]
    assert got == [(b, 1, "causal"), (c, 2, "causal")]
    assert [h.id for h in mem.related(a, depth=1)] == [b]
    assert mem.related(a, edge_type="semantic") == []
    with pytest.raises(NotFoundError):
        mem.related("missing")


def test_status_counts(mem: Memory) -> None:
    mem.remember("Qdrant vs Milvus", category="decision", entities=["Qdrant"])
    mem.remember("Qdrant tuning", category="fact", entities=["Qdrant"])
    s = mem.status()
    assert s.total_insights == 2
    assert s.by_category == {"decision": 1, "fact": 1}
    assert s.top_entities[0].model_dump() == {"entity": "Qdrant", "count": 2}
    assert s.edge_count == mem.store.count_edges() > 0
    assert s.oplog_count == 2
    assert s.db_size_bytes > 0


def test_log_table_newest_first(mem: Memory) -> None:
    assert format_log([]) == "No operations recorded yet.\n"
    mem.remember("x" * 100)
    mem.remember("short")
    text = format_log(mem.log())
    lines = text.splitlines()
    assert lines[0].split() == ["TIME", "OP", "INSIGHT", "DETAIL"]
    assert lines[1].split() == ["----", "--", "-------", "------"]
    assert lines[2].endswith("short")
    assert lines[3].endswith("x" * 57 + "...")


def test_gc_suggest_and_keep(mem: Memory) -> None:
    low = mem.remember("low value", importance=1).id
    mem.remember("high value", importance=5)
    r = mem.gc()
    assert r.candidates_found == 1 and r.total_insights == 2 and r.max_insights == 1000
    assert r.candidates[0].insight.id == low
    assert r.candidates[0].effective_importance == pytest.approx(0.15 * 1.2, abs=1e-3)
    k = mem.gc_keep(low)
    assert k.new_access == 3 and k.immune is True and k.status == "retained"
    r = mem.gc()
    assert r.candidates is None and r.model_dump(mode="json")["candidates"] is None
    with pytest.raises(ValidationError, match="--threshold must be non-negative, got -1"):
        mem.gc(threshold=-1)


def test_readonly_reads_without_writing(mem: Memory, pair) -> None:
    a, _ = pair
    before = mem.store.count_log()
    mem.close()
    ro = Memory(readonly=True)
    assert ro.show(a).access_count == 0
    assert ro.search("caching")[0].id == a
    assert ro.status().total_insights == 2
    ro.close()
    again = Memory()
    assert again.store.count_log() == before
    assert again.store.get_insight(a).access_count == 0


def test_why_recall_puts_a_linked_cause_first(mem: Memory) -> None:
    effect = mem.remember("We moved the search service to Rust", category="decision", importance=5, source="a")
    cause = mem.remember("The Python search service kept timing out under load", category="fact", source="b")
    mem.link(cause.id, effect.id, type="causal", weight=0.9, metadata={"sub_type": "causes"})
    ids = [h.id for h in mem.recall("why did we move the search service to Rust?", limit=5).results]
    assert ids.index(cause.id) < ids.index(effect.id)
