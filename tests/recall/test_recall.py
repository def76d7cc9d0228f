"""Smart recall through `Memory.recall` (spec §5.2, reference §4), the `spec` recipe's conformance suite: RRF
anchors on a hand-built store, beam search over a causal chain, the WHY order, determinism, scope filters,
supersede demotion, vectors, output shapes, validation, access bumps and the oplog. Every recall here runs the
spec recipe (the default is `hybrid`, tests/recall/test_recall_hybrid.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mnemon_core import Memory
from mnemon_core.embed.base import BaseEmbedder, Calibration
from mnemon_core.errors import ValidationError
from mnemon_core.models import Edge, Insight, Intent
from mnemon_core.recall import pipeline
from mnemon_core.recall.pipeline import VectorInput, scope_of, smart_recall
from mnemon_core.recall.results import BriefRecallResult, RecallResult, VerboseRecallResult
from mnemon_core.text import tokens_of
from mnemon_core.timeutil import iso
from reference_engine import run_reference

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.fixture(autouse=True)
def _spec_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Memory.recall` without a recipe runs the spec's formulas in this module."""
    from mnemon_core.recall import config

    monkeypatch.setattr(config, "DEFAULT_RECIPE", "spec")


def put(mem: Memory, id_: str, content: str, minute: int, *, category: str = "general", importance: int = 3,
        source: str = "user", entities: list[str] | None = None, tags: list[str] | None = None) -> None:
    """Insert an insight directly (no graph builders): a hand-built store has only the edges a test adds."""
    now = iso(T0 + minute * 60)
    ins = Insight(id=id_, content=content, category=category, importance=importance, tags=tags or [],
                  entities=entities or [], source=source, created_at=now, updated_at=now, stored_at=now)
    with mem.store.transaction():
        mem.store.insert_insight(ins, tokens_of(content, ins.tags, ins.entities))


def link(mem: Memory, src: str, dst: str, etype: str, weight: float = 1.0, both: bool = False) -> None:
    with mem.store.transaction():
        for s, t in [(src, dst), (dst, src)] if both else [(src, dst)]:
            mem.store.upsert_edge(Edge(source_id=s, target_id=t, edge_type=etype, weight=weight, created_at=iso(T0)))


def fillers(mem: Memory, n: int = 20, start: int = 1000, **kw) -> list[str]:
    """Unrelated insights newer than everything else: they fill the recency signal's 20 slots."""
    ids = [f"f{i:02d}" for i in range(n)]
    for i, id_ in enumerate(ids):
        put(mem, id_, f"filler memo {i} about gardening tomatoes", start + i, **kw)
    return ids


def verbose(mem: Memory, query: str, **kw) -> VerboseRecallResult:
    r = mem.recall(query, verbose=True, **kw)
    assert isinstance(r, VerboseRecallResult)
    return r


# ---------------------------------------------------------------- anchors: RRF on a hand-built store


