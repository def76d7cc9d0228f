"""What only the stores on a Redis server have (Redis 8, FalkorDB), beside the contract and the suites that run on
every backend (`mem`): faults are one line naming the URL with its password masked (a server that is down,
refuses the credentials, or lacks what the store needs: vector sets, the FalkorDB module), writers in several
processes at once lose nothing, `--readonly` writes nothing, `mnemon migrate` copies into and out of them, and
the stores of one database are apart. The Redis tests run on a server without any module: the store needs none."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, checked_backend, fill_for_migration, run_cli
from redis_server import Server, free_port, fresh_store

NAMES = {"redis": "Redis", "falkordb": "FalkorDB"}


@pytest.fixture(params=["redis", "falkordb"])
def server(request: pytest.FixtureRequest) -> str:
    return checked_backend(request.param)


@pytest.fixture
def url(server: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh store on the session's server, the CLI and `Memory()` pointed at it."""
    url = request.getfixturevalue(f"{server}_url")
    monkeypatch.setenv("MNEMON_DATABASE_URL", url)
    monkeypatch.setenv("MNEMON_STORE", fresh_store())
    return url


def client(url: str):  # noqa: ANN201
    import redis

    return redis.Redis.from_url(url.replace("falkordb://", "redis://"))


def state(url: str) -> dict[bytes, object]:
    """Every key of mnemon's on the server and its value: serialized (`DUMP`), a FalkorDB graph as its nodes and
    relationships (its serialized form changes with reads)."""
    r = client(url)
    try:
        out: dict[bytes, object] = {}
        for k in sorted(r.keys("mnemon*")):
            if r.type(k) == b"graphdata":
                out[k] = [r.execute_command("GRAPH.RO_QUERY", k, q)[1] for q in (
                    "MATCH (n) RETURN labels(n), properties(n) ORDER BY n.id, labels(n)",
                    "MATCH (a)-[e]->(b) RETURN a.id, type(e), b.id, properties(e) ORDER BY a.id, type(e), b.id")]
            else:
                out[k] = r.dump(k)
        return out
    finally:
        r.close()


def second_database(url: str) -> str:
    """The same server's database 1."""
    return url.rsplit("/", 1)[0] + "/1" if url.startswith("redis://") else url + "/1"


def test_a_server_that_is_down_is_one_line(server: str) -> None:
    dead = f"{server}://127.0.0.1:{free_port()}" + ("/0" if server == "redis" else "")
    r = run_cli("--database-url", dead, "remember", "nowhere to go")
    assert (r.code, r.out) == (1, "")
    assert r.err.startswith(f"Error: cannot reach {NAMES[server]} at {dead}: ") and r.err.count("\n") == 1


def test_refused_credentials_are_one_line_with_the_password_masked(server: str) -> None:
    srv = Server(falkordb=server == "falkordb", extra=("--requirepass", "right-one"))
    try:
        wrong = srv.url(server).replace("://", "://:not-the-password@")
        r = run_cli("--database-url", wrong, "remember", "refused")
        assert (r.code, r.out) == (1, "")
        masked = srv.url(server).replace("://", "://***@")
        assert r.err.startswith(f"Error: {NAMES[server]} at {masked} refused the credentials: ")
        assert "not-the-password" not in r.err and r.err.count("\n") == 1
        right = srv.url(server).replace("://", "://:right-one@")
        ok = run_cli("--database-url", right, "remember", "let in")
        assert ok.code == 0, ok.err
        assert "right-one" not in run_cli("--database-url", right, "status").out
    finally:
        srv.stop()


@pytest.fixture
def knows_only_ping() -> Iterator[int]:
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
        yield port
    finally:
        listener.close()


def test_a_redis_without_vector_sets_is_one_line(knows_only_ping: int) -> None:
    checked_backend("redis")
    url = f"redis://127.0.0.1:{knows_only_ping}/0"
    r = run_cli("--database-url", url, "remember", "no vector sets")
    assert (r.code, r.out) == (1, "")
    assert r.err == f"Error: Redis at {url} has no vector sets (VADD): a Redis 8 or later is needed\n"


def test_a_redis_without_the_falkordb_module_is_one_line(redis_server: Server) -> None:
    """falkordb:// pointed at a Redis without the module: one line, and nothing written on that server."""
    checked_backend("falkordb")
    url = redis_server.url("falkordb")
    before = state(redis_server.url())
    r = run_cli("--database-url", url, "remember", "no graphs here")
    assert (r.code, r.out) == (1, "")
    assert r.err == (f"Error: FalkorDB at {url} does not know GRAPH.QUERY: a Redis with the FalkorDB module "
                     "(redis-server --loadmodule falkordb.so) is needed\n")
    assert state(redis_server.url()) == before


