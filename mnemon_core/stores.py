"""Named stores (reference §2.1): directories under `<data-dir>/data/<name>/`, or with a database URL the store
schemas of one Postgres database; the `active` file names the current one either way."""

from __future__ import annotations

import shutil
from pathlib import Path

from .config import UNSET, Settings, resolve_store_name, validate_store_name
from .errors import NotFoundError, ReadOnlyError, ValidationError


def list_stores(data_dir: Path) -> list[str]:
    root = data_dir / "data"
    if not root.is_dir():
        return []
    from .config import STORE_NAME_RE

    return sorted(p.name for p in root.iterdir() if p.is_dir() and STORE_NAME_RE.fullmatch(p.name))


class _Catalog:
    """The stores `mnemon store` manages: directories under the data dir, or with a database URL the store
    schemas of that Postgres database (the active-store choice stays in the local `active` file either way)."""

    def __init__(self, data_dir: Path, url: str | None) -> None:
        self.data_dir, self.url = data_dir, url

    def names(self) -> list[str]:
        if self.url:
            from .store.postgres import list_stores as pg_stores

            return pg_stores(self.url)
        return list_stores(self.data_dir)

    def exists(self, name: str) -> bool:
        return name in self.names() if self.url else (self.data_dir / "data" / name).is_dir()

    def create(self, name: str) -> None:
        if self.url:
            from .store.postgres import PostgresStore

            PostgresStore(self.url, store=name).close()
        else:
            from .store.sqlite import SQLiteStore

            SQLiteStore(self.data_dir / "data" / name / "mnemon.db").close()

    def remove(self, name: str) -> None:
        if self.url:
            from .store.postgres import drop_store

            drop_store(self.url, name)
        else:
            shutil.rmtree(self.data_dir / "data" / name)


def exists(settings: Settings) -> bool:
    """Whether the store `settings` name exists (its directory, or its schema with a database URL)."""
    return _Catalog(settings.data_dir, settings.database_url).exists(settings.store)


def missing(name: str) -> NotFoundError:
    return NotFoundError(f"store \"{name}\" does not exist (use 'mnemon store create {name}' first)", id=name)


def run(data_dir: str | None, store_flag: str | None, action: str, name: str | None,
        database_url: str | None = None, *, readonly: bool = False) -> str:
    """One `mnemon store` action; returns the text to print. Only `list` runs with `readonly`."""
    if readonly and action != "list":
        raise ReadOnlyError(f"store {action}")
    settings = Settings.resolve(data_dir=data_dir or UNSET, store="default", database_url=database_url)
    dd = settings.data_dir
    stores = _Catalog(dd, settings.database_url)
    if action == "list":
        active = resolve_store_name(dd, store_flag or UNSET)
        names = stores.names()
        if not names:
            return "  (no stores yet — run 'mnemon store create <name>' or any command to create default)"
        return "\n".join(("* " if n == active else "  ") + n for n in names)
    if not name:
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