def test_rrf_anchors_and_rerank_arithmetic_on_a_hand_built_store(mem: Memory):
    put(mem, "A", "redis latency spikes at noon", 0)
    put(mem, "B", "redis queue depth", 1)
    fillers(mem, 20, start=10)  # f00..f19, minutes 10..29: f19 is the newest filler
    put(mem, "C", "weekly standup moved", 99)
    put(mem, "D", "Kafka pipeline backlog", 100, entities=["Kafka"])
    r = verbose(mem, "redis latency Kafka", limit=30)

    # keyword: A (2 of 3 tokens), then D and B (1 of 3; D is newer); time: D, C, f19..f02; entity: D.
    raw = {"A": 1 / 61, "B": 1 / 63, "D": 1 / 62 + 1 / 61 + 1 / 61, "C": 1 / 62}
    for rank, i in enumerate(range(19, 1, -1), start=2):
        raw[f"f{i:02d}"] = 1 / (61 + rank)
    top = max(raw.values())
    anchor = {k: v / top for k, v in raw.items()}
    assert r.meta.intent == Intent.GENERAL and r.meta.intent_source == "auto"
    assert r.meta.anchor_count == 22 and r.meta.traversed == 22  # no edges: the anchors are all
    by_id = {h.insight.id: h for h in r.results}
    assert set(by_id) == set(raw)
    assert {k: by_id[k].via for k in ("A", "B", "C", "D", "f19")} == {
        "A": "keyword", "B": "keyword", "C": "time", "D": "hybrid", "f19": "time",
    }
    lo, hi = min(anchor.values()), max(anchor.values())
    keyword = {"A": 2 / 3, "B": 1 / 3, "D": 1 / 3}
    entity = {"D": 1.0}
    for id_, hit in by_id.items():
        graph = (anchor[id_] - lo) / (hi - lo)
        assert hit.signals.keyword == pytest.approx(keyword.get(id_, 0.0), abs=1e-12)
        assert hit.signals.entity == entity.get(id_, 0.0)
        assert hit.signals.similarity == 0.0
        assert hit.signals.graph == pytest.approx(graph, abs=1e-12)
        # GENERAL without vectors: 0.25 each over keyword, entity, graph, renormalised → a third each.
        expect = (keyword.get(id_, 0.0) + entity.get(id_, 0.0) + graph) / 3
        assert hit.score == pytest.approx(expect, abs=1e-12)
    assert [h.insight.id for h in r.results][:5] == ["D", "A", "B", "C", "f19"]  # B ties f19 on graph, wins on keyword
    scores = [h.score for h in r.results]
    assert scores == sorted(scores, reverse=True)


def test_recency_always_gives_a_lone_unrelated_insight(mem: Memory):
    put(mem, "only", "the cat sleeps on the sofa", 0)
    r = mem.recall("quarterly revenue forecast")
    assert r.model_dump(mode="json") == {
        "results": [{"id": "only", "content": "the cat sleeps on the sofa", "category": "general",
                     "importance": 3, "intent": "GENERAL", "matched_via": "time", "confidence": "low", "score": 0.0}],
        "hint": "sparse_results",
    }


def test_empty_store_returns_no_results_and_the_sparse_hint(mem: Memory):
    assert mem.recall("anything").model_dump(mode="json") == {"results": [], "hint": "sparse_results"}
    v = verbose(mem, "anything")
    assert v.model_dump(mode="json") == {
        "results": [],
        "meta": {"intent": "GENERAL", "intent_source": "auto", "anchor_count": 0, "traversed": 0,
                 "hint": "sparse_results"},
    }


# ---------------------------------------------------------------- beam search and WHY order


def chain_store(mem: Memory) -> None:
    """root → m1 → m2 → decision (causal, one way), none of root/m1/m2 sharing a word with the query."""
    put(mem, "root", "The ops team has no budget for extra servers", 0)
    put(mem, "m1", "Running a separate database server is ruled out", 1)
    put(mem, "m2", "The service must embed its own storage engine", 2)
    put(mem, "decision", "We picked SQLite", 3, category="decision")
    link(mem, "root", "m1", "causal", 0.8)
    link(mem, "m1", "m2", "causal", 0.8)
    link(mem, "m2", "decision", "causal", 0.8)
    fillers(mem, 20)


def test_why_query_reaches_a_three_hop_causal_chain_keyword_search_misses(mem: Memory):
    chain_store(mem)
    query = "why did we pick SQLite"
    assert [h.id for h in mem.search(query)] == ["decision"]  # keywords alone find only the decision
    r = verbose(mem, query)
    assert r.meta.intent == Intent.WHY
    ids = [h.insight.id for h in r.results]
    assert {"root", "m1", "m2", "decision"} <= set(ids)
    by_id = {h.insight.id: h for h in r.results}
    assert by_id["root"].via == "causal" and by_id["root"].signals.keyword == 0.0
    assert by_id["root"].signals.graph > 0.5 > max(h.signals.graph for h in r.results if h.insight.id[0] == "f")


def test_why_results_come_cause_before_effect(mem: Memory):
    chain_store(mem)
    ids = [h.id for h in mem.recall("why did we pick SQLite").results]
    assert ids[:4] == ["root", "m1", "m2", "decision"]
    # The same store without the WHY intent keeps plain score order, which is not causal order here.
    plain = [h.id for h in mem.recall("why did we pick SQLite", intent="GENERAL").results]
    assert plain[:4] != ["root", "m1", "m2", "decision"]


