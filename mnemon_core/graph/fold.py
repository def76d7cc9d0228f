"""The fold policy: when a writer writes a store's graph index file anew, and how the change log is cut after
it. Written once for every backend that keeps a file; a backend offers only data calls (`store.base.GraphLog`:
where the file lives, a consistent snapshot, the change log, cutting it).

A file is kept from MIN_ROWS active insights on (below it the memo reads the store in milliseconds), and written
anew once the change log holds `fold_rows` rows since it (FOLD_MIN, about 30 a remember, or FOLD_SHARE of the
file's nodes): a fresh reader reads that delta from the store, a fold reads everything. It is also written when
it is missing, damaged, of another release's edge types, or when the log cannot say what changed since it.

After a fold the log is cut. A file every process shares (SQLite's, beside the database) lets the log go up to
the file's counter. Where each client keeps its own (Postgres), the log is cut only below the newest
`fold_rows` rows, which a file behind them would be written anew for anyway: one client's fold never sends
another's file back to the database. A read-only process never cuts, and never writes a shared file.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import cast

from ..models import GraphIndexStatus
from ..store import Store
from ..store.base import GraphLog, GraphPlace
from ..store.mapfile import Rejected, remove_leftovers, writer_lock
from .index import GraphIndex, Holder, build

__all__ = ["FOLD_MIN", "FOLD_SHARE", "MIN_ROWS", "fold_index", "fold_rows", "index_file", "index_state", "status"]

MIN_ROWS = 2_000
FOLD_MIN = 20_000
FOLD_SHARE = 0.25


def fold_rows(n: int) -> int:
    """Change log rows behind a file of n nodes at which a writer writes it anew."""
    return max(FOLD_MIN, int(FOLD_SHARE * n))


class _File:
    """The index file of one store object: where the store keeps it, and the file mapped and checked once per
    file (`Holder`). It holds no reference to the store (it lives as long as the store does)."""

    def __init__(self, place: GraphPlace) -> None:
        self.place = place
        self.holder = Holder(place.path)
        self.lock = threading.Lock()


_files: weakref.WeakKeyDictionary[Store, _File | None] = weakref.WeakKeyDictionary()
_files_lock = threading.Lock()


def _file(store: Store) -> _File | None:
    with _files_lock:
        try:
            return _files[store]
        except KeyError:
            place = store.graph_place()
            found = _files[store] = None if place is None else _File(place)
            return found


def index_file(store: Store) -> GraphIndex | None:
    """The checked, mapped index file of `store` (None: it keeps none, none is written, it failed a check, or
    this store object's open transaction holds graph writes the file cannot know)."""
    f = _file(store)
    if f is None or cast(GraphLog, store).graph_writes_pending():
        return None
    with f.lock:
        return f.holder.get(cast(GraphLog, store).store_uid(), store.graph_version()[0])


def index_state(store: Store) -> GraphIndex | Rejected | None:
    """The index file as `mnemon status` reports it: mapped, rejected (and why), or none."""
    index_file(store)
    f = _file(store)
    return None if f is None else f.holder.state()


def status(store: Store) -> GraphIndexStatus | None:
    """`mnemon status`'s `graph_index`: the file's size and age, and how far the store is ahead of it."""
    from ..config import shown_path
    from ..timeutil import iso

    state = index_state(store)
    if state is None:
        return None
    if not isinstance(state, GraphIndex):
        return GraphIndexStatus(path=shown_path(state.path), state="rejected", reason=state.reason)
    return GraphIndexStatus(
        path=shown_path(state.path), state="mapped", nodes=state.n, edges=state.edges, bytes=state.nbytes(),
        built_at=iso(state.built_at), age_s=round(max(0.0, time.time() - state.built_at), 1),
        behind=store.graph_version()[0] - state.counter,
    )


def fold_index(store: Store, *, force: bool = False) -> int:
    """A writer's fold, outside any transaction (the file never holds rows that may roll back): write the file
    anew when it is missing, damaged, or behind by `fold_rows` (`force`: by anything); its size in bytes, or 0
    when nothing was written (no file kept, too small, another process writing)."""
    f = _file(store)
    log = cast(GraphLog, store)  # a store that names a place keeps the change log
    if f is None or log.in_transaction() or (f.place.shared and log.readonly):
        return 0
    path = f.place.path
    cur = index_file(store)
    if cur is not None:
        behind = log.graph_log_since(cur.counter)
        if not behind.unknown and behind.floor <= cur.counter and (
            behind.rows == 0 if force else behind.rows < fold_rows(cur.n)
        ):
            if log.vector_files_missing(MIN_ROWS):
                with writer_lock(path) as mine:
                    if mine:
                        log.write_vector_files(MIN_ROWS, missing_only=True)
            return 0
    elif store.count_active() < MIN_ROWS:
        return 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return 0
    uid = log.store_uid() or 0
    with writer_lock(path) as mine:
        if not mine:
            return 0
        remove_leftovers(path)
        with log.graph_snapshot() as snap:
            size = build(path, uid=uid, counter=snap.counter, rows=snap.rows, edges=snap.edges)
        log.write_vector_files(MIN_ROWS, missing_only=False)
    if not log.readonly:
        # Readers of an older file ask the log from its counter on: they see the floor moved and reopen.
        if f.place.shared:
            log.cut_graph_log(snap.counter)
        else:
            through = log.graph_log_counter(snap.counter, fold_rows(store.count_active()))
            if through is not None:
                log.cut_graph_log(through)
    return size
