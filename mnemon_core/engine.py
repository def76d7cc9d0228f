"""The resident engine of one data directory: `python -m mnemon_core.engine DATA_DIR` (started by the client,
`client.py`, on the first call that needs it).

It listens on `DATA_DIR/engine.sock` (mode 0600; every connection's peer must be this user; a data directory
too deep for a socket path uses one under the temp dir, `client.socket_path`), runs each request
in a thread of its own through the same `cli.main` the in-process CLI runs — with the request's arguments,
environment and working directory — and sends back what it printed and its exit status. What it keeps warm
between requests: one `Memory` per distinct configuration (store, embedder, readonly, …), so the embedding
model, the vector matrix and the recall memo are loaded once. Writes are the same store transactions as
in-process, and the memo follows writes of other processes through the store's committed graph counter.

It exits after `MNEMON_DAEMON_IDLE` seconds without a request (default 300), on `mnemon daemon stop`, on
SIGTERM, or when a client of other code asks (it says "restart" and stops, and the client starts a new one).
Its state file `engine.json` (pid, start time, code), its log `engine.log` and its lock `engine.lock` (held by the
engine that binds the socket, so two started at once never both serve) sit in the data directory.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

from . import client

IDLE_DEFAULT_S = 300.0
LOCK_NAME = "engine.lock"  # held by the engine that binds the socket
AFTER_WAIT_S = 5.0  # how long a first call's engine waits for that call's process to end before starting up
MAX_MEMORIES = 8  # warm Memory objects kept (distinct stores / configurations)
PER_CALL = frozenset({"session"})  # Settings fields a command passes with each call instead
ACCEPT_POLL_S = 0.5  # how often the accept loop looks at the idle clock and the stop flag

# The output of the request the current thread serves (None: the engine's own output, to its log).
_capture: ContextVar[tuple[io.StringIO, io.StringIO] | None] = ContextVar("mnemon_engine_capture", default=None)


class _ThreadStream(io.TextIOBase):
    """sys.stdout / sys.stderr of the engine: each request thread writes into its own buffer."""

    def __init__(self, fallback: TextIO, which: int) -> None:
        self._fallback = fallback
        self._which = which

    def _target(self) -> TextIO:
        cap = _capture.get()
        return cap[self._which] if cap is not None else self._fallback

    def write(self, s: str) -> int:
        return self._target().write(s)

    def flush(self) -> None:
        self._target().flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def isatty(self) -> bool:
        return False


class _ThreadInput(io.TextIOBase):
    """sys.stdin of the engine: a request thread reads the input its client sent (None: a terminal)."""

    def _source(self) -> io.StringIO | None:
        return _stdin.get()

    def read(self, size: int | None = -1) -> str:
        src = self._source()
        return "" if src is None else src.read(size)

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        src = self._source()
        return "" if src is None else src.readline(size)

    def isatty(self) -> bool:
        return self._source() is None


class Engine:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.socket_path = Path(client.socket_path(data_dir))
        self.state_path = data_dir / client.PID_NAME
        self.stamp = client.code_stamp()
        self.started = time.time()
        self.last_request = time.monotonic()
        self.idle_s = _idle_seconds(os.environ.get("MNEMON_DAEMON_IDLE"))
        self.stopping = threading.Event()
        self.active = 0
        self.lock = threading.Lock()
        # key → (Memory, its lock), least recently used first. A request holds its Memory's lock from the moment
        # it gets it to its end: one store connection serves one command at a time, so a read never runs inside
        # another request's write transaction and transactions keep the in-process rules.
        self.memories: OrderedDict[tuple[Any, ...], tuple[Any, threading.RLock]] = OrderedDict()
        self.memories_lock = threading.Lock()
        self.server: socket.socket | None = None
        self.lock_file: TextIO | None = None
        self.warm = threading.Event()  # the warm-up is over (the store, model and vectors are loaded)

    # ------------------------------------------------------------------ life

    def run(self, after: int | None = None) -> None:
        """Serve until stopped. `after`: the pid of the call that started this engine (its parent); the heavy
        start-up waits (a few seconds at most) until that call's process has exited, so as not to slow its end
        down; calls that come meanwhile wait in the listen queue."""
        server = self.server = self._listen()
        if server is None:
            return
        if after is not None:
            _wait_for_exit(after, AFTER_WAIT_S)
        from . import cli, config

        saved = (cli.memory_cache, sys.stdout, sys.stderr, sys.stdin, config.environment)
        cli.memory_cache = self._memory  # every command's Memory comes from the warm cache
        sys.stdout = _ThreadStream(sys.stdout, 0)  # type: ignore[assignment]
        sys.stderr = _ThreadStream(sys.stderr, 1)  # type: ignore[assignment]
        sys.stdin = _ThreadInput()  # type: ignore[assignment]
        config.environment = _request_env.get  # type: ignore[assignment]
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.stop())
        self._write_state()
        threading.Thread(target=self._warm, daemon=True).start()
        print(f"engine {os.getpid()} serving {self.socket_path} (code {self.stamp})", file=sys.__stderr__, flush=True)
        try:
            while not self.stopping.is_set():
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    with self.lock:
                        idle = self.active == 0 and time.monotonic() - self.last_request > self.idle_s
                    if idle:
                        self.stop()
                    continue
                except OSError:  # the listener was closed: stopping
                    break
                with self.lock:
                    self.active += 1
                    self.last_request = time.monotonic()
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
        finally:
            self._close(server)
            cli.memory_cache, sys.stdout, sys.stderr, sys.stdin, config.environment = saved  # an engine run in a thread

    def _listen(self) -> socket.socket | None:
        """Bind the socket, unless another engine holds it or is starting (then this one exits). The lock
        file is held from before the bind until `stop`, so two engines started at once never both bind."""
        import fcntl

        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.lock_file = open(self.data_dir / LOCK_NAME, "a")  # noqa: SIM115 - held for the engine's life
        try:
            fcntl.flock(self.lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.lock_file.close()
            return None
        if client.connect(self.data_dir) is not None:
            return None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()  # a stale socket of an engine that died
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            server.bind(os.fsencode(self.socket_path))
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        server.listen(64)
        server.settimeout(ACCEPT_POLL_S)
        return server

    def stop(self) -> None:
        """Stop taking requests at once: the listener closes and the socket and state files go now, so the next
        client starts a new engine instead of reaching this one; requests in flight finish."""
        with self.lock:
            if self.stopping.is_set():
                return
            self.stopping.set()
            if self.server is not None:
                self.server.close()
            for path in (self.socket_path, self.state_path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            if self.lock_file is not None:
                self.lock_file.close()  # releases the lock: the next engine may bind while this one finishes

    def _close(self, server: socket.socket) -> None:
        self.stop()
        deadline = time.monotonic() + 30
        while self.active and time.monotonic() < deadline:  # let requests in flight finish their transaction
            time.sleep(0.01)
        with self.memories_lock:
            for mem, _lock in self.memories.values():
                with contextlib.suppress(Exception):
                    mem.close()

    def _write_state(self) -> None:
        state = {"pid": os.getpid(), "started": self.started, "code": self.stamp}
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, self.state_path)

    # ------------------------------------------------------------------ requests

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                if not _same_user(conn):
                    return
                request = client.receive(conn)
                if request is not None:
                    client.send(conn, self._answer(request))
        except OSError:
            pass  # the client went away; its transaction (if any) committed or rolled back as in-process
        finally:
            with self.lock:
                self.active -= 1
                self.last_request = time.monotonic()

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "status":
            return self.status()
        if op == "stop":
            self.stop()
            return {"pid": os.getpid(), "stopping": True}
        if request.get("stamp") != self.stamp:
            self.stop()
            return {"restart": "the installed code changed"}
        return self._run(request["argv"], request.get("env", {}), request.get("stdin"))

    def _run(self, argv: list[str], env: dict[str, str], stdin: str | None = None) -> dict[str, Any]:
        from . import cli

        out, err = io.StringIO(), io.StringIO()
        held: list[threading.RLock] = []
        tokens = (_capture.set((out, err)), _request_env.set(env), _held.set(held),
                  _stdin.set(None if stdin is None else io.StringIO(stdin)))
        try:
            code = cli.main(argv)
        except SystemExit as e:  # argparse's usage errors and --help
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                err.write(e.code + "\n")
        finally:
            for lock in held:
                lock.release()
            _capture.reset(tokens[0])
            _request_env.reset(tokens[1])
            _held.reset(tokens[2])
            _stdin.reset(tokens[3])
        return {"code": code, "out": out.getvalue(), "err": err.getvalue()}

    def _warm(self) -> None:
        """Open the store the client that started the engine uses (its variables are this process's), load
        the embedding model and the vector matrix, so the next call finds them ready. Reads only."""
        from .config import Settings
        from .recall.graph import graph_view

        tokens = (_request_env.set(dict(os.environ)), _held.set([]))
        try:
            mem = self._memory(Settings.resolve(data_dir=self.data_dir, origin="cli"))
            if not mem.settings.db_path.exists() and mem.settings.database_url is None:
                return  # nothing stored yet: do not create the store
            store = mem.store
            graph_view(store).sync()
            emb = mem.embedder
            vecs = mem.embed_texts(["warm up"], query=True) if emb is not None else None
            if emb is not None and vecs is not None:
                store.vector_matrix(emb.name, int(vecs.shape[1]))
        except Exception as e:  # noqa: BLE001 - a request will meet the same fault and report it
            print(f"warm-up: {type(e).__name__}: {e}", file=sys.__stderr__, flush=True)
        finally:
            for lock in _held.get():
                lock.release()
            _request_env.reset(tokens[0])
            _held.reset(tokens[1])
            self.warm.set()

    def _memory(self, settings: Any) -> Any:
        """The warm `Memory` of these settings: one per configuration that shapes what it does (store,
        embedder, readonly, limits …; not the remember session, which the CLI passes with each call), the
        least recently used closed past MAX_MEMORIES."""
        from .memory import Memory

        key = tuple(sorted((k, str(v)) for k, v in vars(settings).items() if k not in PER_CALL))
        with self.memories_lock:
            entry = self.memories.get(key)
            if entry is None:
                entry = self.memories[key] = (Memory(settings=settings), threading.RLock())
                while len(self.memories) > MAX_MEMORIES:
                    _, (old, old_lock) = self.memories.popitem(last=False)
                    with old_lock:  # not while a request uses it
                        old.close()
            self.memories.move_to_end(key)
        mem, lock = entry
        lock.acquire()  # released when the request ends (`_run`)
        _held.get().append(lock)
        return mem

    def status(self) -> dict[str, Any]:
        from . import __version__

        with self.memories_lock:
            stores = sorted({m.settings.store for m, _lock in self.memories.values()})
        return {
            "running": True, "pid": os.getpid(), "uptime_s": round(time.time() - self.started, 1),
            "stores_open": stores, "warm": self.warm.is_set(), "version": __version__, "code": self.stamp,
            "idle_timeout_s": self.idle_s,
            "socket": str(self.socket_path),
        }


_request_env: ContextVar[dict[str, str]] = ContextVar("mnemon_engine_env", default={})
_held: ContextVar[list[threading.RLock]] = ContextVar("mnemon_engine_held")
_stdin: ContextVar[io.StringIO | None] = ContextVar("mnemon_engine_stdin", default=None)


def _same_user(conn: socket.socket) -> bool:
    """SO_PEERCRED: the connecting process runs as this user (the socket's mode already says so)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


def _idle_seconds(text: str | None) -> float:
    try:
        value = float(text) if text else IDLE_DEFAULT_S
    except ValueError:
        value = IDLE_DEFAULT_S
    return value if value > 0 else IDLE_DEFAULT_S


def _wait_for_exit(parent: int, timeout: float) -> None:
    """Wait until the process that started this one (`parent`) has exited: then this one is re-parented."""
    deadline = time.monotonic() + timeout
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.005)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 3) or (len(args) == 3 and (args[1] != "--after" or not args[2].isdigit())):
        print("usage: python -m mnemon_core.engine DATA_DIR [--after PID]", file=sys.stderr)
        return 2
    Engine(Path(args[0])).run(after=int(args[2]) if len(args) == 3 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
