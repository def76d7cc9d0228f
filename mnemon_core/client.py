"""The `mnemon` entry point: hand the command to the data directory's resident engine, or run it in-process.

Agents call the CLI on every turn, and a fresh Python process pays for importing the engine (pydantic, numpy),
loading the embedding model and filling the recall memo every time. The engine (`engine.py`) does that once
per data directory and serves the commands of the hot path over a Unix socket in the data directory; this
module, which imports only the standard library, is all a call costs besides the engine's own work.

- Served by the engine: the commands in `ENGINE_COMMANDS`. Everything else (help, `--version`, `import`,
  `extract`, `mcp serve`, …) runs in-process, as does every command with `MNEMON_DAEMON=off` or `--no-daemon`.
- The engine runs the very same `cli.main` on the same arguments and environment and sends back what it
  printed and the exit status, so the output is byte for byte the in-process output.
- The first call that needs the engine runs in-process (so it costs what a cold call always did) and then
  starts the engine (detached, its own session, log in the data dir), which warms up for the next calls.
  If the engine does not answer or dies mid-call, the call runs in-process after one warning line. An engine
  of another version of the code is stopped and replaced.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

# The client is the whole start-up cost of a served call: no typing, socket or json until a call needs them,
# and paths are strings (pathlib costs a start ~10 ms).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any

# Commands an agent runs every turn; the engine serves them from warm memory.
ENGINE_COMMANDS = frozenset(
    {"remember", "recall", "search", "show", "related", "link", "forget", "gc", "status", "log", "embed", "hook"}
)
STDIN_COMMANDS = frozenset({"hook"})  # their standard input (a host's JSON) goes to the engine with the call
# Global flags that take a value (so the value is not taken for the command).
VALUE_FLAGS = frozenset({"--data-dir", "--store", "--embed-model", "--database-url"})
NO_DAEMON_FLAG = "--no-daemon"
OFF = frozenset({"off", "0", "false", "no"})
SOCKET_NAME = "engine.sock"
PID_NAME = "engine.json"
LOG_NAME = "engine.log"
START_TIMEOUT_S = 30.0  # the engine's start imports the engine and opens the store; the first call waits for it
CONNECT_TIMEOUT_S = 2.0
REPLY_TIMEOUT_S = 600.0  # a command's own work (an embed of a large store) may take long
HEADER_BYTES = 4  # a message is its length (4 bytes, big-endian) and that much JSON
MAX_SUN_PATH = 107  # bytes of a Unix socket path (Linux sun_path, less the terminating NUL)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # what `cli` prints, without building its parser
        from . import __version__

        print(f"mnemon {__version__}")
        return 0
    from_engine, start = serve_remotely(args) if wants_engine(args, os.environ) else (None, False)
    if from_engine is not None:
        return from_engine
    from .cli import main as in_process

    try:
        return in_process(args)
    finally:
        # After the call, so the engine's start-up does not compete with it for the CPU; and only for a data
        # directory the call found or made and may write (a failed call writes nothing, not even a log).
        data_dir = data_dir_of(args, os.environ)
        if start and os.path.isdir(data_dir) and os.access(data_dir, os.W_OK):
            try:
                start_engine(data_dir, after_exit=True)
            except OSError as e:  # the call's own answer stands; the next call tries again
                warn(f"the engine could not start: {e.strerror or e}")


def command_of(args: Sequence[str]) -> str | None:
    """The command word of an argument list, skipping global flags and their values."""
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in VALUE_FLAGS:
            skip = True
        elif not a.startswith("-"):
            return a
    return None


def wants_engine(args: Sequence[str], env: dict[str, str] | os._Environ[str]) -> bool:
    if env.get("MNEMON_DAEMON", "").strip().lower() in OFF or NO_DAEMON_FLAG in args:
        return False
    if any(a in ("-h", "--help", "--version") for a in args):
        return False
    return command_of(args) in ENGINE_COMMANDS


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


def absolute_data_dir(args: Sequence[str]) -> list[str]:
    """`args` with a relative --data-dir made absolute: the engine runs in another working directory (none of
    the ENGINE_COMMANDS takes another path)."""
    out = list(args)
    for i, a in enumerate(out):
        if a == "--data-dir" and i + 1 < len(out):
            out[i + 1] = os.path.abspath(os.path.expanduser(out[i + 1]))
        elif a.startswith("--data-dir="):
            out[i] = "--data-dir=" + os.path.abspath(os.path.expanduser(a.split("=", 1)[1]))
    return out


def code_stamp() -> str:
    """Which code this is: the package version and the newest source file, so that an engine started before
    an upgrade (or an edit of an editable install) is replaced rather than asked."""
    here = os.path.dirname(os.path.realpath(__file__))
    newest = 0
    count = 0
    for root, dirs, files in os.walk(here):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(root, f)).st_mtime_ns)
                count += 1
    from . import __version__

    return f"{__version__}:{count}:{newest}"


# ---------------------------------------------------------------- talking to the engine


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    import json

    body = json.dumps(message, ensure_ascii=True).encode("ascii")
    sock.sendall(len(body).to_bytes(HEADER_BYTES, "big") + body)


def receive(sock: socket.socket) -> dict[str, Any] | None:
    """One message, or None when the other side closed the connection first."""
    import json

    head = _exactly(sock, HEADER_BYTES)
    if head is None:
        return None
    body = _exactly(sock, int.from_bytes(head, "big"))
    return None if body is None else json.loads(body)


def _exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def socket_path(data_dir: str | os.PathLike[str]) -> str:
    """`DATA_DIR/engine.sock`; where that path is too long for a Unix socket (deep directories), a socket named
    by a hash of the data directory in a directory of this user's only, under the temp dir."""
    path = os.path.join(data_dir, SOCKET_NAME)
    if len(os.fsencode(path)) <= MAX_SUN_PATH:
        return path
    import hashlib
    import tempfile

    short = os.path.join(tempfile.gettempdir(), f"mnemon-{os.getuid()}")
    os.makedirs(short, mode=0o700, exist_ok=True)
    return os.path.join(short, hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:24] + ".sock")


