"""What only the Kùzu store has, beside the contract and the suites that run on every backend (`mem`): stores as
database files in one directory, `mnemon migrate` into and out of it, one process at a time (a second waits, then
fails with one line), a read-only open that writes nothing, an import killed midway that leaves whole batches."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, fill_for_migration, run_cli

kuzu = pytest.importorskip("kuzu")

from mnemon_core.store import holder as one_holder  # noqa: E402
from mnemon_core.store import kuzu as kuzu_store  # noqa: E402
from mnemon_core.write.importer import IMPORT_BATCH  # noqa: E402

WAL_OF_A_BATCH = 64 * 1024  # a committed batch of IMPORT_BATCH insights logs far more; an empty log a header


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A directory of Kùzu stores, the CLI and `Memory()` pointed at it."""
    u = f"kuzu://{tmp_path / 'graph'}"
    monkeypatch.setenv("MNEMON_DATABASE_URL", u)
    return u


def files(url: str) -> dict[str, str]:
    """Every file of the stores' directory with a hash of its bytes."""
    d = kuzu_store.directory(url)
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())} if d.exists() else {}


def main_in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from mnemon_core.faces.cli import main

    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_stores_are_database_files_of_one_directory(url: str) -> None:
    assert run_cli("remember", "default store fact").code == 0
    assert run_cli("--store", "team-a", "remember", "team a fact").code == 0
    d = kuzu_store.directory(url)
    assert sorted(p.name for p in d.iterdir()) == ["default.kuzu", "team-a.kuzu"]  # closed: checkpointed, no WAL
    assert run_cli("store", "list").out == "* default\n  team-a\n"
    assert [h["content"] for h in run_cli("--store", "team-a", "search", "fact").json()] == ["team a fact"]
    assert run_cli("store", "create", "team-b").code == 0
    assert run_cli("store", "remove", "team-a").out == 'Removed store "team-a"\n'
    assert sorted(p.name for p in d.iterdir()) == ["default.kuzu", "team-b.kuzu"]
    status = run_cli("status").json()
    assert status["total_insights"] == 1 and f"{url} (store default)" in json.dumps(status)


def test_bad_url_is_one_line(tmp_path: Path) -> None:
    r = run_cli("--database-url", "kuzu://relative/dir", "recall", "x")
    assert (r.code, r.out) == (1, "")
    assert r.err == "Error: a Kùzu URL names an absolute directory, kuzu:///abs/dir; got 'kuzu://relative/dir'\n"


def test_readonly_needs_the_store_and_writes_nothing(url: str) -> None:
    missing = kuzu_store.store_path(url, "default")
    r = run_cli("--readonly", "recall", "x")
    assert (r.code, r.out, r.err) == (1, "", f"Error: database not found: {missing}\n")
    assert not missing.exists()
    assert run_cli("remember", "Deploys freeze on Fridays", "--cat", "decision").code == 0
    before = files(url)
    r = run_cli("--readonly", "remember", "blocked")
    assert (r.code, r.out) == (1, "")
    assert r.err == "Error: remember is unavailable with --readonly: database writes are disabled\n"
    found = run_cli("--readonly", "recall", "deploys friday")
    assert found.code == 0 and [h["content"] for h in found.json()["results"]] == ["Deploys freeze on Fridays"]
    assert files(url) == before  # not even the access bump


