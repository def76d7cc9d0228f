"""Issue 13: bad input and faults end in one line on stderr and exit status 1, with nothing written.

Black-box through the CLI (a fresh process, or `main()` in-process where a test must patch a constant), plus
the store and `Memory` behaviour each fix rests on.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import run_cli

READONLY = "is unavailable with --readonly: database writes are disabled"


def file_digests(root: Path) -> dict[str, str]:
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
    before = file_digests(data_dir)
    for args in (["store", "remove", "victim"], ["store", "set", "victim"], ["store", "create", "other"],
                 ["store", "create", "../bad"], ["store", "set"]):
        one_error(run_cli("--readonly", *args), f"store {args[1]} {READONLY}")
    assert file_digests(data_dir) == before
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


# ---------------------------------------------------------------- helpers for the in-process and other-user runs


def db_state(data_dir: Path) -> dict[str, object]:
    """What a command may change, read through a fresh connection: every store's rows, the active file.
    (File bytes move when another connection checkpoints the WAL; rows do not.)"""
    state: dict[str, object] = {"active": (data_dir / "active").read_bytes() if (data_dir / "active").exists()
                                else None}
    for db in sorted(data_dir.glob("data/*/mnemon.db")):
        con = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
        for table in ("insights", "edges", "oplog", "insight_entities", "mnemon_meta"):
            state[f"{db.parent.name}.{table}"] = sorted(map(repr, con.execute(f"SELECT * FROM {table}")))
        con.close()
    state["stores"] = sorted(p.name for p in (data_dir / "data").iterdir()) if (data_dir / "data").exists() else []
    return state


def main_in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`mnemon argv` through `main()` in this process (fast; lets a test patch a constant): (code, out, err)."""
    from mnemon_core.faces.cli import main

    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse: usage errors and --help
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def seeded(data_dir: Path) -> list[str]:
    """A default store with two linked insights; returns their ids."""
    from mnemon_core import Memory

    with Memory() as m:
        a = m.remember("Alice chose SQLite for the cache", tags=["db"], entities=["Alice"]).id
        b = m.remember("Bob moved the cache to Redis because of latency", entities=["Bob"]).id
        m.link(a, b, type="causal", weight=0.7)
    return [a, b]


# ---------------------------------------------------------------- item 3: the write lock held past the busy timeout


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemon_core.store import sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 50)


@pytest.fixture
def write_lock(data_dir: Path, seeded: list[str]):
    """Another connection holding the store's write lock for the whole test."""
    con = sqlite3.connect(data_dir / "data" / "default" / "mnemon.db", isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    yield
    con.execute("ROLLBACK")
    con.close()


def test_remember_under_a_held_write_lock_is_one_line(capsys, data_dir: Path, seeded, short_busy_timeout,
                                                      write_lock) -> None:
    before = db_state(data_dir)
    code, out, err = main_in_process(capsys, "remember", "blocked by another writer")
    db = data_dir / "data" / "default" / "mnemon.db"
    assert (code, out) == (1, "")
    assert err == (f"Error: database is locked: another process held the write lock on {db} longer than the "
                   "0.05 s busy timeout; try again\n")
    assert db_state(data_dir) == before


def test_library_remember_under_a_held_write_lock_raises_store_error(data_dir: Path, seeded, short_busy_timeout,
                                                                     write_lock) -> None:
    from mnemon_core import Memory
    from mnemon_core.errors import MnemonError, StoreError

    with Memory() as m, pytest.raises(StoreError, match="^database is locked: ") as e:
        m.remember("blocked")
    assert isinstance(e.value, MnemonError)


def test_recall_under_a_held_write_lock_answers_and_counts_its_access_later(capsys, data_dir: Path, seeded,
                                                                             short_busy_timeout, write_lock) -> None:
    """A read never waits for the write lock (issue 37, item 1): it answers (exit 0, no warning), writes nothing
    to the database while the lock is held, and its access is kept for the next writer
    (tests/store/test_reads_never_wait.py has the rest)."""
    import json

    before = db_state(data_dir)
    for argv in (["recall", "Alice", "SQLite"], ["search", "cache"], ["show", seeded[0]]):
        code, out, err = main_in_process(capsys, *argv)
        assert (code, err) == (0, "")
        assert json.loads(out)
    assert db_state(data_dir) == before
    assert len((data_dir / "data" / "default" / "mnemon.db.access").read_text().splitlines()) == 3


async def test_mcp_tool_under_a_held_write_lock_is_an_error_result(capsys, data_dir: Path, seeded,
                                                                   short_busy_timeout, write_lock) -> None:
    from mnemon_core import Memory
    from mnemon_core.faces.mcp import Face

    with Memory(origin="mcp") as m:
        is_error, text = await Face(m).call("remember", {"content": "blocked"})
    assert is_error and text.startswith("database is locked: another process held the write lock")
    assert "Traceback" not in capsys.readouterr().err


# ---------------------------------------------------------------- item 3: --readonly where the user cannot write


@contextmanager
def unwritable(*paths: Path):
    """`paths` (files and directories) made unwritable for this process: read-only modes, or for root, who
    ignores modes, the immutable attribute (which a read-only mount amounts to)."""
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True).returncode:
            pytest.skip("chattr +i is not available here; root cannot be kept from writing otherwise")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        return
    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