def connect(data_dir: str | os.PathLike[str]) -> socket.socket | None:
    path = socket_path(data_dir)
    if not os.path.exists(path):  # no engine: a first call does not pay for importing socket
        return None
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(os.fsencode(path))
    except OSError:
        sock.close()
        return None
    sock.settimeout(REPLY_TIMEOUT_S)
    return sock


def start_engine(data_dir: str, *, after_exit: bool = False) -> None:
    """Start the engine for `data_dir`, detached: its own session, stdin from /dev/null, output to the log
    (only those three descriptors: Python opens every other one non-inheritable). `posix_spawn`, not
    `subprocess`: no fork of this process and no import. With `after_exit` its start-up waits until this
    process has exited (a call that ran in-process)."""
    after = ["--after", str(os.getpid())] if after_exit else []
    log = os.path.join(data_dir, LOG_NAME)
    os.posix_spawn(
        sys.executable, [sys.executable, "-m", "mnemon_core.engine", os.fspath(data_dir), *after], dict(os.environ),
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ],
        setsid=True,
    )


def engine_socket(data_dir: str | os.PathLike[str], *, start: bool) -> socket.socket | None:
    """A connection to the running engine; with `start`, one started for it (waiting up to START_TIMEOUT_S)."""
    sock = connect(data_dir)
    if sock is not None or not start:
        return sock
    os.makedirs(data_dir, exist_ok=True)
    start_engine(os.fspath(data_dir))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        time.sleep(0.01)
        sock = connect(data_dir)
        if sock is not None:
            return sock
    return None


def exchange(sock: socket.socket, message: dict[str, Any]) -> dict[str, Any] | None:
    """Send one message and return the answer (None: the engine closed the connection without one)."""
    with sock:
        try:
            send(sock, message)
            return receive(sock)
        except OSError:
            return None


def ask(data_dir: str | os.PathLike[str], message: dict[str, Any], *, start: bool = False) -> dict[str, Any] | None:
    """Send one message to the engine and return its answer (None: no engine, or it did not answer)."""
    sock = engine_socket(data_dir, start=start)
    return None if sock is None else exchange(sock, message)


def serve_remotely(args: list[str]) -> tuple[int | None, bool]:
    """Run `args` in the engine and print what it printed: (its exit status, False); (None, start): run
    in-process instead, and with `start` start an engine after it. Without an engine the call runs in-process,
    costing what a cold call always did, and an engine starts for the next ones."""
    env = os.environ
    data_dir = data_dir_of(args, env)
    sock = connect(data_dir)
    if sock is None:
        return None, True
    request = {
        "op": "run", "argv": absolute_data_dir(args), "stamp": code_stamp(),
        # The engine runs elsewhere: the data dir goes as the absolute path this call resolved.
        "env": {**{k: v for k, v in env.items() if k.startswith("MNEMON_") or k == "HOME"},
                "MNEMON_DATA_DIR": data_dir},
    }
    if command_of(args) in STDIN_COMMANDS:  # None: a terminal, which the command reads as no input
        request["stdin"] = None if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    for _attempt in range(2):
        if sock is None and (sock := connect(data_dir)) is None:
            _restore_stdin(request)
            return None, True
        reply = exchange(sock, request)
        sock = None
        if reply is None:
            warn("the engine did not answer; running in-process (MNEMON_DAEMON=off skips the engine)")
            _restore_stdin(request)
            return None, False
        if "restart" not in reply:
            break
        wait_gone(data_dir)  # an engine of other code, stopping: the next round starts one of this code
    else:
        warn("the engine could not be replaced; running in-process")
        _restore_stdin(request)
        return None, False
    sys.stdout.write(reply["out"])
    sys.stdout.flush()
    sys.stderr.write(reply["err"])
    return int(reply["code"]), False


def _restore_stdin(request: dict[str, Any]) -> None:
    """The call goes in-process after all: the standard input read for the engine is its input again."""
    if request.get("stdin") is not None:
        import io

        sys.stdin = io.StringIO(request["stdin"])


def wait_gone(data_dir: str | os.PathLike[str], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    path = socket_path(data_dir)
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


def warn(message: str) -> None:
    print(f"mnemon: warning: {message}", file=sys.stderr)


# ---------------------------------------------------------------- mnemon daemon start|stop|status


def daemon(action: str, data_dir: str) -> dict[str, Any]:
    """What `mnemon daemon ACTION` prints."""
    if action == "start":
        reply = ask(data_dir, {"op": "status"}, start=True)
        return reply if reply is not None else {"running": False, "error": "the engine did not start; see " +
                                                os.path.join(data_dir, LOG_NAME)}
    if action == "stop":
        reply = ask(data_dir, {"op": "stop"})
        if reply is None:
            return {"running": False, "stopped": False}
        wait_gone(data_dir)
        return {"running": False, "stopped": True, "pid": reply.get("pid")}
    reply = ask(data_dir, {"op": "status"})
    return reply if reply is not None else {"running": False}