@pytest.mark.parametrize(("intent", "phi"), [("WHEN", 0.65), ("WHY", 0.20), ("ENTITY", 0.05), ("GENERAL", 0.25)])
def test_traversal_scores_follow_the_intent_edge_weights(mem: Memory, intent: str, phi: float):
    put(mem, "a", "alpha release notes", 0)
    put(mem, "b", "unrelated beta memo", 1)
    link(mem, "a", "b", "temporal", 1.0, both=True)
    fillers(mem, 20)
    r = {h.insight.id: h for h in verbose(mem, "alpha release", intent=intent, limit=30).results}
    # Anchors: a (keyword rank 0) and f19 (time rank 0) share the top RRF score 1/61 → 1.0; f00 (time rank 19)
    # has 61/80. The beam: a → b adds φ·1; b → a (visited) raises a's best to 1 + 2φ and relabels it.
    lo, a, b = 61 / 80, 1 + 2 * phi, 1 + phi
    assert (r["a"].via, r["b"].via) == ("temporal", "temporal")
    assert r["b"].signals.graph == pytest.approx((b - lo) / (a - lo), abs=1e-12)
    assert r["f19"].signals.graph == pytest.approx((1 - lo) / (a - lo), abs=1e-12)
    assert r["f00"].signals.graph == 0.0


# ---------------------------------------------------------------- determinism


def tie_heavy_store(mem: Memory, n: int = 80) -> None:
    rng = random.Random(3)
    words = ["deploy", "cache", "redis", "queue", "latency", "budget", "agent", "memory", "graph", "review",
             "release", "schema"]
    ents = ["Redis", "Kafka", "Docker", "GitHub", "Qdrant"]
    mem.settings.max_insights = 0
    for i in range(n):
        text = " ".join(rng.choices(words, k=6)) + f" note {i}"
        mem.remember(text, entities=rng.sample(ents, k=rng.randint(0, 2)), importance=rng.choice([3, 3, 4]),
                     source=rng.choice(["user", "agent"]), category=rng.choice(["fact", "decision"]))


def test_same_query_same_store_same_list(mem: Memory, data_dir):
    tie_heavy_store(mem)
    queries = ["why redis latency", "when was the release", "tell me about Kafka", "deploy cache budget"]
    first = {q: mem.recall(q, limit=15).model_dump(mode="json") for q in queries}
    for _ in range(3):
        for q in queries:
            assert mem.recall(q, limit=15).model_dump(mode="json") == first[q]
    with Memory() as fresh:  # a new process's view: empty memo, same answers
        for q in queries:
            assert fresh.recall(q, limit=15).model_dump(mode="json") == first[q]


def test_array_pipeline_equals_the_reference_pipeline(mem: Memory, monkeypatch: pytest.MonkeyPatch):
    tie_heavy_store(mem, 120)
    store = mem.store
    ids, _ = store.vector_matrix("x", 4)
    rng = np.random.default_rng(0)
    with store.transaction():
        for ins in list(store.iter_active()):
            store.set_vector(ins.id, rng.standard_normal(8).astype(np.float32), "fake/8")
    ids, mat = store.vector_matrix("fake/8", 8)
    arrays = pipeline._run_arrays
    for q, vec_on, cat, src in [
        ("why redis latency", False, None, None), ("deploy cache budget", True, None, None),
        ("tell me about Kafka", True, "fact", None), ("when was the release", False, None, "agent"),
        ("graph memory review", True, "decision", "user"),
    ]:
        vectors = None
        if vec_on:
            qv = rng.standard_normal(8).astype(np.float32)
            vectors = VectorInput(qv / np.linalg.norm(qv), ids, mat, Calibration(-1.0, 1.0))
        for intent in Intent:
            out = []
            for steps in (arrays, run_reference):  # the product's steps 3-4, then the oracle's
                monkeypatch.setattr(pipeline, "_run_arrays", steps)
                out.append(smart_recall(store, q, intent=intent, intent_source="auto", limit=12,
                                        scope=scope_of(cat, src), vectors=vectors))
            assert out[0] == out[1]


