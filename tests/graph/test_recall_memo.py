"""The recall memo after this process's own writes (`graph/memo.py`, `store/journal.py`): it forgets only what
the write touched, and answers exactly as a fresh process (empty memo) does on the same store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemon_core import Memory
from mnemon_core.graph import graph_view, tally
from mnemon_core.store.journal import GraphJournal

WORDS = ["redis", "cache", "deploy", "latency", "queue", "budget", "review", "schema", "agent", "graph"]
NAMES = ["Redis", "Kafka", "Priya", "Lisbon"]
QUERIES = ["why redis latency", "tell me about Kafka", "deploy cache budget", "where does Priya live"]

text = st.lists(st.sampled_from(WORDS), min_size=2, max_size=5).map(" ".join)
ops = st.one_of(
    st.tuples(st.just("remember"), text, st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
              st.sampled_from(["user", "agent"]), st.booleans()),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("link"), st.integers(0, 50), st.integers(0, 50),
              st.sampled_from(["causal", "semantic", "supersedes", "entity"])),
    st.tuples(st.just("recall"), st.sampled_from(QUERIES)),
)


def apply(mem: Memory, op: tuple, ids: list[str]) -> None:
    if op[0] == "remember":
        _, content, entities, source, in_session = op
        r = mem.remember(content, entities=entities, source=source, session="chat" if in_session else None)
        if r.action != "skipped":
            ids.append(r.id)
    elif op[0] == "forget" and ids:
        mem.forget(ids.pop(op[1] % len(ids)))
    elif op[0] == "link" and len(ids) > 1:
        a, b = ids[op[1] % len(ids)], ids[op[2] % len(ids)]
        if a != b:
            mem.link(a, b, type=op[3], weight=0.8)
    elif op[0] == "recall":
        mem.recall(op[1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(ops, min_size=1, max_size=14))
def test_after_own_writes_the_memo_answers_as_a_fresh_process(tmp_path_factory: pytest.TempPathFactory,
                                                            script: list[tuple]) -> None:
    data_dir = tmp_path_factory.mktemp("memo")
    ids: list[str] = []
    with Memory(data_dir=data_dir, embedder=None) as mem:
        mem.settings.max_insights = 0
        for i in range(12):  # a store to start from, and a warm memo over it
            mem.remember(f"{WORDS[i % 10]} {WORDS[(3 * i) % 10]} note {i}", entities=[NAMES[i % 4]],
                         source="user" if i % 2 else "agent", session="chat")
        ids = [ins.id for ins in mem.store.iter_active()]
        for q in QUERIES:
            mem.recall(q)
        for op in script:
            apply(mem, op, ids)
            for q in QUERIES:
                with Memory(data_dir=data_dir, embedder=None, readonly=True) as fresh:  # no access bump
                    expected = fresh.recall(q, verbose=True, limit=8).model_dump(mode="json")
                assert mem.recall(q, verbose=True, limit=8).model_dump(mode="json") == expected, (op, q)


def test_a_remember_reloads_only_what_it_touched(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(embedder=None) as mem:
        for i in range(40):
            mem.remember(f"{WORDS[i % 10]} {WORDS[(7 * i) % 10]} item {i}", entities=[NAMES[i % 4]])
        view = graph_view(mem.store)
        view.preload()
        mem.recall("why redis latency")
        new = mem.remember("Priya moved the redis cache to Lisbon", entities=["Priya", "Lisbon"]).id
        touched = {new} | {row[1] for row in mem.store.adjacency([new])}
        asked: list[str] = []
        real = mem.store.adjacency
        monkeypatch.setattr(mem.store, "adjacency", lambda ids: asked.extend(ids) or real(ids))
        hits = mem.recall("where does Priya live", verbose=True).results
        assert new in [h.insight.id for h in hits]
        assert asked and set(asked) <= touched  # the other 40 insights' lists stayed in the memo
        assert view.size() >= 41


def test_a_write_by_another_connection_drops_the_memo(data_dir: Path) -> None:
    with Memory(embedder=None) as mem, Memory(embedder=None) as other:
        a = mem.remember("redis latency went up after the deploy").id
        mem.recall("redis latency")
        other.forget(a)
        store = mem.store
        view = graph_view(store)
        assert store.graph_changes(view._version, store.graph_version()) is None
        assert a not in [h.id for h in mem.recall("redis latency").results]


# ---------------------------------------------------------------- the journal alone


def test_the_journal_chains_own_commits_and_refuses_gaps() -> None:
    j = GraphJournal()
    j.begin(0)
    j.touch(["a"])
    j.commit(5, 1)  # counter 4 → 5, generation 0 → 1
    j.begin(1)
    j.touch(["b", "c"])
    j.commit(6, 3)
    assert j.changes((4, 0), (6, 3)) == {"a", "b", "c"}
    assert j.changes((5, 1), (6, 3)) == {"b", "c"}
    assert j.changes((4, 0), (5, 1)) == {"a"}
    assert j.changes((3, 0), (6, 3)) is None  # another process committed 3 → 4
    assert j.changes((4, 0), (7, 3)) is None  # ... or 6 → 7
    assert j.changes((5, 2), (6, 3)) is None  # a version read inside the open transaction
    j.begin(3)
    j.touch(None)  # unknown insights
    j.commit(7, 4)
    assert j.changes((6, 3), (7, 4)) is None and j.changes((4, 0), (7, 4)) is None
    j.begin(4)
    j.touch(["d"])
    j.abort()  # rolled back: the next begin starts at a generation no memo holds
    j.begin(5)
    j.touch(["e"])
    j.commit(8, 6)
    assert j.changes((7, 4), (8, 6)) is None and j.changes((7, 5), (8, 6)) == {"e"}
    assert j.changes(object(), (8, 6)) is None


@given(st.lists(st.lists(st.integers(0, 300), unique=True), max_size=6), st.integers(0, 2**32 - 1))
def test_tally_is_unique_with_counts_and_the_weighted_bincount(lists: list[list[int]], seed: int) -> None:
    """Both ways of counting (bins for long postings, a sort for short ones) give np.unique's numbers, and the
    weighted sums to the bit."""
    posts = [np.asarray(sorted(p), dtype=np.int64) for p in lists] or [np.zeros(0, dtype=np.int64)]
    rng = np.random.default_rng(seed)
    weights = [rng.random(p.size) for p in posts]
    values = np.concatenate(posts)
    want_nodes, inverse, want_counts = np.unique(values, return_inverse=True, return_counts=True)
    want_sums = np.bincount(inverse, weights=np.concatenate(weights), minlength=want_nodes.size)
    nodes, counts = tally(posts)
    assert nodes.tolist() == want_nodes.tolist() and counts.tolist() == want_counts.tolist()
    nodes, sums = tally(posts, weights)
    assert nodes.tolist() == want_nodes.tolist() and sums.tobytes() == want_sums.astype(np.float64).tobytes()

