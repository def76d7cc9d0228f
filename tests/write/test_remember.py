"""The write pipeline through `Memory.remember` (spec 5.1, reference §3)."""

from __future__ import annotations

import pytest

from mnemon_core import Memory, ValidationError
from mnemon_core.errors import ReadOnlyError


def db_exists(mem: Memory) -> bool:
    return mem.settings.db_path.exists()


# ---------------------------------------------------------------- validation (reference §3.1, §1.3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": "x" * 8001}, "content too long (8001 bytes, max 8000); consider chunking into multiple remember calls"),
        ({"content": "记" * 2700}, "content too long (8100 bytes, max 8000); consider chunking into multiple remember calls"),
        ({"content": ""}, "content must not be empty"),
        ({"content": "   \n\t"}, "content must not be empty"),
        ({"category": "narrative"}, 'invalid category "narrative"; valid: preference, decision, fact, insight, context, general'),
        ({"importance": 0}, "importance must be 1-5, got 0"),
        ({"importance": 6}, "importance must be 1-5, got 6"),
        ({"tags": ",".join(f"t{i}" for i in range(21))}, "too many tags (21, max 20)"),
        ({"tags": ["a" * 101]}, "tag too long (101 bytes, max 100): " + "a" * 50),
        ({"entities": [f"E{i}" for i in range(51)]}, "too many entities (51, max 50)"),
        ({"entities": ["é" * 101]}, "entity too long (202 bytes, max 200): " + "é" * 50),
        ({"entity_mode": "magic"}, 'invalid entity mode "magic"; valid: merge, provided, auto'),
    ],
)
def test_validation_errors_write_nothing(mem: Memory, kwargs: dict, message: str) -> None:
    args = {"content": "a valid memory", **kwargs}
    content = args.pop("content")
    with pytest.raises(ValidationError) as err:
        mem.remember(content, **args)
    assert str(err.value) == message
    assert not db_exists(mem), "a rejected remember must not create the store"


def test_limits_are_inclusive(mem: Memory) -> None:
    r = mem.remember("x" * 8000, tags=[f"t{i}" for i in range(20)], entities=[f"E{i}" for i in range(50)])
    assert r.action == "added"
    assert len(r.tags) == 20


def test_tags_and_entities_split_trim_and_drop_empties(mem: Memory) -> None:
    r = mem.remember("notes about deployment", tags=" a, ,b ,", entities="Foo,, Bar ", entity_mode="provided")
    assert r.tags == ["a", "b"]
    assert r.entities == ["Foo", "Bar"]


def test_readonly_refuses_before_any_work(data_dir) -> None:
    ro = Memory(readonly=True)
    with pytest.raises(ReadOnlyError, match="remember is unavailable with --readonly: database writes are disabled"):
        ro.remember("anything")
    assert not ro.settings.db_path.exists()


# ---------------------------------------------------------------- exact duplicates (spec 5.3)


def test_exact_duplicate_is_skipped_with_existing_id(mem: Memory) -> None:
    first = mem.remember("Use Postgres for the billing service", category="decision")
    again = mem.remember("Use Postgres for the billing service", category="fact", importance=5)
    assert again.action == "skipped"
    assert again.diff_suggestion == "DUPLICATE"
    assert again.id == again.replaced_id == first.id  # the insight that holds the text, not a new id
    # The same keys as an added result, and `replaced_id` (docs/departures.md): the holder's category and
    # importance, zeros and empty lists for what the call did not do.
    assert list(again.model_dump(mode="json")) == [*first.model_dump(mode="json"), "replaced_id"]
    dumped = again.model_dump(mode="json")
    assert (dumped["category"], dumped["importance"], dumped["created_at"]) == ("decision", 3, first.created_at)
    assert dumped["edges_created"] == {"temporal": 0, "entity": 0, "causal": 0, "semantic": 0}
    assert (dumped["semantic_candidates"], dumped["causal_candidates"], dumped["auto_pruned_ids"]) == ([], [], [])
    assert (dumped["embedded"], dumped["auto_pruned"]) == (False, 0)
    assert mem.status().total_insights == 1
    log = mem.log()
    assert [(e.operation, e.insight_id) for e in log] == [("diff-skip", first.id), ("remember", first.id)]
    assert log[0].detail == f"exact duplicate of {first.id}"
    assert mem.show(again.id).content == "Use Postgres for the billing service"