@pytest.fixture
def store_dir(data_dir: Path, seeded) -> Path:
    return data_dir / "data" / "default"


def test_readonly_reads_a_store_the_user_cannot_write(store_dir: Path, seeded) -> None:
    db = store_dir / "mnemon.db"
    before = file_digests(store_dir)
    with unwritable(db, store_dir):
        for argv in (["status"], ["recall", "Alice"], ["search", "cache"], ["log"], ["show", seeded[0]],
                     ["related", seeded[0]]):
            r = run_cli("--readonly", *argv)
            assert (r.code, r.err) == (0, ""), r.err
            assert r.out.strip()
        assert run_cli("--readonly", "show", seeded[0]).json()["content"] == "Alice chose SQLite for the cache"
    assert file_digests(store_dir) == before  # no -shm or -wal made, no byte changed


def test_without_readonly_such_a_store_is_a_one_line_error_with_the_hint(store_dir: Path) -> None:
    db = store_dir / "mnemon.db"
    before = file_digests(store_dir)
    with unwritable(db, store_dir):
        for argv in (["status"], ["recall", "Alice"], ["remember", "new"]):
            r = run_cli(*argv)
            assert (r.code, r.out) == (1, "")
            assert r.err.startswith(f"Error: cannot open database {db}: ") and r.err.count("\n") == 1
            assert r.err.endswith(" (--readonly reads it)\n")
    assert file_digests(store_dir) == before


def test_readonly_on_a_store_that_needs_a_migration_says_so(store_dir: Path) -> None:
    db = store_dir / "mnemon.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = 104")  # one migration behind
    con.close()
    before = file_digests(store_dir)
    with unwritable(db, store_dir):
        one_error(run_cli("--readonly", "status"), f"{db} needs a schema upgrade, which --readonly cannot do: "
                  "run one command on it without --readonly (as a user who may write it)")
    assert file_digests(store_dir) == before


# ---------------------------------------------------------------- item 3: text that is not UTF-8


BAD = "bad \udcff byte"  # how Python hands over the command-line bytes b"bad \xff byte"


