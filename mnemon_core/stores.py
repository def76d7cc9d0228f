"""Named stores under `<data-dir>/data/<name>/` and the `active` file (reference §2.1)."""

from __future__ import annotations

import shutil
from pathlib import Path

from .config import UNSET, Settings, resolve_store_name, validate_store_name
from .errors import NotFoundError, ValidationError


def list_stores(data_dir: Path) -> list[str]:
    root = data_dir / "data"
    if not root.is_dir():
        return []
    from .config import STORE_NAME_RE

    return sorted(p.name for p in root.iterdir() if p.is_dir() and STORE_NAME_RE.match(p.name))


def run(data_dir: str | None, store_flag: str | None, action: str, name: str | None) -> str:
    """One `mnemon store` action; returns the text to print."""
    dd = Settings.resolve(data_dir=data_dir or UNSET, store="default").data_dir
    if action == "list":
        active = resolve_store_name(dd, store_flag or UNSET)
        names = list_stores(dd)
        if not names:
            return "  (no stores yet — run 'mnemon store create <name>' or any command to create default)"
        return "\n".join(("* " if n == active else "  ") + n for n in names)
    if not name:
        raise ValidationError(f"store {action} needs a store name", field="name")
    validate_store_name(name, hint=True)
    path = dd / "data" / name
    if action == "create":
        if path.exists():
            raise ValidationError(f'store "{name}" already exists', field="name")
        from .store.sqlite import SQLiteStore

        SQLiteStore(path / "mnemon.db").close()
        return f'Created store "{name}"'
    if not path.is_dir():
        raise NotFoundError(f"store \"{name}\" does not exist (use 'mnemon store create {name}' first)", id=name)
    if action == "set":
        dd.mkdir(parents=True, exist_ok=True)
        (dd / "active").write_text(name + "\n", encoding="utf-8")
        return f'Active store set to "{name}"'
    active = resolve_store_name(dd, store_flag or UNSET)
    if name == active:
        raise ValidationError(
            f"cannot remove the active store \"{name}\" (switch first with 'mnemon store set <other>')", field="name"
        )
    shutil.rmtree(path)
    return f'Removed store "{name}"'
