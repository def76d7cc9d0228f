"""Errors of the engine. Every message is one line a user can act on.

    MnemonError
    ├── ValidationError (also ValueError)   bad input: names the field and the limit
    ├── NotFoundError (also LookupError)    an id or store that does not exist
    ├── ReadOnlyError                       a write asked of a --readonly memory
    ├── EmbedderError                       an embedding provider failed or is missing
    ├── StoreError                          the database could not be opened or used
    └── AlreadyDone                         a rerun of a call whose write the resident engine made (once.py)
    Interrupted (a KeyboardInterrupt)       Ctrl-C stopped a long run between two of its commits: how far it got

Faces (CLI, MCP, integrations) catch `MnemonError` once and show `str(err)`; the CLI and the MCP server also
show a fault of the environment (`fault_message`) as one line. `MNEMON_DEBUG=1` adds the traceback
(`config.debug`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not `typing`'s: this module is on the CLI's start-up path (see lazy.py)
if TYPE_CHECKING:
    from types import ModuleType


class MnemonError(Exception):
    """Root of every error mnemon raises on purpose."""


class ValidationError(MnemonError, ValueError):
    """Input rejected before any work was done; `field` names what was wrong."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(MnemonError, LookupError):
    def __init__(self, message: str, id: str | None = None) -> None:
        super().__init__(message)
        self.id = id


class ReadOnlyError(MnemonError):
    def __init__(self, action: str) -> None:
        super().__init__(f"{action} is unavailable with --readonly: database writes are disabled")
        self.action = action


class EmbedderError(MnemonError):
    pass


class StoreError(MnemonError):
    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class AlreadyDone(MnemonError):
    """The resident engine made this call's write and stopped before answering; the rerun writes nothing."""

    def __init__(self, request_id: str) -> None:
        super().__init__(
            "the resident engine made this call's write and stopped before it could answer; it was not made "
            f"again (request {request_id[:12]}; `mnemon log` shows it)"
        )
        self.request_id = request_id


class MissingExtraError(MnemonError, ImportError):
    """An optional dependency is not installed; says which extra brings it."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(f"{package} is not installed: pip install 'mnemon-core[{extra}]'")
        self.package = package
        self.extra = extra


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped an import or a backfill between two committed batches (the batch it arrived in rolled
    back): the one line says how far it got and how to finish. The CLI prints it and exits 130."""


def import_extra(module: str, extra: str, package: str | None = None) -> ModuleType:
    """`module` of an optional dependency, imported; not installed, a `MissingExtraError` naming the extra that
    brings it (`package`, where the distribution's name is not the module's)."""
    from importlib import import_module

    try:
        return import_module(module)
    except ImportError:
        raise MissingExtraError(package or module, extra) from None


def fault_message(e: BaseException) -> str | None:
    """One line for an error a user can act on: a `MnemonError`, or a fault of the environment rather than of
    mnemon (a file or directory that cannot be used, text that is not UTF-8, a database that refuses or is
    not one, a number or a nesting out of range). None for anything else: a bug, which keeps its traceback."""
    if isinstance(e, MnemonError):
        return str(e)
    if isinstance(e, OSError):
        if e.strerror and e.filename is not None:
            return f"{e.filename}: {e.strerror}"
        return e.strerror or str(e) or type(e).__name__
    if isinstance(e, UnicodeError):
        return f"text is not valid UTF-8: {e}"
    if isinstance(e, RecursionError):
        return "input nested too deeply"
    if isinstance(e, OverflowError):
        return f"number out of range: {e}"
    # Modules looked up, not imported: psycopg is an extra, and neither is loaded unless a store was opened.
    sqlite3, psycopg = sys.modules.get("sqlite3"), sys.modules.get("psycopg")
    # sqlite3.DatabaseError itself (not its subclasses such as IntegrityError): "file is not a database".
    if sqlite3 is not None and (isinstance(e, sqlite3.OperationalError) or type(e) is sqlite3.DatabaseError):
        return f"database error: {e}"
    if psycopg is not None and isinstance(e, psycopg.OperationalError):
        lines = str(e).strip().splitlines()  # the first line; the rest is libpq's context
        return f"database error: {lines[0] if lines else type(e).__name__}"
    return None
