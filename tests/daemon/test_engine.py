"""The resident engine (`engine.py`) and the client that talks to it (`client.py`): it serves the hot-path
commands warm with the in-process output, is private to its user, follows other writers, replaces itself when
the code changes, exits when idle, and a client whose engine is gone or mute still answers correctly."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import _alive, run_cli, stop_engines, unix_socket
import mnemon_core
from mnemon_core.daemon import client, resident
from mnemon_core.daemon.engine import Engine


@pytest.fixture
def engine_on(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MNEMON_DAEMON", "on")
    yield data_dir
    stop_engines(tmp_path)


def state_path(data_dir: Path) -> Path:
    return data_dir / resident.engine_file(resident.engine_key(os.environ), ".json")


def state(data_dir: Path) -> dict:
    """The running engine's state file, once it is there (the call that starts an engine runs in-process)."""
    path = state_path(data_dir)
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return json.loads(path.read_text(encoding="utf-8"))


def served_by_engine(data_dir: Path) -> None:
    """Wait until the engine answers (it starts after the first call)."""
    state(data_dir)
    deadline = time.monotonic() + 30
    while resident.ask(data_dir, {"op": "status"}) is None and time.monotonic() < deadline:
        time.sleep(0.02)


def test_the_engine_serves_what_the_process_prints(engine_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = run_cli("remember", "We chose Qdrant because filtering is fast", "--cat", "decision")
    assert first.code == 0 and first.err == ""  # in-process, while the engine starts
    served_by_engine(engine_on)
    pid = state(engine_on)["pid"]
    run_cli("remember", "Qdrant runs on staging", "--source", "ops")
    for args in (["recall", "why Qdrant?"], ["recall", "Qdrant", "--brief"], ["search", "qdrant"], ["status"],
                 ["log"], ["recall", "x", "--limit", "0"], ["show", "nope"], ["recall", "--bogus"]):
        served = run_cli(*args)
        alone = run_cli(*args, env={"MNEMON_DAEMON": "off"})
        if args[0] == "status":  # each read bumps the oplog
            served.out, alone.out = (json.dumps({k: v for k, v in json.loads(o).items() if "oplog" not in k})
                                     for o in (served.out, alone.out))
        assert (served.code, served.out, served.err) == (alone.code, alone.out, alone.err), args
    assert state(engine_on)["pid"] == pid  # one engine served them all


def test_hooks_are_served_with_their_input(engine_on: Path) -> None:
    run_cli("remember", "a memory for the prime line")
    served_by_engine(engine_on)
    for phase, payload in (("prime", "{}"), ("nudge", '{"stop_hook_active": false}'), ("remind", "")):
        served = run_cli("hook", phase, input=payload)
        alone = run_cli("hook", phase, input=payload, env={"MNEMON_DAEMON": "off"})
        assert (served.code, served.out, served.err) == (alone.code, alone.out, alone.err), phase
    bad = run_cli("hook", "nudge", input="[1]")
    assert (bad.code, bad.err) == (1, "Error: hook input must be a JSON object, got list\n")


def test_daemon_start_status_stop(engine_on: Path) -> None:
    assert run_cli("daemon", "status").json() == {"running": False}
    started = run_cli("daemon", "start").json()
    assert started["running"] is True and started["version"] == "0.1.0" and started["stores_open"] == []
    run_cli("remember", "a note")
    status = run_cli("daemon", "status").json()
    assert status["pid"] == started["pid"] and status["stores_open"] == ["default"] and status["uptime_s"] >= 0
    assert os.stat(resident.socket_path(engine_on)).st_mode & 0o777 == 0o600
    stopped = run_cli("daemon", "stop").json()
    assert stopped == {"running": False, "stopped": True, "pid": started["pid"]}
    assert not os.path.exists(resident.socket_path(engine_on)) and not state_path(engine_on).exists()
    deadline = time.monotonic() + 10
    while _alive(started["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(started["pid"])


def test_the_engine_starts_with_only_the_variables_it_reads(engine_on: Path) -> None:
    """Issue 37, item 8: the engine started by a call whose shell holds secrets keeps none of them in its process
    environment; it has the variables it reads (resident.ENGINE_VARIABLES) and what its process needs to run."""
    secrets = {"MNEMON_LLM_API_KEY": "sk-llm-secret", "OPENAI_API_KEY": "sk-openai-secret",
               "AWS_SECRET_ACCESS_KEY": "aws-secret", "GITHUB_TOKEN": "ghp-secret"}
    first = run_cli("remember", "a note", env=secrets)
    assert first.code == 0, first.err
    served_by_engine(engine_on)
    pid = state(engine_on)["pid"]
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    names = {item.split(b"=", 1)[0].decode() for item in raw.split(b"\0") if item}
    assert not names & set(secrets) and not any(v.encode() in raw for v in secrets.values())
    assert {"PATH", "MNEMON_DATA_DIR", "MNEMON_EMBEDDER"} <= names
    assert names <= resident.ENGINE_VARIABLES | resident.RUN_VARIABLES | set(resident.PROCESS_VARIABLES) | {
        n for n in names if n.startswith("LC_")}
    served = run_cli("recall", "note", env=secrets)
    assert served.code == 0 and served.json()["results"][0]["content"] == "a note"


def test_off_and_no_daemon_run_in_process(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_DAEMON", "on")
    assert run_cli("remember", "x", "--no-daemon").code == 0
    assert run_cli("recall", "x", env={"MNEMON_DAEMON": "off"}).code == 0
    assert not list(data_dir.glob("engine-*"))


def test_the_engine_sees_writes_of_other_processes(engine_on: Path) -> None:
    run_cli("remember", "alpha gateway timeout")
    assert [h["content"] for h in run_cli("recall", "gateway").json()["results"]] == ["alpha gateway timeout"]
    run_cli("remember", "beta gateway restarted", env={"MNEMON_DAEMON": "off"})  # another process writes
    got = [h["content"] for h in run_cli("recall", "gateway").json()["results"]]
    assert sorted(got) == ["alpha gateway timeout", "beta gateway restarted"]


def test_readonly_holds_in_the_engine(engine_on: Path) -> None:
    run_cli("remember", "kept")
    db = engine_on / "data" / "default" / "mnemon.db"
    before = db.read_bytes()
    r = run_cli("--readonly", "remember", "refused")
    assert (r.code, r.err) == (1, "Error: remember is unavailable with --readonly: database writes are disabled\n")
    assert run_cli("--readonly", "recall", "kept").code == 0
    assert db.read_bytes() == before


def test_an_idle_engine_exits(engine_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_DAEMON_IDLE", "1")
    pid = run_cli("daemon", "start").json()["pid"]
    deadline = time.monotonic() + 20
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid) and not os.path.exists(resident.socket_path(engine_on))


def test_the_first_call_runs_in_process_and_starts_a_warm_engine(engine_on: Path) -> None:
    run_cli("remember", "warm me", env={"MNEMON_DAEMON": "off"})
    first = run_cli("recall", "warm")
    assert first.code == 0 and first.err == "" and first.json()["results"][0]["content"] == "warm me"
    served_by_engine(engine_on)
    deadline = time.monotonic() + 30  # the engine starts after the first call and warms up on its own
    while not (status := run_cli("daemon", "status").json())["warm"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status["stores_open"] == ["default"]  # opened by the warm-up, before any call reached it
    second = run_cli("recall", "warm")
    assert (second.out, second.err) == (first.out, first.err)


# What a served call must not import: the standard library's heavier modules (json's and re's compiled patterns,
# socket's enums, hashlib's OpenSSL, typing, argparse, pathlib) and the in-process CLI. A served call costs the
# interpreter's start and the client, nothing more.
CLIENT_MUST_NOT_IMPORT = ("json", "socket", "hashlib", "re", "enum", "typing", "argparse", "pathlib", "dataclasses",
                          "struct", "shutil", "collections", "functools", "mnemon_core.faces.cli", "mnemon_core.once")


def test_a_served_call_imports_only_the_client(engine_on: Path) -> None:
    run_cli("remember", "a light client", env={"MNEMON_DAEMON": "off"})
    run_cli("daemon", "start")
    code = ("import sys\nbefore = set(sys.modules)\nfrom mnemon_core.daemon.client import main\ncode = main(['recall', 'light'])\n"
            f"print([m for m in {CLIENT_MUST_NOT_IMPORT!r} if m in sys.modules and m not in before], file=sys.stderr)\n"
            "sys.exit(code)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert (p.returncode, p.stderr) == (0, "[]\n")
    assert [h["content"] for h in json.loads(p.stdout)["results"]] == ["a light client"]


def test_a_served_call_leaves_without_finalizing_and_keeps_its_status(engine_on: Path) -> None:
    """`mnemon` (client.run) ends a call the engine answered at once: no finalization (nothing of it needs one),
    the engine's output and exit status intact; an in-process call finalizes as any program does."""
    run_cli("remember", "left at once", env={"MNEMON_DAEMON": "off"})
    run_cli("daemon", "start")
    code = ("import atexit, sys\natexit.register(lambda: print('finalized', file=sys.stderr))\n"
            "from mnemon_core.daemon.client import run\nsys.argv = ['mnemon', *sys.argv[1:]]\nsys.exit(run())")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}

    def call(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                              env={**env, **extra}, timeout=60)

    served, alone = call("recall", "left"), call("recall", "left", MNEMON_DAEMON="off")
    assert (served.returncode, served.stderr) == (0, "") and alone.stderr == "finalized\n"
    assert served.stdout == alone.stdout and json.loads(served.stdout)["results"][0]["content"] == "left at once"
    missing = call("show", "nope")
    assert missing.returncode == 1 and missing.stderr == call("show", "nope", MNEMON_DAEMON="off").stderr[
        :-len("finalized\n")] != ""


def test_engines_started_at_once_leave_one_serving(engine_on: Path) -> None:
    run_cli("remember", "one engine", env={"MNEMON_DAEMON": "off"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    engines = [subprocess.Popen([sys.executable, "-m", "mnemon_core.daemon.engine", str(engine_on)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(3)]
    try:
        served_by_engine(engine_on)
        deadline = time.monotonic() + 30
        while sum(p.poll() is None for p in engines) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = [p for p in engines if p.poll() is None]
        assert len(alive) == 1 and all(p.returncode == 0 for p in engines if p not in alive)
        assert run_cli("daemon", "status").json()["pid"] == alive[0].pid
        assert run_cli("recall", "engine").json()["results"][0]["content"] == "one engine"
    finally:
        run_cli("daemon", "stop")
        for p in engines:
            p.wait(timeout=30)


def test_a_first_calls_engine_starts_up_after_that_call_has_exited(engine_on: Path) -> None:
    run_cli("remember", "after you", env={"MNEMON_DAEMON": "off"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    starter = subprocess.Popen([sys.executable, "-c", (
        "import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-m', 'mnemon_core.daemon.engine', "
        f"{str(engine_on)!r}, '--after', str(os.getpid())], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        "time.sleep(1.5)")], env=env)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(resident.socket_path(engine_on)) and time.monotonic() < deadline:
            time.sleep(0.01)
        reply = resident.ask(engine_on, {"op": "status"})
        assert reply is not None and reply["running"] is True
        assert starter.poll() is not None
    finally:
        starter.wait(timeout=30)
        stop_engines(engine_on.parent)


def test_a_first_call_that_writes_nothing_leaves_no_engine_behind(engine_on: Path) -> None:
    bad = run_cli("--store", "nosuch", "recall", "x")
    assert bad.code == 1 and "store create" in bad.err
    time.sleep(0.5)
    assert not (engine_on / resident.LOG_NAME).exists() and resident.connect(engine_on) is None


def test_a_mute_engine_means_one_warning_and_the_right_answer(engine_on: Path) -> None:
    run_cli("remember", "the answer", env={"MNEMON_DAEMON": "off"})
    path = resident.socket_path(engine_on)
    mute = unix_socket(path, bind=True)
    mute.listen(8)
    stop = threading.Event()

    def hang_up() -> None:  # accept and close at once: an engine that died mid-call
        mute.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = mute.accept()
                conn.close()
            except TimeoutError:
                pass

    t = threading.Thread(target=hang_up)
    t.start()
    try:
        r = run_cli("recall", "answer")
        # a hook's standard input, read for the engine, is still the in-process run's input
        hook = run_cli("hook", "nudge", input='{"stop_hook_active": true}')
    finally:
        stop.set()
        t.join()
        mute.close()
        os.unlink(path)
    warning = "mnemon: warning: the engine did not answer; running in-process (MNEMON_DAEMON=off skips the engine)\n"
    assert r.code == 0 and r.json()["results"][0]["content"] == "the answer"
    assert r.err == warning
    assert (hook.code, hook.out, hook.err) == (0, "", warning)  # no nudge while the host's stop hook is active


def test_kill_9_loses_nothing_acknowledged(engine_on: Path) -> None:
    run_cli("daemon", "start")
    pid = state(engine_on)["pid"]
    texts = [f"note number {i} about the kill test" for i in range(16)]

    def remember(text: str):
        return run_cli("remember", text)

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(remember, t) for t in texts]
        time.sleep(1.0)
        os.kill(pid, signal.SIGKILL)  # mid-burst: some remembers done, some in flight, some not sent
        results = [f.result() for f in futures]
    # A call whose engine died after its commit says so (the rerun writes nothing); every other call answers.
    made = "Error: the resident engine made this call's write and stopped before it could answer"
    assert all(r.code == 0 or (r.code == 1 and made in r.err) for r in results), [r.err for r in results]
    acknowledged = {r.json()["id"] for r in results if r.code == 0}
    db = sqlite3.connect(engine_on / "data" / "default" / "mnemon.db")
    rows = dict(db.execute("SELECT id, content FROM insights WHERE deleted_at IS NULL").fetchall())
    assert acknowledged <= set(rows) and sorted(rows.values()) == sorted(texts)  # each exactly once
    assert db.execute("SELECT count(*) FROM insights_bm25").fetchone()[0] == len(texts)  # nothing half-written
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_deep_data_dir_is_served_through_its_descriptor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / ("d" * 120)  # its socket path is longer than a Unix socket address may be
    monkeypatch.setenv("MNEMON_DAEMON", "on")
    try:
        run_cli("--data-dir", str(deep), "remember", "a deep memory")
        served_by_engine(deep)
        assert len(os.fsencode(resident.socket_path(deep))) > resident.MAX_SUN_PATH
        r = run_cli("--data-dir", str(deep), "recall", "deep")
        assert (r.code, r.err) == (0, "") and r.json()["results"][0]["content"] == "a deep memory"
        assert run_cli("--data-dir", str(deep), "daemon", "status").json()["pid"] == state(deep)["pid"]
    finally:
        stop_engines(tmp_path)


@pytest.mark.parametrize("args, command", [
    (["recall", "x"], "recall"), (["--data-dir", "recall", "status"], "status"), (["--store=w", "show", "i"], "show"),
    (["--readonly", "log"], "log"), ([], None), (["--version"], None),
])
def test_the_command_word(args: list[str], command: str | None) -> None:
    assert client.command_of(args) == command


def test_which_calls_go_to_the_engine() -> None:
    on: dict[str, str] = {}
    assert client.wants_engine(["recall", "x"], on) and client.wants_engine(["remember", "x"], on)
    assert not client.wants_engine(["import", "f.json"], on)  # paths, stdin: in-process
    assert not client.wants_engine(["recall", "--help"], on) and not client.wants_engine(["--version"], on)
    assert not client.wants_engine(["recall", "x", "--no-daemon"], on)
    assert not client.wants_engine(["recall", "x"], {"MNEMON_DAEMON": "off"})


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20)


def framed(body: bytes) -> dict | None:
    """What `resident.receive` makes of one frame carrying `body`."""
    a, b = socket.socketpair()
    with a, b:
        a.sendall(len(body).to_bytes(resident.HEADER_BYTES, "big") + body)
        return resident.receive(b)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), JSON, max_size=6))
def test_a_message_arrives_as_json_sent_it(message: dict) -> None:
    a, b = socket.socketpair()
    with a, b:
        resident.send(a, message)
        assert resident.receive(b) == json.loads(json.dumps(message))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=40), st.builds(lambda v: json.dumps(v).encode(), JSON),
                 st.builds(lambda v, tail: json.dumps(v).encode() + tail, JSON, st.sampled_from([b" x", b"{}", b"1"]))))
def test_a_frame_is_read_as_json_loads_reads_it(body: bytes) -> None:
    try:  # a frame is UTF-8 (json.loads would also guess UTF-16 and UTF-32 from bytes)
        expected = json.loads(body.decode("utf-8"))
    except ValueError:
        expected = None
    assert framed(body) == (expected if isinstance(expected, dict) else None)


def test_frames_that_are_no_message() -> None:
    for body in (b"", b"  ", b"[1]", b'{"a": 1} {}', b'{"a": NaN}x', b"\xff{}", b'{"a": "\xc3"}', b'"text"'):
        assert framed(body) is None, body
    assert framed(b' {"a": [1, 2.5, -Infinity, null, true]} \n') == {"a": [1, 2.5, float("-inf"), None, True]}


def test_the_code_stamp_counts_the_package_sources_and_the_newest() -> None:
    here = Path(mnemon_core.__file__).resolve().parent  # the whole package, not the daemon/ folder
    files = [Path(root, f) for root, dirs, names in os.walk(here) if "__pycache__" not in Path(root).parts
             for f in names if f.endswith(".py")]
    newest = max(f.stat().st_mtime_ns for f in files)
    assert resident.code_stamp() == f"{mnemon_core.__version__}:{len(files)}:{newest}"


# A probe's start: the engine of the data directory argv[1], serving in a thread of the probe's process.
ENGINE_IN_THREAD = """
import json, os, sys, threading, time
from mnemon_core.daemon import client, resident
from mnemon_core.daemon.engine import Engine
data_dir = sys.argv[1]
engine = Engine(data_dir)
thread = threading.Thread(target=engine.run, daemon=True)
thread.start()
deadline = time.monotonic() + 60
while resident.ask(data_dir, {"op": "status"}) is None and time.monotonic() < deadline:
    time.sleep(0.01)
env = {k: v for k, v in os.environ.items() if k in client.ENGINE_VARIABLES}
"""
WARM_PROBE = ENGINE_IN_THREAD + """
before = set(sys.modules)
reply = resident.ask(data_dir, {"op": "run", "id": "0" * 32, "argv": ["recall", "warm"], "stdin": None,
                                "env": {**env, "MNEMON_DATA_DIR": data_dir}})
engine.stop()
thread.join(60)
print(json.dumps({"code": reply["code"], "new": sorted(set(sys.modules) - before)}))
"""


def test_the_warm_up_loads_what_the_first_served_recall_needs(engine_on: Path) -> None:
    """The engine binds its socket once warm: the first call it serves imports nothing more (a first served call
    that paid for the recall's modules came after calls that ran in-process meanwhile, and was the slowest)."""
    run_cli("remember", "warm start", env={"MNEMON_DAEMON": "off"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", WARM_PROBE, str(engine_on)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert json.loads(p.stdout.splitlines()[-1]) == {"code": 0, "new": []}, p.stderr
    assert "warm-up" not in p.stderr  # the engine's log: its warm-up met no fault


CACHE_PROBE = ENGINE_IN_THREAD + """
from mnemon_core.embed import local
calls = []
plain = local.LocalEmbedder._call
local.LocalEmbedder._call = staticmethod(lambda windows, *, query: calls.append(list(windows)) or plain(windows, query=query))
env["MNEMON_DATA_DIR"] = data_dir
seen = []
for n, argv in enumerate([["recall", "the job queue"], ["recall", "the job queue"], ["--readonly", "recall",
                          "the job queue"], ["recall", "another question"]]):
    before = len(calls)
    reply = resident.ask(data_dir, {"op": "run", "id": f"{n:032d}", "argv": argv, "stdin": None, "env": env})
    seen.append([reply["code"], len(calls) - before])
engine.stop()
thread.join(60)
print(json.dumps(seen))
"""


def test_a_repeated_query_is_not_embedded_again(engine_on: Path) -> None:
    """An agent recalls the same words on consecutive turns: the engine embeds them once, whichever of its warm
    Memory objects (here a readonly one too) serves the call; other words are embedded."""
    run_cli("remember", "Chose SQLite for the job queue", env={"MNEMON_DAEMON": "off", "MNEMON_EMBEDDER": "local"})
    env = {**os.environ, "MNEMON_EMBEDDER": "local",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", CACHE_PROBE, str(engine_on)], capture_output=True, text=True, env=env,
                       timeout=180)
    assert json.loads(p.stdout.splitlines()[-1]) == [[0, 1], [0, 0], [0, 0], [0, 1]], p.stderr


def test_the_engine_fills_in_the_vectors_an_import_queued(engine_on: Path, tmp_path: Path) -> None:
    """`import --vectors later` with the engine on: the import answers with its insights in, starts the engine,
    and the engine, idle, embeds the queued insights and links them; status comes down to none pending."""
    items = [{"content": f"The billing service was moved to the new cluster in week {i % 7 + 1}, after incident {i}."}
             for i in range(20)]
    path = tmp_path / "draft.json"
    path.write_text(json.dumps({"schema_version": "1", "source": "chat-export", "insights": items}), encoding="utf-8")
    env = {"MNEMON_EMBEDDER": "local"}
    r = run_cli("import", "--vectors", "later", str(path), env=env)
    assert r.code == 0 and r.json()["vectors_pending"] == 20, r.err
    assert "the resident engine fills them in when idle" in r.err
    deadline = time.monotonic() + 180
    while (pending := run_cli("status", env=env).json()["vectors_pending"]) and time.monotonic() < deadline:
        time.sleep(3)  # the engine fills only between requests (a second after the last one)
    assert pending == 0, (engine_on / "engine.log").read_text(encoding="utf-8")
    db = sqlite3.connect(engine_on / "data" / "default" / "mnemon.db")
    assert db.execute("SELECT count(embedding) FROM insights").fetchone()[0] == 20
    assert db.execute("SELECT count(*) FROM edges WHERE edge_type = 'semantic'").fetchone()[0] > 0
    db.close()
    assert "fill:" not in (engine_on / "engine.log").read_text(encoding="utf-8")
