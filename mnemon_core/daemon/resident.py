"""The resident engine as its clients see it: where it lives, whom to trust, the messages, starting and stopping
it. The standard library only (every served call imports it); `client.py` (the entry point) and `engine.py` (the
engine) both build on it, and so does `mnemon daemon` (`cli.py`).

What a call trusts, as ssh-agent's clients do: only a data directory of this user's that nobody else may write
(`private_dir`), only a socket in it that this user owns, and only a listener that runs as this user (its
SO_PEERCRED, checked before a byte is sent). Each engine is keyed by the code that serves it and the variables
its own process uses (`engine_key`), so two installations on one data directory each keep theirs.

A message is its length (HEADER_BYTES, big-endian) and that much JSON. A request's answer is a heartbeat at
once, one every HEARTBEAT_S while the command runs, then the answer (`exchange` waits FIRST_REPLY_TIMEOUT_S for
the first frame and BEAT_TIMEOUT_S for each next one).
"""

from __future__ import annotations

import os
import sys
import time

# Every served call imports this module: the standard library's C modules only where their Python wrappers cost a
# start (socket's enums, json's compiled patterns and hashlib's OpenSSL: ~8 ms a call together), no typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from _socket import socket
    from collections.abc import Sequence
    from typing import Any

# Variables the engine's own process uses (its temp dir; the proxies and CA certificates of its HTTP clients):
# an engine serves only calls whose values are its own, so they are part of its key.
PROCESS_VARIABLES = (
    "TMPDIR", "TMP", "TEMP", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
    "all_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR",
)
# What a served call sends of its environment: the variables the served commands read (config.py's settings
# and the embedders'), nothing else: not an LLM key, not a proxy password.
ENGINE_VARIABLES = frozenset({
    "HOME", "MNEMON_DATA_DIR", "MNEMON_STORE", "MNEMON_DATABASE_URL", "MNEMON_VECTOR_URL", "MNEMON_SESSION",
    "MNEMON_DEBUG",
    "MNEMON_EMBEDDER", "MNEMON_EMBED_MODEL", "MNEMON_EMBED_ENDPOINT", "MNEMON_EMBED_API_KEY",
    "MNEMON_EMBED_DIMENSIONS", "MNEMON_EMBED_PROTOCOL", "MNEMON_EMBED_TIMEOUT", "MNEMON_MAX_INSIGHTS",
    "MNEMON_AUTO_PRUNE_MIN_AGE", "MNEMON_OPLOG_MAX_AGE", "MNEMON_OPLOG_MAX_ROWS", "MNEMON_NUDGE_EVERY",
})
# What else the engine's process starts with, besides the served commands' variables (ENGINE_VARIABLES)
# and PROCESS_VARIABLES: what Python, the locale and the numeric libraries need to run, and the engine's own idle
# limit. Nothing more of its starter's environment: an LLM key or a cloud token in the shell that happened to
# start it has no business in a process that lives on (`/proc/<engine>/environ`).
RUN_VARIABLES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "MNEMON_DAEMON_IDLE",
})
ENGINE_PREFIX = "engine-"  # engine-<key>.sock (its socket), .json (its pid), .lock (held while it lives)
LOG_NAME = "engine.log"
PACKAGE = __name__.split(".")[0]  # mnemon_core: its version and its source files are the code an engine runs
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # this module is in daemon/
ENGINE_MODULE = f"{PACKAGE}.daemon.engine"  # `python -m` of it is an engine: started so, and so recognized
START_TIMEOUT_S = 30.0  # `daemon start` waits this long for a new engine to answer
CONNECT_TIMEOUT_S = 2.0
FIRST_REPLY_TIMEOUT_S = 5.0  # the engine answers every request at once (a heartbeat), whatever it then runs
BEAT_TIMEOUT_S = 15.0  # ... and beats every HEARTBEAT_S while the command runs; longer silence: it is stuck
HEARTBEAT_S = 1.0
STOP_WAIT_S = 40.0  # `daemon stop` waits for the process to exit (requests in flight get 30 s to finish)
HEADER_BYTES = 4  # a message is its length (4 bytes, big-endian) and that much JSON
MAX_MESSAGE = 1 << 30
MAX_SUN_PATH = 107  # bytes of a Unix socket path (Linux sun_path, less the terminating NUL)


def data_dir_of(args: Sequence[str], env: dict[str, str] | os._Environ[str]) -> str:
    """The data directory as `config.Settings.resolve` finds it: --data-dir > MNEMON_DATA_DIR > ~/.mnemon."""
    value = None
    for i, a in enumerate(args):
        if a == "--data-dir" and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith("--data-dir="):
            value = a.split("=", 1)[1]
    if not value:
        value = env.get("MNEMON_DATA_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~") or "/tmp",
                                                            ".mnemon")
    return os.path.abspath(os.path.expanduser(value))


