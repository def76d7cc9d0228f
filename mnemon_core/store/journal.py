"""Which insights a store connection's own commits touched, so the recall memo of that connection can forget
just those instead of starting over after every `remember`.

A store's `graph_version()` is `(committed counter, own generation)`: the counter moves once per committed
transaction that changed insights or edges (any process), the generation with this connection's own graph
writes and rollbacks. Each commit of ours is journaled as (version before, version after, ids touched). A memo
filled at version `v` may move to the current version `w` by forgetting the journaled ids only when the
entries chain `v` to `w` without a gap: a gap means another process committed in between, or the memo was
filled inside an open transaction, or a transaction rolled back: then nothing is known and the memo starts
over, as before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable

__all__ = ["GraphJournal"]

KEEP = 64  # commits remembered; a memo further behind starts over
MAX_IDS = 20_000  # a transaction touching more (a large import) is journaled as "unknown"


class GraphJournal:
    def __init__(self) -> None:
        self._entries: deque[tuple[Hashable, Hashable, frozenset[str] | None]] = deque(maxlen=KEEP)
        self._open: tuple[int, set[str] | None] | None = None  # (own generation at begin, ids so far)

    def begin(self, generation: int) -> None:
        """A write transaction starts (or an autocommit write) at this connection's generation."""
        self._open = (generation, set())

    def touch(self, ids: Iterable[str] | None) -> None:
        """The open transaction changed the attributes or adjacency of ids (None: of unknown insights)."""
        if self._open is None:
            return
        seen = self._open[1]
        if seen is None:
            return
        if ids is None:
            self._open = (self._open[0], None)
            return
        seen.update(ids)
        if len(seen) > MAX_IDS:
            self._open = (self._open[0], None)

    def pending(self) -> frozenset[str] | None:
        """The ids the open transaction touched so far (None: more than `MAX_IDS`, or unknown)."""
        if self._open is None or self._open[1] is None:
            return None
        return frozenset(self._open[1])

    def commit(self, counter_after: int, generation_after: int) -> None:
        """The open transaction committed and moved the counter to counter_after (its own bump: it held the
        write lock, so the counter was counter_after - 1 when it began)."""
        if self._open is None:
            return
        generation_before, ids = self._open
        self._open = None
        self._entries.append(
            ((counter_after - 1, generation_before), (counter_after, generation_after),
             None if ids is None else frozenset(ids))
        )

    def abort(self) -> None:
        """The open transaction rolled back or changed no graph row: nothing to journal."""
        self._open = None

    def changes(self, since: Hashable, now: Hashable) -> set[str] | None:
        """The ids touched between versions since and now, or None if the journal cannot say."""
        out: set[str] = set()
        at = since
        started = False
        for before, after, ids in self._entries:
            if at == now:
                break
            if before != at:
                if started:
                    return None  # a gap: somebody else's commit, or a memo filled mid-transaction
                continue
            if ids is None:
                return None
            started = True
            out |= ids
            at = after
        return out if at == now and started else None