@pytest.mark.parametrize(
    ("argv", "field", "at"),
    [
        (["remember", BAD], "content", 4),
        (["remember", "fine", "--tags", f"ok,{BAD}"], "tags", 7),
        (["remember", "fine", "--entities", BAD], "entities", 4),
        (["remember", "fine", "--source", BAD], "source", 4),
        (["recall", BAD], "query", 4),
        (["recall", "Alice", "--source", BAD], "source", 4),
        (["recall", "Alice", "--basic", "--intent", BAD], "intent", 4),
        (["search", BAD], "query", 4),
        (["show", BAD], "id", 4),
        (["forget", BAD], "id", 4),
        (["related", BAD], "id", 4),
        (["link", BAD, "x"], "source_id", 4),
        (["link", "x", BAD], "target_id", 4),
        (["link", "x", "y", "--meta", '{"k": "bad \udcff"}'], "metadata", 4),
        (["gc", "--keep", BAD], "id", 4),
        (["embed", BAD], "id", 4),
    ],
)
def test_invalid_utf8_arguments_are_one_line_naming_the_field(capsys, data_dir: Path, seeded, argv, field,
                                                              at) -> None:
    before = file_digests(data_dir)
    assert main_in_process(capsys, *argv) == (1, "", f"Error: {field} is not valid UTF-8 text (byte 0xff at "
                                                     f"character {at})\n")
    assert file_digests(data_dir) == before


def test_invalid_utf8_bytes_on_a_real_command_line(data_dir: Path, seeded) -> None:
    before = file_digests(data_dir)
    one_error(run_cli("remember", BAD), "content is not valid UTF-8 text (byte 0xff at character 4)")  # b"\xff"
    assert file_digests(data_dir) == before


def test_a_data_dir_that_is_not_utf8_is_escaped_in_status(tmp_path: Path, cli_both_ways) -> None:
    """Issue 37, item 7: a data-dir path with a byte that is not UTF-8 put that raw byte into `status` JSON (not
    UTF-8, so not JSON a strict reader takes); it is shown as its escape, through the engine too."""
    import json

    raw = os.fsencode(tmp_path) + b"/caf\xe9-data"
    env = {"MNEMON_DATA_DIR": os.fsdecode(raw)}
    assert run_cli("remember", "a memory in a strange place", env=env).code == 0
    for _ in range(2):  # the second one served by the engine, once it runs
        proc = subprocess.run([sys.executable, "-m", "mnemon_core", "status"], capture_output=True,
                              env={**os.environ, **env}, timeout=120)
        assert proc.returncode == 0, proc.stderr
        status = json.loads(proc.stdout.decode("utf-8"))  # strict UTF-8: a raw byte fails here
        assert status["db_path"] == f"{tmp_path}/caf\\xe9-data/data/default/mnemon.db"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.remember("lone \ud800"), "content"),
        (lambda m: m.remember("x", tags=["\udfff"]), "tags"),
        (lambda m: m.remember("x", entities="a,\ud800"), "entities"),
        (lambda m: m.recall("\ud800"), "query"),
        (lambda m: m.search("\ud800"), "query"),
        (lambda m: m.show("\ud800"), "id"),
        (lambda m: m.link("a", "b", metadata={"k": "\ud800"}), "metadata"),
        (lambda m: m.import_draft({"schema_version": "1", "insights": [{"content": "x\ud800"}]}), "insights[0].content"),
    ],
)
def test_library_rejects_lone_surrogates_naming_the_field(data_dir: Path, call, field) -> None:
    from mnemon_core import Memory
    from mnemon_core.errors import ValidationError

    with Memory() as m, pytest.raises(ValidationError, match="not valid UTF-8 text") as e:
        call(m)
    assert e.value.field == field
    assert not (data_dir / "data").exists() or Memory().status().total_insights == 0


# ---------------------------------------------------------------- item 3: data dir, store name, viz, drafts