def code_stamp() -> str:
    """Which code this is: the package version and the newest source file, so that an engine started before
    an upgrade (or an edit of an editable install) is not asked by the new code."""
    newest = count = 0
    pending = [PACKAGE_DIR]
    while pending:  # os.walk's tree (no symlinked directory followed), read through its directory entries
        try:
            entries = os.scandir(pending.pop())
        except OSError:
            continue
        with entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        pending.append(e.path)
                elif e.name.endswith(".py") and e.is_file():
                    newest = max(newest, e.stat().st_mtime_ns)
                    count += 1
    # the package's version, from the package already loaded (any of its modules is loaded after it): importing it
    # here made resident → mnemon_core → … → store.holder → resident a cycle
    version = sys.modules[PACKAGE].__version__
    return f"{version}:{count}:{newest}"


def engine_key(env: dict[str, str] | os._Environ[str]) -> str:
    """The engine a call may use: one of this code, this interpreter and these process variables."""
    try:
        from _blake2 import blake2b  # hashlib's own BLAKE2, without the OpenSSL that importing hashlib loads
    except ImportError:  # a Python built without it
        from hashlib import blake2b

    parts = [code_stamp(), sys.executable, *(f"{k}={env.get(k, '')}" for k in PROCESS_VARIABLES)]
    return blake2b("\0".join(parts).encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


def engine_file(key: str, suffix: str) -> str:
    return f"{ENGINE_PREFIX}{key}{suffix}"


def socket_path(data_dir: str | os.PathLike[str], key: str | None = None) -> str:
    """Where the engine of this code listens for `data_dir` (shown by `daemon status`)."""
    return os.path.join(os.path.realpath(data_dir), engine_file(key or engine_key(os.environ), ".sock"))


# ---------------------------------------------------------------- trust


def private_dir(path: str) -> int | None:
    """A descriptor of `path` when it is a directory of this user's that nobody else may write: not a symlink,
    owned by the effective uid, no group or other write bit. None otherwise. The engine and its clients meet
    only in such a directory, where nobody else can put a socket for a client to find."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        return None
    return fd


def address(fd: int, path: str, name: str) -> str:
    """The socket `name` in the directory open as `fd`: through /proc (the very directory checked, however
    long its path), else by its path when that fits a socket address."""
    if os.path.isdir("/proc/self/fd"):
        return f"/proc/self/fd/{fd}/{name}"
    full = os.path.join(path, name)
    if len(os.fsencode(full)) > MAX_SUN_PATH:
        raise OSError(f"socket path too long: {full}")
    return full


def peer_uid(sock: socket) -> int:
    """The user the process at the other end runs as (SO_PEERCRED: set by the kernel, not by that process)."""
    from _socket import SO_PEERCRED, SOL_SOCKET

    creds = sock.getsockopt(SOL_SOCKET, SO_PEERCRED, 12)  # struct ucred: pid, uid, gid (native ints)
    return int.from_bytes(creds[4:8], sys.byteorder)


def connect(data_dir: str | os.PathLike[str], key: str | None = None) -> socket | None:
    """A connection to the engine of this code for `data_dir`, or None: no engine, or none to trust (the
    directory is not this user's own, the socket not this user's, or another user listens on it)."""
    real = os.path.realpath(data_dir)
    fd = private_dir(real)
    if fd is None:
        return None
    try:
        return _connect_in(fd, real, engine_file(key or engine_key(os.environ), ".sock"))
    finally:
        os.close(fd)


def _connect_in(fd: int, path: str, name: str) -> socket | None:
    import stat

    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:  # no engine: a first call does not pay for a socket
        return None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
        return None
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(address(fd, path, name))
        if peer_uid(sock) != os.geteuid():  # before a byte is sent: whoever listens must be this user
            warn(f"ignored {os.path.join(path, name)}: another user listens on it")
            sock.close()
            return None
    except OSError:
        sock.close()
        return None
    return sock


# ---------------------------------------------------------------- talking to the engine


def send(sock: socket, message: dict[str, Any]) -> None:
    body = "".join(_json_encoder()(message, 0)).encode("ascii")
    sock.sendall(len(body).to_bytes(HEADER_BYTES, "big") + body)


def receive(sock: socket) -> dict[str, Any] | None:
    """One message, or None when the other side closed the connection first or sent something that is not
    a message (a JSON object within MAX_MESSAGE bytes)."""
    head = _exactly(sock, HEADER_BYTES)
    if head is None or int.from_bytes(head, "big") > MAX_MESSAGE:
        return None
    body = _exactly(sock, int.from_bytes(head, "big"))
    try:
        message = None if body is None else _json_loads(body)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


# JSON through json's own C encoder and scanner, set up as json.dumps (compact, ASCII) and json.loads set them up:
# importing json itself compiles its regular expressions (re, enum, functools), the most of a served call's start.


def _json_encoder() -> Any:
    from _json import encode_basestring_ascii, make_encoder

    def default(o: object) -> None:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    # markers (no cycle check: messages are trees), default, string encoder, indent, separators, sort_keys,
    # skipkeys, allow_nan
    return make_encoder(None, default, encode_basestring_ascii, None, ":", ",", False, False, True)


class _Decoding:
    """What json's C scanner reads of its decoder: json.loads's defaults."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


def _json_loads(body: bytes) -> Any:
    """json.loads(body) for a UTF-8 body: ValueError when it is not one JSON value."""
    from _json import make_scanner

    text = body.decode("utf-8").strip(" \t\n\r")  # UnicodeDecodeError is a ValueError
    try:
        value, end = make_scanner(_Decoding())(text, 0)
    except StopIteration:
        raise ValueError("no JSON value") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def _exactly(sock: socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def exchange(sock: socket, message: dict[str, Any]) -> dict[str, Any] | None:
    """Send one message and return the answer, skipping heartbeats; None when the engine closes the connection
    without one, says nothing within FIRST_REPLY_TIMEOUT_S, or falls silent for BEAT_TIMEOUT_S."""
    try:
        send(sock, message)
        sock.settimeout(FIRST_REPLY_TIMEOUT_S)
        while (reply := receive(sock)) is not None and "beat" in reply:
            sock.settimeout(BEAT_TIMEOUT_S)
        return reply
    except OSError:  # a timeout too
        return None
    finally:
        sock.close()


def ask(data_dir: str | os.PathLike[str], message: dict[str, Any], key: str | None = None) -> dict[str, Any] | None:
    """Send one message to the engine and return its answer (None: no engine, or it did not answer)."""
    sock = connect(data_dir, key)
    return None if sock is None else exchange(sock, message)


def release(data_dir: str, path: str) -> None:
    """Ask the engines of `data_dir` to close the stores that hold `path`, a file one process at a time may open
    (`store/holder.py`): an in-process call needs it."""
    real = os.path.realpath(data_dir)
    for key in engine_keys(real):
        ask(real, {"op": "release", "file": path}, key)


def warn(message: str) -> None:
    print(f"mnemon: warning: {message}", file=sys.stderr)


# ---------------------------------------------------------------- starting an engine


def start_after(data_dir: str) -> None:
    """After an in-process call: start an engine for its data directory when none is there or starting, and
    the directory is this user's own to write. A directory the engine cannot use is said in one line."""
    real = os.path.realpath(data_dir)
    fd = private_dir(real)
    if fd is None:
        return  # not made (a failed call), or not this user's own: no engine
    try:
        if not os.access(real, os.W_OK):
            return
        key = engine_key(os.environ)
        blocked = _blocked(fd, key)
        if blocked:
            warn(f"the engine cannot start: {os.path.join(real, blocked)} is in its way; remove it")
        elif not _starting(fd, key):
            start_engine(real, after_exit=True)
    except OSError as e:  # the call's own answer stands; the next call tries again
        warn(f"the engine could not start: {e.strerror or e}")
    finally:
        os.close(fd)


def _blocked(fd: int, key: str) -> str | None:
    """The engine's socket or state file name when something else has that name (a directory, a file)."""
    import stat

    for suffix, kind in ((".sock", stat.S_ISSOCK), (".json", stat.S_ISREG), (".lock", stat.S_ISREG)):
        name = engine_file(key, suffix)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if not kind(st.st_mode) or st.st_uid != os.geteuid():
            return name
    return None


def locked_elsewhere(lock: int, *, shared: bool = False) -> bool:
    """Whether another process holds a lock on the open file `lock` that a shared (else exclusive) one would wait
    for; asked without waiting, and `lock` is closed."""
    import fcntl

    try:
        fcntl.flock(lock, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(lock)
    return False


def _starting(fd: int, key: str) -> bool:
    """An engine holds the lock (it is starting up, or serving)."""
    try:
        lock = os.open(engine_file(key, ".lock"), os.O_RDONLY | os.O_CLOEXEC, dir_fd=fd)
    except FileNotFoundError:
        return False
    return locked_elsewhere(lock, shared=True)


def start_engine(real: str, *, after_exit: bool = False) -> None:
    """Start the engine for the data directory `real`, detached: its own session, stdin from /dev/null, output
    to the log (only those three descriptors: Python opens every other one non-inheritable). `posix_spawn`,
    not `subprocess`: no fork of this process and no import. With `after_exit` its start-up waits until this
    process has exited (a call that ran in-process)."""
    after = ["--after", str(os.getpid())] if after_exit else []
    os.posix_spawn(
        sys.executable, [sys.executable, "-m", ENGINE_MODULE, real, *after], engine_environment(os.environ),
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.path.join(real, LOG_NAME), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ],
        setsid=True,
    )


def engine_environment(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The variables an engine starts with: those it reads, and those its process needs to run."""
    keep = ENGINE_VARIABLES | RUN_VARIABLES | set(PROCESS_VARIABLES)
    return {k: v for k, v in env.items() if k in keep or k.startswith("LC_")}


# ---------------------------------------------------------------- mnemon daemon start|stop|status


def daemon(action: str, data_dir: str) -> dict[str, Any]:
    """What `mnemon daemon ACTION` prints; a start that fails raises (one error line, exit status 1)."""
    real = os.path.realpath(data_dir)
    key = engine_key(os.environ)
    if action == "start":
        return _start(real, key)
    if action == "stop":
        return _stop(real, key)
    reply = ask(real, {"op": "status"}, key)
    if reply is not None:
        return reply
    pid = engine_pid(real, key)
    return {"running": True, "pid": pid, "answering": False} if pid is not None else {"running": False}


def _start(real: str, key: str) -> dict[str, Any]:
    from ..errors import StoreError

    if not os.path.lexists(real):
        from pathlib import Path

        from ..config import make_private_dirs

        make_private_dirs(Path(real))
    if (fd := private_dir(real)) is None or not os.access(real, os.W_OK):
        raise StoreError(f"the engine serves only a data directory of this user's that no one else may write: "
                         f"{real} is not (MNEMON_DAEMON=off runs every command in-process)", path=real)
    try:
        blocked = _blocked(fd, key)
    finally:
        os.close(fd)
    if blocked:
        raise StoreError(f"the engine cannot start: {os.path.join(real, blocked)} is in its way; remove it", path=real)
    if (reply := ask(real, {"op": "status"}, key)) is not None:
        return reply
    start_engine(real)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        time.sleep(0.02)
        if (reply := ask(real, {"op": "status"}, key)) is not None:
            return reply
    raise StoreError(f"the engine did not start within {START_TIMEOUT_S:g} s; see {os.path.join(real, LOG_NAME)}",
                     path=real)


def _stop(real: str, key: str) -> dict[str, Any]:
    """Stop every engine of the data directory (this code's and any other's): asked over its socket, else by
    signal to the pid its state file names (once its command line shows it is that engine); then wait for the
    process to exit."""
    stopped: dict[str, int] = {}
    for other in engine_keys(real):
        pid = engine_pid(real, other)
        reply = ask(real, {"op": "stop"}, other)
        if pid is None and reply is not None and isinstance(reply.get("pid"), int):
            pid = reply["pid"]
        if pid is None:
            continue
        if reply is None:
            import signal

            os.kill(pid, signal.SIGTERM)
            os.kill(pid, signal.SIGCONT)  # a stopped engine takes the signal once it runs
        if not _wait_exit(pid, STOP_WAIT_S):
            import signal

            os.kill(pid, signal.SIGKILL)
            _wait_exit(pid, 5.0)
        stopped[other] = pid
    if not stopped:
        return {"running": False, "stopped": False}
    out: dict[str, Any] = {"running": False, "stopped": True, "pid": stopped.get(key, next(iter(stopped.values())))}
    others = sorted(pid for k, pid in stopped.items() if k != key)
    if key in stopped and others:
        out["others"] = others
    return out


def engine_keys(real: str) -> list[str]:
    """The keys of the engines whose state or socket files are in the data directory."""
    try:
        names = os.listdir(real)
    except OSError:
        return []
    keys = {n[len(ENGINE_PREFIX):].rsplit(".", 1)[0] for n in names
            if n.startswith(ENGINE_PREFIX) and n.endswith((".json", ".sock"))}
    return sorted(keys)


def engine_pid(real: str, key: str) -> int | None:
    """The pid in the engine's state file, if that process lives, is this user's, and is the engine of this data
    directory by its command line (a pid reused by another program is never signalled)."""
    import json

    try:
        with open(os.path.join(real, engine_file(key, ".json")), encoding="utf-8") as f:
            pid = json.load(f).get("pid")
        if not isinstance(pid, int) or pid <= 0 or os.stat(f"/proc/{pid}").st_uid != os.geteuid():
            return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except (OSError, ValueError, AttributeError):
        return None
    if ENGINE_MODULE.encode() not in argv:
        return None
    i = argv.index(ENGINE_MODULE.encode())
    return pid if i + 1 < len(argv) and argv[i + 1] == os.fsencode(real) else None


def _wait_exit(pid: int, timeout: float) -> bool:
    """Wait until `pid` has exited (it is not our child: its /proc entry goes, or it is a zombie)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return True
        if state in (b"Z", b"X"):
            return True
        time.sleep(0.02)
    return False