# ---------------------------------------------------------------- scope filters


def scoped_store(mem: Memory) -> None:
    put(mem, "x1", "deploy pipeline broke", 0, category="fact", source="agent")
    put(mem, "x2", "deploy pipeline fixed by rollback", 1, category="decision", source="user")
    put(mem, "x4", "the oncall rota changed", 2, category="fact", source="agent")
    link(mem, "x1", "x2", "causal", 0.9, both=True)
    link(mem, "x2", "x4", "causal", 0.9, both=True)  # x4 is reachable only through x2
    fillers(mem, 20, category="fact", source="agent")


def test_without_filters_the_beam_crosses_categories(mem: Memory):
    scoped_store(mem)
    ids = [h.id for h in mem.recall("deploy pipeline", limit=30).results]
    assert {"x1", "x2", "x4"} <= set(ids)


def test_category_filter_applies_to_every_signal_and_bounds_traversal(mem: Memory):
    scoped_store(mem)
    r = verbose(mem, "deploy pipeline", category="fact", limit=30)
    ids = [h.insight.id for h in r.results]
    assert "x2" not in ids and "x4" not in ids  # x4 only connects through the out-of-scope x2
    assert "x1" in ids
    assert {h.insight.category for h in r.results} == {"fact"}
    assert r.meta.traversed == 21  # x1 and the 20 fillers, nothing else


def test_source_filter(mem: Memory):
    scoped_store(mem)
    r = verbose(mem, "deploy pipeline", source="user", limit=30)
    assert [h.insight.id for h in r.results] == ["x2"]
    assert mem.recall("deploy pipeline", source="nobody").results == []


def test_basic_mode_uses_like_with_the_same_filters(mem: Memory):
    scoped_store(mem)
    rows = mem.recall("pipeline", basic=True)
    assert isinstance(rows, list) and [r.id for r in rows] == ["x2", "x1"]  # newest first at equal importance
    assert [r.id for r in mem.recall("pipeline", basic=True, category="fact")] == ["x1"]
    assert mem.recall("PIPELINE broke", basic=True)[0].id == "x1"  # LIKE: ASCII case-insensitive


# ---------------------------------------------------------------- supersedes


def test_superseded_insight_is_demoted_and_marked(mem: Memory):
    put(mem, "old", "The API rate limit is 100 requests per minute", 0)
    put(mem, "new", "The API rate limit is 500 requests per minute", 1)
    mem.link("new", "old", type="supersedes", weight=1.0)
    r = verbose(mem, "API rate limit")
    by_id = {h.insight.id: h for h in r.results}
    old, new = by_id["old"], by_id["new"]
    assert old.superseded and not new.superseded
    w = (0.25 / 0.75, 0.25 / 0.75, 0.25 / 0.75)
    raw = w[0] * old.signals.keyword + w[1] * old.signals.entity + w[2] * old.signals.graph
    assert old.score == pytest.approx(raw * 0.25, abs=1e-12)
    assert [h.insight.id for h in r.results] == ["new", "old"]
    compact = mem.recall("API rate limit").model_dump(mode="json")["results"]
    assert compact[1]["id"] == "old" and compact[1]["superseded"] is True
    assert "superseded" not in compact[0]
    brief = mem.recall("API rate limit", brief=True).model_dump(mode="json")["results"]
    assert brief[1]["superseded"] is True and "superseded" not in brief[0]


# ---------------------------------------------------------------- vectors