def test_a_second_process_waits_then_fails_with_one_line(url: str, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kùzu lets one process hold a database: another waits `LOCK_WAIT_S` for it, then says so, writing nothing."""
    assert run_cli("remember", "held elsewhere").code == 0
    path = kuzu_store.store_path(url, "default")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import kuzu, sys, time; db = kuzu.Database(sys.argv[1]); print('held', flush=True); "
         "time.sleep(60)", str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        monkeypatch.setattr(one_holder, "LOCK_WAIT_S", 0.3)
        before = files(url)
        code, out, err = main_in_process(capsys, "remember", "blocked by another process")
        assert (code, out) == (1, "")
        assert err == (f"Error: database is locked: another process held {path} longer than the 0.3 s lock timeout "
                       "(Kùzu lets one process at a time open it); try again\n")
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert files(url) == before
    assert run_cli("search", "blocked").json() == []


def test_migrate_into_and_out_of_kuzu_is_lossless(data_dir: Path, tmp_path: Path) -> None:
    """SQLite → Kùzu → Kùzu (another directory), each verified by its checksum; the copy recalls as its source."""
    from mnemon_core import Memory

    with Memory() as m:
        want = fill_for_migration(m)
    first, second = f"kuzu://{tmp_path / 'g1'}", f"kuzu://{tmp_path / 'g2'}"
    r = run_cli("migrate", "--from", "sqlite:", "--to", first)
    assert r.code == 0, r.err
    out = r.json()
    assert (out["insights"], out["active"], out["deleted"], out["verified"]) == (3, 2, 1, True)
    assert out["to"] == f"{first} (store default)"
    again = run_cli("migrate", "--from", first, "--to", second).json()
    assert again["checksum"] == out["checksum"] and again["from"] == f"{first} (store default)"
    with Memory(database_url=second) as copy:
        assert [h.id for h in copy.recall("why did the cache move to Redis").results] == want
    refused = run_cli("migrate", "--from", "sqlite:", "--to", second)
    assert refused.code == 1 and refused.err.startswith('Error: target store "default" in ')
    assert "is not empty (2 insights, " in refused.err


@pytest.mark.integration
def test_migrate_kuzu_to_postgres(tmp_path: Path, pg_url: str, pg_store_name: str, url: str) -> None:
    assert run_cli("--store", pg_store_name, "remember", "graph first, then Postgres", "--entities", "Kuzu").code == 0
    r = run_cli("--store", pg_store_name, "migrate", "--from", url, "--to", pg_url)
    assert r.code == 0, r.err
    assert (r.json()["insights"], r.json()["verified"]) == (1, True)


def test_import_killed_midway_leaves_whole_batches(tmp_path: Path, url: str) -> None:
    """As on SQLite (test_import_kill): SIGKILL after the first batch committed (Kùzu writes its log at commit,
    so the log growing past a header is that commit), then the same import again finishes it."""
    from conftest import make_draft

    n = 4 * IMPORT_BATCH  # room to catch a pause between commits: a batch can commit within one poll
    draft = tmp_path / "big.json"
    draft.write_text(json.dumps(make_draft(n)), encoding="utf-8")
    assert run_cli("store", "create", "default").code == 0
    wal = kuzu_store.store_path(url, "default").with_name("default.kuzu.wal")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "mnemon_core", "import", str(draft)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    try:
        size = -1
        while True:  # the log past a batch's size and no longer growing: that commit is whole
            assert proc.poll() is None, "the import finished before it could be killed"
            assert time.monotonic() < deadline, "no batch committed in time"
            now = wal.stat().st_size if wal.exists() else 0
            if now > WAL_OF_A_BATCH and now == size:
                break
            size = now
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    from mnemon_core.store.kuzu import KuzuStore

    s = KuzuStore(kuzu_store.store_path(url, "default"), readonly=True)
    try:
        killed_at = s.count_active()
        assert 0 < killed_at < n and killed_at % IMPORT_BATCH == 0  # whole batches only
        assert sum(1 for _ in s.dump_oplog()) == killed_at  # each with its oplog row
        assert len(s.insight_tokens([i.id for i in s.iter_active()])) == killed_at  # and its terms
    finally:
        s.close()
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr
    out = json.loads(rerun.stdout)
    assert (out["imported"], out["skipped"], out["errors"]) == (n - killed_at, killed_at, 0)
    s = KuzuStore(kuzu_store.store_path(url, "default"), readonly=True)
    try:
        assert s.count_active() == n
        assert sum(1 for e in s.iter_edges() if e.edge_type == "temporal") == 2 * (n - 1)
    finally:
        s.close()


def test_a_read_only_open_then_a_writer_in_one_process(tmp_path: Path) -> None:
    """The resident engine may open a store for a `--readonly` call first, then for a write: the database is
    reopened for writing under both, and the read-only one goes on reading."""
    from mnemon_core.models import Insight
    from mnemon_core.store.kuzu import KuzuStore

    path = tmp_path / "s.kuzu"
    KuzuStore(path).close()
    reader = KuzuStore(path, readonly=True)
    writer = KuzuStore(path)
    try:
        t = "2026-01-01T00:00:00Z"
        writer.insert_insight(Insight(id="a", content="written after a read-only open", created_at=t, updated_at=t),
                              {"written"})
        assert [i.id for i in reader.iter_active()] == ["a"]
        with pytest.raises(RuntimeError):  # the reader's transactions stay read-only
            with reader.transaction():
                reader.insert_insight(Insight(id="b", content="refused", created_at=t, updated_at=t), {"refused"})
        assert writer.count_active() == 1
    finally:
        reader.close()
        writer.close()
