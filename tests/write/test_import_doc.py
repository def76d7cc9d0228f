"""docs/import.md, the draft format's reference, says what the code does (issue 13, item 11): its example
imports, its tables list every field of the models and the limits the validators enforce, its error line
and report are the ones the CLI prints, and `mnemon import --help` points at it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT
from mnemon_core.draft import DraftEdge, DraftInsight, ImportDraft, ImportResult
from mnemon_core.write import constants

DOC = (ROOT / "docs" / "import.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", DOC, re.S | re.M)


def section(title: str) -> str:
    """The text from a `#` heading to the next heading of any level."""
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#)", DOC + "\n#", re.S | re.M)
    assert m, title
    return m.group(1)


def table_keys(text: str) -> list[str]:
    return re.findall(r"^\| `([\w,` ]+)` \|", text, re.M)


def test_import_help_points_at_the_doc(cli) -> None:
    r = cli("import", "--help")
    assert r.code == 0
    assert "every field and limit: docs/import.md" in " ".join(r.out.split())


@pytest.mark.parametrize(("title", "model"), [("The draft", ImportDraft), ("An insight", DraftInsight),
                                               ("An edge", DraftEdge)])
def test_every_field_is_documented(title: str, model: type) -> None:
    assert table_keys(section(title)) == list(model.model_fields)


def test_the_limits_are_the_validators() -> None:
    text = section("An insight")
    for limit in (constants.MAX_CONTENT_BYTES, constants.MAX_TAGS, constants.MAX_TAG_BYTES, constants.MAX_ENTITIES,
                  constants.MAX_ENTITY_BYTES, constants.MAX_SOURCE_BYTES, constants.MAX_SESSION_BYTES):
        assert f"at most {limit}" in text, limit


def test_the_example_imports_and_the_report_is_the_clis(cli, tmp_path: Path, data_dir: Path) -> None:
    example = json.loads(next(code for lang, code in BLOCKS if lang == "json"))
    path = tmp_path / "memory_draft.json"
    path.write_text(json.dumps(example), encoding="utf-8")
    dry = cli("import", str(path), "--dry-run")
    assert (dry.code, dry.out) == (0, "Dry run: 2 insights, 1 explicit edges — validation passed.\n")
    assert "`Dry run: 2 insights, 1 explicit edges — validation passed.`" in DOC
    r = cli("import", str(path))
    assert r.code == 0, r.err
    out = r.json()
    documented = json.loads(re.sub(r'"[0-9a-f]{4}…"|"[^"]*…"', '"x"', [c for lang, c in BLOCKS if lang == "json"][1]))
    # `vectors_pending` only appears when a large import filled its vectors in behind (the table's last row).
    assert list(out) == list(documented) == [k for k in ImportResult.model_fields if k != "vectors_pending"]
    assert {k: out[k] for k in out if k != "results"} == {k: documented[k] for k in documented if k != "results"}
    assert [(x["index"], x["action"]) for x in out["results"]] == [(0, "added"), (1, "added")]
    assert [k.split("`, `") for k in table_keys(section("The report"))] == [
        ["imported"], ["updated"], ["skipped"], ["errors"], ["edges_inserted"], ["auto_pruned", "auto_pruned_ids"],
        ["results"], ["vectors_pending"]]


def test_the_error_line_is_the_clis(cli, tmp_path: Path, data_dir: Path) -> None:
    (line,) = [code for lang, code in BLOCKS if lang == "text"]
    draft = {"schema_version": "1", "insights": [{"content": f"note {i}"} for i in range(6)]}
    draft["insights"][3]["importance"] = 7
    draft["insights"][5]["tags"] = [f"t{i}" for i in range(21)]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(draft), encoding="utf-8")
    r = cli("import", str(path))
    assert (r.code, r.out, r.err) == (1, "", line)
    assert not (data_dir / "data" / "default" / "mnemon.db").exists()
