"""Errors of the engine. Every message is one line a user can act on.

    MnemonError
    ├── ValidationError (also ValueError)   bad input: names the field and the limit
    ├── NotFoundError (also LookupError)    an id or store that does not exist
    ├── ReadOnlyError                       a write asked of a --readonly memory
    ├── EmbedderError                       an embedding provider failed or is missing
    └── StoreError                          the database could not be opened or used

Faces (CLI, MCP, integrations) catch `MnemonError` once and show `str(err)`.
"""

from __future__ import annotations


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


class MissingExtraError(MnemonError, ImportError):
    """An optional dependency is not installed; says which extra brings it."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(f"{package} is not installed: pip install 'mnemon[{extra}]'")
        self.package = package
        self.extra = extra