@pytest.mark.parametrize("kind", ["file", "under a file", "/proc/1", "~nouser"])
def test_bad_data_dirs_are_one_line(tmp_path: Path, kind: str) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    value, message = {
        "file": (afile, f"cannot create the store directory {afile}/data/{{}}: Not a directory"),
        "under a file": (afile / "x", f"cannot create the store directory {afile}/x/data/{{}}: Not a directory"),
        "/proc/1": ("/proc/1", "cannot create the store directory /proc/1/data/{}: No such file or directory"),
        "~nouser": ("~mnemon-no-such-user/x", 'invalid data directory "~mnemon-no-such-user/x": no such user'),
    }[kind]
    for argv, store in ((["status"], "default"), (["remember", "x"], "default"), (["store", "create", "work"], "work")):
        one_error(run_cli(*argv, env={"MNEMON_DATA_DIR": str(value)}), message.format(store))
    assert afile.read_text() == "not a directory"


def test_a_data_dir_the_user_cannot_write_is_one_line(store_dir: Path) -> None:
    with unwritable(store_dir):
        r = run_cli("--data-dir", str(store_dir / "sub"), "remember", "x")
    assert (r.code, r.out) == (1, "")
    reason = "Operation not permitted" if os.geteuid() == 0 else "Permission denied"  # immutable / mode
    assert r.err == f"Error: cannot create the store directory {store_dir}/sub/data/default: {reason}\n"


def test_store_name_length(data_dir: Path) -> None:
    too_long = f'invalid store name "{"a" * 50}…": 256 characters, max 255'  # the documents' message, the limit
    one_error(run_cli("--store", "a" * 256, "status"), too_long)
    one_error(run_cli("store", "create", "a" * 256), too_long)
    assert not (data_dir / "data").exists()
    assert run_cli("store", "create", "a" * 255).code == 0


def test_viz_to_a_missing_directory_is_one_line(data_dir: Path, seeded) -> None:
    before = file_digests(data_dir)
    one_error(run_cli("viz", "-o", "/nonexistent/x.html"), "/nonexistent/x.html: No such file or directory")
    assert file_digests(data_dir) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema_version": "1", "insights": [{"content": "x", "created_at": "9999-12-31T23:59:59-14:00"}]}',
         'insights[0].created_at: invalid RFC 3339 timestamp "9999-12-31T23:59:59-14:00"'),
        ("[" * 100_000, "invalid draft JSON: nested too deeply"),
        ('{"schema_version": "1", "insights": ' + "[" * 100_000, "invalid draft JSON: nested too deeply"),
    ],
)
def test_drafts_out_of_range_or_nested_too_deeply_are_one_line(tmp_path: Path, data_dir: Path, seeded,
                                                               text: str, message: str) -> None:
    path = tmp_path / "draft.json"
    path.write_text(text)
    before = file_digests(data_dir)
    for flag in ([], ["--dry-run"]):
        one_error(run_cli("import", *flag, str(path)), message)
    assert file_digests(data_dir) == before


def test_mnemon_debug_adds_the_traceback(data_dir: Path) -> None:
    r = run_cli("viz", "-o", "/nonexistent/x.html", env={"MNEMON_DEBUG": "1"})
    assert r.code == 1 and r.err.startswith("Traceback (most recent call last):")
    assert r.err.splitlines()[-1] == "Error: /nonexistent/x.html: No such file or directory"


