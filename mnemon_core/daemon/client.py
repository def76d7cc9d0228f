"""The `mnemon` entry point: hand the command to the data directory's resident engine, or run it in-process.

Agents call the CLI on every turn, and a fresh Python process pays for importing the engine (pydantic, numpy),
loading the embedding model and filling the recall memo every time. The engine (`engine.py`) does that once
per data directory and serves the commands of the hot path over a Unix socket in the data directory; this
module, which imports only the standard library, is all a call costs besides the engine's own work.

- Served by the engine: the commands in `ENGINE_COMMANDS`. Everything else (help, `--version`, `import`,
  `extract`, `mcp serve`, …) runs in-process, as does every command with `MNEMON_DAEMON=off` or `--no-daemon`.
- The engine runs the very same `cli.main` on the same arguments and settings and sends back what it printed
  and the exit status, so the output is byte for byte the in-process output.
- The first call that needs the engine runs in-process (so it costs what a cold call always did) and then
  starts the engine (detached, its own session, log in the data dir), which warms up for the next calls.

Whom a call trusts and how it talks to the engine is `resident.py`'s. A call sends its arguments, the standard
input of `hook`, and of its environment only the variables the served commands read (`ENGINE_VARIABLES`).

A served call is at most once (`once.py`): it carries a request id that its first write transaction records.
When the engine does not answer (no first frame within FIRST_REPLY_TIMEOUT_S, no heartbeat within
BEAT_TIMEOUT_S, or it closes the connection), the call runs in-process under the same id after one warning
line, and a write the engine already made is not made again.
"""

from __future__ import annotations

import os
import sys

from .resident import ENGINE_VARIABLES, ask, connect, data_dir_of, exchange, start_after, warn

# The client is the whole start-up cost of a served call: no typing or collections, and paths are strings
# (pathlib costs a start ~10 ms).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
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


def run() -> int:
    """The `mnemon` command (pyproject's script, `python -m mnemon_core`): `main`, and a call the engine answered
    ends at once, without the interpreter's finalization (~3 ms CPU of a served call's ~20): it holds nothing
    that needs one (its socket is closed, its output flushed)."""
    return main(leave_when_served=True)


def main(argv: Sequence[str] | None = None, *, leave_when_served: bool = False) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # what `cli` prints, without building its parser
        from .. import __version__

        print(f"mnemon {__version__}")
        return 0
    code, request, start = serve_remotely(args) if wants_engine(args, os.environ) else (None, None, False)
    if code is not None:
        if leave_when_served:
            _leave(code)
        return code
    from ..faces.cli import main as in_process

    if request is not None:  # the rerun of a call the engine did not answer, under the same request id
        from .. import once  # (dataclasses: not for every in-process call)

        token = once.begin(request)
        try:
            return in_process(args)
        finally:
            once.end(token)
    try:
        return in_process(args)
    finally:
        # After the call, so the engine's start-up does not compete with it for the CPU; and only for a data
        # directory the call found or made (a failed call writes nothing, not even a log).
        if start:
            start_after(data_dir_of(args, os.environ))
        fill_behind(args)


def fill_behind(args: Sequence[str]) -> None:
    """After an import that wrote insights without their vectors (`cli.queued_vectors`): the data directory's
    resident engine fills them in when idle, asked now or started for it with the store's settings; with the
    engine off, `embed --all` does. One line on stderr says which."""
    from ..faces import cli

    if cli.queued_vectors is None:
        return
    settings, pending = cli.queued_vectors
    cli.queued_vectors = None
    note = f"mnemon: {pending} insights are in without their vectors yet (recall ranks them by the other signals)"
    if os.environ.get("MNEMON_DAEMON", "").strip().lower() in OFF or NO_DAEMON_FLAG in args:
        print(f"{note}; `mnemon embed --all` fills them in", file=sys.stderr)
        return
    # The variables a served call sends, naming the store this import wrote to (its flags included).
    os.environ.update({"MNEMON_DATA_DIR": str(settings.data_dir), "MNEMON_STORE": settings.store,
                       **({"MNEMON_DATABASE_URL": settings.database_url} if settings.database_url else {})})
    env = {k: v for k, v in os.environ.items() if k in ENGINE_VARIABLES}
    if ask(settings.data_dir, {"op": "fill", "env": env}) is None:
        start_after(str(settings.data_dir))
    print(f"{note}; the resident engine fills them in when idle (`mnemon status`: vectors_pending), "
          "`mnemon embed --all` at once", file=sys.stderr)


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


def serve_remotely(args: list[str]) -> tuple[int | None, str | None, bool]:
    """Run `args` in the engine and print what it printed. Returns (its exit status, None, False), or
    (None, request id or None, start): run in-process instead (under the request id the engine may have
    recorded), and with `start` start an engine after it. Without an engine the call runs in-process, costing
    what a cold call always did, and an engine starts for the next ones."""
    env = os.environ
    data_dir = data_dir_of(args, env)
    sock = connect(data_dir)
    if sock is None:
        return None, None, True
    request: dict[str, Any] = {
        "op": "run", "id": os.urandom(16).hex(), "argv": absolute_data_dir(args),
        # The engine runs elsewhere: the data dir goes as the absolute path this call resolved.
        "env": {**{k: v for k, v in env.items() if k in ENGINE_VARIABLES}, "MNEMON_DATA_DIR": data_dir},
    }
    if command_of(args) in STDIN_COMMANDS:  # None: a terminal, which the command reads as no input
        request["stdin"] = None if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    reply = exchange(sock, request)
    if not _is_answer(reply):
        warn("the engine did not answer; running in-process (MNEMON_DAEMON=off skips the engine)")
        if request.get("stdin") is not None:  # the standard input read for the engine is the call's input again
            import io

            sys.stdin = io.StringIO(request["stdin"])
        return None, request["id"], False
    assert reply is not None
    return _print(reply), None, False


def _leave(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: the in-process call is silent there too
            pass
    os._exit(code)


def _is_answer(reply: dict[str, Any] | None) -> bool:
    return (reply is not None and type(reply.get("code")) is int and isinstance(reply.get("out"), str)
            and isinstance(reply.get("err"), str))


def _print(reply: dict[str, Any]) -> int:
    """Write the engine's output as the in-process call would have, its faults included: a standard output
    that cannot encode the text gets the same one error line, a closed pipe the same silence."""
    try:
        sys.stdout.write(reply["out"])
        sys.stdout.flush()
    except BrokenPipeError:
        return 0
    except UnicodeEncodeError as e:
        from ..faces.cli import printable
        from ..errors import fault_message

        sys.stderr.write(reply["err"])
        print(f"Error: {printable(fault_message(e) or str(e))}", file=sys.stderr)
        return 1
    sys.stderr.write(reply["err"])
    return int(reply["code"])


