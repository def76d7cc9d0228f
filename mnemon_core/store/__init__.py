"""Stores behind one protocol: SQLite (embedded default), Postgres (scale-out) and Kùzu (an embedded graph database),
the last two chosen by `MNEMON_DATABASE_URL`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .base import NO_FILTERS, Access, Catalog, Filters, Store, TokenHit, rank_by_coverage

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["NO_FILTERS", "Access", "Catalog", "Filters", "Store", "TokenHit", "backend_name", "catalog", "open_store",
           "rank_by_coverage"]

# Factory table: backend name → module with `open_store(settings) -> Store` and `catalog(settings) -> Catalog`
# (imported only when chosen: psycopg is an extra).
_BACKENDS: dict[str, str] = {
    "sqlite": "mnemon_core.store.sqlite",
    "postgres": "mnemon_core.store.postgres",
    "kuzu": "mnemon_core.store.kuzu",
}


def backend_name(settings: Settings) -> str:
    """A database URL (`--database-url`, `MNEMON_DATABASE_URL`): `kuzu:///dir` means Kùzu, any other Postgres;
    without one, SQLite files."""
    url = settings.database_url
    if not url:
        return "sqlite"
    return "kuzu" if url.startswith("kuzu:") else "postgres"


def open_store(settings: Settings) -> Store:
    """The store `settings` name; with `MNEMON_VECTOR_URL`, its vectors kept in Milvus (`store/milvus.py`)."""
    store = importlib.import_module(_BACKENDS[backend_name(settings)]).open_store(settings)
    if settings.vector_url:
        from .milvus import with_vectors

        try:
            return with_vectors(store, settings)
        except BaseException:
            store.close()
            raise
    return store


def catalog(settings: Settings) -> Catalog:
    """The named stores of the database `settings` point at."""
    return importlib.import_module(_BACKENDS[backend_name(settings)]).catalog(settings)