class PresetEmbedder(BaseEmbedder):
    def __init__(self, vectors: dict[str, list[float]], calibration: Calibration) -> None:
        super().__init__("fake/4", dimensions=4, calibration=calibration)
        self.vectors = vectors

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        return np.array([self.vectors.get(t, [0.0, 0.0, 0.0, 1.0]) for t in texts], dtype=np.float32)

    def available(self) -> bool:
        return True


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_vector_anchors_use_the_calibrated_cosine_and_the_with_vector_weights(data_dir):
    # calibration: raw 0.5 → 0, raw 1.0 → 1; so raw 0.7 → 0.4 (anchor), raw 0.54 → 0.08 (not above 0.1).
    emb = PresetEmbedder({"why is the cache cold": [1.0, 0.0, 0.0, 0.0]}, Calibration(0.5, 1.0))
    with Memory(embedder=emb) as mem:
        put(mem, "near", "warm-up job disabled last sprint", 0)
        put(mem, "far", "printer toner ordered", 1)
        fillers(mem, 20)
        mem.store.set_vector("near", unit(0.7, (1 - 0.49) ** 0.5, 0, 0), "fake/4")
        mem.store.set_vector("far", unit(0.54, (1 - 0.54**2) ** 0.5, 0, 0), "fake/4")
        r = verbose(mem, "why is the cache cold", limit=30)
        by_id = {h.insight.id: h for h in r.results}
        assert "far" not in by_id  # cosine 0.08 after calibration: no anchor, no edge
        near = by_id["near"]
        assert near.via == "vector"
        assert near.signals.similarity == pytest.approx(0.4, abs=1e-6)
        s = near.signals
        assert near.score == pytest.approx(0.10 * s.keyword + 0.10 * s.entity + 0.30 * s.similarity + 0.50 * s.graph)
        assert r.results[0].insight.id == "near"


def test_vector_signal_respects_the_scope(data_dir):
    emb = PresetEmbedder({"cold cache": [1.0, 0.0, 0.0, 0.0]}, Calibration(0.0, 1.0))
    with Memory(embedder=emb) as mem:
        put(mem, "v-fact", "warm-up job disabled", 0, category="fact")
        put(mem, "v-pref", "prefers warm caches", 1, category="preference")
        fillers(mem, 20, category="fact")
        mem.store.set_vector("v-fact", unit(0.9, 0.1, 0, 0), "fake/4")
        mem.store.set_vector("v-pref", unit(1.0, 0.0, 0, 0), "fake/4")
        ids = [h.id for h in mem.recall("cold cache", category="fact", limit=30).results]
        assert "v-fact" in ids and "v-pref" not in ids
        assert [h.id for h in mem.recall("cold cache", limit=2).results] == ["v-pref", "v-fact"]


def test_vectors_written_by_another_memory_are_seen(data_dir):
    emb = PresetEmbedder({"cold cache": [1.0, 0.0, 0.0, 0.0]}, Calibration(0.0, 1.0))
    with Memory(embedder=emb) as reader, Memory(embedder=emb) as writer:
        put(writer, "a", "warm-up job disabled", 0)
        fillers(writer, 20)
        assert "a" not in [h.id for h in reader.recall("cold cache", limit=5).results]
        writer.store.set_vector("a", unit(1, 0, 0, 0), "fake/4")
        assert reader.recall("cold cache", limit=5).results[0].id == "a"


# ---------------------------------------------------------------- writes between queries


def test_memo_follows_writes_from_this_and_other_processes(mem: Memory):
    put(mem, "a", "alpha gateway timeout", 0)
    put(mem, "b", "completely separate note", 1)
    fillers(mem, 20)
    assert "b" not in [h.id for h in mem.recall("alpha gateway", limit=3).results]
    link(mem, "a", "b", "causal", 1.0, both=True)  # this connection
    assert "b" in [h.id for h in mem.recall("why alpha gateway", limit=3).results]
    with Memory() as other:  # another connection forgets b
        other.forget("b")
    assert "b" not in [h.id for h in mem.recall("why alpha gateway", limit=30).results]


# ---------------------------------------------------------------- output shapes and validation


def test_compact_shape_and_key_order(mem: Memory):
    mem.remember("Chose Qdrant because of filtering speed", category="decision", importance=5, entities=["Qdrant"])
    r = mem.recall("why Qdrant?")
    assert isinstance(r, RecallResult)
    data = r.model_dump(mode="json")
    assert list(data) == ["results", "hint"]
    hit = data["results"][0]
    assert list(hit) == ["id", "content", "category", "importance", "intent", "matched_via", "confidence", "score"]
    # One result: graph 0 (min = max); keyword 1/2 ("why", "qdrant"), entity 1; WHY weights without vectors.
    assert hit["score"] == round((0.10 * 0.5 + 0.10 * 1.0) / 0.7, 3) == 0.214
    assert hit["intent"] == "WHY" and hit["matched_via"] == "hybrid" and hit["confidence"] == "low"
    assert r.meta is not None and r.meta.intent_source == "auto"  # kept for library callers, not in the JSON


