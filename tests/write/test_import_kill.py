"""An import killed with SIGKILL midway leaves only whole committed batches (no half-written insight), and
running the same import again finishes it: every draft insight exists exactly once, the backbone is whole."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_draft

from mnemon_core.write.importer import IMPORT_BATCH

ROOT = Path(__file__).resolve().parents[2]
N = 6 * IMPORT_BATCH

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def count(db_path: Path) -> int | None:
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT count(*) FROM insights").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:  # not created or not migrated yet
        return None


def test_sigkill_midway_then_rerun(tmp_path: Path, data_dir: Path) -> None:
    draft = tmp_path / "big.json"
    draft.write_text(json.dumps(make_draft(N)), encoding="utf-8")
    db_path = data_dir / "data" / "default" / "mnemon.db"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "mnemon_core", "import", str(draft)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while True:
            assert proc.poll() is None, "the import finished before it could be killed"
            assert time.monotonic() < deadline, "no batch committed in time"
            n = count(db_path) if db_path.exists() else None
            if n:
                break
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    db = sqlite3.connect(db_path)
    killed_at = db.execute("SELECT count(*) FROM insights").fetchone()[0]
    assert 0 < killed_at < N
    assert killed_at % IMPORT_BATCH == 0  # whole batches only
    # Every committed insight is whole: its search terms, its entity row, its EI and its oplog row.
    assert db.execute("SELECT count(*) FROM insights_fts").fetchone()[0] == killed_at
    assert db.execute(
        "SELECT count(*) FROM insights WHERE id NOT IN (SELECT insight_id FROM insight_entities)"
    ).fetchone()[0] == 0
    assert db.execute("SELECT max(effective_importance) FROM insights").fetchone()[0] < 0.01
    assert db.execute("SELECT count(*) FROM oplog WHERE operation = 'import'").fetchone()[0] == killed_at
    db.close()

    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr
    out = json.loads(rerun.stdout)
    assert (out["imported"], out["skipped"], out["errors"]) == (N - killed_at, killed_at, 0)
    assert [r["index"] for r in out["results"]] == list(range(N))

    db = sqlite3.connect(db_path)
    assert db.execute("SELECT count(*), count(DISTINCT content) FROM insights WHERE deleted_at IS NULL").fetchone() \
        == (N, N)
    # The run that was killed never rebuilt the backbone; the re-run did, through all of them.
    assert db.execute("SELECT count(*) FROM edges WHERE edge_type = 'temporal'").fetchone()[0] == 2 * (N - 1)
    db.close()


def test_ctrl_c_inside_embedding_stops_at_once_with_one_line(tmp_path: Path, data_dir: Path) -> None:
    """Ctrl-C (a real SIGINT) while the import embeds with the local model: one line saying how far it got, exit
    130, acted on at once (a short model call, not the whole batch: before, over a minute), the batch it arrived
    in rolled back (every insight in the store has its vector), and the rerun finishes the import.

    The draft is long (six batches) so that a loaded machine cannot finish it before the signal lands; only the
    first batch and part of the second are embedded, and the rerun queues its vectors (`--vectors later`)."""
    n = 6 * IMPORT_BATCH
    draft = tmp_path / "big.json"
    draft.write_text(json.dumps(make_draft(n)), encoding="utf-8")
    db_path = data_dir / "data" / "default" / "mnemon.db"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               MNEMON_EMBEDDER="local", MNEMON_DAEMON="off")
    cmd = [sys.executable, "-m", "mnemon_core", "import", "--vectors", "now", str(draft)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    try:
        while not count(db_path) if db_path.exists() else True:  # the first batch committed: inside the second
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no batch committed in time"
            time.sleep(0.01)
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert out == ""
    assert err == f"interrupted: {IMPORT_BATCH} of {n} insights imported; run the import again to finish it\n"
    assert took < 5.0, took  # a behaviour, not a speed figure: the whole 500-text batch took ~15 s here

    db = sqlite3.connect(db_path)
    assert db.execute("SELECT count(*), count(embedding) FROM insights").fetchone() == (IMPORT_BATCH, IMPORT_BATCH)
    db.close()
    rerun = subprocess.run([*cmd[:-3], "--vectors", "later", str(draft)], env=env, capture_output=True, text=True,
                           timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr
    got = json.loads(rerun.stdout)
    assert (got["imported"], got["skipped"], got["errors"]) == (n - IMPORT_BATCH, IMPORT_BATCH, 0)
    assert got["vectors_pending"] == n - IMPORT_BATCH
