"""A read never waits behind a writer (issue 37, item 1). While another holder keeps the store's write lock (a
library writer in another thread, `sqlite3 db 'BEGIN EXCLUSIVE'` in another process), `recall`, `search`, `show`
and `related` answer with their results and no warning, in-process and through the resident engine; the
accesses they count are applied by the next write transaction. No timing: each read must have answered while
the holder, which lets go only when the test says so, still holds the lock (a thread join or a subprocess
timeout only keeps a waiting read from hanging the suite)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import checked_backend, run_cli
from mnemon_core import Memory
from mnemon_core.timeutil import iso

CAUSE = "The team lacks Redis experience"
DECISION = "Chose SQLite for the job queue because the team lacks Redis experience"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def store_backend(request: pytest.FixtureRequest) -> str:
    """Where another client can hold the write lock while this one reads. (Kùzu lets one process open a
    database, and its store objects share one connection: a read there takes turns with this process's
    writer; docs/backends.md.)"""
    return checked_backend(request.param)


def answered(release: threading.Event, call, *args):
    """`call(*args)` in a thread, its answer once it came while the writer holds on. A read that waits for the
    lock fails the test; the writer is then let go first, so that the read ends before its store closes."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(call(*args)), daemon=True)
    t.start()
    t.join(30)
    if not out:
        release.set()
        t.join()
    assert out and not release.is_set(), f"{call.__name__} waited for the writer"
    return out[0]


@pytest.fixture
def writer(mem: Memory) -> Iterator[threading.Event]:
    """Another Memory of the same store holding a write transaction (as a long import does) in another thread,
    until the test sets the event it yields."""
    other = Memory(settings=mem.settings)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with other.store.transaction():
            other.store.log("import", None, "a long import", iso(time.time()))
            holding.set()
            release.wait(120)

    t = threading.Thread(target=hold)
    t.start()
    assert holding.wait(30)
    yield release
    release.set()
    t.join(60)
    other.close()


def test_reads_answer_while_another_client_writes(mem: Memory, request: pytest.FixtureRequest,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cause = mem.remember(CAUSE, category="context")
    decision = mem.remember(DECISION, category="decision")
    mem.link(cause.id, decision.id, type="causal", weight=0.9)
    release = request.getfixturevalue("writer")
    capsys.readouterr()
    found = answered(release, mem.recall, "why did we choose SQLite?")
    assert {r.id for r in found.results} == {cause.id, decision.id}
    assert [h.id for h in answered(release, mem.search, "Redis")] == [cause.id, decision.id]
    assert answered(release, mem.show, decision.id).content == DECISION
    assert [h.id for h in answered(release, mem.related, cause.id)] == [decision.id]
    assert capsys.readouterr().err == ""  # no warning: nothing was dropped
    release.set()
    assert mem.get(decision.id).access_count == 0  # kept, not applied: the writer's transaction began first
    mem.remember("The job queue runs on SQLite in WAL mode")  # the next write applies them first
    counts = {i: mem.get(i).access_count for i in (cause.id, decision.id)}
    assert counts == {cause.id: 2, decision.id: 3}  # recall + search; recall + search + show
    ops = [e.operation for e in mem.log(limit=6)][::-1]
    assert ops[-4:] == ["recall", "search", "show", "remember"] and "import" in ops


# ---------------------------------------------------------------- the repro: another process, the CLI


@pytest.fixture
def seeded(data_dir: Path) -> dict[str, str]:
    with Memory() as m:
        cause = m.remember(CAUSE, category="context").id
        decision = m.remember(DECISION, category="decision").id
        m.link(cause, decision, type="causal", weight=0.9)
    return {"cause": cause, "decision": decision}


@pytest.fixture
def exclusive(data_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """`sqlite3 db 'BEGIN EXCLUSIVE'` in another process, held until its standard input closes."""
    db = data_dir / "data" / "default" / "mnemon.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    yield holder
    holder.communicate(timeout=30)


def test_the_cli_answers_while_another_process_holds_the_lock(seeded: dict[str, str], cli_both_ways: str,
                                                              request: pytest.FixtureRequest) -> None:
    cause, decision = seeded["cause"], seeded["decision"]
    if cli_both_ways == "engine":
        assert run_cli("daemon", "start").json()["running"] is True  # served from here on
    holder = request.getfixturevalue("exclusive")
    for args, ids in ((["recall", "why did we choose SQLite?"], {cause, decision}), (["search", "Redis"], None),
                      (["show", decision[:8]], None), (["related", cause], None)):
        r = run_cli(*args)
        assert (r.code, r.err) == (0, ""), args  # no wait, no warning
        out = r.json()
        if ids is not None:
            assert {h["id"] for h in out["results"]} == ids
        assert holder.poll() is None, args  # answered while the lock was held
    assert {h["id"] for h in run_cli("search", "Redis").json()} == {cause, decision}
    holder.communicate(timeout=30)  # the writer lets go
    assert run_cli("remember", "The job queue runs in WAL mode").code == 0
    shown = json.loads(run_cli("show", decision).out)
    assert shown["access_count"] == 5  # recall, search twice, show, and this show
