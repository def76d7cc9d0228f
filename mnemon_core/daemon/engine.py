"""The resident engine of one data directory: `python -m mnemon_core.daemon.engine DATA_DIR` (started by the client,
`client.py`, on the first call that needs it).

It serves only a data directory of its user's that nobody else may write (`resident.private_dir`), listens on
`DATA_DIR/engine-<key>.sock` (mode 0600; the key names its code and process variables, `resident.engine_key`),
and answers only a peer that runs as its user (SO_PEERCRED). Each request runs in a thread of its own through
the same `cli.main` the in-process CLI runs, called as `cli.call(argv, env, stdin)` with the request's
arguments, variables and input and streams of its own (nothing global is patched), and the engine sends back
what it printed and its exit status; while a command runs it sends a heartbeat every HEARTBEAT_S, so a
client tells a long command from a stuck engine. A request whose client has hung up before it starts is
dropped; a request's write records its id (`once.py`), so a client's in-process rerun never doubles it.

What it keeps warm: `Memory` objects per configuration (store, embedder, readonly, …), so the embedding model,
the vector matrix and the recall memo are loaded once. A request takes an idle one or a new one: no request
waits for another, as no in-process call waits for another process. The Memory objects of one embedder
configuration share one embedder, so its vector cache (model, query or passage, text: `embed/base.py`) answers an
agent that recalls the same words on consecutive turns without embedding them again, whichever Memory serves.
Before each command the Memory lets go of a store whose file was removed or replaced (`store remove`, a
restore), so no write goes to a file nobody reads.

Behind the requests it fills in the vectors large imports queued (`write/importer.py`): while no request runs
(FILL_AFTER_IDLE_S after the last one), one import batch at a time, in a thread at low priority, for every
writable configuration it has served or been asked to fill (`{"op": "fill"}`, which `mnemon import` sends).
A request that arrives meanwhile waits at most for one short call of the model (`embed/local.py`:
CALL_TOKENS), and no new batch starts until it is answered.

It exits after `MNEMON_DAEMON_IDLE` seconds without a request (default 300; not while it fills), on `mnemon
daemon stop`, on SIGTERM, and when its socket or its data directory is gone. Its state file
`engine-<key>.json` (pid, start time, code), its lock `engine-<key>.lock` (held for its life, so two started at
once never both serve) and the shared log `engine.log` sit in the data directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections import OrderedDict
from contextvars import ContextVar
from typing import Any

from . import resident

IDLE_DEFAULT_S = 300.0
AFTER_WAIT_S = 5.0  # how long a first call's engine waits for that call's process to end before starting up
MAX_IDLE_MEMORIES = 8  # warm Memory objects kept while no request uses them
PER_CALL = frozenset({"session"})  # Settings fields a command passes with each call instead
ACCEPT_POLL_S = 0.5  # how often the accept loop looks at the idle clock, the stop flag, the socket and the dir
REQUEST_TIMEOUT_S = 5.0  # a connection must send its whole request within this long
STOP_GRACE_S = 30.0  # requests in flight get this long to finish after a stop
WARM_NICE = 10  # the warm-up's priority: below the calls that run in-process meanwhile
WARM_QUERY = "warm up"  # the warm-up's recall (readonly: it counts no access)
FILL_AFTER_IDLE_S = 1.0  # the vector fill starts a batch only this long after the last request ended
FILL_POLL_S = 0.5  # how often an idle filler looks for queued vectors
FILL_RETRY_S = 60.0  # after a fill failed (the embedder down), how long before that configuration is tried again

class _Heartbeat:
    """The frames of one request's answer: a beat at once (a client that has hung up is found here, and its
    request is dropped unrun), a beat every HEARTBEAT_S while the command runs, then the answer."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.beats = 0

    def start(self) -> bool:
        if not self._send({"beat": 0}):
            return False
        threading.Thread(target=self._beat, daemon=True).start()
        return True

    def _beat(self) -> None:
        while not self.done.wait(resident.HEARTBEAT_S):
            if not self._send({"beat": self.beats}):
                return

    def _send(self, message: dict[str, Any]) -> bool:
        with self.lock:
            if self.done.is_set() and "beat" in message:
                return False
            self.beats += 1
            try:
                resident.send(self.conn, message)
            except OSError:  # the client went away
                return False
            return True

    def answer(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.done.set()
        self._send(message)


class Engine:
    def __init__(self, data_dir: str) -> None:
        self.data_dir = os.path.realpath(data_dir)
        self.key = resident.engine_key(os.environ)
        self.socket_name = resident.engine_file(self.key, ".sock")
        self.state_name = resident.engine_file(self.key, ".json")
        self.stamp = resident.code_stamp()
        self.started = time.time()
        self.last_request = time.monotonic()
        self.idle_s = _idle_seconds(os.environ.get("MNEMON_DAEMON_IDLE"))
        self.stopping = threading.Event()
        self.active = 0  # requests received and not yet answered
        self.lock = threading.RLock()  # reentrant: SIGTERM's handler (stop) may run while the main thread holds it
        # key → the idle Memory objects of that configuration, least recently used first; a request takes one
        # (or a new one) for its whole run and gives it back, so requests never wait for each other.
        self.memories: OrderedDict[tuple[Any, ...], list[Any]] = OrderedDict()
        self.busy: dict[tuple[Any, ...], int] = {}
        self.lent: set[Any] = set()  # the Memory objects requests are using
        self.doomed: set[Any] = set()  # of those, the ones to close when given back (`release`)
        self.embedders: dict[tuple[Any, ...], Any] = {}  # the embedder settings → the one embedder they share
        # The writable configurations whose queued vectors the filler looks for, with when it may next try.
        self.fill_targets: dict[tuple[Any, ...], tuple[Any, float]] = {}
        self.filling = False  # the filler is writing a batch: the engine is not idle
        self.memories_lock = threading.Lock()
        self.server: socket.socket | None = None
        self.dir_fd: int | None = None
        self.lock_fd: int | None = None
        self.socket_id: tuple[int, int] | None = None  # (device, inode) of the socket this engine bound
        self.warm = threading.Event()  # the warm-up is over (the store, model and vectors are loaded)
        self.parser: Any = None  # cli's parser, built once the engine serves

    # ------------------------------------------------------------------ life

    def run(self, after: int | None = None) -> None:
        """Serve until stopped. `after`: the pid of the call that started this engine (its parent); the start-up
        waits (a few seconds at most) until that call's process has exited, so as not to slow its end down.
        Then it warms up before its socket exists, mostly at a low priority (WARM_NICE): calls meanwhile run
        in-process, and the start-up gives way to them for the CPU. Only a warm engine binds its socket."""
        if not self._claim():
            return
        if after is not None:
            _wait_for_exit(after, AFTER_WAIT_S)
        from ..store import holder

        holder.in_engine = True  # the files it holds are asked of it; it waits for the others (`release`)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.stop())
        try:
            self._warm()
            server = self.server = None if self.stopping.is_set() else self._listen()
            if server is None:
                return
            _log(f"engine {os.getpid()} serving {os.path.join(self.data_dir, self.socket_name)} (code {self.stamp})")
            threading.Thread(target=self._filler, daemon=True).start()
            while not self.stopping.is_set():
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    with self.lock:
                        idle = (self.active == 0 and not self.filling
                                and time.monotonic() - self.last_request > self.idle_s)
                    if idle or self._gone():
                        self.stop()
                    continue
                except OSError:  # the listener was closed: stopping
                    break
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
        finally:
            self._close()
            holder.in_engine = False

    def _claim(self) -> bool:
        """Open the data directory (this user's own only) and take this key's lock; False: another engine of
        this key lives, or the directory is not one to serve."""
        import fcntl

        self.dir_fd = resident.private_dir(self.data_dir)
        if self.dir_fd is None:
            _log(f"not serving {self.data_dir}: not a directory of this user's that no one else may write")
            return False
        try:
            self.lock_fd = os.open(resident.engine_file(self.key, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC |
                                   os.O_NOFOLLOW, 0o600, dir_fd=self.dir_fd)
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:  # BlockingIOError: held by a live engine of this key
            if not isinstance(e, BlockingIOError):
                _log(f"not serving {self.data_dir}: its lock file: {e.strerror or e}")
            self._release()
            return False
        return True

    def _listen(self) -> socket.socket | None:
        """Bind the socket (a stale one of an engine that died goes first) and write the state file."""
        import stat

        assert self.dir_fd is not None
        try:
            st = os.stat(self.socket_name, dir_fd=self.dir_fd, follow_symlinks=False)
            if not stat.S_ISSOCK(st.st_mode):
                _log(f"not serving: {os.path.join(self.data_dir, self.socket_name)} is not a socket; remove it")
                return None
            os.unlink(self.socket_name, dir_fd=self.dir_fd)
        except FileNotFoundError:
            pass
        # Bound and listening under a temporary name, then renamed: a client finds the socket only once it answers.
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        tmp = f"{self.socket_name}.{os.getpid()}"
        old = os.umask(0o177)  # only the main thread runs yet
        try:
            server.bind(resident.address(self.dir_fd, self.data_dir, tmp))
            server.listen(64)
            st = os.stat(tmp, dir_fd=self.dir_fd, follow_symlinks=False)
            self.socket_id = (st.st_dev, st.st_ino)
            self._write_state()
            os.rename(tmp, self.socket_name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except OSError as e:
            _log(f"not serving {self.data_dir}: {e}")
            server.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.dir_fd)
            return None
        finally:
            os.umask(old)
        server.settimeout(ACCEPT_POLL_S)
        return server

    def _gone(self) -> bool:
        """The socket is no longer the one this engine bound (deleted, replaced), or the data directory is
        gone: nobody can reach this engine any more, so it exits."""
        assert self.dir_fd is not None
        try:
            st = os.stat(self.socket_name, dir_fd=self.dir_fd, follow_symlinks=False)
            here, opened = os.stat(self.data_dir), os.fstat(self.dir_fd)
        except OSError:
            return True
        return ((st.st_dev, st.st_ino) != self.socket_id or (here.st_dev, here.st_ino) != (opened.st_dev, opened.st_ino)
                or opened.st_nlink == 0)

    def stop(self) -> None:
        """Stop taking requests at once: the listener closes and the socket and state files go now (when they
        are still this engine's), so the next client starts a new engine instead of reaching this one;
        requests in flight finish."""
        with self.lock:
            if self.stopping.is_set():
                return
            self.stopping.set()
            if self.server is not None:
                self.server.close()
            if self.dir_fd is not None and self.socket_id is not None and not self._gone():
                for name in (self.socket_name, self.state_name):
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=self.dir_fd)

    def _release(self) -> None:
        for fd in (self.lock_fd, self.dir_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)  # closing the lock file releases the lock: the next engine may start
        self.lock_fd = self.dir_fd = None

    def _close(self) -> None:
        self.stop()
        deadline = time.monotonic() + STOP_GRACE_S
        while (self.active or self.filling) and time.monotonic() < deadline:  # requests and a fill in flight end
            time.sleep(0.01)
        with self.memories_lock:
            idle = [m for ms in self.memories.values() for m in ms]
            self.memories.clear()
        for mem in idle:
            with contextlib.suppress(Exception):
                mem.close()
        self._release()

    def _write_state(self) -> None:
        assert self.dir_fd is not None
        state = json.dumps({"pid": os.getpid(), "started": self.started, "code": self.stamp, "key": self.key})
        tmp = self.state_name + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600,
                     dir_fd=self.dir_fd)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(state)
        os.replace(tmp, self.state_name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)

    # ------------------------------------------------------------------ requests

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                if resident.peer_uid(conn) != os.geteuid():
                    return
                conn.settimeout(REQUEST_TIMEOUT_S)  # a connection that never sends is hung up on
                request = resident.receive(conn)
                if request is None:
                    return
                with self.lock:
                    self.active += 1
                    self.last_request = time.monotonic()
                try:
                    self._answer(request, conn)
                finally:
                    with self.lock:
                        self.active -= 1
                        self.last_request = time.monotonic()
        except OSError:
            pass  # the client went away; its transaction (if any) committed or rolled back as in-process

    def _answer(self, request: dict[str, Any], conn: socket.socket) -> None:
        op = request.get("op")
        if op == "status":
            resident.send(conn, self.status())
        elif op == "stop":
            self.stop()
            resident.send(conn, {"pid": os.getpid(), "stopping": True})
        elif op == "release" and isinstance(request.get("file"), str):
            resident.send(conn, {"released": self.release(request["file"])})
        elif op == "fill" and self._here(request.get("env")):
            self._want_fill(request["env"])
            resident.send(conn, {"filling": True})
        elif op == "run" and self._serves(request):
            beats = _Heartbeat(conn)
            if not beats.start():
                return  # its client has hung up: dropped before it ran
            beats.answer(self._run(request["argv"], request["env"], request.get("stdin"), request["id"]))

    def _serves(self, request: dict[str, Any]) -> bool:
        """A well-formed request for this engine's data directory (the client resolves it and sends it)."""
        argv = request.get("argv")
        return (self._here(request.get("env")) and isinstance(argv, list) and all(isinstance(a, str) for a in argv)
                and isinstance(request.get("id"), str) and isinstance(request.get("stdin"), (str, type(None))))

    def _here(self, env: Any) -> bool:
        """Process variables (names and values text) that name this engine's data directory."""
        return (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
                and os.path.realpath(env.get("MNEMON_DATA_DIR", "")) == self.data_dir)

    def _run(self, argv: list[str], env: dict[str, str], stdin: str | None, request_id: str) -> dict[str, Any]:
        from ..faces import cli
        from .. import once

        held: list[tuple[tuple[Any, ...], Any]] = []
        tokens = (_held.set(held), once.begin(request_id))
        try:  # every command's Memory comes from the warm cache
            code, out, err = cli.call(argv, env, stdin, parser=self.parser, memories=self._memory)
        finally:
            self._give_back(held)
            once.end(tokens[1])
            _held.reset(tokens[0])
        return {"code": code, "out": out, "err": err}

    def _want_fill(self, env: dict[str, str]) -> None:
        """Fill the queued vectors of the configuration these variables name (`mnemon import` asks it)."""
        from ..config import Settings
        from ..console import own

        try:
            with own(env):
                settings = Settings.resolve(origin="cli")
        except Exception as e:  # noqa: BLE001 - a bad variable: the import said its own error already
            _log(f"fill: {type(e).__name__}: {e}")
            return
        self._fill_target(settings)

    def _fill_target(self, settings: Any) -> None:
        if not settings.readonly and settings.embedder != "none":
            with self.memories_lock:
                self.fill_targets.setdefault(_memory_key(settings), (settings, 0.0))

    def _filler(self) -> None:
        """The vector fill (see the module's docstring), in its own thread at WARM_NICE until the engine stops.
        The thread's OpenMP workers are its own, at its priority."""
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, 0, WARM_NICE)
        while not self.stopping.wait(FILL_POLL_S):
            with self.lock:
                if self.active or time.monotonic() - self.last_request < FILL_AFTER_IDLE_S:
                    continue
            with self.memories_lock:
                due = [(k, st) for k, (st, after) in self.fill_targets.items() if after <= time.monotonic()]
            for key, settings in due:
                if self.stopping.is_set() or self.active:
                    break
                self._fill_one(key, settings)

    def _fill_one(self, key: tuple[Any, ...], settings: Any) -> None:
        """One import batch of this configuration's queue, through a warm Memory taken like a request's."""
        with self.lock:
            if self.stopping.is_set() or self.active:
                return
            self.filling = True
        held: list[tuple[tuple[Any, ...], Any]] = []
        token = _held.set(held)
        try:
            mem = self._memory(settings)
            if mem.store.count_queued():
                mem.fill_vectors(batches=1, stop=self.stopping.is_set)  # a stop leaves the batch queued
            else:  # nothing (more) to fill: an import that queues more asks again
                with self.memories_lock:
                    self.fill_targets.pop(key, None)
        except Exception as e:  # noqa: BLE001 - the embedder down, the store gone: try again later
            _log(f"fill: {type(e).__name__}: {e}")
            with self.memories_lock:
                self.fill_targets[key] = (settings, time.monotonic() + FILL_RETRY_S)
        finally:
            self._give_back(held)
            _held.reset(token)
            with self.lock:
                self.filling = False

    def _warm(self) -> None:
        """Build the CLI's parser, open the store the client that started the engine uses (its variables are
        this process's), fill its recall memo, load the embedding model and the vector matrix, and answer one
        `--readonly recall` (the modules and tables a first call would load), so the first served call finds
        them ready. Reads only. All of it but numpy's import runs in a thread of low priority (a thread's nice
        value is its own on Linux): numpy's BLAS pool, which later calls use, starts at its import in the
        importing thread and keeps that thread's priority; the model's OpenMP pool belongs to the thread that
        calls the model, so a request gets its own at the request's priority."""
        import numpy  # noqa: F401 - its thread pool starts now, in this thread

        held: list[tuple[tuple[Any, ...], Any]] = []
        token = _held.set(held)  # the warm-up reads this process's variables (`console.environ`)
        try:
            _at_low_priority(self._warm_reads)
        except Exception as e:  # noqa: BLE001 - a request will meet the same fault and report it
            _log(f"warm-up: {type(e).__name__}: {e}")
        finally:
            self._give_back(held)
            _held.reset(token)
            self.warm.set()

    def _warm_reads(self) -> None:
        mem = self._open_warm()
        if mem is None:
            return  # nothing stored yet: do not create the store
        mem.warm()
        env = {**os.environ, "MNEMON_DATA_DIR": self.data_dir}  # as a client of this process's variables sends it
        answer = self._run(["--readonly", "recall", WARM_QUERY], env, None, os.urandom(16).hex())
        if answer["code"] != 0:
            _log(f"warm-up recall: {answer['err'].strip()}")
        with self.memories_lock:  # the readonly Memory of that recall is not kept (its own store and memo)
            for key in [k for k, ms in self.memories.items() if ms and ms[0].settings.readonly]:
                self.busy.pop(key, None)
                for other in self.memories.pop(key):
                    other.close()

    def _open_warm(self) -> Any:
        """The parser, and the warm-up's Memory with its store open (None when there is no store yet)."""
        from ..faces import cli
        from ..config import Settings

        self.parser = cli.built_parser()  # built per call in-process; here once (2.7 ms a call)
        settings = Settings.resolve(data_dir=self.data_dir, origin="cli")
        if not settings.db_path.exists() and settings.database_url is None:
            return None
        mem = self._memory(settings)
        mem.store  # noqa: B018 - opened (and migrated) now
        return mem

    def _memory(self, settings: Any) -> Any:
        """A warm `Memory` of these settings for this request: one per configuration that shapes what it does
        (store, embedder, readonly, limits …; not the remember session, which the CLI passes with each call),
        idle or new; given back when the request ends (`_give_back`)."""
        from ..memory import Memory

        key = _memory_key(settings)
        self._fill_target(settings)
        with self.memories_lock:
            idle = self.memories.setdefault(key, [])
            self.memories.move_to_end(key)
            mem = idle.pop() if idle else None
            self.busy[key] = self.busy.get(key, 0) + 1
        if mem is None:
            mem = Memory(settings=settings, embedder=self._embedder(settings))
        with self.memories_lock:
            self.lent.add(mem)
        _held.get().append((key, mem))
        if mem.reopen_if_replaced():  # the idle others of that store hold the old file too: let them go now
            with self.memories_lock:
                stale, self.memories[key] = self.memories.get(key, []), []
            for other in stale:
                with contextlib.suppress(Exception):
                    other.close()
        return mem

    def release(self, path: str) -> int:
        """Let a file one process at a time may open go (an in-process call waits for it: `store/holder.py`):
        the idle Memory objects whose store holds it are closed now, the ones requests use when given back. The
        next request opens it again, waiting its turn. How many were closed now."""
        from ..stores import held_files

        with self.memories_lock:
            idle = []
            for key, ms in self.memories.items():
                keep = [m for m in ms if path not in held_files(m.settings)]
                idle += [m for m in ms if path in held_files(m.settings)]
                self.memories[key] = keep
            self.doomed |= {m for m in self.lent if path in held_files(m.settings)}
        for mem in idle:
            with contextlib.suppress(Exception):
                mem.close()
        return len(idle)

    def _embedder(self, settings: Any) -> Any:
        """The embedder of these settings, one per embedder configuration (its cache and model shared), or UNSET
        when the settings name none that can be built (the Memory then meets and reports the fault itself)."""
        from ..config import UNSET
        from ..embed import get_embedder
        from ..errors import MnemonError

        key = tuple(sorted((k, str(v)) for k, v in vars(settings).items() if k.startswith("embed")))
        with self.memories_lock:
            if key not in self.embedders:
                try:
                    self.embedders[key] = get_embedder(settings)
                except MnemonError:
                    return UNSET
            return self.embedders[key]

    def _give_back(self, held: list[tuple[tuple[Any, ...], Any]]) -> None:
        """The request's Memory objects are idle again; past MAX_IDLE_MEMORIES, the least recently used idle
        ones are closed (never one a request uses), and so are those whose file was asked for (`release`)."""
        surplus = []
        with self.memories_lock:
            for key, mem in held:
                self.busy[key] -= 1
                self.lent.discard(mem)
                if mem in self.doomed:
                    self.doomed.discard(mem)
                    surplus.append(mem)
                    continue
                self.memories.setdefault(key, []).append(mem)
            excess = sum(len(ms) for ms in self.memories.values()) - MAX_IDLE_MEMORIES
            for key in list(self.memories):
                while excess > 0 and self.memories[key]:
                    surplus.append(self.memories[key].pop(0))
                    excess -= 1
                if not self.memories[key] and not self.busy.get(key):
                    del self.memories[key]
                    self.busy.pop(key, None)
        held.clear()
        for mem in surplus:
            with contextlib.suppress(Exception):
                mem.close()

    def status(self) -> dict[str, Any]:
        from .. import __version__

        with self.memories_lock:
            stores = sorted({m.settings.store for ms in self.memories.values() for m in ms})
        return {
            "running": True, "pid": os.getpid(), "uptime_s": round(time.time() - self.started, 1),
            "stores_open": stores, "warm": self.warm.is_set(), "version": __version__, "code": self.stamp,
            "idle_timeout_s": self.idle_s,
            "socket": os.path.join(self.data_dir, self.socket_name),
        }


def _memory_key(settings: Any) -> tuple[Any, ...]:
    """The configuration a warm Memory serves: every setting but those a command passes with each call."""
    return tuple(sorted((k, str(v)) for k, v in vars(settings).items() if k not in PER_CALL))


_held: ContextVar[list[tuple[tuple[Any, ...], Any]]] = ContextVar("mnemon_engine_held")


def _at_low_priority(work: Any) -> Any:
    """`work()` in a thread of its own at WARM_NICE (in this thread's context), and its result."""
    import contextvars

    out: list[Any] = []
    failed: list[BaseException] = []
    context = contextvars.copy_context()

    def run() -> None:
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, 0, WARM_NICE)
        try:
            out.append(context.run(work))
        except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join()
    if failed:
        raise failed[0]
    return out[0]


def _log(message: str) -> None:
    from ..redact import redact

    print(redact(message), file=sys.__stderr__, flush=True)


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
        print("usage: python -m mnemon_core.daemon.engine DATA_DIR [--after PID]", file=sys.stderr)
        return 2
    Engine(args[0]).run(after=int(args[2]) if len(args) == 3 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
