"""Answers an agent can trust (issue 22 §3) and what the specification's own cases still caught (issue 26 §2),
black-box through the CLI where the behaviour is a CLI one: matched_via and confidence of a WHY answer, an
automatic causal edge that may not reorder one, confidence as coverage of the query, `no_match` beside the
spec's hint (and no access counted for it), `search` on stemmed terms, conversation edges only inside a
session, the store-name and empty-draft messages, the quickstart's word on cause-first order, no import cycle."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, run_cli
from mnemon_core import Memory
from mnemon_core.recall.evidence import coverage, key_weight, label, query_keys
from test_boundary import main_in_process


def remember(*args: str) -> str:
    r = run_cli("remember", *args)
    assert r.code == 0, r.err
    return r.json()["id"]


def recall(*args: str) -> dict:
    r = run_cli("recall", *args)
    assert r.code == 0 and not r.err, r.err
    return r.json()


def access_count(id_: str) -> int:
    r = run_cli("--readonly", "show", id_)  # readonly: showing it counts nothing
    assert r.code == 0, r.err
    return r.json()["access_count"]


# ---------------------------------------------------------------- WHY answers


def test_a_why_answer_through_a_stated_causal_link_says_causal_and_is_not_low() -> None:
    decision = remember("We dropped Redux because the boilerplate slowed every feature", "--cat", "decision")
    cause = remember("Action creators and reducers took two days per screen", "--cat", "fact")
    assert run_cli("link", cause, decision, "--type", "causal", "--weight", "0.9").code == 0
    out = recall("why did we drop Redux?")
    by_id = {h["id"]: h for h in out["results"]}
    # It shares no word with the question: the link the user stated is what makes it the answer.
    assert [h["id"] for h in out["results"]][:2] == [cause, decision]  # cause first
    assert by_id[cause]["matched_via"] == "causal"
    assert by_id[cause]["confidence"] == by_id[decision]["confidence"] == "high"


def test_an_automatic_causal_edge_does_not_reorder_a_why_answer() -> None:
    flags = remember("Marco decided to use Unleash feature flags for the rollout", "--cat", "decision")
    redux = remember("We dropped Redux because the boilerplate slowed every feature rollout", "--cat", "decision")
    related = run_cli("related", redux, "--edge", "causal").json()
    assert [h["id"] for h in related] == [flags]  # the builder linked them: "because" + shared words
    out = recall("why did we drop Redux?")
    assert out["results"][0]["id"] == redux and out["results"][0]["confidence"] == "high"
    assert {h["id"]: h for h in out["results"]}[flags]["matched_via"] != "causal"


# ---------------------------------------------------------------- confidence, no_match, the hint


FACTS = ["We chose Postgres for the main database", "The user prefers dark mode", "Deploys happen on Fridays"]


def test_a_question_about_nothing_stored_is_low_and_no_match_and_counts_no_access() -> None:
    ids = [remember(text) for text in FACTS]
    out = recall("why did we pick Qdrant as our vector database?")  # one fact shares "database", none Qdrant
    assert len(out["results"]) == 3 and {h["confidence"] for h in out["results"]} == {"low"}
    assert out["no_match"] is True and out["hint"] == "sparse_results"  # 3 < 10 // 2: the spec's hint stays
    assert [access_count(i) for i in ids] == [0, 0, 0]  # filler, not used
    brief = run_cli("recall", "why Qdrant?", "--brief").json()
    assert brief["no_match"] is True and brief["hint"] == "sparse_results"
    found = recall("why Postgres for the database?")
    assert found["results"][0]["id"] == ids[0] and found["results"][0]["confidence"] == "high"
    assert "no_match" not in found
    assert access_count(ids[0]) == 1


def test_sparse_results_for_one_unrelated_result() -> None:
    remember("The office plant needs water on Mondays")
    out = recall("quantum chromodynamics lattice")
    assert len(out["results"]) == 1 and out["hint"] == "sparse_results" and out["no_match"] is True
    assert recall("quantum chromodynamics lattice", "--recipe", "spec")["hint"] == "sparse_results"


def test_sparse_results_for_four_results_of_limit_ten() -> None:
    for text in [*FACTS, "Alice owns the billing service"]:
        remember(text)
    out = recall("quantum chromodynamics lattice", "--limit", "10")
    assert len(out["results"]) == 4 and out["hint"] == "sparse_results"
    assert "hint" not in recall("quantum chromodynamics lattice", "--limit", "8")  # 4 = 8 // 2: not sparse
    verbose = recall("quantum chromodynamics lattice", "--verbose")
    assert verbose["meta"]["hint"] == "sparse_results" and verbose["meta"]["no_match"] is True


def test_coverage_weighs_rare_keys_and_leaves_out_question_words() -> None:
    assert key_weight(0) == 1.0 and key_weight(1) > key_weight(10) > key_weight(1000) > 0
    posts = [np.array([0, 1, 2]), np.array([], dtype=np.int64), np.array([1])]
    keys = query_keys(["whi", "databas", "qdrant"], posts, ["qdrant"], [np.array([], dtype=np.int64)])
    assert [w for _, w in keys] == [key_weight(0), key_weight(1)]  # "whi" left out; the entity is the term
    got = coverage(np.array([0, 1, 5]), query_keys(["databas", "pick", "sqlite"], posts, [], []))
    total = key_weight(3) + key_weight(0) + key_weight(1)
    assert got.tolist() == pytest.approx([key_weight(3) / total, (key_weight(3) + key_weight(1)) / total, 0.0])
    assert [label(0.6, 0.0), label(0.3, 0.0), label(0.29, 0.5), label(0.29, 0.49)] == [
        "high", "medium", "medium", "low"]


# ---------------------------------------------------------------- search


def test_search_finds_the_stemmed_terms_recall_finds() -> None:
    plural = remember("Database migrations run before every deploy")
    remember("Lunch is at noon")
    hits = run_cli("search", "migration").json()
    assert [h["id"] for h in hits] == [plural] and hits[0]["score"] == 1.0


def test_search_ranks_by_bm25_on_both_stores(mem: Memory) -> None:
    once = mem.remember("The migration to Postgres finished in March").id
    twice = mem.remember("Migrations, migrations: every migration is reviewed").id
    mem.remember("Lunch is at noon")
    hits = mem.search("migrating")
    assert [h.id for h in hits] == [twice, once] and hits[0].score == 1.0 and 0 < hits[1].score < 1
    assert [h.id for h in mem.search("migrating", limit=1)] == [twice]


# ---------------------------------------------------------------- conversation edges


def _import(draft: dict, tmp_path: Path) -> None:
    path = tmp_path / "draft.json"
    path.write_text(json.dumps(draft), encoding="utf-8")
    r = run_cli("import", str(path))
    assert r.code == 0, r.err


def test_items_without_a_session_are_no_conversation(tmp_path: Path) -> None:
    _import({"schema_version": "1", "insights": [
        {"content": "We chose Postgres for the main database", "source": "alice"},
        {"content": "The office plant needs water on Mondays", "source": "bob"},
    ], "edges": [{"source_index": 0, "target_index": 1, "edge_type": "semantic"}]}, tmp_path)
    assert run_cli("status").json()["edge_count"] == 1  # the explicit edge alone


def test_items_of_one_session_are_a_conversation(tmp_path: Path) -> None:
    _import({"schema_version": "1", "insights": [
        {"content": "Which database did we pick?", "source": "alice", "session": "chat-1"},
        {"content": "Postgres, for its JSON support", "source": "bob", "session": "chat-1"},
        {"content": "Unrelated note of another chat", "source": "carol", "session": "chat-2"},
    ]}, tmp_path)
    assert run_cli("status").json()["edge_count"] == 2  # question ⇄ answer, nothing to chat-2


# ---------------------------------------------------------------- the specification's messages


@pytest.mark.parametrize("name, message", [
    ("", 'invalid store name "": must match [a-zA-Z0-9][a-zA-Z0-9_-]*'),
    ("../x", 'invalid store name "../x": must match [a-zA-Z0-9][a-zA-Z0-9_-]*'),
    ("a" * 300, f'invalid store name "{"a" * 50}…": 300 characters, max 255'),
])
def test_every_bad_store_name_is_an_invalid_store_name(name: str, message: str, data_dir: Path) -> None:
    r = run_cli("store", "create", name)
    assert (r.code, r.out, r.err) == (1, "", f"Error: {message}\n")
    assert not (data_dir / "data").exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=12), st.text(alphabet="ab", min_size=256, max_size=300)))
def test_store_create_names_every_bad_name_the_same_way(capsys: pytest.CaptureFixture[str], data_dir: Path,
                                                         name: str) -> None:
    from mnemon_core.config import MAX_STORE_NAME, STORE_NAME_RE

    if STORE_NAME_RE.fullmatch(name) and len(name) <= MAX_STORE_NAME:
        return
    code, out, err = main_in_process(capsys, "store", "create", "--", name)  # "--": a name may start with "-"
    assert (code, out) == (1, "") and err.startswith('Error: invalid store name "') and err.count("\n") == 1
    assert not (data_dir / "data").exists()


def test_an_empty_draft_is_rejected_as_empty(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text('{"schema_version": "1", "insights": []}', encoding="utf-8")
    r = run_cli("import", str(path))
    assert (r.code, r.out) == (1, "") and "empty" in r.err and r.err.count("\n") == 1
    assert not (data_dir / "data" / "default" / "mnemon.db").exists() or run_cli(
        "status").json()["total_insights"] == 0


# ---------------------------------------------------------------- what a newcomer reads


def test_the_quickstart_says_why_a_cause_comes_before_a_higher_score(tmp_path: Path) -> None:
    env = {**os.environ, "MNEMON_DATA_DIR": str(tmp_path / "data"), "MNEMON_EMBEDDER": "none",
           "MNEMON_DAEMON": "off", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(ROOT / "cookbook" / "quickstart.py")], capture_output=True,
                         text=True, env=env, timeout=120, check=True).stdout
    block = out.split("recall 'why did we pick SQLite?'\n", 1)[1].split("\n\n", 1)[0].splitlines()
    scores = [float(line.split()[0]) for line in block if line.startswith("  0") or line.startswith("  1")]
    assert scores[0] < max(scores)  # the cause leads with a lower score ...
    assert "[WHY/causal]" in block[0]
    note = " ".join(line.strip() for line in block if not line.strip()[0].isdigit())
    assert "the cause is listed before what it explains" in note  # ... and the output says why


def _import_graph(package: Path) -> dict[str, set[str]]:
    """Module → the package modules it imports, at the top or inside a function."""
    mods = {}
    for f in package.rglob("*.py"):
        parts = f.relative_to(package.parent).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        base = m.split(".") if f.name == "__init__.py" else m.split(".")[:-1]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
                elif (node.module or "").startswith(package.name):
                    target = node.module or ""
                else:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    graph[m].add(sub if sub in mods else target)
    return {m: {t for t in ts if t in mods and t != m} for m, ts in graph.items()}


def test_no_module_of_the_package_imports_itself_back() -> None:
    """No import cycle, deferred imports included (issue 26 §3: config ↔ errors, recall.output ↔ recall.results,
    cli ↔ client were the last)."""
    graph = _import_graph(ROOT / "mnemon_core")
    cycles = []
    for start in graph:  # a path from start back to start
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m == start:
                cycles.append(start)
                break
            if m not in seen:
                seen.add(m)
                todo.extend(graph[m])
    assert cycles == []
