"""A real Postgres with pgvector for the tests: `pgserver` (Postgres 16 + pgvector from PyPI), started once
per session in a temporary directory and deleted at the end.

`MNEMON_TEST_DATABASE_URL=postgresql://…` runs the same tests against an existing server instead (each test
gets its own store, i.e. its own schema, dropped afterwards). Without either, Postgres tests are skipped.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator

import pytest

# Read at import: the per-test fixture clears every MNEMON_* variable.
EXTERNAL_URL = os.environ.get("MNEMON_TEST_DATABASE_URL") or None


def missing() -> str | None:
    """Why Postgres tests cannot run here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'mnemon-core[postgres]')"
    if EXTERNAL_URL:
        return None
    try:
        import pgserver  # noqa: F401
    except ImportError:
        return "pgserver is not installed (pip install pgserver) and MNEMON_TEST_DATABASE_URL is unset"
    return None


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """The URL of a Postgres with pgvector, for the whole session."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    if EXTERNAL_URL:
        yield EXTERNAL_URL
        return
    import psycopg
    import pgserver

    srv = pgserver.get_server(tempfile.mkdtemp(prefix="mnemon-pg-"), cleanup_mode="delete")
    url = srv.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        # Test data need not survive a crash; commits stay transactional.
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield url
    finally:
        srv.cleanup()


def fresh_store() -> str:
    """A store name no other test uses."""
    return "t" + uuid.uuid4().hex[:16]


@pytest.fixture
def pg_store_name(pg_url: str) -> Iterator[str]:
    """A fresh store on the session's server, dropped after the test."""
    from mnemon_core.store.postgres import drop_store

    name = fresh_store()
    yield name
    drop_store(pg_url, name)