def test_verbose_shape_meta_and_intent_override(mem: Memory):
    mem.remember("Chose Qdrant because of filtering speed", category="decision", entities=["Qdrant"])
    data = mem.recall("Qdrant", verbose=True, intent=" why ").model_dump(mode="json")
    assert list(data) == ["results", "meta"]
    assert list(data["results"][0]) == ["insight", "score", "intent", "via", "signals"]
    assert list(data["results"][0]["signals"]) == ["keyword", "entity", "similarity", "graph"]
    assert list(data["results"][0]["insight"])[:3] == ["id", "content", "category"]
    assert data["meta"] == {"intent": "WHY", "intent_source": "override", "anchor_count": 1, "traversed": 1,
                            "hint": "sparse_results"}
    with pytest.raises(ValidationError, match='unknown intent "HOW"; valid: WHY, WHEN, ENTITY, GENERAL'):
        mem.recall("Qdrant", intent="HOW")


@pytest.mark.parametrize("recipe", ["hybrid", "spec"])
def test_retrieve_is_the_one_result_and_the_shapes_are_made_from_it(mem: Memory, recipe: str):
    chain_store(mem)
    reader = Memory(readonly=True)  # no access bumps: every call below sees the same store
    found = reader.retrieve("why did the deploy fail?", limit=4, recipe=recipe)
    assert isinstance(found, VerboseRecallResult) and found.results
    # The recipe's confidence travels with each hit: the hybrid's own label, none under spec (from the score).
    assert all(bool(h.confidence) is (recipe == "hybrid") for h in found.results)
    assert all("confidence" not in h for h in found.model_dump(mode="json")["results"])

    def same(shape, **flags):
        got = reader.recall("why did the deploy fail?", limit=4, recipe=recipe, **flags)
        return shape.model_dump(mode="json") == got.model_dump(mode="json")

    assert same(found, verbose=True)
    assert same(found.compact())
    assert same(found.brief(25), brief=True, excerpt_chars=25)
    reader.close()


def test_brief_shape_excerpts_and_basic_brief(mem: Memory):
    long = "Chose   Qdrant\nbecause " + "of filtering speed " * 20
    mem.remember(long, category="decision")
    r = mem.recall("Qdrant filtering", brief=True, excerpt_chars=30)
    assert isinstance(r, BriefRecallResult)
    data = r.model_dump(mode="json")
    assert list(data) == ["results", "hint", "detail_command"]
    assert data["detail_command"] == "mnemon show <id>"
    hit = data["results"][0]
    assert list(hit) == ["id", "excerpt", "category", "score", "confidence"]
    assert hit["excerpt"] == "Chose Qdrant because of filte…" and len(hit["excerpt"]) == 30
    basic = mem.recall("Qdrant", basic=True, brief=True, excerpt_chars=12).model_dump(mode="json")
    assert basic == {"results": [{"id": hit["id"], "excerpt": "Chose Qdran…", "category": "decision"}],
                     "detail_command": "mnemon show <id>"}
    assert mem.recall("zzz", basic=True, brief=True).model_dump(mode="json") == {"results": []}


def test_limit_cuts_and_hint_appears_below_half(mem: Memory):
    for i in range(6):
        put(mem, f"n{i}", f"note number {i} on caching", i)
    assert len(mem.recall("caching", limit=4).results) == 4
    assert mem.recall("caching", limit=4).hint == ""
    assert mem.recall("caching", limit=14).hint == "sparse_results"  # 6 < 14 // 2
    assert mem.recall("caching", limit=13).hint == ""  # 6 == 13 // 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "--limit must be at least 1, got 0"),
        ({"limit": -3, "basic": True}, "--limit must be at least 1, got -3"),
        ({"brief": True, "verbose": True}, "--brief and --verbose cannot be used together"),
        ({"brief": True, "excerpt_chars": 0}, "--excerpt-chars must be greater than 0"),
    ],
)
def test_validation(mem: Memory, kwargs, message):
    mem.remember("something to find")
    before = mem.store.count_log()
    with pytest.raises(ValidationError) as err:
        mem.recall("something", **kwargs)
    assert str(err.value) == message
    assert mem.store.count_log() == before  # rejected before any work: no access bump, no oplog row


