"""`mnemon receipt`: the original's receipt shape (reference §1.2), and no content or id of a memory in the clear."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from mnemon_core.faces import cli
from mnemon_core.models import OplogEntry
from mnemon_core.faces.receipt import build

HEX64 = re.compile(r"[0-9a-f]{64}")
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def skeleton(receipt: dict) -> dict:
    """The receipt without its hashes: what must not depend on any id or detail."""
    return {**receipt, "events": [{k: v for k, v in e.items() if not k.endswith("_hash")} for e in receipt["events"]]}


def test_receipt_of_real_operations(data_dir: Path) -> None:
    contents = ["Alice prefers tea over coffee", "The deploy key lives in vault path ops/deploy"]
    ids = []
    for c in contents:
        r = run_cli("remember", c, "--cat", "fact")
        assert r.code == 0, r.err
        ids.append(r.json()["id"])
    assert run_cli("recall", "who prefers tea").code == 0
    assert run_cli("gc", "--keep", ids[0]).code == 0  # its oplog detail is the content
    assert run_cli("forget", ids[1]).code == 0
    oplog_before = run_cli("status").json()["oplog_count"]

    r = run_cli("receipt", "--limit", "3")
    assert r.code == 0 and r.err == ""
    doc = r.json()
    assert list(doc) == ["schema", "generated_at", "store", "limit", "count", "privacy", "events"]
    assert doc["schema"] == "mnemon.memory.receipt.v1" and RFC3339.fullmatch(doc["generated_at"])
    assert (doc["store"], doc["limit"], doc["count"]) == ("default", 3, 3)
    assert doc["privacy"] == {
        "raw_detail_included": False, "hash_algorithm": "sha256",
        "note": "Raw memory contents, recall queries, paths, and operation details are omitted; only hashes "
                "and operation metadata are emitted.",
    }
    assert [e["operation"] for e in doc["events"]] == ["forget", "gc_keep", "recall"]  # newest first
    forget, keep, recall = doc["events"]
    assert list(keep) == ["event_name", "operation", "created_at", "insight_id_hash", "detail_hash", "detail_present"]
    assert keep["insight_id_hash"] == sha(ids[0]) and keep["detail_hash"] == sha(contents[0])
    assert forget["insight_id_hash"] == sha(ids[1])
    assert "insight_id_hash" not in recall and recall["detail_present"] is True  # a recall names no insight
    assert all(e["event_name"] == "mnemon.memory.operation.observed" for e in doc["events"])

    everything = run_cli("receipt", "--limit", "100")
    for secret in [*contents, *ids, "who prefers tea", ids[0][:8]]:
        assert secret not in everything.out
    assert everything.json()["count"] == oplog_before
    assert run_cli("status").json()["oplog_count"] == oplog_before  # a receipt is not an operation


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["receipt", "--limit", "0"], "Error: --limit must be at least 1, got 0"),
        (["receipt", "--store", "nope"], "Error: store \"nope\" does not exist (use 'mnemon store create nope' first)"),
    ],
)
def test_receipt_errors(args: list[str], message: str, data_dir: Path) -> None:
    r = run_cli(*args)
    assert (r.code, r.out, r.err.strip()) == (1, "", message)
    assert not (data_dir / "data" / "nope").exists()


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
_entries = st.lists(
    st.builds(OplogEntry, id=st.integers(1, 10**6), operation=st.sampled_from(["remember", "recall", "forget", "gc_keep"]),
              insight_id=st.none() | _text, detail=_text, created_at=st.just("2026-01-02T03:04:05Z")),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(_entries, _entries)
def test_receipt_depends_on_ids_and_details_only_through_their_hashes(entries, others) -> None:
    """Property: the receipt without its hashes is the same whatever the ids and details are (only whether
    they are present counts), each hash is the SHA-256 of the value, and a value long enough to be told
    apart from the fixed text never appears in the printed JSON."""
    others = [o.model_copy(update={"operation": e.operation, "created_at": e.created_at,
                                   "insight_id": None if not e.insight_id else (o.insight_id or "x") + "y",
                                   "detail": "" if not e.detail else o.detail + "z"})
              for e, o in zip(entries, others + entries)]
    a = build("default", 20, entries, "2026-01-02T03:04:05Z").plain()
    b = build("default", 20, others, "2026-01-02T03:04:05Z").plain()
    assert skeleton(a) == skeleton(b)
    printed = cli.dump(a)
    for entry, event in zip(entries, a["events"]):
        assert event.get("insight_id_hash") == (sha(entry.insight_id) if entry.insight_id else None)
        assert event.get("detail_hash") == (sha(entry.detail) if entry.detail else None)
        for raw in (entry.insight_id or "", entry.detail):
            if len(raw) >= 8 and raw not in cli.dump(skeleton(a)) and not HEX64.search(raw):
                assert raw not in printed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=8, max_size=200))
@example("-000000:")  # content that looks like an option: after "--" it is content
def test_receipt_of_any_remembered_content_shows_no_content_or_id(content: str) -> None:
    """The CLI path in-process, over random contents stored in a real SQLite store."""
    assume(content.strip() and content.strip() == content)
    with tempfile.TemporaryDirectory() as tmp:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["--data-dir", tmp, "remember", "--", content]) == 0
        new_id = json.loads(out.getvalue())["id"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["--data-dir", tmp, "receipt"]) == 0
    printed = out.getvalue()
    doc = json.loads(printed)
    assert doc["events"][0]["insight_id_hash"] == sha(new_id)
    assert doc["events"][0]["detail_hash"] == sha(content)
    assert new_id not in printed and new_id[:8] not in printed
    if content not in cli.dump(skeleton(doc)):
        assert content not in printed
