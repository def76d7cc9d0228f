"""The streams and process variables of one command. What a command prints or reads goes through here
(`out()`, `err()`, `stdin()`, `environ()`), never through `sys.*` directly: a process's command uses the
process's own, and `cli.call(argv, env, stdin)` runs a command with its own buffers and the variables it was
given (`own`), which is how the resident engine runs its clients' commands side by side in threads, patching
nothing global. The standard library only: the CLI starts with it on every agent turn."""

from __future__ import annotations

import io
import os
import sys
from contextlib import contextmanager
from contextvars import ContextVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import TextIO

__all__ = ["environ", "err", "out", "own", "stdin"]


class _Terminal(io.StringIO):
    """The standard input of a command whose caller sent none: a terminal, with nothing to read."""

    def isatty(self) -> bool:
        return True


class _Own:
    __slots__ = ("env", "err", "out", "stdin")

    def __init__(self, env: Mapping[str, str], stdin: str | None) -> None:
        self.env = env
        self.out, self.err = io.StringIO(), io.StringIO()
        self.stdin: io.StringIO = _Terminal() if stdin is None else io.StringIO(stdin)


_own: ContextVar[_Own | None] = ContextVar("mnemon_console", default=None)


def out() -> TextIO:
    own = _own.get()
    return sys.stdout if own is None else own.out


def err() -> TextIO:
    own = _own.get()
    return sys.stderr if own is None else own.err


def stdin() -> TextIO:
    own = _own.get()
    return sys.stdin if own is None else own.stdin


def environ() -> Mapping[str, str]:
    """The variables settings come from: the process's, or those a command was run with (`own`)."""
    own = _own.get()
    return os.environ if own is None else own.env


@contextmanager
def own(env: Mapping[str, str], stdin: str | None = None) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """Inside the block, this thread's command reads `env` and `stdin` (None: a terminal) and writes into the
    two buffers yielded (stdout, stderr)."""
    state = _Own(env, stdin)
    token = _own.set(state)
    try:
        yield state.out, state.err
    finally:
        _own.reset(token)