def test_duplicate_check_is_byte_exact(mem: Memory) -> None:
    mem.remember("Use Postgres for the billing service")
    r = mem.remember("Use Postgres for the billing service.")
    assert r.action == "added"  # near-identical content is kept; the label is advice only
    assert r.diff_suggestion in {"DUPLICATE", "UPDATE"}
    r2 = mem.remember("use postgres for the billing service")
    assert r2.action == "added"
    assert mem.status().total_insights == 3


def test_no_diff_inserts_exact_repeats(mem: Memory) -> None:
    a = mem.remember("same words")
    b = mem.remember("same words", no_diff=True)
    assert b.action == "added" and b.diff_suggestion == "ADD" and b.id != a.id
    assert mem.status().total_insights == 2


def test_forgotten_content_can_be_remembered_again(mem: Memory) -> None:
    a = mem.remember("temporary note")
    mem.forget(a.id)
    b = mem.remember("temporary note")
    assert b.action == "added"


def test_advisory_labels(mem: Memory) -> None:
    mem.remember("The deploy script uses rsync to copy the build to the web servers")
    r = mem.remember("The deploy script no longer uses rsync to copy the build to the web servers")
    assert (r.action, r.diff_suggestion) == ("added", "CONFLICT")
    r = mem.remember("Lunch options near the office include a ramen place")
    assert (r.action, r.diff_suggestion) == ("added", "ADD")


# ---------------------------------------------------------------- the four graphs (reference §3.6)


def test_temporal_edges_for_a_known_sequence(mem: Memory) -> None:
    a = mem.remember("alpha note one", source="agent")
    b = mem.remember("beta note two", source="agent")
    c = mem.remember("gamma note three", source="user")
    d = mem.remember("delta note four", source="agent")
    assert a.edges_created.temporal == 0
    assert b.edges_created.temporal == 2  # backbone to a (both ways); a is the backbone, so no proximity
    assert c.edges_created.temporal == 4  # no same-source predecessor; proximity to a and b
    assert d.edges_created.temporal == 6  # backbone to b; proximity to c and a
    edges = {(e.source_id, e.target_id): e for e in mem.store.edges_of([d.id]) if e.edge_type == "temporal"}
    assert edges[(b.id, d.id)].metadata == {"sub_type": "backbone", "direction": "precedes"}
    assert edges[(d.id, b.id)].metadata == {"sub_type": "backbone", "direction": "succeeds"}
    prox = edges[(d.id, c.id)]
    assert prox.metadata["sub_type"] == "proximity"
    assert prox.metadata["hours_diff"] == "0.00"
    assert prox.weight == pytest.approx(1.0, abs=0.01)


def test_proximity_is_capped_at_ten_neighbours(mem: Memory) -> None:
    for i in range(12):
        mem.remember(f"note number {i}", source=f"s{i}")
    r = mem.remember("the newest note", source="fresh")
    assert r.edges_created.temporal == 20


def test_entity_edges_both_ways_capped_per_entity(mem: Memory) -> None:
    ids = [mem.remember(f"Qdrant benchmark run {i}", entities=["Qdrant"], source=f"s{i}").id for i in range(7)]
    r = mem.remember("Qdrant deployment config", entities=["Qdrant"], source="other")
    assert r.edges_created.entity == 10  # 5 most recent sharers × 2 directions
    linked = {e.target_id for e in mem.store.edges_of([r.id]) if e.edge_type == "entity" and e.source_id == r.id}
    assert linked == set(ids[-5:])
    e = next(e for e in mem.store.edges_of([r.id]) if e.edge_type == "entity")
    assert e.weight == 1.0 and e.metadata == {"entity": "Qdrant"}


