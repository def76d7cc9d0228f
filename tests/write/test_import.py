"""`mnemon import` / `Memory.import_draft` (spec 003, reference §6): the spec's example draft, every rule of
validation (nothing written on any error), defaults, exact-duplicate skips, backdating, explicit edges, the
temporal backbone rebuild, EI, auto-prune, partial success, and the progress bar's quiet default."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import itertools
import json
import pickle
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mnemon_core import Memory, NotFoundError, ReadOnlyError, ValidationError
from mnemon_core.draft import DryRun, ImportDraft, ImportResult, load_draft
from mnemon_core.progress import progress_bar
from mnemon_core.write import importer

SPEC_DRAFT: dict[str, Any] = {
    "schema_version": "1",
    "source": "chat-export",
    "insights": [
        {
            "content": "选择了 Qdrant 而非 Milvus 作为向量搜索引擎，主要原因是其过滤查询性能更好。",
            "category": "decision",
            "importance": 5,
            "tags": ["architecture", "search", "vector-db"],
            "entities": ["Qdrant", "Milvus"],
            "source": "agent",
            "created_at": "2024-03-15T09:30:00Z",
        },
        {
            "content": "用户偏好简洁的 API 响应，不希望看到多余的解释文本。",
            "category": "preference",
            "importance": 4,
            "tags": ["ux", "api"],
        },
    ],
    "edges": [
        {
            "source_index": 0,
            "target_index": 1,
            "edge_type": "causal",
            "weight": 0.7,
            "reason": "向量引擎选型决策影响了 API 响应设计偏好",
        }
    ],
}
REASON = SPEC_DRAFT["edges"][0]["reason"]


def draft_of(*contents: str, **top: Any) -> dict[str, Any]:
    return {"schema_version": "1", "insights": [{"content": c} for c in contents], **top}


def write(tmp_path: Path, data: Any, name: str = "memory_draft.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return p


def db_counts(mem: Memory) -> tuple[int, int, int]:
    s = mem.store
    return s.count_active(), s.count_edges(), s.count_log()


# ---------------------------------------------------------------------------------------------------------------
# the spec's example


def test_spec_example_through_the_cli(cli, tmp_path: Path, data_dir: Path) -> None:
    path = write(tmp_path, SPEC_DRAFT)
    r = cli("import", str(path))
    assert r.code == 0, r.err
    assert r.err == ""  # not a terminal: no progress bar
    out = r.json()
    assert list(out) == ["imported", "updated", "skipped", "errors", "edges_inserted", "auto_pruned",
                         "auto_pruned_ids", "results"]
    ids = [row["id"] for row in out["results"]]
    assert out == {
        "imported": 2, "updated": 0, "skipped": 0, "errors": 0, "edges_inserted": 1, "auto_pruned": 0,
        "auto_pruned_ids": [],
        "results": [
            {"index": 0, "id": ids[0], "content": SPEC_DRAFT["insights"][0]["content"], "action": "added"},
            {"index": 1, "id": ids[1], "content": SPEC_DRAFT["insights"][1]["content"], "action": "added"},
        ],
    }
    mem = Memory()
    first, second = mem.store.get_insight(ids[0]), mem.store.get_insight(ids[1])
    assert first.category == "decision" and first.importance == 5
    assert first.tags == ["architecture", "search", "vector-db"]
    assert first.entities[:2] == ["Qdrant", "Milvus"]  # provided first, then merged with extraction
    assert first.source == "agent"  # its own source beats the draft's
    assert first.created_at == first.updated_at == "2024-03-15T09:30:00Z"  # backdated
    assert second.source == "chat-export" and second.category == "preference" and second.importance == 4
    assert second.created_at == second.stored_at  # no created_at: import time
    causal = [e for e in mem.store.edges_of(ids) if e.edge_type == "causal"]
    assert [(e.source_id, e.target_id, e.weight, e.metadata) for e in causal] == [
        (ids[0], ids[1], 0.7, {"reason": REASON})  # one direction only
    ]
    log = mem.log()
    assert [(e.operation, e.insight_id) for e in log] == [("import", ids[1]), ("import", ids[0])]
    assert log[1].detail == SPEC_DRAFT["insights"][0]["content"]
    mem.close()


def test_library_forms_are_equivalent(mem: Memory, tmp_path: Path) -> None:
    path = write(tmp_path, SPEC_DRAFT)
    texts = json.dumps(SPEC_DRAFT, ensure_ascii=False)
    for form in (path, str(path), texts, copy.deepcopy(SPEC_DRAFT), ImportDraft.model_validate(SPEC_DRAFT)):
        d = load_draft(form)
        assert d == load_draft(SPEC_DRAFT)
    r = mem.import_draft(texts)
    assert isinstance(r, ImportResult) and r.imported == 2
    assert mem.import_draft(ImportDraft.model_validate(SPEC_DRAFT)).skipped == 2


def test_stdin_draft(cli, data_dir: Path) -> None:
    r = cli("import", "-", input=json.dumps(draft_of("read from standard input")))
    assert r.code == 0, r.err
    assert r.json()["imported"] == 1


def test_dry_run_writes_nothing(cli, tmp_path: Path, data_dir: Path) -> None:
    path = write(tmp_path, SPEC_DRAFT)
    r = cli("import", "--dry-run", str(path))
    assert (r.code, r.out, r.err) == (0, "Dry run: 2 insights, 1 explicit edges — validation passed.\n", "")
    assert not (data_dir / "data" / "default" / "mnemon.db").exists()


def test_dry_run_works_readonly_but_import_does_not(tmp_path: Path, data_dir: Path) -> None:
    Memory().remember("make the store exist")
    ro = Memory(readonly=True)
    assert ro.import_draft(SPEC_DRAFT, dry_run=True).startswith("Dry run: 2 insights")
    with pytest.raises(ReadOnlyError, match="^import is unavailable with --readonly: database writes are disabled$"):
        ro.import_draft(SPEC_DRAFT)
    ro.close()


def test_dry_run_answer_is_the_line_with_its_counts(data_dir: Path) -> None:
    d = Memory().import_draft(SPEC_DRAFT, dry_run=True)
    assert isinstance(d, DryRun) and (d.insights, d.edges) == (2, 1)
    assert d == "Dry run: 2 insights, 1 explicit edges — validation passed."
    for again in (copy.copy(d), pickle.loads(pickle.dumps(d))):
        assert (again, again.insights, again.edges) == (d, 2, 1)
    assert not (data_dir / "data" / "default" / "mnemon.db").exists()  # no store opened


def test_store_flag(cli, tmp_path: Path, data_dir: Path) -> None:
    path = write(tmp_path, SPEC_DRAFT)
    r = cli("import", "--store", "project-alpha", str(path))
    assert r.code == 0, r.err
    alpha = Memory(store="project-alpha")
    assert alpha.status().total_insights == 2
    alpha.close()
    assert not (data_dir / "data" / "default" / "mnemon.db").exists()


# ---------------------------------------------------------------------------------------------------------------
# validation: every malformed draft is rejected whole, with index and field, and nothing is written


def bad(mutate) -> dict[str, Any]:
    d = copy.deepcopy(SPEC_DRAFT)
    mutate(d)
    return d


def ins(i: int, **fields: Any):
    def mutate(d: dict[str, Any]) -> None:
        for k, v in fields.items():
            if v is ...:
                d["insights"][i].pop(k, None)
            else:
                d["insights"][i][k] = v

    return mutate


def edge(**fields: Any):
    def mutate(d: dict[str, Any]) -> None:
        for k, v in fields.items():
            if v is ...:
                d["edges"][0].pop(k, None)
            else:
                d["edges"][0][k] = v

    return mutate


def top(**fields: Any):
    def mutate(d: dict[str, Any]) -> None:
        for k, v in fields.items():
            if v is ...:
                d.pop(k, None)
            else:
                d[k] = v

    return mutate


MALFORMED = [
    (top(schema_version="2"), 'schema_version: must be "1", got "2"'),
    (top(schema_version=1), 'schema_version: must be "1", got 1'),
    (top(schema_version=...), "schema_version: required"),
    (top(insights=[]), "insights: empty draft: at least one insight is required"),
    (top(insights=...), "insights: required"),
    (top(insights={"content": "x"}), "insights: must be an array"),
    (top(source=7), "source: source must be a string"),
    (top(source="s" * 101), "source: source too long (101 bytes, max 100)"),
    (top(edges={"source_index": 0}), "edges: must be an array"),
    (lambda d: d["insights"].append("just text"), "insights[2]: must be an object"),
    (ins(1, content=...), "insights[1].content: required"),
    (ins(0, content="   "), "insights[0].content: content must not be empty"),
    (ins(0, content=42), "insights[0].content: content must be a string"),
    (ins(1, content="x" * 8001),
     "insights[1].content: content too long (8001 bytes, max 8000); consider chunking into multiple remember calls"),
    (ins(1, content="你" * 2667),  # 8001 bytes of UTF-8 in 2667 characters
     "insights[1].content: content too long (8001 bytes, max 8000); consider chunking into multiple remember calls"),
    (ins(0, category="opinion"),
     'insights[0].category: invalid category "opinion"; valid: preference, decision, fact, insight, context, general'),
    (ins(0, importance=6), "insights[0].importance: importance must be 1-5, got 6"),
    (ins(1, importance=-1), "insights[1].importance: importance must be 1-5, got -1"),
    (ins(0, importance="5"), 'insights[0].importance: importance must be an integer, got "5"'),
    (ins(0, importance=2.5), "insights[0].importance: importance must be an integer, got 2.5"),
    (ins(0, importance=True), "insights[0].importance: importance must be an integer, got true"),
    (ins(1, tags=[f"t{i}" for i in range(21)]), "insights[1].tags: too many tags (21, max 20)"),
    (ins(0, tags=["x" * 101]), f"insights[0].tags: tag too long (101 bytes, max 100): {'x' * 50}"),
    (ins(0, tags="a,b"), "insights[0].tags: tags must be an array of strings"),
    (ins(0, tags=["ok", 3]), "insights[0].tags: tags must be an array of strings"),
    (ins(0, entities=[f"E{i}" for i in range(51)]), "insights[0].entities: too many entities (51, max 50)"),
    (ins(0, entities=["e" * 201]), f"insights[0].entities: entity too long (201 bytes, max 200): {'e' * 50}"),
    (ins(1, source="s" * 101), "insights[1].source: source too long (101 bytes, max 100)"),
    (ins(0, created_at="yesterday"), 'insights[0].created_at: invalid RFC 3339 timestamp "yesterday"'),
    *[
        (ins(0, created_at=bad_time), f'insights[0].created_at: invalid RFC 3339 timestamp "{bad_time}"')
        for bad_time in ("2024-03-15T09:30:00", "2024-03-15", "2024-13-15T09:30:00Z", "2024-03-15 09:30:00Z")
    ],
    (ins(0, created_at="20240315T093000Z"), 'insights[0].created_at: invalid RFC 3339 timestamp "20240315T093000Z"'),
    (ins(0, created_at=1710495000), "insights[0].created_at: invalid RFC 3339 timestamp 1710495000"),
    (edge(source_index=5), "edges[0].source_index: index 5 out of range (the draft has 2 insights)"),
    (edge(target_index=2), "edges[0].target_index: index 2 out of range (the draft has 2 insights)"),
    (edge(target_index=-1), "edges[0].target_index: index must not be negative, got -1"),
    (edge(source_index="0"), 'edges[0].source_index: index must be an integer, got "0"'),
    (edge(source_index=...), "edges[0].source_index: required"),
    (edge(target_index=0), "edges[0].target_index: must differ from source_index (0)"),
    (edge(target_index=0, edge_type="supersedes"), "edges[0].target_index: must differ from source_index (0)"),
    (edge(edge_type="related"),
     'edges[0].edge_type: invalid edge type "related"; valid: temporal, semantic, causal, entity, supersedes'),
    (edge(edge_type=...), "edges[0].edge_type: required"),
    (edge(weight=1.5), "edges[0].weight: weight must be between 0.0 and 1.0, got 1.50"),
    (edge(weight=-0.1), "edges[0].weight: weight must be between 0.0 and 1.0, got -0.10"),
    (edge(weight="heavy"), 'edges[0].weight: weight must be a number, got "heavy"'),
    (edge(reason=5), "edges[0].reason: reason must be a string"),
]


@pytest.mark.parametrize(("mutate", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_malformed_drafts_write_nothing(mem: Memory, mutate, message: str) -> None:
    mem.remember("already here before the import")
    before = db_counts(mem)
    with pytest.raises(ValidationError) as e:
        mem.import_draft(bad(mutate))
    assert str(e.value) == message
    assert db_counts(mem) == before


def test_all_problems_are_listed_in_document_order(mem: Memory) -> None:
    d = bad(ins(0, importance=9))
    d["insights"][1]["tags"] = [f"t{i}" for i in range(21)]
    d["insights"].append({"content": "ok", "created_at": "soon"})
    with pytest.raises(ValidationError) as e:
        mem.import_draft(d)
    assert str(e.value) == (
        "insights[0].importance: importance must be 1-5, got 9; insights[1].tags: too many tags (21, max 20); "
        'insights[2].created_at: invalid RFC 3339 timestamp "soon"'
    )
    assert e.value.field == "insights[0].importance"


def test_many_problems_are_capped(mem: Memory) -> None:
    d = draft_of(*[""] * 13)
    with pytest.raises(ValidationError) as e:
        mem.import_draft(d)
    assert str(e.value).count("content must not be empty") == 10
    assert str(e.value).endswith("; … and 3 more")


def test_every_edge_problem_is_listed(mem: Memory) -> None:
    d = draft_of("a", "b", edges=[
        {"source_index": 0, "target_index": 0, "edge_type": "causal"},
        {"source_index": 3, "target_index": 1, "edge_type": "causal"},
    ])
    with pytest.raises(ValidationError) as e:
        mem.import_draft(d)
    assert str(e.value) == (
        "edges[0].target_index: must differ from source_index (0); "
        "edges[1].source_index: index 3 out of range (the draft has 2 insights)"
    )


def test_every_bad_edge_is_listed_whatever_else_is_wrong(mem: Memory) -> None:
    """Issue 37, item 7: an edge with a bad field hid the index problems of the others (they were checked only
    once every field was valid); now each edge is checked on its own, up to the ten problems shown."""
    d = draft_of("a", "b", edges=[
        {"source_index": 0, "target_index": 1, "edge_type": "related"},
        {"source_index": 0, "target_index": 9, "edge_type": "causal"},
        {"source_index": 1, "target_index": 1, "edge_type": "causal", "weight": 2},
    ])
    d["insights"][1]["importance"] = 9
    with pytest.raises(ValidationError) as e:
        mem.import_draft(d)
    assert str(e.value) == (
        "insights[1].importance: importance must be 1-5, got 9; "
        'edges[0].edge_type: invalid edge type "related"; valid: temporal, semantic, causal, entity, supersedes; '
        "edges[1].target_index: index 9 out of range (the draft has 2 insights); "
        "edges[2].target_index: must differ from source_index (1); "
        "edges[2].weight: weight must be between 0.0 and 1.0, got 2.00"
    )
    d = draft_of("a", edges=[{"source_index": 0, "target_index": k, "edge_type": "causal"} for k in range(1, 14)])
    with pytest.raises(ValidationError) as e:
        mem.import_draft(d)
    assert str(e.value).count("out of range") == 10 and str(e.value).endswith("; … and 3 more")


def test_cli_rejects_with_one_line_and_writes_nothing(cli, tmp_path: Path, data_dir: Path) -> None:
    path = write(tmp_path, bad(ins(3 - 2, tags=[f"t{i}" for i in range(21)])))
    r = cli("import", str(path))
    assert (r.code, r.out) == (1, "")
    assert r.err == "Error: insights[1].tags: too many tags (21, max 20)\n"
    assert not (data_dir / "data" / "default" / "mnemon.db").exists()
    r = cli("import", "--dry-run", str(path))
    assert (r.code, r.out) == (1, "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json",
         "invalid draft JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ("[1, 2]", "invalid draft: must be a JSON object"),
        ('"text"', "invalid draft: must be a JSON object"),
    ],
)
def test_unreadable_drafts(mem: Memory, tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "d.json"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError) as e:
        mem.import_draft(p)
    assert str(e.value) == message


def test_missing_file(mem: Memory, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="^draft file not found: .*nope.json$"):
        mem.import_draft(tmp_path / "nope.json")


def test_bom_and_unknown_keys_are_tolerated(mem: Memory, tmp_path: Path) -> None:
    d = draft_of("an extracted note", generator="gpt")
    d["insights"][0]["confidence"] = 0.9
    p = tmp_path / "bom.json"
    p.write_text("\ufeff" + json.dumps(d), encoding="utf-8")
    assert mem.import_draft(p).imported == 1


# ---------------------------------------------------------------------------------------------------------------
# defaults


def test_defaults(mem: Memory) -> None:
    d = {
        "schema_version": "1",
        "insights": [
            {"content": "zero importance means three", "importance": 0, "category": ""},
            {"content": "no importance at all", "source": ""},
            {"content": "offset time", "created_at": "2024-03-15T17:30:00.123+08:00"},
        ],
        "edges": [
            {"source_index": 0, "target_index": 1, "edge_type": "semantic", "weight": 0},
            {"source_index": 1, "target_index": 2, "edge_type": "Entity"},
        ],
    }
    r = mem.import_draft(d)
    ids = [x.id for x in r.results]
    rows = mem.store.get_insights(ids)
    a, b, c = (rows[i] for i in ids)
    assert (a.importance, a.category, a.source) == (3, "general", "import")
    assert (b.importance, b.source) == (3, "import")
    assert c.created_at == "2024-03-15T09:30:00Z"
    explicit = {(e.source_id, e.target_id): e for e in mem.store.edges_among(ids) if e.metadata.get("entity") is None
                and e.edge_type in ("semantic", "entity")}
    assert explicit[(ids[0], ids[1])].weight == 0.5 and explicit[(ids[0], ids[1])].metadata == {}
    assert explicit[(ids[1], ids[2])].weight == 0.5 and explicit[(ids[1], ids[2])].edge_type == "entity"
    assert (ids[1], ids[0]) not in explicit and (ids[2], ids[1]) not in explicit


def test_draft_source_applies_and_insight_source_wins(mem: Memory) -> None:
    d = draft_of("from the batch", source="notes")
    d["insights"].append({"content": "from a person", "source": "alice"})
    r = mem.import_draft(d)
    rows = mem.store.get_insights([x.id for x in r.results])
    assert [rows[x.id].source for x in r.results] == ["notes", "alice"]


def test_supersedes_edge_is_one_way(mem: Memory) -> None:
    d = draft_of("the limit is 10 requests per second", "the limit is 50 requests per second", edges=[
        {"source_index": 1, "target_index": 0, "edge_type": "supersedes", "weight": 1.0},
    ])
    r = mem.import_draft(d)
    old, new = (x.id for x in r.results)
    sup = [(e.source_id, e.target_id) for e in mem.store.edges_of([old]) if e.edge_type == "supersedes"]
    assert sup == [(new, old)]


# ---------------------------------------------------------------------------------------------------------------
# duplicates


def test_duplicates_skip_across_imports_and_inside_one(mem: Memory) -> None:
    first = mem.import_draft(draft_of("alpha fact", "beta fact", "gamma fact", source="s"))
    a, b, _ = (x.id for x in first.results)
    second = mem.import_draft({
        "schema_version": "1", "source": "s",
        "insights": [{"content": "beta fact"}, {"content": "delta fact"}, {"content": "delta fact"},
                     {"content": "alpha fact", "importance": 5}],
        "edges": [{"source_index": 0, "target_index": 2, "edge_type": "causal", "reason": "r"},
                  {"source_index": 1, "target_index": 2, "edge_type": "causal"}],
    })
    d = second.results[1].id
    assert [(x.index, x.id, x.action) for x in second.results] == [
        (0, b, "skipped"), (1, d, "added"), (2, d, "skipped"), (3, a, "skipped"),
    ]
    assert (second.imported, second.skipped, second.errors) == (1, 3, 0)
    # index 2 is a repeat of index 1: that edge would be a self-loop and is dropped
    assert second.edges_inserted == 1
    causal = [(e.source_id, e.target_id, e.metadata) for e in mem.store.edges_of([b]) if e.edge_type == "causal"
              and e.metadata.get("reason")]
    assert causal == [(b, d, {"reason": "r"})]
    assert mem.store.count_active() == 4
    assert mem.store.get_insight(a).importance == 3  # a skipped repeat changes nothing
    skips = [e for e in mem.log(limit=50) if e.operation == "import-skip"]
    assert sorted(e.detail for e in skips) == sorted([f"duplicate of {a}", f"duplicate of {b}", f"duplicate of {d}"])
    assert sorted(e.insight_id for e in skips) == sorted([a, b, d])  # each row names the insight it repeats


def test_remembered_content_is_skipped_by_import(mem: Memory) -> None:
    existing = mem.remember("we deploy on Fridays", source="user").id
    r = mem.import_draft(draft_of("we deploy on Fridays"))
    assert [(x.id, x.action) for x in r.results] == [(existing, "skipped")]


def test_edges_inserted_counts_rows_not_draft_lines(cli, tmp_path: Path, data_dir: Path) -> None:
    same = {"source_index": 0, "target_index": 1, "edge_type": "causal", "reason": "r"}
    other = {"source_index": 1, "target_index": 0, "edge_type": "causal", "weight": 0.9}
    d = draft_of("the disk filled up", "the nightly job failed", source="s",
                 edges=[same, same, {**same, "weight": 0.8}, other])
    r = cli("import", str(write(tmp_path, d)))
    assert r.code == 0, r.err
    ids = [x["id"] for x in r.json()["results"]]
    assert r.json()["edges_inserted"] == 2  # three repeats of one edge are one row, plus the reverse edge
    with Memory() as mem:
        causal = sorted((e.source_id, e.target_id, e.weight, e.metadata) for e in mem.store.edges_of(ids)
                        if e.edge_type == "causal")
        assert causal == sorted([(ids[0], ids[1], 0.8, {"reason": "r"}), (ids[1], ids[0], 0.9, {})])  # last wins
    again = cli("import", str(write(tmp_path, d)))
    assert again.code == 0, again.err
    assert (again.json()["skipped"], again.json()["edges_inserted"]) == (2, 0)  # every row was already there


def test_no_diff_inserts_repeats(mem: Memory) -> None:
    mem.import_draft(draft_of("same words"))
    r = mem.import_draft(draft_of("same words", "same words"), no_diff=True)
    assert [x.action for x in r.results] == ["added", "added"]
    assert len({x.id for x in r.results}) == 2
    assert mem.store.count_active() == 3


# ---------------------------------------------------------------------------------------------------------------
# graph: temporal backbone, builders, EI, prune


def temporal(mem: Memory, sub_type: str) -> set[tuple[str, str, str]]:
    return {(e.source_id, e.target_id, e.metadata["direction"]) for e in mem.store.iter_edges()
            if e.edge_type == "temporal" and e.metadata.get("sub_type") == sub_type}


def backbone(mem: Memory) -> set[tuple[str, str, str]]:
    return temporal(mem, "backbone")


def steps(*ids: str) -> set[tuple[str, str, str]]:
    """precedes / succeeds both ways along a chain of ids."""
    out = set()
    for a, b in itertools.pairwise(ids):
        out |= {(a, b, "precedes"), (b, a, "succeeds")}
    return out


def test_backbone_rebuilt_through_imported_items(mem: Memory) -> None:
    at = lambda h: f"2024-05-01T{h:02d}:00:00Z"
    first = mem.import_draft({"schema_version": "1", "source": "log", "insights": [
        {"content": "ten o'clock standup", "created_at": at(10), "session": "day"},
        {"content": "noon lunch", "created_at": at(12), "session": "day"},
        {"content": "other source note", "source": "elsewhere", "created_at": at(11), "session": "day"},
    ]})
    e10, e12, other = (x.id for x in first.results)
    assert backbone(mem) == {(e10, e12, "precedes"), (e12, e10, "succeeds")}
    # One session's order is a conversation too; e10 → e12 is the backbone already (kept as it is).
    assert temporal(mem, "conversation") == steps(e12, other)
    # Two imported items land between the existing ones (out of order in the draft), one after them.
    second = mem.import_draft({"schema_version": "1", "source": "log", "insights": [
        {"content": "half past eleven review", "created_at": "2024-05-01T11:30:00Z", "session": "day"},
        {"content": "eleven o'clock design", "created_at": at(11), "session": "day"},
        {"content": "one o'clock call", "created_at": at(13), "session": "day"},
    ]})
    n1130, n11, n13 = (x.id for x in second.results)
    chain = [e10, n11, n1130, e12, n13]
    expected = set()
    for a, b in itertools.pairwise(chain):
        expected |= {(a, b, "precedes"), (b, a, "succeeds")}
    assert backbone(mem) == expected  # e10 ⇄ e12 removed; no proximity edges; `other` untouched
    # The draft's steps n1130 → n11 → n13: the first pair is the backbone as well (which it keeps), the second
    # only a conversation step (the backbone between them runs through e12).
    assert temporal(mem, "conversation") == steps(e12, other) | steps(n11, n13)
    assert {e.metadata["sub_type"] for e in mem.store.iter_edges() if e.edge_type == "temporal"} == {
        "backbone", "conversation"}
    assert {(e.source_id, e.target_id) for e in mem.store.edges_of([other]) if e.edge_type == "temporal"} == {
        (e12, other), (other, e12)}


def test_proximity_edge_between_neighbours_survives(mem: Memory) -> None:
    a = mem.remember("first remembered note", source="s").id
    b = mem.remember("second remembered note", source="s").id
    prox = {(e.source_id, e.target_id) for e in mem.store.iter_edges() if e.metadata.get("sub_type") == "proximity"}
    r = mem.import_draft(draft_of("imported much later", source="s"))
    new = r.results[0].id
    bb = backbone(mem)
    assert (b, new, "precedes") in bb and (new, b, "succeeds") in bb  # chained after the latest one
    assert (a, b, "precedes") in bb  # existing neighbours not around the run keep their link
    assert prox == {(e.source_id, e.target_id) for e in mem.store.iter_edges()
                    if e.metadata.get("sub_type") == "proximity"}


def test_entity_and_causal_builders_run(mem: Memory) -> None:
    r = mem.import_draft({"schema_version": "1", "source": "s", "insights": [
        {"content": "Kafka consumers lag on the event bus", "entities": ["Kafka"]},
        {"content": "Kafka consumers lag because the event bus is slow", "entities": ["Kafka"]},
    ]})
    a, b = (x.id for x in r.results)
    types = {(e.source_id, e.target_id, e.edge_type) for e in mem.store.edges_of([a])}
    assert {(a, b, "entity"), (b, a, "entity")} <= types
    assert (a, b, "causal") in types  # the newer text holds the keyword: old → new


def test_ei_uses_backdated_time(mem: Memory) -> None:
    r = mem.import_draft({"schema_version": "1", "insights": [
        {"content": "an old core decision", "importance": 5, "created_at": "2020-01-01T00:00:00Z"},
        {"content": "a fresh core decision", "importance": 5},
    ]})
    old, fresh = (mem.store.get_insight(x.id) for x in r.results)
    assert old.effective_importance < 1e-6  # years idle: halved every 30 days
    assert fresh.effective_importance == pytest.approx(1.0 * 1.2, rel=1e-3)  # imp 5, two backbone edges


def test_auto_prune_runs_once_without_exclusions(mem: Memory) -> None:
    mem.settings.max_insights = 3
    mem.settings.prune_min_age_s = 0
    r = mem.import_draft({"schema_version": "1", "insights": [
        {"content": f"minor note {i}", "importance": 1, "created_at": f"202{i}-01-01T00:00:00Z"} for i in range(5)
    ] + [{"content": "kept: important", "importance": 5, "created_at": "2019-01-01T00:00:00Z"}]})
    ids = [x.id for x in r.results]
    assert r.auto_pruned == 3 and sorted(r.auto_pruned_ids) == sorted(ids[:3])  # oldest, lowest EI
    assert mem.store.count_active() == 3
    assert {e.insight_id for e in mem.log(limit=50) if e.operation == "prune"} == set(ids[:3])


def test_prune_grace_protects_imported_items(mem: Memory) -> None:
    mem.settings.max_insights = 1  # default 24 h grace from stored_at: nothing imported now may go
    r = mem.import_draft(draft_of("one", "two", "three"))
    assert (r.auto_pruned, r.auto_pruned_ids) == (0, [])


def test_rows_written_through_mcp_say_so_as_a_remembers_do(mem: Memory) -> None:
    """An import through MCP tags its oplog rows `origin=mcp` and keeps only a fingerprint of the content, exactly
    as a remember through MCP does (issue 15: the importer used to write them untagged)."""
    m = Memory(settings=dataclasses.replace(mem.settings, origin="mcp"))
    kept = m.remember("already remembered").id
    r = m.import_draft(draft_of("imported through mcp", "already remembered"))
    new = r.results[0].id

    def tagged(content: str) -> str:
        return f"origin=mcp bytes={len(content.encode())} sha256={hashlib.sha256(content.encode()).hexdigest()[:16]}"

    rows = [(e.operation, e.insight_id, e.detail) for e in m.log(limit=3)][::-1]
    assert rows == [("remember", kept, tagged("already remembered")),
                    ("import", new, tagged("imported through mcp")),
                    ("import-skip", kept, f"origin=mcp duplicate of {kept}")]


# ---------------------------------------------------------------------------------------------------------------
# batches, partial success


def test_batches_commit_separately(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "IMPORT_BATCH", 3)
    commits = []
    depth = [0]
    real = mem.store.transaction

    @contextmanager
    def counting() -> Iterator[None]:
        if depth[0] == 0:
            commits.append(1)
        depth[0] += 1
        try:
            with real():
                yield
        finally:
            depth[0] -= 1

    monkeypatch.setattr(mem.store, "transaction", counting)
    r = mem.import_draft(draft_of(*[f"Redis note number {i}" for i in range(8)], source="s"))
    assert r.imported == 8
    assert len(commits) == 3 + 1  # three batches, then the final graph transaction
    chain = sorted(mem.store.iter_active(), key=lambda x: x.created_at)
    assert len(backbone(mem)) == 2 * (len(chain) - 1)


def test_partial_success_counts_errors(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    store = mem.store
    real = store.insert_insight

    def flaky(ins, tokens):
        if ins.content == "this one fails":
            raise RuntimeError("disk on fire")
        real(ins, tokens)

    monkeypatch.setattr(store, "insert_insight", flaky)
    d = draft_of("kept before", "this one fails", "kept after", source="s", edges=[
        {"source_index": 0, "target_index": 1, "edge_type": "causal"},
        {"source_index": 0, "target_index": 2, "edge_type": "causal"},
    ])
    r = mem.import_draft(d)
    assert (r.imported, r.skipped, r.errors, r.edges_inserted) == (2, 0, 1, 1)
    bad_row = r.model_dump(mode="json")["results"][1]
    assert bad_row == {"index": 1, "id": "", "content": "this one fails", "action": "error",
                       "error": "RuntimeError: disk on fire"}
    assert "error" not in r.model_dump(mode="json")["results"][0]
    assert store.count_active() == 2
    assert len([e for e in mem.log(limit=50) if e.operation == "import"]) == 2  # the failed one left no row


# ---------------------------------------------------------------------------------------------------------------
# progress bar


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("rich")
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    with progress_bar(10, "importing") as advance:
        advance(10)
    assert quiet.getvalue() == ""
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with progress_bar(10, "importing") as advance:
        advance(5)
        advance(5)
    assert "importing" in tty.getvalue()
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with progress_bar(10, "extracting") as advance:
        advance(0, "chunk 1/2: 5.9 tokens/s")
        advance(10)
    assert "chunk 1/2: 5.9 tokens/s" in tty.getvalue()


def test_progress_bar_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich.progress", None)  # import fails as if the extra were absent
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with progress_bar(10, "importing") as advance:
        advance(10)
    assert tty.getvalue() == ""


def test_schema_is_described() -> None:
    schema = ImportDraft.model_json_schema()
    assert schema["required"] == ["schema_version", "insights"]
    item = schema["$defs"]["DraftInsight"]["properties"]
    assert set(item) == {"content", "category", "importance", "tags", "entities", "source", "created_at", "session"}
    assert all(p.get("description") for p in item.values())


def test_no_sqlite_rows_half_written(mem: Memory, store_backend: str) -> None:
    if store_backend != "sqlite":
        pytest.skip("SQLite side tables")
    mem.import_draft(draft_of(*[f"row {i} about Docker" for i in range(20)]))
    db = sqlite3.connect(mem.store.location)
    n_ins = db.execute("SELECT count(*) FROM insights").fetchone()[0]
    n_fts = db.execute("SELECT count(*) FROM insights_fts").fetchone()[0]
    assert n_ins == n_fts == 20
    db.close()


def test_batch_view_gives_the_stores_answers(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a batch the builders' lookups are answered from memory; with one insight per batch every
    lookup goes to the store. Both must build exactly the same graph."""
    import random

    rng = random.Random(3)
    ents = ["Redis", "Kafka", "openclaw", "Athena", "Postgres"]
    words = ["because", "cache", "latency", "queue", "so that", "deploy", "index", "therefore", "worker"]
    insights = []
    for i in range(60):
        e = rng.sample(ents, k=rng.randint(0, 2))
        mention = rng.choice(ents) if rng.random() < 0.5 else ""  # known-entity path: a bare word
        text = f"{' '.join(rng.choices(words, k=6))} {mention} item {i}"
        hour = rng.choice([1, 2, 2, 3, 5, 8])  # many equal times: ties broken by insertion order
        insights.append({"content": text, "entities": e, "source": rng.choice(["a", "b"]),
                         "created_at": f"2024-01-0{rng.randint(1, 3)}T0{hour}:00:00Z"})
    # The known-entity path: a bare word becomes an entity only once some stored insight holds it.
    insights[1:1] = [
        {"content": "the openclaw agent restarted", "source": "a"},
        {"content": "we configured openclaw hooks", "entities": ["openclaw"], "source": "b"},
        {"content": "openclaw needs a newer runtime", "source": "a"},
    ]
    draft = {"schema_version": "1", "insights": insights}

    def graph(batch: int, store: str) -> set[tuple]:
        monkeypatch.setattr(importer, "IMPORT_BATCH", batch)
        m = Memory(store=store)
        m.remember("Athena runs the nightly Redis cache warmup", entities=["Athena", "Redis"], source="a")
        r = m.import_draft(draft)
        content = {i.id: i.content for i in m.store.iter_active()}
        out = {(content[e.source_id], content[e.target_id], str(e.edge_type), json.dumps(e.metadata, sort_keys=True))
               for e in m.store.iter_edges()}
        ents_of = {x.content: tuple(m.store.get_insight(x.id).entities) for x in r.results}
        m.close()
        return out | {("entities", k, v) for k, v in ents_of.items()}

    one_by_one = graph(1, "single")
    batched = graph(500, "batched")
    assert len(one_by_one) > 300
    assert batched == one_by_one


