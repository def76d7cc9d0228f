"""What only the Redis store has, beside the contract and the suites that run on every backend (`mem`): faults
are one line naming the URL with its password masked (a server that is down, refuses the credentials, or lacks
vector sets), writers in several processes at once lose nothing, `--readonly` writes nothing, and `mnemon migrate`
copies into and out of it. The server has no module loaded: the store needs none."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from redis_server import Server, free_port, fresh_store, missing

pytestmark = pytest.mark.skipif(bool(missing("redis")), reason=str(missing("redis")))


@pytest.fixture
def url(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh store on the session's module-less Redis, the CLI and `Memory()` pointed at it."""
    monkeypatch.setenv("MNEMON_DATABASE_URL", redis_url)
    monkeypatch.setenv("MNEMON_STORE", fresh_store())
    return redis_url


def keys(url: str) -> list[bytes]:
    import redis

    r = redis.Redis.from_url(url)
    try:
        return sorted(r.keys("*"))
    finally:
        r.close()


def test_a_server_that_is_down_is_one_line() -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    r = run_cli("--database-url", dead, "remember", "nowhere to go")
    assert (r.code, r.out) == (1, "")
    assert r.err.startswith(f"Error: cannot reach Redis at {dead}: ") and r.err.count("\n") == 1


def test_refused_credentials_are_one_line_with_the_password_masked() -> None:
    srv = Server(falkordb=False, extra=("--requirepass", "right-one"))
    try:
        wrong = f"redis://:not-the-password@127.0.0.1:{srv.port}/0"
        r = run_cli("--database-url", wrong, "remember", "refused")
        assert (r.code, r.out) == (1, "")
        assert r.err.startswith(f"Error: Redis at redis://:***@127.0.0.1:{srv.port}/0 refused the credentials: ")
        assert "not-the-password" not in r.err and r.err.count("\n") == 1
        right = f"redis://:right-one@127.0.0.1:{srv.port}/0"
        ok = run_cli("--database-url", right, "remember", "let in")
        assert ok.code == 0, ok.err
        assert "right-one" not in run_cli("--database-url", right, "status").out
    finally:
        srv.stop()


@pytest.fixture
def without_vector_sets() -> Iterator[str]:
    """A server that speaks Redis's protocol and, like a Redis before 8, knows no VADD (or anything else)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    def serve(conn: socket.socket) -> None:
        with conn:
            buf = b""
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                while buf.startswith(b"*") and buf.count(b"\r\n") >= 1 + 2 * int(buf[1:buf.index(b"\r\n")]):
                    n = int(buf[1:buf.index(b"\r\n")])
                    parts = buf.split(b"\r\n")
                    words = [parts[2 + 2 * i].upper() for i in range(n)]
                    buf = b"\r\n".join(parts[1 + 2 * n:])
                    if words[0] == b"PING":
                        conn.sendall(b"+PONG\r\n")
                    else:
                        conn.sendall(b"-ERR unknown command '" + words[0] + b"'\r\n")

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        listener.close()


def test_a_redis_without_vector_sets_is_one_line(without_vector_sets: str) -> None:
    r = run_cli("--database-url", without_vector_sets, "remember", "no vector sets")
    assert (r.code, r.out) == (1, "")
    assert r.err == (f"Error: Redis at {without_vector_sets} has no vector sets (VADD): a Redis 8 or later is "
                     "needed\n")


def test_readonly_needs_the_store_and_writes_nothing(url: str) -> None:
    name = run_cli("store", "list").out  # nothing made
    r = run_cli("--readonly", "recall", "x")
    store = __import__("os").environ["MNEMON_STORE"]
    assert (r.code, r.out, r.err) == (1, "", f"Error: store \"{store}\" does not exist (use 'mnemon store create "
                                             f"{store}' first)\n")
    assert store not in name
    assert run_cli("remember", "Deploys freeze on Fridays", "--cat", "decision").code == 0
    before = keys(url)
    r = run_cli("--readonly", "remember", "blocked")
    assert (r.code, r.err) == (1, "Error: remember is unavailable with --readonly: database writes are disabled\n")
    found = run_cli("--readonly", "recall", "deploys friday")
    assert found.code == 0 and [h["content"] for h in found.json()["results"]] == ["Deploys freeze on Fridays"]
    assert keys(url) == before


def test_writers_in_several_processes_at_once_lose_nothing(url: str, tmp_path: Path) -> None:
    """Three processes remember ten insights each at the same time: all thirty are there, each with its oplog
    row, and the backbone joins them in one chain (each writer saw the others' commits)."""
    code = ("import sys; from mnemon_core import Memory\n"
            "with Memory() as m:\n"
            "    for i in range(10): m.remember(f'writer {sys.argv[1]} note {i} about the cache')\n")
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(w)], env=env, stderr=subprocess.PIPE, text=True)
             for w in range(3)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
        p.stderr.close()
    from mnemon_core import Memory

    with Memory() as m:
        s = m.store
        assert s.count_active() == 30 and s.count_log() == 30
        assert sorted(i.content for i in s.iter_active()) == sorted(
            f"writer {w} note {i} about the cache" for w in range(3) for i in range(10))


def test_migrate_into_and_out_of_redis_is_lossless(url: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite → Redis → Redis (another database of the server), each verified by its checksum; the copy recalls
    as its source."""
    from mnemon_core import Memory

    monkeypatch.delenv("MNEMON_DATABASE_URL")
    with Memory() as m:
        a = m.remember("Alice chose SQLite for the cache", entities=["Alice"], tags=["db"]).id
        b = m.remember("Bob moved the cache to Redis because of latency", entities=["Bob"]).id
        m.link(a, b, type="causal", weight=0.7)
        m.remember("an old note to forget")
        m.forget(m.search("old note")[0].id)
        want = [h.id for h in m.recall("why did the cache move to Redis").results]
    second = url.rsplit("/", 1)[0] + "/1"
    r = run_cli("migrate", "--from", "sqlite:", "--to", url)
    assert r.code == 0, r.err
    out = r.json()
    assert (out["insights"], out["active"], out["deleted"], out["verified"]) == (3, 2, 1, True)
    again = run_cli("migrate", "--from", url, "--to", second)
    assert again.code == 0, again.err
    assert again.json()["checksum"] == out["checksum"]
    with Memory(database_url=second) as copy:
        assert [h.id for h in copy.recall("why did the cache move to Redis").results] == want
    refused = run_cli("migrate", "--from", "sqlite:", "--to", second)
    assert refused.code == 1 and "is not empty (2 insights, " in refused.err


def test_stores_are_key_prefixes_of_one_database(url: str) -> None:
    assert run_cli("remember", "current store fact").code == 0
    assert run_cli("store", "create", "team-a").code == 0
    assert run_cli("--store", "team-a", "remember", "team a fact").code == 0
    assert "team-a" in run_cli("store", "list").out
    assert [h["content"] for h in run_cli("--store", "team-a", "search", "fact").json()] == ["team a fact"]
    assert [h["content"] for h in run_cli("search", "fact").json()] == ["current store fact"]
    assert run_cli("store", "remove", "team-a").out == 'Removed store "team-a"\n'
    assert not [k for k in keys(url) if k.startswith(b"mnemon:{team-a}")]
    assert json.loads(run_cli("status").out)["total_insights"] == 1