def test_entity_extraction_examples(mem: Memory) -> None:
    r = mem.remember("HttpServer in ./cmd/root.go calls the API via https://example.com/v1 for @alice using React")
    assert r.entities == ["HttpServer", "API", "./cmd/root.go", "https://example.com/v1", "alice", "React"]
    r = mem.remember("Athena is our codename", entities=["Athena"], entity_mode="provided")
    assert r.entities == ["Athena"]
    r = mem.remember("Athena handles the nightly batch", entity_mode="auto")
    assert r.entities == ["Athena"]  # the known-entity path admits what the store already knows


def test_causal_edge_direction_and_metadata(mem: Memory) -> None:
    old = mem.remember("The team lacks Redis experience for the storage layer", source="agent")
    new = mem.remember("We chose SQLite for the storage layer because the team lacks Redis experience", source="agent")
    assert new.edges_created.causal == 1
    causal = [e for e in mem.store.edges_of([new.id]) if e.edge_type == "causal"]
    assert len(causal) == 1
    e = causal[0]
    assert (e.source_id, e.target_id) == (old.id, new.id)  # the side with the keyword is the effect
    assert e.metadata["sub_type"] == "causes"
    assert e.weight == pytest.approx(float(e.metadata["overlap"]), abs=1e-4)
    assert e.weight >= 0.15


def test_causal_reverse_direction_when_only_old_has_keyword(mem: Memory) -> None:
    old = mem.remember("Caching was added because the search page was slow", source="agent")
    new = mem.remember("The search page is slow on mobile", source="agent")
    assert new.edges_created.causal == 1
    e = next(e for e in mem.store.edges_of([new.id]) if e.edge_type == "causal")
    assert (e.source_id, e.target_id) == (new.id, old.id)


def test_no_causal_edge_without_keyword_or_overlap(mem: Memory) -> None:
    mem.remember("The search page is slow on mobile", source="agent")
    r = mem.remember("The search page is slow on desktop", source="agent")
    assert r.edges_created.causal == 0  # overlap but no causal keyword
    r = mem.remember("Therefore lunch is at noon", source="agent")
    assert r.edges_created.causal == 0  # keyword but no overlap


def test_no_semantic_edges_without_vectors(mem: Memory) -> None:
    mem.remember("the cache layer uses redis")
    r = mem.remember("the cache layer uses redis clusters")
    assert r.edges_created.semantic == 0 and r.embedded is False


# ---------------------------------------------------------------- candidates (reference §3.7)


def test_token_fallback_semantic_candidates(mem: Memory) -> None:
    a = mem.remember("deploy pipeline runs on github actions")
    mem.remember("completely unrelated lunch menu")
    r = mem.remember("the deploy pipeline is slow")
    assert [c.id for c in r.semantic_candidates] == [a.id]
    c = r.semantic_candidates[0]
    assert c.auto_linked is False
    assert c.cosine == pytest.approx(2 / 3, abs=1e-4)  # {deploy, pipeline} / min(3, 5)


def test_causal_candidates_walk_two_hops(mem: Memory) -> None:
    a = mem.remember("alpha", source="x")
    b = mem.remember("beta", source="x")
    r = mem.remember("gamma", source="x")
    hops = {c.id: c.hop for c in r.causal_candidates}
    assert hops[b.id] == 1
    assert hops[a.id] in (1, 2)
    assert all(c.suggested_sub_type == "causes" for c in r.causal_candidates)