def test_a_bug_is_one_line_too_and_debug_shows_where(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemon_core.faces import cli

    def broken(a):
        raise TypeError("boom")

    monkeypatch.setitem(cli.COMMANDS, "status", broken)
    assert main_in_process(capsys, "status") == (
        1, "", "Error: internal error (a bug; MNEMON_DEBUG=1 shows where): TypeError: boom\n")
    monkeypatch.setenv("MNEMON_DEBUG", "1")
    code, _, err = main_in_process(capsys, "status")
    assert code == 1 and "Traceback" in err and 'raise TypeError("boom")' in err


# ---------------------------------------------------------------- item 7: a store that does not exist


READS = [["recall", "Alice"], ["search", "Alice"], ["show", "x"], ["related", "x"], ["status"], ["log"], ["gc"],
         ["viz"], ["embed", "--status"], ["forget", "x"], ["link", "a", "b"], ["gc", "--keep", "x"],
         ["mcp", "serve"]]
MISSING = "store \"wrok\" does not exist (use 'mnemon store create wrok' first)"


def test_reading_a_store_that_does_not_exist_fails_with_the_hint(data_dir: Path, seeded) -> None:
    before = file_digests(data_dir)
    one_error(run_cli("--store", "wrok", "recall", "Alice"), MISSING)
    assert file_digests(data_dir) == before
    assert run_cli("store", "list").out == "* default\n"


@pytest.mark.parametrize("argv", READS, ids=lambda a: " ".join(a))
def test_every_read_of_a_missing_store_fails_with_the_hint(capsys, monkeypatch: pytest.MonkeyPatch,
                                                          data_dir: Path, seeded, argv) -> None:
    before = file_digests(data_dir)
    assert main_in_process(capsys, "--store", "wrok", *argv) == (1, "", f"Error: {MISSING}\n")
    monkeypatch.setenv("MNEMON_STORE", "wrok")
    assert main_in_process(capsys, "--readonly", *argv) == (1, "", f"Error: {MISSING}\n")
    assert file_digests(data_dir) == before


def test_a_write_that_creates_a_store_says_so(tmp_path: Path, data_dir: Path) -> None:
    r = run_cli("--store", "fresh", "remember", "first memory of a new store")
    assert (r.code, r.err) == (0, 'mnemon: created store "fresh"\n') and r.json()["action"] == "added"
    r = run_cli("--store", "fresh", "remember", "second")
    assert (r.code, r.err) == (0, "")  # it exists now
    draft = tmp_path / "d.json"
    draft.write_text('{"schema_version": "1", "insights": [{"content": "imported"}]}')
    r = run_cli("--store", "drafted", "import", "--dry-run", str(draft))
    assert (r.code, r.err) == (0, "")  # a dry run writes nothing, so it makes no store
    r = run_cli("--store", "drafted", "import", str(draft))
    assert (r.code, r.err) == (0, 'mnemon: created store "drafted"\n')
    assert run_cli("store", "list").out == "  drafted\n  fresh\n"
    assert run_cli("status").code == 0  # the default store stays implicit


@pytest.mark.integration
def test_reading_a_missing_store_on_postgres(data_dir: Path, pg_url: str, pg_store_name: str) -> None:
    from mnemon_core.store.postgres import list_stores

    env = {"MNEMON_DATABASE_URL": pg_url}
    name = pg_store_name
    hint = f"store \"{name}\" does not exist (use 'mnemon store create {name}' first)"
    one_error(run_cli("--store", name, "recall", "x", env=env), hint)
    assert name not in list_stores(pg_url)
    r = run_cli("--store", name, "remember", "x", env=env)
    assert (r.code, r.err) == (0, f'mnemon: created store "{name}"\n')
    assert run_cli("--store", name, "recall", "x", env=env).code == 0


# ---------------------------------------------------------------- item 8 (this branch's part)


@pytest.mark.parametrize(("value", "message"), [
    ("nan", "--threshold must be a finite number, got nan"),
    ("inf", "--threshold must be a finite number, got inf"),
    ("=-inf", "--threshold must be a finite number, got -inf"),
    ("1e999", "--threshold must be a finite number, got inf"),
    ("-1", "--threshold must be non-negative, got -1.0"),
])
def test_gc_threshold_must_be_finite_and_non_negative(capsys, data_dir: Path, seeded, value: str,
                                                      message: str) -> None:
    before = db_state(data_dir)
    argv = [f"--threshold{value}"] if value.startswith("=") else ["--threshold", value]
    assert main_in_process(capsys, "gc", *argv) == (1, "", f"Error: {message}\n")
    assert db_state(data_dir) == before  # gc stores EI and logs when it runs


def test_gc_threshold_nan_on_a_real_command_line(data_dir: Path, seeded) -> None:
    before = file_digests(data_dir)
    one_error(run_cli("gc", "--threshold", "nan"), "--threshold must be a finite number, got nan")
    assert file_digests(data_dir) == before


async def test_recall_rejects_an_unknown_category_in_the_cli_and_mcp_alike(data_dir: Path, seeded) -> None:
    from mnemon_core import Memory
    from mnemon_core.faces.mcp import Face

    message = 'invalid category "bogus"; valid: preference, decision, fact, insight, context, general'
    before = db_state(data_dir)
    one_error(run_cli("recall", "Alice", "--cat", "bogus"), message)
    one_error(run_cli("recall", "Alice", "--cat", "bogus", "--basic"), message)
    with Memory() as m:
        assert await Face(m).call("recall", {"query": "Alice", "category": "bogus"}) == (True, message)
    assert db_state(data_dir) == before
    assert run_cli("recall", "Alice", "--cat", "general").json()["results"]


@pytest.mark.parametrize("name", ["work\n", "work\n\n", "\nwork"])
def test_store_names_with_a_newline_are_rejected(capsys, monkeypatch: pytest.MonkeyPatch, data_dir: Path,
                                                  name: str) -> None:
    shown = name.replace("\n", "\\n")  # escaped: the message stays one line
    assert main_in_process(capsys, "--store", name, "remember", "x") == (
        1, "", f'Error: invalid store name "{shown}"\n')
    assert main_in_process(capsys, "store", "create", name) == (
        1, "", f'Error: invalid store name "{shown}": must match [a-zA-Z0-9][a-zA-Z0-9_-]*\n')
    monkeypatch.setenv("MNEMON_STORE", name)
    assert main_in_process(capsys, "remember", "x") == (1, "", f'Error: invalid store name "{shown}"\n')
    assert not (data_dir / "data").exists()


def test_store_name_with_a_trailing_newline_on_a_real_command_line(data_dir: Path) -> None:
    one_error(run_cli("store", "create", "work\n"),
              'invalid store name "work\\n": must match [a-zA-Z0-9][a-zA-Z0-9_-]*')
    assert not (data_dir / "data").exists()


def test_log_shows_control_characters_escaped(data_dir: Path) -> None:
    assert run_cli("remember", "title \x1b]0;pwned\x07 and \x9b31m red \x1b[2J").code == 0
    r = run_cli("log")
    assert r.code == 0
    assert not any(c in r.out for c in "\x1b\x07\x9b")
    assert r.out.splitlines()[2].endswith(r"remember  " + r.out.splitlines()[2].split("remember  ")[1])
    assert r"title \x1b]0;pwned\x07 and \x9b31m red \x1b[2J" in r.out


@pytest.mark.parametrize(("call", "field", "message"), [
    (lambda m: m.remember("x", tags=[1, 2]), "tags", "tags must be strings, got int 1"),
    (lambda m: m.remember("x", entities=[None]), "entities", "entities must be strings, got NoneType None"),
    (lambda m: m.remember("x", tags=5), "tags", "tags must be a comma list or a list of strings, got int"),
    (lambda m: m.remember("x", source=5), "source", "source must be a string, got int"),
    (lambda m: m.remember(b"x"), "content", "content must be a string, got bytes"),
    (lambda m: m.link("a", "b", weight="0.5"), "weight", "weight must be a number, got str '0.5'"),
    (lambda m: m.link("a", "b", weight=float("nan")), "weight", "weight must be between 0.0 and 1.0, got nan"),
    (lambda m: m.show(7), "id", "id must be a string, got int"),
    (lambda m: m.recall(None), "query", "query must be a string, got NoneType"),
])
def test_library_wrong_types_are_validation_errors_naming_the_field(data_dir: Path, call, field, message) -> None:
    from mnemon_core import Memory
    from mnemon_core.errors import ValidationError

    with Memory() as m, pytest.raises(ValidationError) as e:
        call(m)
    assert (e.value.field, str(e.value)) == (field, message)
