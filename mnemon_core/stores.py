"""Named stores (reference §2.1): directories under `<data-dir>/data/<name>/`, or with a database URL the store
schemas of one Postgres database; the `active` file names the current one either way."""

from __future__ import annotations

from pathlib import Path

from .config import UNSET, Settings, resolve_store_name, validate_store_name
from .errors import NotFoundError, ReadOnlyError, ValidationError


def list_stores(data_dir: Path) -> list[str]:
    """The stores under a data dir (SQLite files, whatever `MNEMON_DATABASE_URL` says)."""
    from .store.sqlite import list_stores as store_dirs

    return store_dirs(data_dir)


def exists(settings: Settings) -> bool:
    """Whether the store `settings` name exists (its directory, or its schema with a database URL)."""
    from .store import catalog

    return catalog(settings).exists(settings.store)


def missing(name: str) -> NotFoundError:
    return NotFoundError(f"store \"{name}\" does not exist (use 'mnemon store create {name}' first)", id=name)


def run(data_dir: str | None, store_flag: str | None, action: str, name: str | None,
        database_url: str | None = None, *, readonly: bool = False) -> str:
    """One `mnemon store` action; returns the text to print. Only `list` runs with `readonly`."""
    from .store import catalog

    if readonly and action != "list":
        raise ReadOnlyError(f"store {action}")
    settings = Settings.resolve(data_dir=data_dir or UNSET, store="default", database_url=database_url)
    dd = settings.data_dir
    stores = catalog(settings)
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