def test_every_returned_insight_gets_one_access_and_an_oplog_row(mem: Memory):
    put(mem, "a", "alpha note", 0)
    put(mem, "b", "beta note", 1)
    r = mem.recall("alpha", limit=1)
    assert [h.id for h in r.results] == ["b"] or [h.id for h in r.results] == ["a"]
    got = r.results[0].id
    other = "b" if got == "a" else "a"
    ins = mem.store.get_insight(got)
    assert ins.access_count == 1 and ins.last_accessed_at is not None
    assert mem.store.get_insight(other).access_count == 0
    log = mem.store.read_log(1)[0]
    assert (log.operation, log.detail) == ("recall", "q=alpha hits=1")
    mem.recall("beta", basic=True)
    log = mem.store.read_log(1)[0]
    assert (log.operation, log.detail) == ("recall:basic", "q=beta hits=1")
    assert mem.store.get_insight("b").access_count == (2 if got == "b" else 1)


def test_readonly_recall_reads_without_bumping(mem: Memory, data_dir):
    put(mem, "a", "alpha note", 0)
    mem.close()
    with Memory(readonly=True) as ro:
        assert [h.id for h in ro.recall("alpha").results] == ["a"]
        assert ro.store.get_insight("a").access_count == 0
        assert ro.store.count_log() == 0


def test_threads_sharing_one_memory_get_the_same_answers(mem: Memory):
    from concurrent.futures import ThreadPoolExecutor

    tie_heavy_store(mem, 60)
    queries = ["why redis latency", "tell me about Kafka", "deploy cache budget", "graph memory"] * 4
    mem.recall("warm the memo")
    mem.remember("one more note about redis")  # a write: the memo is rebuilt by whichever thread comes first
    with Memory() as other:
        expected = {q: other.recall(q, limit=8).model_dump(mode="json") for q in set(queries)}
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: mem.recall(q, limit=8).model_dump(mode="json"), queries))
    assert got == [expected[q] for q in queries]


def test_threads_first_use_of_a_memory_opens_one_store(data_dir, monkeypatch: pytest.MonkeyPatch):
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from mnemon_core import memory as memory_module

    opened = []
    real = memory_module.open_store

    def slow_open(settings):
        opened.append(threading.get_ident())
        time.sleep(0.05)  # wide enough for every thread to arrive while the first one opens
        return real(settings)

    monkeypatch.setattr(memory_module, "open_store", slow_open)
    with Memory() as shared:
        with ThreadPoolExecutor(8) as pool:
            stores = list(pool.map(lambda _: shared.store, range(8)))
    assert len(opened) == 1 and all(s is stores[0] for s in stores)


def test_graph_version_ignores_access_bumps_but_not_graph_writes(mem: Memory):
    put(mem, "a", "alpha note", 0)
    store = mem.store
    v0 = store.graph_version()
    with Memory() as other:
        other.recall("alpha")  # another connection: access bump + oplog row, no graph change
        assert store.graph_version() == v0
        other.remember("beta note")  # a graph write elsewhere
    v1 = store.graph_version()
    assert v1 != v0
    mem.link("a", mem.store.find_by_content("beta note"), type="semantic")  # a graph write here
    assert store.graph_version() != v1


def test_the_recall_memo_is_released_with_its_store(data_dir):
    import gc
    import weakref

    from mnemon_core.graph.memo import _views

    mem = Memory()
    put(mem, "a", "alpha note", 0)
    mem.recall("alpha")
    ref = weakref.ref(mem.store)
    assert ref() in _views
    mem.close()
    gc.collect()
    assert ref() is None
