"""`mnemon recall` black-box: the real entry point in a subprocess (reference §1.2, §4.5)."""

from __future__ import annotations

import json

import pytest

from mnemon_core import Memory

# The whole file runs twice: in-process and through the resident engine (output byte for byte the same).
pytestmark = pytest.mark.usefixtures("cli_both_ways")


@pytest.fixture
def seeded(cli, data_dir):
    """Three memories written through the CLI: a cause, the decision it caused (same source, so the causal
    builder links them), and an unrelated preference from another source."""
    ids = {}
    for key, args in {
        "cause": ["The team lacks Redis experience", "--cat", "fact"],
        "decision": ["We chose SQLite because the team lacks Redis experience", "--cat", "decision", "--imp", "5"],
        "pref": ["Prefers dark mode in every editor", "--cat", "preference", "--source", "agent"],
    }.items():
        r = cli("remember", *args)
        assert r.code == 0, r.err
        ids[key] = r.json()["id"]
    return ids


def test_default_output_is_the_library_result(cli, seeded):
    r = cli("recall", "why", "SQLite?")
    assert r.code == 0, r.err
    data = r.json()
    assert r.out.startswith('{\n  "results": [')  # pretty-printed, 2-space indent
    with Memory() as mem:
        assert mem.recall("why SQLite?").model_dump(mode="json") == data
    assert [h["intent"] for h in data["results"]] == ["WHY"] * 3
    assert data["hint"] == "sparse_results"  # 3 results < 10 // 2
    assert list(data["results"][0]) == [
        "id", "content", "category", "importance", "intent", "matched_via", "confidence", "score",
    ]
    # The automatic causal edge (cause → decision, keyword + overlap) orders nothing (its measured precision:
    # benchmarks/causal_precision.py): the decision, the best match, stays first; a stated link would order it.
    order = [h["id"] for h in data["results"]]
    assert order[0] == seeded["decision"] and data["results"][0]["confidence"] == "high"


def test_verbose_shows_signals_and_meta_with_the_intent_source(cli, seeded):
    auto = cli("recall", "SQLite", "--verbose").json()
    assert auto["meta"]["intent"] == "GENERAL" and auto["meta"]["intent_source"] == "auto"
    forced = cli("recall", "SQLite", "--verbose", "--intent", "when").json()
    assert forced["meta"]["intent"] == "WHEN" and forced["meta"]["intent_source"] == "override"
    assert forced["meta"]["anchor_count"] == 3 and forced["meta"]["traversed"] == 3
    top = forced["results"][0]
    assert list(top) == ["insight", "score", "intent", "via", "signals"]
    assert top["insight"]["id"] == seeded["decision"]
    assert set(top["signals"]) == {"keyword", "entity", "similarity", "graph"}


def test_brief_is_one_compact_line_with_excerpts(cli, seeded):
    r = cli("recall", "SQLite", "--brief", "--excerpt-chars", "12")
    assert r.code == 0, r.err
    assert r.out.count("\n") == 1 and r.out.startswith('{"results":[{"id":')
    data = json.loads(r.out)
    assert data["detail_command"] == "mnemon show <id>"
    assert data["results"][0] == {
        "id": seeded["decision"], "excerpt": "We chose SQ…", "category": "decision",
        "score": data["results"][0]["score"], "confidence": data["results"][0]["confidence"],
    }


def test_basic_returns_full_insights_with_filters(cli, seeded):
    rows = cli("recall", "Redis", "--basic").json()
    assert [r["id"] for r in rows] == [seeded["decision"], seeded["cause"]]  # importance 5 first
    assert set(rows[0]) >= {"id", "content", "category", "importance", "tags", "entities", "source",
                            "access_count", "created_at", "updated_at"}
    assert [r["id"] for r in cli("recall", "Redis", "--basic", "--cat", "fact").json()] == [seeded["cause"]]
    assert cli("recall", "Redis", "--basic", "--source", "agent").json() == []
    assert cli("recall", "nothing-like-this", "--basic").json() == []


def test_cat_and_source_filter_smart_recall(cli, seeded):
    data = cli("recall", "editor", "--cat", "preference").json()
    assert [h["id"] for h in data["results"]] == [seeded["pref"]]
    data = cli("recall", "Redis", "--source", "agent", "--verbose").json()
    assert [h["insight"]["id"] for h in data["results"]] == [seeded["pref"]]  # recency only: the scope's one
    assert data["meta"]["traversed"] == 1
    data = cli("recall", "Redis", "--cat", "fact", "--verbose").json()
    assert [h["insight"]["id"] for h in data["results"]] == [seeded["cause"]]


def test_limit_and_access_bump(cli, seeded):
    data = cli("recall", "SQLite", "--limit", "1").json()
    assert len(data["results"]) == 1 and "hint" not in data  # 1 is not below 1 // 2
    shown = cli("show", data["results"][0]["id"]).json()
    assert shown["access_count"] == 2  # one from recall, one from show itself
    log = cli("log", "--limit", "2").out
    assert "recall" in log and "q=SQLite hits=1" in log


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--limit", "0"], "Error: --limit must be at least 1, got 0"),
        (["--brief", "--verbose"], "Error: --brief and --verbose cannot be used together"),
        (["--brief", "--excerpt-chars", "0"], "Error: --excerpt-chars must be greater than 0"),
        (["--intent", "how"], 'Error: unknown intent "how"; valid: WHY, WHEN, ENTITY, GENERAL'),
    ],
)
def test_errors_are_one_line_and_change_nothing(cli, seeded, args, message):
    before = cli("log", "--limit", "1").out
    r = cli("recall", "SQLite", *args)
    assert r.code == 1 and r.err.strip() == message and r.out == ""
    assert cli("log", "--limit", "1").out == before


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
@pytest.mark.parametrize("flags", [[], ["--basic"], ["--brief"]])
def test_an_empty_query_is_an_error_as_for_remember(cli, seeded, query, flags):
    """Issue 37, item 7: `recall ""` returned results marked "medium"; an empty query is a mistake."""
    before = cli("log", "--limit", "1").out
    r = cli("recall", query, *flags)
    assert (r.code, r.out, r.err) == (1, "", "Error: query must not be empty\n")
    assert cli("log", "--limit", "1").out == before
    with Memory() as mem, pytest.raises(ValueError, match="^query must not be empty$"):
        mem.retrieve(query)


def test_readonly_recall(cli, seeded):
    r = cli("--readonly", "recall", "SQLite")
    assert r.code == 0, r.err
    assert r.json()["results"][0]["id"] == seeded["decision"]
    assert cli("show", seeded["decision"]).json()["access_count"] == 1  # only show's own bump