async def test_async_import_matches_sync(mem: Memory) -> None:
    from mnemon_core import AsyncMemory

    am = AsyncMemory(memory=mem)
    assert await am.import_draft(SPEC_DRAFT, dry_run=True) == (
        "Dry run: 2 insights, 1 explicit edges — validation passed.")
    r = await am.import_draft(SPEC_DRAFT)
    again = mem.import_draft(SPEC_DRAFT)
    assert [(x.index, x.id) for x in r.results] == [(x.index, x.id) for x in again.results]
    assert (r.imported, again.skipped) == (2, 2)


def test_batch_view_answers_the_ei_refresh_as_the_store_does(mem: Memory) -> None:
    """The batch's EI refresh asks about insights the view inserted: their rows and edge counts come from the
    view's memory, and equal what the store holds once the held edges are sent. Any other id goes to the store."""
    from mnemon_core.models import Insight
    from mnemon_core.text import tokens_of
    from mnemon_core.write.pipeline import write_insight

    old = mem.remember("Redis cache warmup runs nightly because latency", entities=["Redis"], source="a").id
    store = mem.store
    t = "2024-01-01T00:00:00Z"
    with store.transaction():
        view = importer.BatchView(store)
        ids = []
        for k in range(6):
            ins = Insight(id=f"n{k}", content=f"Redis latency item {k} because cache", tags=["ops"],
                          entities=["Redis"], source="a", created_at=t, updated_at=t, stored_at=t)
            tokens = tokens_of(ins.content, ins.tags, ins.entities)
            write_insight(view, ins, tokens, None, None, {}, temporal=False, now=t, ei=False)
            view.inserted(ins, tokens)
            ids.append(ins.id)
        counts, rows = view.edge_counts(ids), view.get_insights(ids)
        view.flush()
        assert counts == store.edge_counts(ids)
        assert min(counts.values()) > 0
        assert rows == store.get_insights(ids)
        mixed = [old, *ids]
        assert view.edge_counts(mixed) == store.edge_counts(mixed)
        assert view.get_insights(mixed) == store.get_insights(mixed)