def test_candidates_do_not_depend_on_the_ids(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stores built from one draft get other random ids; the walk's 10 nodes and the 5 token-overlap
    candidates (their scores tie) must be the same memories: the judge offers them, and two runs of one export
    must be offered the same pairs."""
    import dataclasses
    import random
    import uuid

    from mnemon_core.config import Settings

    people = ["Priya", "Marco", "Lena", "Tomas"]
    draft = {"schema_version": "1", "insights": [
        {"content": f"{people[i % 4]} noted item {i} about the {('queue', 'cache', 'launch')[i % 3]} plan",
         "source": people[i % 4], "created_at": f"2026-0{1 + i // 10}-01T10:00:00Z", "session": f"s{i // 10}"}
        for i in range(30)]}

    def walks(seed: int) -> list[tuple[list[str], list[tuple[str, int]]]]:
        rng = random.Random(seed)
        monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=rng.getrandbits(128), version=4))
        settings = Settings.resolve(data_dir=tmp_path / str(seed), embedder="none")
        with Memory(settings=dataclasses.replace(settings, max_insights=0)) as m:
            ids = [r.id for r in m.import_draft(draft, no_diff=True).results]
            lists = [m.candidates(i) for i in ids]
            return [([c.content for c in sem], [(c.content, c.hop) for c in causal]) for sem, causal in lists]

    first, second = walks(1), walks(2)
    assert sum(len(w) == 10 for _, w in first) >= 20  # the cap cuts most walks: the order decides who is in
    assert sum(len(s) == 5 for s, _ in first) >= 20
    assert first == second


# ---------------------------------------------------------------- effective importance and prune (reference §3.8)


@pytest.mark.parametrize(("imp", "ei"), [(5, 1.0), (4, 0.8), (3, 0.5), (2, 0.3), (1, 0.15)])
def test_fresh_effective_importance(mem: Memory, imp: int, ei: float) -> None:
    assert mem.remember(f"first memory at importance {imp}", importance=imp).effective_importance == ei


def test_edge_factor_raises_effective_importance(mem: Memory) -> None:
    mem.remember("one", source="a")
    r = mem.remember("two", source="a", importance=5)
    # two backbone edges: 1.0 × (1 + 0.1 × 2)
    assert r.effective_importance == pytest.approx(1.2)


def test_auto_prune_reports_ids_and_oplog(monkeypatch: pytest.MonkeyPatch, data_dir) -> None:
    monkeypatch.setenv("MNEMON_MAX_INSIGHTS", "3")
    monkeypatch.setenv("MNEMON_AUTO_PRUNE_MIN_AGE", "0")
    mem = Memory()
    keep = mem.remember("important decision", importance=5, source="s0")
    low = [mem.remember(f"low value note {i}", importance=1, source=f"s{i}") for i in range(2)]
    r = mem.remember("newest note", importance=1, source="s9")
    assert r.auto_pruned == 1
    assert r.auto_pruned_ids == [low[0].id]  # lowest EI, oldest first; never the new one or the immune one
    assert mem.status().total_insights == 3
    prune = [e for e in mem.log() if e.operation == "prune"]
    assert [e.insight_id for e in prune] == [low[0].id]
    assert "over capacity (active=4, max=3)" in prune[0].detail
    assert mem.store.get_insight(keep.id) is not None


def test_auto_prune_grace_period_protects_new_insights(monkeypatch: pytest.MonkeyPatch, data_dir) -> None:
    monkeypatch.setenv("MNEMON_MAX_INSIGHTS", "2")
    mem = Memory()  # default grace: 24h
    for i in range(4):
        r = mem.remember(f"note {i}", importance=1)
    assert r.auto_pruned == 0
    assert mem.status().total_insights == 4


def test_auto_prune_disabled_by_zero(monkeypatch: pytest.MonkeyPatch, data_dir) -> None:
    monkeypatch.setenv("MNEMON_MAX_INSIGHTS", "0")
    monkeypatch.setenv("MNEMON_AUTO_PRUNE_MIN_AGE", "0")
    mem = Memory()
    for i in range(3):
        r = mem.remember(f"note {i}", importance=1)
    assert r.auto_pruned == 0


def test_result_is_the_spec_json_shape(mem: Memory) -> None:
    r = mem.remember("Chose Qdrant because of filtering speed", category="decision", importance=5, entities=["Qdrant"])
    keys = list(r.model_dump(mode="json"))
    assert keys == [
        "id", "content", "category", "importance", "tags", "entities", "action", "diff_suggestion", "created_at",
        "edges_created", "semantic_candidates", "causal_candidates", "embedded", "effective_importance",
        "auto_pruned", "auto_pruned_ids",
    ]
    assert list(r.model_dump()["edges_created"]) == ["temporal", "entity", "causal", "semantic"]
