"""`mnemon migrate --from SRC --to DST`: copy one store losslessly into an empty Postgres, Kùzu, Redis or FalkorDB
store.

Everything is copied: insights (soft-deleted ones too, in their insertion order, with tokens, vectors and
their model), edges, the oplog with its ids, and the remember sessions' tails. The target store must be empty; the
copy is one transaction of the target. Afterwards the target is read back and compared with the source by counts
and a checksum over every row (`store/dump.py`); a mismatch is an error.

Endpoints: `sqlite:PATH` (or a path to a `.db` file; `sqlite:` alone is the current store's file),
`postgresql://…` / `postgres://…`, `kuzu:///abs/dir`, `redis://…` and `falkordb://…` (the store is `--store`, else
`MNEMON_STORE`, the active file, `default`): any URL of the backend table (`store/__init__.py`). SQLite is a source
only (it has no bulk load).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Settings
from .errors import StoreError, ValidationError

if TYPE_CHECKING:
    from .store import Store

TARGETS = "a postgresql://, kuzu:///, redis:// or falkordb:// URL"


def is_database(url: str) -> bool:
    """A URL of the backend table's servers and directories (not a SQLite file)."""
    from .store import SCHEMES

    return url.startswith(tuple(SCHEMES))


def sqlite_path(endpoint: str, settings: Settings) -> Path | None:
    """The SQLite file an endpoint names, or None when it is not a SQLite endpoint."""
    if endpoint in ("sqlite", "sqlite:"):
        return settings.db_path
    if endpoint.startswith("sqlite:"):
        return Path(endpoint[len("sqlite:"):].removeprefix("//")).expanduser()
    if not is_database(endpoint) and endpoint.endswith(".db"):
        return Path(endpoint).expanduser()
    return None


def _open(url: str, settings: Settings, *, readonly: bool) -> Any:
    """The store `settings.store` of a database URL, through the backend table (its vectors in it too)."""
    import dataclasses

    from .store import open_store

    return open_store(dataclasses.replace(settings, database_url=url, vector_url=None, readonly=readonly,
                                          origin="cli"))


def migrate(source: str, target: str, settings: Settings) -> dict[str, Any]:
    """Copy the source store into an empty store of a database URL, verify, and return what was copied."""
    from .store.dump import Checksum

    if not is_database(target):
        raise ValidationError(f"--to must be {TARGETS}, got {target!r}", field="to")
    src_path = sqlite_path(source, settings)
    if src_path is None and not is_database(source):
        raise ValidationError(f"--from must be sqlite:PATH or {TARGETS}, got {source!r}", field="from")
    if src_path is None and source.rstrip("/") == target.rstrip("/"):
        raise ValidationError("--from and --to are the same store", field="to")
    started = time.monotonic()

    src: Store
    if src_path is not None:
        from .store.sqlite import SQLiteStore

        if not src_path.is_file():
            raise StoreError(f"database not found: {src_path}", path=str(src_path))
        src = SQLiteStore(src_path, readonly=True)
        src_label = f"sqlite:{src_path}"
    else:
        src = _open(source, settings, readonly=True)
        src_label = src.location

    try:
        dst = _open(target, settings, readonly=False)
    except BaseException:
        src.close()
        raise
    try:
        present = dst.count_active() + dst.count_deleted() + dst.count_edges() + dst.count_log()
        if present:
            raise ValidationError(
                f'target store "{settings.store}" in {dst.location.rsplit(" (store ", 1)[0]} is not empty '
                f"({dst.count_active()} insights, {dst.count_edges()} edges, {dst.count_log()} oplog rows); "
                "migrate copies into an empty store (pick another with --store)",
                field="to",
            )
        sent = Checksum()
        dst.load(sent.insights_of(src.dump_insights()), sent.edges_of(src.iter_edges()),
                 sent.oplog_of(src.dump_oplog()), sent.tails_of(src.dump_tails()))
        copied = time.monotonic()
        back = Checksum()
        for _ in back.insights_of(dst.dump_insights()):
            pass
        for _ in back.edges_of(dst.iter_edges()):
            pass
        for _ in back.oplog_of(dst.dump_oplog()):
            pass
        for _ in back.tails_of(dst.dump_tails()):
            pass
        if back.counts() != sent.counts() or back.digest != sent.digest:
            raise StoreError(
                f"verification failed: copied {sent.counts()} {sent.digest}, read back {back.counts()} "
                f"{back.digest}; the target store \"{settings.store}\" is incomplete — drop it and retry",
                path=dst.location,
            )
    finally:
        src.close()
        dst.close()
    return {
        "from": src_label,
        "to": dst.location,
        "store": settings.store,
        **sent.counts(),
        "checksum": sent.digest,
        "verified": True,
        "seconds": round(time.monotonic() - started, 2),
        "verify_seconds": round(time.monotonic() - copied, 2),  # reading the copy back for the checksum
    }
