"""Stores behind one protocol: SQLite (embedded default), Postgres (scale-out), Kùzu (an embedded graph database),
Redis 8 and FalkorDB (a graph database server), the others chosen by `MNEMON_DATABASE_URL`."""

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
    "redis": "mnemon_core.store.redis",
    "falkordb": "mnemon_core.store.falkordb",
}
# URL scheme → backend (any other URL is Postgres's; its own schemes are listed for `mnemon migrate`'s check)
SCHEMES = {"postgresql://": "postgres", "postgres://": "postgres", "kuzu://": "kuzu", "redis://": "redis",
           "rediss://": "redis", "falkordb://": "falkordb", "falkordbs://": "falkordb"}


def backend_name(settings: Settings) -> str:
    """A database URL (`--database-url`, `MNEMON_DATABASE_URL`): `kuzu:///dir` means Kùzu, `redis://…` Redis,
    `falkordb://…` FalkorDB, any other Postgres; without one, SQLite files."""
    return url_backend(settings.database_url) if settings.database_url else "sqlite"


def url_backend(url: str) -> str:
    """The backend a database URL names (by its scheme; any other is Postgres's)."""
    return next((name for scheme, name in SCHEMES.items() if url.startswith(scheme)), "postgres")


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
