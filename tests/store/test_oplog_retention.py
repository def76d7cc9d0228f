"""The oplog is kept by age (MNEMON_OPLOG_MAX_AGE, 90 days) with a row ceiling as a safety net
(MNEMON_OPLOG_MAX_ROWS, 10M), the same rule on SQLite and Postgres, trimmed once per write transaction and
reported by `status` (issue 13, item 9). It used to keep the last 5000 rows, so one import erased the history."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemon_core import Memory
from mnemon_core.config import DEFAULT_OPLOG_MAX_AGE_S, DEFAULT_OPLOG_MAX_ROWS, OplogRetention, Settings
from mnemon_core.errors import ValidationError
from mnemon_core.store.sqlite import SQLiteStore

NOW = "2026-06-30T12:00:00Z"
DAY = 86400.0


def test_one_large_import_keeps_the_earlier_history(cli, tmp_path: Path, data_dir: Path) -> None:
    first = cli("remember", "the first thing this store heard")
    assert first.code == 0, first.err
    draft = tmp_path / "memory_draft.json"
    draft.write_text(json.dumps({"schema_version": "1",
                                 "insights": [{"content": f"note {i} about the build"} for i in range(5100)]}))
    r = cli("import", str(draft), env={"MNEMON_MAX_INSIGHTS": "0"})
    assert (r.code, r.json()["imported"]) == (0, 5100), r.err
    status = cli("status")
    assert status.code == 0, status.err
    out = status.json()
    assert out["oplog_count"] == 5101
    assert out["oplog"] == {"rows": 5101, "oldest": first.json()["created_at"],
                            "retention": {"max_age_days": 90.0, "max_rows": 10_000_000}}
    with Memory() as mem:  # the first row is still the remember
        row = mem.store.read_log(5101)[-1]
        assert (row.operation, row.insight_id) == ("remember", first.json()["id"])


def test_status_reports_the_configured_retention(cli, data_dir: Path) -> None:
    env = {"MNEMON_OPLOG_MAX_AGE": "36h", "MNEMON_OPLOG_MAX_ROWS": "3"}
    ids = [cli("remember", f"fact number {i}", env=env).json()["id"] for i in range(5)]
    out = cli("status", env=env).json()
    assert out["oplog"]["rows"] == out["oplog_count"] == 3
    assert out["oplog"]["retention"] == {"max_age_days": 1.5, "max_rows": 3}
    with Memory() as mem:
        assert [e.insight_id for e in mem.log()] == ids[:1:-1]  # the newest three
    off = cli("status", env={"MNEMON_OPLOG_MAX_AGE": "0", "MNEMON_OPLOG_MAX_ROWS": "0"}).json()
    assert off["oplog"]["retention"] == {"max_age_days": 0.0, "max_rows": 0}


def test_an_empty_oplog_has_no_oldest_row(mem: Memory) -> None:
    assert mem.status().oplog.model_dump(mode="json") == {
        "rows": 0, "oldest": None, "retention": {"max_age_days": 90.0, "max_rows": 10_000_000}}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MNEMON_OPLOG_MAX_AGE": "forever"},
         'Error: invalid MNEMON_OPLOG_MAX_AGE "forever"; use a duration like 24h, 90m, 7d or 0'),
        ({"MNEMON_OPLOG_MAX_AGE": "-5d"},
         'Error: invalid MNEMON_OPLOG_MAX_AGE "-5d"; use a duration like 24h, 90m, 7d or 0'),
        ({"MNEMON_OPLOG_MAX_ROWS": "lots"}, "Error: MNEMON_OPLOG_MAX_ROWS must be an integer, got lots"),
        ({"MNEMON_OPLOG_MAX_ROWS": "-1"}, "Error: MNEMON_OPLOG_MAX_ROWS must be 0 or more, got -1"),
    ],
)
def test_bad_retention_settings_are_one_line_and_write_nothing(cli, data_dir: Path, env, message) -> None:
    r = cli("remember", "never stored", env=env)
    assert (r.code, r.out, r.err.strip()) == (1, "", message)
    assert not data_dir.exists()


# ---------------------------------------------------------------- the rule, on both stores


def test_rows_older_than_the_age_limit_go_at_the_next_write(mem: Memory) -> None:
    store = mem.store
    store.oplog_retention = OplogRetention(max_age_s=0, max_rows=0)  # keep all while the history is written
    for t, what in [("2026-03-01T12:00:00Z", "100 days old"), ("2026-04-01T11:59:59Z", "one second too old"),
                    ("2026-04-01T12:00:00Z", "exactly 90 days"), ("2026-06-01T00:00:00Z", "recent")]:
        store.log("recall", None, what, t)
    store.oplog_retention = OplogRetention(max_age_s=90 * DAY, max_rows=0)
    assert store.count_log() == 4
    store.log("search", None, "now", NOW)
    assert [e.detail for e in store.read_log(10)] == ["now", "recent", "exactly 90 days"]
    assert store.oplog_oldest() == "2026-04-01T12:00:00Z"


def test_the_row_ceiling_keeps_the_newest(mem: Memory) -> None:
    store = mem.store
    store.oplog_retention = OplogRetention(max_age_s=0, max_rows=4)
    with store.transaction():
        for i in range(7):
            store.log("recall", None, f"q{i}", "2001-01-01T00:00:00Z")  # no age limit: ancient rows stay
    assert [e.detail for e in store.read_log(10)] == ["q6", "q5", "q4", "q3"]


def test_a_rolled_back_transaction_trims_nothing(mem: Memory) -> None:
    store = mem.store
    store.oplog_retention = OplogRetention(max_age_s=DAY, max_rows=0)
    store.log("recall", None, "old", "2026-06-01T00:00:00Z")
    with pytest.raises(RuntimeError), store.transaction():
        store.log("recall", None, "rolled back", NOW)
        raise RuntimeError
    assert [e.detail for e in store.read_log(10)] == ["old"]
    with store.transaction():  # and the next transaction trims as of its own time only
        store.log("recall", None, "same day", "2026-06-01T01:00:00Z")
    assert [e.detail for e in store.read_log(10)] == ["same day", "old"]


def test_memory_passes_its_settings_to_the_store(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    assert mem.store.oplog_retention == OplogRetention(DEFAULT_OPLOG_MAX_AGE_S, DEFAULT_OPLOG_MAX_ROWS)
    monkeypatch.setenv("MNEMON_OPLOG_MAX_AGE", "7d")
    monkeypatch.setenv("MNEMON_OPLOG_MAX_ROWS", "1000")
    with Memory() as other:
        assert other.store.oplog_retention == OplogRetention(7 * DAY, 1000)


# ---------------------------------------------------------------- cost: one trim per transaction


def test_a_transaction_trims_once_however_many_rows_it_logs(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    deletes: list[str] = []
    store.db.set_trace_callback(lambda sql: deletes.append(sql) if sql.startswith("DELETE FROM oplog") else None)
    with store.transaction():
        for i in range(500):  # an import batch
            store.log("import", f"id{i}", "x", NOW)
    assert len(deletes) == 2  # the age range and the row ceiling, once
    store.log("recall", None, "alone", NOW)
    assert len(deletes) == 4
    plan = store.db.execute("EXPLAIN QUERY PLAN DELETE FROM oplog WHERE created_at < ?", (NOW,)).fetchall()
    assert "idx_oplog_created_at" in plan[0][3]  # a range of the index, not a scan
    store.close()


# ---------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(
    ages=st.lists(st.integers(min_value=0, max_value=200 * 86400), max_size=25),
    max_age_days=st.integers(min_value=0, max_value=120),
    max_rows=st.integers(min_value=0, max_value=30),
)
def test_the_rule_keeps_exactly_the_young_newest_rows(ages: list[int], max_age_days: int, max_rows: int) -> None:
    from mnemon_core.timeutil import iso, parse

    now_ts = parse(NOW).timestamp()
    rule = OplogRetention(max_age_s=max_age_days * DAY, max_rows=max_rows)
    with tempfile.TemporaryDirectory() as d:
        store = SQLiteStore(Path(d) / "m.db", oplog_retention=OplogRetention(0, 0))
        with store.transaction():
            for i, age in enumerate(ages):  # written in any order of time, as clocks drift between writers
                store.log("recall", None, str(i), iso(now_ts - age))
        store.oplog_retention = rule
        store.log("recall", None, "now", NOW)
        kept = [e.detail for e in store.read_log(100)][::-1]
        store.close()
    rows = [(str(i), age) for i, age in enumerate(ages)] + [("now", 0)]
    young = [max_age_days == 0 or age <= max_age_days * DAY for _, age in rows]
    last = [max_rows == 0 or k >= len(rows) - max_rows for k in range(len(rows))]  # among the last N written
    assert kept == [x for (x, _), y, n in zip(rows, young, last) if y and n]


@settings(max_examples=200, deadline=None)
@given(age=st.text(max_size=12), rows=st.text(max_size=12))
def test_any_retention_setting_is_accepted_or_named(age: str, rows: str) -> None:
    old = {k: os.environ.get(k) for k in ("MNEMON_OPLOG_MAX_AGE", "MNEMON_OPLOG_MAX_ROWS")}
    try:
        os.environ["MNEMON_OPLOG_MAX_AGE"], os.environ["MNEMON_OPLOG_MAX_ROWS"] = age, rows
    except ValueError:  # a NUL cannot be in the environment
        return
    try:
        r = Settings.resolve().oplog_retention
        assert r.max_age_s >= 0 and r.max_rows >= 0
    except ValidationError as e:
        assert e.field in ("MNEMON_OPLOG_MAX_AGE", "MNEMON_OPLOG_MAX_ROWS") and e.field in str(e)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