def test_readonly_needs_the_store_and_writes_nothing(url: str) -> None:
    store = os.environ["MNEMON_STORE"]
    r = run_cli("--readonly", "recall", "x")
    assert (r.code, r.out, r.err) == (1, "", f"Error: store \"{store}\" does not exist (use 'mnemon store create "
                                             f"{store}' first)\n")
    assert store not in run_cli("store", "list").out  # nothing made
    assert run_cli("remember", "Deploys freeze on Fridays", "--cat", "decision").code == 0
    before = state(url)
    r = run_cli("--readonly", "remember", "blocked")
    assert (r.code, r.err) == (1, "Error: remember is unavailable with --readonly: database writes are disabled\n")
    found = run_cli("--readonly", "recall", "deploys friday")
    assert found.code == 0 and [h["content"] for h in found.json()["results"]] == ["Deploys freeze on Fridays"]
    assert state(url) == before


def test_writers_in_several_processes_at_once_lose_nothing(url: str) -> None:
    """Three processes remember ten insights each at the same time: all thirty are there, each with its oplog
    row (each writer saw the others' commits)."""
    code = ("import sys; from mnemon_core import Memory\n"
            "with Memory() as m:\n"
            "    for i in range(10): m.remember(f'writer {sys.argv[1]} note {i} about the cache')\n")
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


def test_migrate_into_and_out_of_the_server_is_lossless(url: str, data_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite → the server → another database of the server, each verified by its checksum; the copy recalls
    as its source."""
    from mnemon_core import Memory

    monkeypatch.delenv("MNEMON_DATABASE_URL")
    with Memory() as m:
        want = fill_for_migration(m)
    second = second_database(url)
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


def test_migrate_between_redis_and_falkordb(redis_url: str, falkordb_url: str, data_dir: Path) -> None:
    """Redis → FalkorDB → SQLite-free round: each copy verified by its checksum."""
    checked_backend("redis")
    checked_backend("falkordb")
    from mnemon_core import Memory

    store = fresh_store()
    with Memory(database_url=redis_url, store=store) as m:
        a = m.remember("Carol set the cache TTL to an hour", entities=["Carol"]).id
        m.link(a, m.remember("the cache TTL halves the database load").id, type="causal", weight=0.6)
    r = run_cli("--store", store, "migrate", "--from", redis_url, "--to", falkordb_url)
    assert r.code == 0, r.err
    back = run_cli("--store", store, "migrate", "--from", falkordb_url, "--to", second_database(redis_url))
    assert back.code == 0, back.err
    assert back.json()["checksum"] == r.json()["checksum"] and r.json()["insights"] == 2


def test_stores_are_apart_in_one_database(server: str, url: str) -> None:
    """Each store its own keys (on FalkorDB its own graph too); removing one leaves no key of it."""
    from mnemon_core.store.falkordb import FalkorStore
    from mnemon_core.store.redis import RedisStore

    cls = RedisStore if server == "redis" else FalkorStore
    assert run_cli("remember", "current store fact").code == 0
    assert run_cli("store", "create", "team-a").code == 0
    assert run_cli("--store", "team-a", "remember", "team a fact").code == 0
    assert "team-a" in run_cli("store", "list").out
    assert [h["content"] for h in run_cli("--store", "team-a", "search", "fact").json()] == ["team a fact"]
    assert [h["content"] for h in run_cli("search", "fact").json()] == ["current store fact"]
    if server == "falkordb":
        graphs = client(url).execute_command("GRAPH.LIST")
        assert {cls.prefix("team-a").encode() + b"g", cls.prefix(os.environ["MNEMON_STORE"]).encode() + b"g"} <= \
            set(graphs)
    assert run_cli("store", "remove", "team-a").out == 'Removed store "team-a"\n'
    assert not [k for k in state(url) if k.startswith(cls.prefix("team-a").encode())]
    assert json.loads(run_cli("status").out)["total_insights"] == 1


text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=40)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=text, tags=st.lists(text, max_size=3), ei=st.floats(0, 1), weight=st.floats(0, 1),
       meta=st.dictionaries(text, text, max_size=2))
def test_what_is_stored_is_read_back_exactly(url: str, content: str, tags: list[str], ei: float, weight: float,
                                             meta: dict[str, str]) -> None:
    """Any text (quotes, backslashes, newlines, any script) and any double come back from the server as written,
    read by a process that did not write them (FalkorDB answers a double with 15 digits: its exact text is kept)."""
    from mnemon_core.models import Edge, Insight
    from mnemon_core.store import open_store
    from mnemon_core.config import Settings

    settings = Settings.resolve()
    a = Insight(id="a" + os.urandom(4).hex(), content=content, tags=tags, entities=tags, source=content,
                created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z")
    b = a.model_copy(update={"id": "b" + a.id[1:]})
    e = Edge(source_id=a.id, target_id=b.id, edge_type="semantic", weight=weight, metadata=meta,
             created_at="2026-01-01T00:00:00Z")
    writer = open_store(settings)
    try:
        with writer.transaction():
            writer.insert_insight(a, {"t"})
            writer.insert_insight(b, {"t"})
            writer.set_effective_importance({a.id: ei})
            writer.upsert_edge(e)
        writer.shared.mirror = None  # type: ignore[attr-defined]  # read back from the server
        assert writer.get_insight(a.id) == a.model_copy(update={"effective_importance": ei})
        assert writer.get_insight(b.id) == b
        assert writer.edges_of([a.id]) == [e]
    finally:
        writer.close()
