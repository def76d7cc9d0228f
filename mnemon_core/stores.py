"""The store catalog: the one front door to the named stores for every face (the CLI, `mnemon setup`, the
LangGraph store, the resident engine), so none of them reaches into `store/`. Named stores (reference §2.1)
are directories under `<data-dir>/data/<name>/`, or with a database URL the stores of that database (Postgres
schemas, Kùzu directories, Redis and FalkorDB key spaces); the `active` file names the current one either way.
`StoreCatalog` lists, checks, creates, removes and migrates them through the backend table
(`store/__init__.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import UNSET, Settings, resolve_store_name, validate_store_name
from .errors import NotFoundError, ReadOnlyError, ValidationError

__all__ = ["StoreCatalog", "exists", "held_files", "missing", "run"]


class StoreCatalog:
    """The named stores of one data dir, or of the database `database_url` names (else `MNEMON_DATABASE_URL`).
    `StoreCatalog(settings=...)`: of the database those settings point at."""

    def __init__(
        self, data_dir: str | Path | None = UNSET, *, database_url: str | None = UNSET,
        settings: Settings | None = None,
    ) -> None:
        self.settings = settings if settings is not None else Settings.resolve(
            data_dir=data_dir, store="default", database_url=database_url)

    def _catalog(self) -> Any:
        from .store import catalog

        return catalog(self.settings)

    def names(self) -> list[str]:
        """The stores there are, sorted."""
        return self._catalog().names()

    def exists(self, name: str) -> bool:
        return self._catalog().exists(name)

    def create(self, name: str) -> None:
        """Create an empty store (the caller has checked that it does not exist)."""
        self._catalog().create(name)

    def remove(self, name: str) -> None:
        self._catalog().remove(name)

    def migrate(self, source: str, target: str) -> dict[str, Any]:
        """Copy the store these settings name from `source` into the empty store of that name at `target` (a
        database URL), verified (`migrate.py`); what was copied."""
        from .migrate import migrate

        return migrate(source, target, self.settings)


def exists(settings: Settings) -> bool:
    """Whether the store `settings` name exists (its directory, or its store in the database URL's)."""
    return StoreCatalog(settings=settings).exists(settings.store)


def missing(name: str) -> NotFoundError:
    return NotFoundError(f"store \"{name}\" does not exist (use 'mnemon store create {name}' first)", id=name)


def held_files(settings: Settings) -> set[str]:
    """The files of the store `settings` name that one process at a time may open (`store/holder.py`): a Kùzu
    database, a Milvus Lite file."""
    import os

    from .store import backend_name

    out = set()
    if backend_name(settings) == "kuzu":
        from .store.kuzu import store_path

        out.add(os.path.abspath(store_path(settings.database_url or "", settings.store)))
    if settings.vector_url:
        from .store.milvus import lite_path

        path = lite_path(settings.vector_url)
        if path is not None:
            out.add(os.path.abspath(path))
    return out


def run(data_dir: str | None, store_flag: str | None, action: str, name: str | None,
        database_url: str | None = None, *, readonly: bool = False) -> str:
    """One `mnemon store` action; returns the text to print. Only `list` runs with `readonly`."""
    if readonly and action != "list":
        raise ReadOnlyError(f"store {action}")
    stores = StoreCatalog(data_dir or UNSET, database_url=database_url)
    dd = stores.settings.data_dir
    if action == "list":
        active = resolve_store_name(dd, store_flag or UNSET)
        names = stores.names()
        if not names:
            return "  (no stores yet — run 'mnemon store create <name>' or any command to create default)"
        return "\n".join(("* " if n == active else "  ") + n for n in names)
    if name is None:  # no name given at all; an empty one is an invalid name
        raise ValidationError(f"store {action} needs a store name", field="name")
    validate_store_name(name, hint=True)
    if action == "create":
        if stores.exists(name):
            raise ValidationError(f'store "{name}" already exists', field="name")
        stores.create(name)
        return f'Created store "{name}"'
    if not stores.exists(name):
        raise missing(name)
    if action == "set":
        dd.mkdir(parents=True, exist_ok=True)
        (dd / "active").write_text(name + "\n", encoding="utf-8")
        return f'Active store set to "{name}"'
    active = resolve_store_name(dd, store_flag or UNSET)
    if name == active:
        raise ValidationError(
            f"cannot remove the active store \"{name}\" (switch first with 'mnemon store set <other>')", field="name"
        )
    stores.remove(name)
    return f'Removed store "{name}"'
