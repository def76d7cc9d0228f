"""Stores behind one protocol: SQLite (embedded default) and Postgres (scale-out, `MNEMON_DATABASE_URL`)."""

from __future__ import annotations

from ..config import Settings
from .base import NO_FILTERS, Filters, Store, TokenHit, rank_by_coverage

__all__ = ["NO_FILTERS", "Filters", "Store", "TokenHit", "open_store", "rank_by_coverage"]


def open_store(settings: Settings) -> Store:
    if settings.database_url:
        from .postgres import PostgresStore  # lazy: psycopg is an extra

        # Long-lived processes (MCP server, framework apps) share a pool; a CLI call needs one connection.
        return PostgresStore(settings.database_url, store=settings.store, readonly=settings.readonly,
                             pool=settings.origin != "cli", oplog_retention=settings.oplog_retention)
    from .sqlite import SQLiteStore

    migrate_legacy(settings)
    return SQLiteStore(settings.db_path, readonly=settings.readonly, oplog_retention=settings.oplog_retention)


def migrate_legacy(settings: Settings) -> None:
    """A pre-store `<data-dir>/mnemon.db` moves to `data/default/mnemon.db` (with -wal, -shm)."""
    import sys

    legacy = settings.data_dir / "mnemon.db"
    target = settings.data_dir / "data" / "default" / "mnemon.db"
    if settings.readonly or not legacy.exists() or target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        src = legacy.with_name("mnemon.db" + suffix)
        if src.exists():
            src.rename(target.with_name("mnemon.db" + suffix))
    print(f"mnemon: migrated database to {target}", file=sys.stderr)
