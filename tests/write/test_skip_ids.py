"""A skipped exact duplicate answers with the insight that already holds the text (issue 13, item 6), through
the library, the CLI, import and the MCP face, and its oplog row names that insight."""

from __future__ import annotations

import json
from pathlib import Path

from mnemon_core import Memory
from mnemon_core.faces.mcp import Face

TEXT = "Use Postgres for the billing service"


def test_cli_remember_of_existing_content_returns_the_existing_id(cli, data_dir: Path) -> None:
    first = cli("remember", TEXT, "--cat", "decision")
    assert first.code == 0, first.err
    again = cli("remember", TEXT, "--cat", "fact", "--imp", "5")
    assert (again.code, again.err) == (0, "")
    existing = first.json()["id"]
    assert again.json() == {**first.json(), "action": "skipped", "diff_suggestion": "DUPLICATE",
                            "replaced_id": existing}
    shown = cli("show", again.json()["id"])
    assert shown.code == 0, shown.err
    assert (shown.json()["id"], shown.json()["category"], shown.json()["importance"]) == (existing, "decision", 3)
    log = cli("log").out.splitlines()
    assert log[3].split()[1:] == ["diff-skip", existing[:8], "exact", "duplicate", "of", existing]


def test_cli_import_of_existing_content_names_the_existing_insight(cli, tmp_path: Path, data_dir: Path) -> None:
    existing = cli("remember", TEXT).json()["id"]
    draft = tmp_path / "memory_draft.json"
    draft.write_text(json.dumps({"schema_version": "1", "insights": [{"content": TEXT}]}), encoding="utf-8")
    r = cli("import", str(draft))
    assert r.code == 0, r.err
    assert r.json()["results"] == [{"index": 0, "id": existing, "content": TEXT, "action": "skipped"}]
    assert cli("show", existing).code == 0
    with Memory() as mem:
        skip = next(e for e in mem.log(limit=10) if e.operation == "import-skip")
        assert (skip.insight_id, skip.detail) == (existing, f"duplicate of {existing}")
        assert mem.status().total_insights == 1


async def test_mcp_remember_of_existing_content_returns_the_existing_id(mem: Memory) -> None:
    face = Face(mem)
    err, text = await face.call("remember", {"content": TEXT})
    assert not err, text
    added = json.loads(text)
    existing = added["id"]
    err, text = await face.call("remember", {"content": TEXT})
    assert not err, text
    assert json.loads(text) == {**added, "action": "skipped", "diff_suggestion": "DUPLICATE",
                                "replaced_id": existing}
    skip = mem.log(limit=5)[0]
    assert (skip.operation, skip.insight_id) == ("diff-skip", existing)
    err, text = await face.call("show", {"id": existing})
    assert not err and json.loads(text)["content"] == TEXT
