"""Issue 13: bad input and faults end in one line on stderr and exit status 1, with nothing written.

Black-box through the CLI (a fresh process, or `main()` in-process where a test must patch a constant), plus
the store and `Memory` behaviour each fix rests on.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from conftest import run_cli

READONLY = "is unavailable with --readonly: database writes are disabled"


def snapshot(root: Path) -> dict[str, str]:
    """Every file under `root` with a digest of its bytes: equal snapshots mean nothing was written."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def one_error(r, message: str) -> None:
    """Exit 1, exactly `Error: message` on stderr, nothing on stdout."""
    assert (r.code, r.err, r.out) == (1, f"Error: {message}\n", "")


# ---------------------------------------------------------------- item 1: --readonly covers `store`


def test_readonly_refuses_store_create_set_remove_on_sqlite(data_dir: Path) -> None:
    assert run_cli("store", "create", "victim").code == 0
    assert run_cli("--store", "victim", "remember", "keep me").code == 0
    before = snapshot(data_dir)
    for args in (["store", "remove", "victim"], ["store", "set", "victim"], ["store", "create", "other"],
                 ["store", "create", "../bad"], ["store", "set"]):
        one_error(run_cli("--readonly", *args), f"store {args[1]} {READONLY}")
    assert snapshot(data_dir) == before
    assert run_cli("--readonly", "store", "list").out == "  victim\n"  # list still works


@pytest.mark.integration
def test_readonly_refuses_store_create_set_remove_on_postgres(data_dir: Path, pg_url: str,
                                                             pg_store_name: str) -> None:
    from mnemon_core.store.postgres import drop_store, list_stores

    env = {"MNEMON_DATABASE_URL": pg_url}
    victim, other = pg_store_name, pg_store_name + "x"
    assert run_cli("store", "create", victim, env=env).code == 0
    assert run_cli("--store", victim, "remember", "keep me", env=env).code == 0
    try:
        for args in (["store", "remove", victim], ["store", "set", victim], ["store", "create", other]):
            one_error(run_cli("--readonly", *args, env=env), f"store {args[1]} {READONLY}")
        assert victim in list_stores(pg_url) and other not in list_stores(pg_url)
        assert not (data_dir / "active").exists()
        assert run_cli("--store", victim, "status", env=env).json()["total_insights"] == 1
    finally:
        drop_store(pg_url, other)


# ---------------------------------------------------------------- item 10: a failed COMMIT rolls back


def test_failed_commit_rolls_back_and_the_connection_stays_usable(tmp_path: Path) -> None:
    from mnemon_core.store.sqlite import SQLiteStore

    s = SQLiteStore(tmp_path / "m.db")
    # A deferred foreign key is checked at COMMIT, which then fails and leaves SQLite inside the transaction.
    with pytest.raises(sqlite3.IntegrityError), s.transaction():
        s.db.execute("PRAGMA defer_foreign_keys = ON")
        s.db.execute("INSERT INTO edges (source_id, target_id, edge_type, created_at) "
                     "VALUES ('nope', 'none', 'semantic', 'now')")
    assert not s.db.in_transaction
    with s.transaction():  # before the fix: "cannot start a transaction within a transaction"
        s.log("after", None, "", "2026-01-01T00:00:00Z")
    assert s.count_edges() == 0 and s.count_log() == 1
    s.close()
