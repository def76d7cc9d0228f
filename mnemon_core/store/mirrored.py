"""A store kept on a Redis server beside a mirror of its rows (`store/mirror.py`): what the Redis store
(`store/redis.py`, rows as hashes) and the FalkorDB store (`store/falkordb.py`, rows as a graph) share.

Neither database has a transaction a writer can read inside (a `MULTI` block cannot read what it wrote; each
`GRAPH.QUERY` is atomic on its own), and a `remember` reads between its writes. So the process keeps the store's
rows in a `Mirror` and answers every read from it; a write transaction changes the mirror at once (journaled, so a
savepoint undoes to its mark), and the commit writes the final state of what it touched in one `MULTI`/`EXEC`
(all or nothing: a writer killed at any point leaves no half insight), with the change-log entry and the version
bump. Besides the rows, which each backend lays out its own way (`_read`, `_all_ids`, `_queue_rows`), a store has
these keys, all under its prefix (`<root>:{<store>}:`; the braces keep them in one cluster slot):

| key | type | holds |
| --- | --- | --- |
| `tails` | hash | remember session → its last insight |
| `oplog` | stream | the oplog, entry id `<oplog id>-1` |
| `requests` | sorted set | served calls' request ids by time (`once.py`) |
| `changes`, `version`, `graph` | stream, counters | one entry per commit naming the insights it touched |
| `meta`, `lock` | hash, string | schema version and counters; the write lock |

Writers of a store take turns on `lock` (`SET NX` with an expiry a heartbeat renews, so a killed writer's lock
lapses within `LOCK_TTL_MS`); before a read, a process compares `version` with its own and reads back the insights
the commits since then named. Keyword, entity and source recall come from the postings the process keeps
(`store/postings.py`), ranked exactly as on SQLite.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from ..config import OplogRetention
from ..errors import StoreError, import_extra
from ..models import Edge, Insight, OplogEntry
from ..redact import redact
from ..timeutil import parse
from . import base
from .base import NO_FILTERS, Access, Busy, DumpRow, Filters, TokenHit, apply_access
from .journal import GraphJournal
from .mirror import EdgeKey, Mirror, Row, row_of, with_vector
from .sql import REQUEST_KEEP_S, WRITE_LOCK_TIMEOUT_S
from .vectors import AnsweredAnn, decode, encode, normalise

SCHEMA_VERSION = 1
LOCK_TTL_MS = 3000  # a writer's lock lapses this long after its last heartbeat (a killed writer's)
BEAT_S = LOCK_TTL_MS / 3000.0
LOCK_POLL_S = 0.01
CHANGES_KEEP = 10_000  # change-log entries kept; a process further behind reads the whole store again
PAGE = 500  # keys per pipelined read

# A lock is renewed or released only by its holder (the token it set).
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def _redis() -> Any:
    return import_extra("redis", "redis")


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


@contextmanager
def faults(url: str, server: str = "Redis", needs: str = "a Redis 8 with vector sets") -> Iterator[None]:
    """A server that is down, refuses the credentials or lacks a command: one line naming the URL."""
    redis = _redis()
    try:
        yield
    except redis.exceptions.AuthenticationError as e:
        raise StoreError(f"{server} at {redact(url)} refused the credentials: {first_line(e)}") from e
    except redis.exceptions.ConnectionError as e:
        raise StoreError(f"cannot reach {server} at {redact(url)}: {first_line(e)}") from e
    except redis.exceptions.TimeoutError as e:
        raise StoreError(f"{server} at {redact(url)} did not answer: {first_line(e)}") from e
    except redis.exceptions.ResponseError as e:
        text = first_line(e)
        if "NOAUTH" in text or "WRONGPASS" in text:
            raise StoreError(f"{server} at {redact(url)} refused the credentials: {text}") from e
        if "unknown command" in text.lower():
            raise StoreError(f"{server} at {redact(url)} does not know a command mnemon needs ({text}): {needs} "
                             "is needed") from e
        raise StoreError(f"{server} at {redact(url)}: {text}") from e


def _access_of(raw: bytes) -> Access:
    """An access a read kept (`record_access`), as stored."""
    fields = json.loads(raw)
    return Access(**{**fields, "ids": tuple(fields["ids"])})


def epoch(ts: str) -> float:
    return parse(ts).timestamp()


class Shared:
    """What the store objects of one store in this process share: the client, the mirror, the lock that
    makes them take turns (a transaction holds it until it ends), and how far the mirror has read."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.lock = threading.RLock()
        self.mirror: Mirror | None = None  # None: read the whole store at the next use
        self.version = -1  # the store's `version` the mirror is at (moves with every commit)
        self.graph = 0  # the store's `graph` counter (moves with the commits that changed insights or edges)
        self.last = "0-0"  # the last `changes` entry read
        self.handles = 0


_shared: dict[tuple[str, str, str], Shared] = {}  # (root, url, store) → what its store objects share
_shared_lock = threading.Lock()


class MirroredStore(base.StoreDefaults):
    """`Store` over one store on a Redis server, its rows kept in the process. A backend says where its keys live
    (`ROOT`), how it connects (`connect`), and how it lays out, reads back and writes the rows (`_all_ids`,
    `_read`, `_queue_rows`) and, past `ANN_MIN_ROWS` vectors, asks its own index (`_index_nearest`)."""

    ROOT: ClassVar[str]  # the keys of a store start `<ROOT>:{<store>}:`; the store names are the set `<ROOT>:stores`
    SERVER: ClassVar[str]  # the server as messages name it
    NEEDS: ClassVar[str]  # what a server lacking a command is told it needs
    parallel_reads = False  # one mirror: calls take turns on it

    # ------------------------------------------------------------------ the backend's part

    @classmethod
    def connect(cls, url: str) -> Any:
        """A client of the URL (bytes in, bytes out), checked: it answers and knows the commands the store needs."""
        raise NotImplementedError

    @classmethod
    def _faults(cls, url: str) -> contextlib.AbstractContextManager[None]:
        return faults(url, cls.SERVER, cls.NEEDS)

    def _create(self) -> None:
        """Make what a new store needs beside its keys (indexes); run by each process that finds no schema."""

    def _all_ids(self) -> list[str]:
        """Every insight id as stored, in insertion order."""
        raise NotImplementedError

    def _read(self, ids: Sequence[str]) -> list[tuple[Row | None, list[Edge]]]:
        """Each insight's row (None: not stored) and every edge touching it, as stored now."""
        raise NotImplementedError

    def _queue_rows(self, pipe: Any, mirror: Mirror) -> None:
        """Queue in the commit's MULTI the final state of the rows and edges the transaction changed
        (`mirror.changed_rows`, `mirror.changed_edges`)."""
        raise NotImplementedError

    def _index_nearest(self, model: str, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        """(id, cosine) of about the k nearest by the database's own vector index, any order."""
        raise NotImplementedError

    @classmethod
    def prefix(cls, store: str) -> str:
        return f"{cls.ROOT}:{{{store}}}:"

    def __init__(self, url: str, *, store: str, readonly: bool = False,
                 oplog_retention: OplogRetention = OplogRetention()) -> None:
        self.url = url
        self.store = store
        self.readonly = readonly
        self.oplog_retention = oplog_retention
        self.location = f"{redact(url)} (store {store})"
        self.p = self.prefix(store)
        with _shared_lock:
            sh = _shared.get((self.ROOT, url, store))
            if sh is None:
                sh = _shared[(self.ROOT, url, store)] = Shared(self.connect(url))
            sh.handles += 1
        self.shared = sh
        self._closed = False
        self._depth = 0
        self._token: str | None = None
        self._beat: threading.Event | None = None
        self._oplog: list[OplogEntry] = []  # this transaction's oplog rows, not written yet
        self._oplog_next = 0
        self._requests: list[tuple[str, str]] = []  # this transaction's claimed request ids (id, time)
        self._trim_due: str | None = None
        self._kept = 0  # how many accesses reads kept this transaction applies (`record_access`)
        self._graph_ids: set[str] = set()  # insights whose attributes or adjacency this transaction changed
        self._gen = 0
        self._journal = GraphJournal()
        try:
            self._bootstrap()
        except BaseException:
            self.close()
            raise

    @property
    def r(self) -> Any:
        return self.shared.client

    def _bootstrap(self) -> None:
        with self._faults(self.url):
            version = self.r.hget(self.p + "meta", "schema")
            if version is None:
                if self.readonly:
                    raise StoreError(f"store {self.store!r} not found in {redact(self.url)}", path=self.location)
                self._create()
                self.r.hsetnx(self.p + "meta", "schema", SCHEMA_VERSION)
                self.r.sadd(f"{self.ROOT}:stores", self.store)
            elif int(version) > SCHEMA_VERSION:
                raise StoreError(f"store {self.store!r} in {redact(self.url)} was made by a newer mnemon (schema "
                                 f"{int(version)}); upgrade mnemon", path=self.location)

    # ------------------------------------------------------------------ the mirror, kept current

    def _m(self) -> Mirror:
        """The mirror, with every commit of other processes in it (inside a transaction: as it is, since this
        process holds the write lock)."""
        sh = self.shared
        if self._depth:
            assert sh.mirror is not None
            return sh.mirror
        with self._faults(self.url):
            self._sync()
        assert sh.mirror is not None
        return sh.mirror

    def _sync(self) -> None:
        sh = self.shared
        version = int(self.r.get(self.p + "version") or 0)
        if sh.mirror is not None and version == sh.version:
            return
        entries = self.r.xrange(self.p + "changes", min=f"({sh.last}") if sh.mirror is not None else []
        if sh.mirror is None or not entries or int(entries[0][1][b"v"]) != sh.version + 1:
            self._load_all()
            return
        ids: set[str] = set()
        tails = False
        for entry_id, fields in entries:
            ids.update(json.loads(fields[b"ids"]))
            tails = tails or fields.get(b"tails") == b"1"
            sh.version, sh.graph, sh.last = int(fields[b"v"]), int(fields[b"g"]), entry_id.decode()
        self._reload(sorted(ids))
        if tails:
            sh.mirror.tails = {k.decode(): v.decode() for k, v in self.r.hgetall(self.p + "tails").items()}

    def _load_all(self) -> None:
        """Read the whole store (the first use, or a process too far behind the change log)."""
        sh = self.shared
        version, graph = (int(v or 0) for v in self.r.mget(self.p + "version", self.p + "graph"))
        last = self.r.xrevrange(self.p + "changes", count=1)
        mirror = Mirror()
        ids = self._all_ids()
        sh.mirror = mirror
        self._reload(ids)
        mirror.tails = {k.decode(): v.decode() for k, v in self.r.hgetall(self.p + "tails").items()}
        sh.version, sh.graph, sh.last = version, graph, last[0][0].decode() if last else "0-0"
        self._gen += 1  # what a memo holds may be older than the mirror it read

    def _reload(self, ids: Sequence[str]) -> None:
        """The insights' rows and edges as stored now, into the mirror."""
        mirror = self.shared.mirror
        assert mirror is not None
        for i in range(0, len(ids), PAGE):
            page = ids[i:i + PAGE]
            for id_, (row, edges) in zip(page, self._read(page)):
                mirror.replace_insight(id_, row, edges)

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def transaction(self, *, wait: bool = True) -> Iterator[None]:
        """Outermost: the store's write lock, the mirror brought up to date, the accesses reads kept for it
        (`record_access`) applied first, and at the end one MULTI/EXEC of what changed; inner: a savepoint (the
        mirror's journal undone to its mark). With `wait=False` an outermost call that finds the lock taken
        raises `Busy` at once."""
        with self.shared.lock:
            kept: list[Access] = []
            if self._depth == 0:
                kept = self._begin(wait=wait)
            mirror = self.shared.mirror
            assert mirror is not None
            marks = mirror.mark(), len(self._oplog), len(self._requests), self._trim_due
            self._depth += 1
            try:
                for access in kept:
                    apply_access(self, access)  # type: ignore[arg-type]
                yield
            except BaseException:
                self._depth -= 1
                mirror.rollback(marks[0])
                del self._oplog[marks[1]:]
                del self._requests[marks[2]:]
                self._trim_due = marks[3]
                if self._depth == 0:
                    self._end(commit=False)
                raise
            self._depth -= 1
            if self._depth == 0:
                self._end(commit=True)

    def _begin(self, *, wait: bool) -> list[Access]:
        """Take the lock and bring the mirror up to date; the accesses reads kept for this transaction."""
        kept: list[Access] = []
        with self._faults(self.url):
            if not self.readonly:
                self._take_lock(wait=wait)
            try:
                self._sync()
                self._oplog_next = int(self.r.hget(self.p + "meta", "oplog") or 0)
                if not self.readonly:
                    kept = [_access_of(raw) for raw in self.r.lrange(self.p + "accesses", 0, -1)]
            except BaseException:
                self._let_go()
                raise
        self._kept = len(kept)
        self._journal.begin(self._gen)
        return kept

    def _take_lock(self, *, wait: bool = True) -> None:
        token = os.urandom(12).hex()
        deadline = time.monotonic() + WRITE_LOCK_TIMEOUT_S
        while not self.r.set(self.p + "lock", token, nx=True, px=LOCK_TTL_MS):
            if not wait:
                raise Busy
            if time.monotonic() >= deadline:
                raise StoreError(f"database is locked: another process held {self.location} longer than the "
                                 f"{WRITE_LOCK_TIMEOUT_S:g} s lock timeout; try again", path=self.location)
            time.sleep(LOCK_POLL_S)
        self._token = token
        stop = self._beat = threading.Event()
        renew = self.r.register_script(_RENEW)
        key = self.p + "lock"

        def beat() -> None:
            while not stop.wait(BEAT_S):
                with contextlib.suppress(Exception):  # a lapsed lock fails the commit (its version check)
                    renew(keys=[key], args=[token, LOCK_TTL_MS])

        threading.Thread(target=beat, name="mnemon-redis-lock", daemon=True).start()

    def _let_go(self) -> None:
        if self._beat is not None:
            self._beat.set()
            self._beat = None
        if self._token is not None:
            token, self._token = self._token, None
            with contextlib.suppress(Exception):
                self.r.register_script(_RELEASE)(keys=[self.p + "lock"], args=[token])

    def _end(self, *, commit: bool) -> None:
        mirror = self.shared.mirror
        assert mirror is not None
        try:
            if commit:
                rows, edges, tails = mirror.changed_rows, mirror.changed_edges, mirror.changed_tails
                if rows or edges or tails or self._oplog or self._requests or self._kept:
                    if self.readonly:
                        raise StoreError("database writes are disabled (--readonly)", path=self.location)
                    with self._faults(self.url):
                        self._commit(mirror)
                if self._graph_ids:
                    self._gen += 1
                    self._journal.touch(self._graph_ids)
                    self._journal.commit(self.shared.graph, self._gen)
                else:
                    self._journal.abort()
            else:
                self._journal.abort()
        except BaseException:
            self._journal.abort()
            self.shared.mirror = None  # what it holds was not written: read the store again
            self._gen += 1
            raise
        finally:
            mirror.settle()
            self._oplog, self._requests, self._trim_due, self._kept = [], [], None, 0
            self._graph_ids = set()
            self._let_go()

    def _commit(self, mirror: Mirror) -> None:
        """Write the final state of what the transaction changed, the change-log entry and the version bump, in
        one MULTI/EXEC, checked against a version another writer moved (this one's lock lapsed)."""
        redis = _redis()
        p, sh = self.p, self.shared
        touched = mirror.changed_rows | {end for k in mirror.changed_edges for end in k[:2]}
        trim = self._oplog_trim()
        pipe = self.r.pipeline(transaction=True)
        pipe.watch(p + "version")
        if int(pipe.get(p + "version") or 0) != sh.version:
            pipe.reset()
            raise StoreError(f"the write lock of {self.location} lapsed and another process wrote; try again",
                             path=self.location)
        pipe.multi()
        self._queue_rows(pipe, mirror)
        for session in sorted(mirror.changed_tails):
            tail = mirror.tails.get(session)
            if tail is None:
                pipe.hdel(p + "tails", session)
            else:
                pipe.hset(p + "tails", session, tail)
        for o in self._oplog:
            pipe.xadd(p + "oplog", {"op": o.operation, "ins": o.insight_id or "", "d": o.detail, "at": o.created_at},
                      id=f"{o.id}-1")
        if self._oplog:
            pipe.hset(p + "meta", "oplog", self._oplog[-1].id)
        if trim:
            pipe.xdel(p + "oplog", *trim)
        if self._kept:  # the kept accesses this transaction applied (reads append behind them meanwhile)
            pipe.ltrim(p + "accesses", self._kept, -1)
        for rid, at in self._requests:
            pipe.zadd(p + "requests", {rid: epoch(at)})
        if self._requests:
            pipe.zremrangebyscore(p + "requests", "-inf", f"({epoch(self._requests[-1][1]) - REQUEST_KEEP_S}")
        graph = sh.graph + 1 if self._graph_ids else sh.graph
        pipe.set(p + "graph", graph)
        pipe.xadd(p + "changes", {"v": sh.version + 1, "g": graph, "ids": json.dumps(sorted(touched)),
                                  "tails": "1" if mirror.changed_tails else "0"},
                  maxlen=CHANGES_KEEP, approximate=True)
        pipe.incr(p + "version")
        try:
            out = pipe.execute()
        except redis.exceptions.WatchError as e:
            raise StoreError(f"the write lock of {self.location} lapsed and another process wrote; try again",
                             path=self.location) from e
        sh.version, sh.graph = int(out[-1]), graph
        sh.last = out[-2].decode() if isinstance(out[-2], bytes) else str(out[-2])

    def _oplog_trim(self) -> list[str]:
        """The oplog entries the retention drops at this commit (read before it: this process holds the lock)."""
        if self._trim_due is None:
            return []
        retention, now = self.oplog_retention, self._trim_due
        n_new = len(self._oplog)
        drop: list[str] = []
        cutoff = retention.cutoff(now)
        total = int(self.r.xlen(self.p + "oplog")) + n_new
        excess = total - retention.max_rows if retention.max_rows > 0 else 0
        kept_new = [o for o in self._oplog if cutoff is None or o.created_at >= cutoff]
        gone_new = {o.id for o in self._oplog} - {o.id for o in kept_new}
        for entry_id, fields in self.r.xrange(self.p + "oplog", count=max(excess, 0) + PAGE):
            old = cutoff is not None and fields[b"at"].decode() < cutoff
            if old or excess > 0:
                drop.append(entry_id.decode())
                excess -= 1
            else:
                break
        self._oplog = [o for o in self._oplog if o.id not in gone_new]
        if retention.max_rows > 0 and len(self._oplog) > retention.max_rows:
            self._oplog = self._oplog[-retention.max_rows:]
        return drop

    def _write(self) -> contextlib.AbstractContextManager[None]:
        """A write call: its own transaction (level)."""
        return self.transaction()

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._let_go()
        with _shared_lock:
            self.shared.handles -= 1
            if self.shared.handles <= 0:
                _shared.pop((self.ROOT, self.url, self.store), None)
                with contextlib.suppress(Exception):
                    self.shared.client.close()

    def replaced(self) -> bool:
        return False  # a server's store stays the one connected to

    def size_bytes(self) -> int:
        with self._faults(self.url):
            keys = list(self.r.scan_iter(match=self.p + "*", count=1000))
            total = 0
            for i in range(0, len(keys), PAGE):
                pipe = self.r.pipeline(transaction=False)
                for k in keys[i:i + PAGE]:
                    pipe.memory_usage(k, samples=0)
                total += sum(int(n or 0) for n in pipe.execute())
            return total

    # ------------------------------------------------------------------ insights

    def insert_insight(self, ins: Insight, tokens: Collection[str]) -> None:
        with self._write():
            m = self._m()
            m.set_seq(m.seq + 1)
            m.put_row(row_of(ins, m.seq, tokens))
            self._graph_ids.add(ins.id)

    def get_insight(self, id: str, *, include_deleted: bool = False) -> Insight | None:
        with self.shared.lock:
            return self._m().get_insight(id, include_deleted=include_deleted)

    def get_insights(self, ids: Sequence[str]) -> dict[str, Insight]:
        with self.shared.lock:
            return self._m().get_insights(ids)

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        with self.shared.lock:
            return self._m().ids_starting(prefix, limit)

    def texts(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        with self.shared.lock:
            return self._m().texts(ids)

    def find_by_content(self, content: str) -> str | None:
        with self.shared.lock:
            return self._m().find_by_content(content)

    def count_active(self) -> int:
        with self.shared.lock:
            return self._m().count_active()

    def count_deleted(self) -> int:
        with self.shared.lock:
            return self._m().count_deleted()

    def iter_active(self, filters: Filters = NO_FILTERS) -> Iterator[Insight]:
        with self.shared.lock:
            rows = list(self._m().iter_active(filters))
        yield from rows

    def latest(
        self, *, source: str | None = None, since: str | None = None, exclude: str | None = None,
        limit: int, filters: Filters = NO_FILTERS,
    ) -> list[Insight]:
        with self.shared.lock:
            return self._m().latest(source=source, since=since, exclude=exclude, limit=limit, filters=filters)

    def latest_ids(self, *, limit: int, filters: Filters = NO_FILTERS) -> list[str]:
        with self.shared.lock:
            return self._m().latest_ids(limit=limit, filters=filters)

    def soft_delete(self, ids: Sequence[str], now: str) -> None:
        with self._write():
            m = self._m()
            for id_ in dict.fromkeys(ids):
                row = m.active(id_)
                if row is None:
                    continue
                m.put_row(Row(row.insight.model_copy(update={"deleted_at": now, "updated_at": now}), row.seq,
                              row.tokens, row.stems, row.model, row.vector))
                self._graph_ids.add(id_)
                for key in sorted(m.by_end.get(id_, ())):
                    self._put_edge(key, None)

    def _update(self, changes: dict[str, dict[str, Any]]) -> None:
        with self._write():
            m = self._m()
            for id_, update in changes.items():
                row = m.rows.get(id_)
                if row is not None:
                    m.put_row(Row(row.insight.model_copy(update=update), row.seq, row.tokens, row.stems, row.model,
                                  row.vector))

    def touch(self, ids: Sequence[str], now: str, inc: int = 1) -> None:
        counts = Counter(ids)  # an id listed twice counts twice, as on SQLite
        if counts:
            with self._write():
                m = self._m()
                # the newest time stays: a kept access applied after a newer one (`record_access`)
                self._update({i: {"access_count": m.rows[i].insight.access_count + inc * n,
                                  "last_accessed_at": max(now, m.rows[i].insight.last_accessed_at or now)}
                              for i, n in counts.items() if i in m.rows})

    def set_effective_importance(self, values: dict[str, float]) -> None:
        if values:
            self._update({i: {"effective_importance": float(v)} for i, v in values.items()})

    def prune_candidates(
        self, *, exclude: str | None, stored_before: str | None, limit: int, immune_importance: int,
        immune_access: int,
    ) -> list[Insight]:
        with self.shared.lock:
            return self._m().prune_candidates(exclude=exclude, stored_before=stored_before, limit=limit,
                                              immune_importance=immune_importance, immune_access=immune_access)

    def like_search(self, query: str, filters: Filters, limit: int) -> list[Insight]:
        with self.shared.lock:
            return self._m().like_search(query, filters, limit)

    # ------------------------------------------------------------------ search

    def token_hits(
        self, tokens: Collection[str], *, filters: Filters = NO_FILTERS, exclude: str | None = None,
        limit: int | None = None, order: str = "coverage",
    ) -> list[TokenHit]:
        with self.shared.lock:
            return self._m().token_hits(tokens, filters=filters, exclude=exclude, limit=limit, order=order)

    def token_tops(self, tokens: Collection[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]]:
        with self.shared.lock:
            return self._m().token_tops(tokens, limit)

    def insight_tokens(self, ids: Sequence[str]) -> dict[str, frozenset[str]]:
        with self.shared.lock:
            return self._m().insight_tokens(ids)

    def term_scores(self, term: str) -> list[tuple[str, float]]:
        with self.shared.lock:
            return self._m().term_scores(term)

    def source_hits(self, names: Collection[str]) -> dict[str, list[str]]:
        with self.shared.lock:
            return self._m().source_hits(names)

    def session_tail(self, session: str) -> str | None:
        with self.shared.lock:
            return self._m().session_tail(session)

    def set_session_tail(self, session: str, insight_id: str) -> None:
        with self._write():
            self._m().put_tail(session, insight_id)

    def with_entity(self, entity: str, *, exclude: str, limit: int) -> list[str]:
        with self.shared.lock:
            return self._m().with_entity(entity, exclude=exclude, limit=limit)

    def known_entities(self, candidates: Collection[str], *, casefold: bool = False) -> dict[str, str]:
        with self.shared.lock:
            return self._m().known_entities(candidates, casefold=casefold)

    def entity_hits(self, entities_lower: Collection[str], filters: Filters = NO_FILTERS) -> dict[str, int]:
        with self.shared.lock:
            return self._m().entity_hits(entities_lower, filters)

    def top_entities(self, limit: int) -> list[tuple[str, int]]:
        with self.shared.lock:
            return self._m().top_entities(limit)

    def count_by_category(self) -> dict[str, int]:
        with self.shared.lock:
            return self._m().count_by_category()

    # ------------------------------------------------------------------ vectors

    def set_vector(self, id: str, vector: np.ndarray, model: str) -> None:
        with self._write():
            m = self._m()
            row = m.rows.get(id)
            if row is not None:
                m.put_row(with_vector(row, np.asarray(vector, dtype=np.float32), model))

    def get_vector(self, id: str, model: str) -> np.ndarray | None:
        with self.shared.lock:
            return self._m().get_vector(id, model)

    def vector_matrix(self, model: str, dim: int) -> tuple[list[str], np.ndarray]:
        with self.shared.lock:
            return self._m().vector_matrix(model, dim)

    def ann_index(self, model: str, dim: int) -> MirroredAnn | None:
        """The vector set of (model, dim) as recall's vector signal once it holds `ANN_MIN_ROWS` vectors; below,
        None: recall scans the matrix exactly."""
        with self.shared.lock:
            n = len(self._m().vector_matrix(model, dim)[0])
        if n < max(1, base.ANN_MIN_ROWS):
            return None
        return MirroredAnn(self, model, dim)

    def nearest(self, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Through the vector set (`VSIM`) where it serves recall, else exactly from the matrix; inside a
        transaction with vector writes not yet in the set, exactly."""
        vec = np.asarray(vector, dtype=np.float32)
        with self.shared.lock:
            m = self._m()
            if self._depth == 0 and self.ann_index(model, int(vec.shape[0])) is not None:
                return self._indexed(model, vec, k)
            return m.nearest(model, vec, k)

    def _indexed(self, model: str, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k nearest by the database's index, of the insights active in the mirror (an index may lag a
        deletion), best first."""
        m = self._m()
        with self._faults(self.url):
            hits = self._index_nearest(model, vec, k)
        return sorted([h for h in hits if m.active(h[0]) is not None], key=lambda h: (-h[1], h[0]))[:k]

    def maintain_vector_index(self, model: str, dim: int) -> int:
        return 0  # a vector set indexes every write

    def vector_counts(self) -> dict[str, int]:
        with self.shared.lock:
            return self._m().vector_counts()

    def unembedded(self, model: str, limit: int) -> list[Insight]:
        with self.shared.lock:
            return self._m().unembedded(model, limit)

    # ------------------------------------------------------------------ edges

    def _put_edge(self, key: EdgeKey, edge: Edge | None) -> None:
        self._m().put_edge(key, edge)
        self._graph_ids.update(key[:2])

    def upsert_edge(self, edge: Edge) -> None:
        self.upsert_edges([edge])

    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        if edges:
            with self._write():
                for e in edges:
                    self._put_edge((e.source_id, e.target_id, str(e.edge_type)), e.model_copy())

    def delete_edge(self, source_id: str, target_id: str, edge_type: str) -> None:
        with self._write():
            key = (source_id, target_id, str(edge_type))
            if key in self._m().edges:
                self._put_edge(key, None)

    def edges_of(self, ids: Sequence[str]) -> list[Edge]:
        with self.shared.lock:
            return [e.model_copy() for e in self._m().edges_of(ids)]

    def edges_among(self, ids: Sequence[str], edge_type: str | None = None) -> list[Edge]:
        with self.shared.lock:
            return [e.model_copy() for e in self._m().edges_among(ids, edge_type)]

    def existing_edges(self, keys: Collection[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        with self.shared.lock:
            return self._m().existing_edges(keys)

    def edge_counts(self, ids: Sequence[str]) -> dict[str, int]:
        with self.shared.lock:
            return self._m().edge_counts(ids)

    def count_edges(self) -> int:
        with self.shared.lock:
            return self._m().count_edges()

    def iter_edges(self) -> Iterator[Edge]:
        with self.shared.lock:
            rows = [e.model_copy() for e in self._m().iter_edges()]
        yield from rows

    def graph_version(self) -> tuple[int, int]:
        with self.shared.lock:
            self._m()
            return self.shared.graph, self._gen

    def graph_changes(self, since: Hashable, now: Hashable) -> set[str] | None:
        return self._journal.changes(since, now)

    def insight_meta(self, ids: Sequence[str]) -> dict[str, tuple[int, str, str, str]]:
        with self.shared.lock:
            return self._m().insight_meta(ids)

    def adjacency(self, ids: Sequence[str]) -> list[tuple[str, str, str, float, str | None]]:
        with self.shared.lock:
            return self._m().adjacency(ids)

    def superseded_ids(self, among: Sequence[str] | None = None) -> set[str]:
        with self.shared.lock:
            return self._m().superseded_ids(among)

    # ------------------------------------------------------------------ oplog

    def log(self, operation: str, insight_id: str | None, detail: str, now: str) -> None:
        with self._write():
            last = self._oplog[-1].id if self._oplog else self._oplog_next
            self._oplog.append(OplogEntry(id=last + 1, operation=operation, insight_id=insight_id, detail=detail,
                                          created_at=now))
            self._trim_due = now

    def record_access(self, access: Access) -> bool:
        """Applied at once when no writer holds the store (this process's other store objects, or another
        process's lock), else appended to the store's `accesses` list, which the next write transaction of any
        process applies first: a read never waits for a writer."""
        if self.shared.lock.acquire(blocking=False):
            try:
                with self.transaction(wait=False):
                    apply_access(self, access)  # type: ignore[arg-type]
                return True
            except Busy:
                pass
            finally:
                self.shared.lock.release()
        with self._faults(self.url):
            self.r.rpush(self.p + "accesses", json.dumps(access._asdict()))
        return False

    def claim_request(self, request_id: str, now: str) -> bool:
        """Record a served call's request id (`once.py`); False when it is there already (and younger than
        REQUEST_KEEP_S)."""
        with self._write():
            if any(r == request_id for r, _ in self._requests):
                return False
            with self._faults(self.url):
                score = self.r.zscore(self.p + "requests", request_id)
            if score is not None and score >= epoch(now) - REQUEST_KEEP_S:
                return False
            self._requests.append((request_id, now))
            return True

    def _stored_log(self, entries: Iterable[tuple[bytes, dict[bytes, bytes]]]) -> list[OplogEntry]:
        return [OplogEntry(id=int(i.decode().split("-")[0]), operation=f[b"op"].decode(),
                           insight_id=f[b"ins"].decode() or None, detail=f[b"d"].decode(), created_at=f[b"at"].decode())
                for i, f in entries]

    def read_log(self, limit: int) -> list[OplogEntry]:
        with self.shared.lock, self._faults(self.url):
            stored = self._stored_log(self.r.xrevrange(self.p + "oplog", count=limit))
            return (self._oplog[::-1] + stored)[:limit]

    def count_log(self) -> int:
        with self.shared.lock, self._faults(self.url):
            return int(self.r.xlen(self.p + "oplog")) + len(self._oplog)

    def oplog_oldest(self) -> str | None:
        with self.shared.lock, self._faults(self.url):
            first = self._stored_log(self.r.xrange(self.p + "oplog", count=1))
        return first[0].created_at if first else (self._oplog[0].created_at if self._oplog else None)

    # ------------------------------------------------------------------ copy (`mnemon migrate`)

    def dump_insights(self) -> Iterator[DumpRow]:
        with self.shared.lock:
            rows = list(self._m().dump_insights())
        yield from rows

    def dump_oplog(self) -> Iterator[OplogEntry]:
        last = "-"
        while True:
            with self._faults(self.url):
                page = self.r.xrange(self.p + "oplog", min=last, count=PAGE)
            if not page:
                return
            for o in self._stored_log(page):
                yield OplogEntry.model_construct(**dict(o))
            last = "(" + page[-1][0].decode()

    def dump_tails(self) -> Iterator[tuple[str, str]]:
        with self.shared.lock:
            rows = list(self._m().dump_tails())
        yield from rows

    def load(
        self, insights: Iterable[DumpRow], edges: Iterable[Edge], oplog: Iterable[OplogEntry],
        tails: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Copy `Dump`'s rows into this empty store in one transaction (one MULTI/EXEC)."""
        with self.transaction():
            m = self._m()
            for row in insights:
                m.set_seq(m.seq + 1)
                vec = None if row.vector is None else encode(row.vector)
                m.put_row(row_of(row.insight, m.seq, row.tokens, (row.model or "unknown") if vec is not None else None,
                                 vec))
                self._graph_ids.add(row.insight.id)
            for e in edges:
                self._put_edge((e.source_id, e.target_id, str(e.edge_type)), e)
            for session, id_ in tails:
                m.put_tail(session, id_)
            self._oplog.extend(oplog)


class MirroredAnn(AnsweredAnn):
    """The database's vector index as recall's nearest-neighbour index; cosines are exact, from the mirror's
    vectors."""

    store: MirroredStore

    def _nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        with self.store.shared.lock:
            return self.store._indexed(self.model, np.asarray(query, dtype=np.float32), k)

    def cosines(self, ids: list[str], query: np.ndarray) -> np.ndarray:
        out = np.full(len(ids), np.nan, dtype=np.float32)
        q = normalise(query)
        with self.store.shared.lock:
            m = self.store._m()
            for n, id_ in enumerate(ids):
                row = m.active(id_)
                if row is not None and row.vector is not None and row.model == self.model \
                        and len(row.vector) == 4 * self.dim:
                    out[n] = float(normalise(decode(row.vector)) @ q)
        return out


# ---------------------------------------------------------------------------------------------- the backend



class Stores:
    """`Catalog` of the stores of one backend in one Redis database: a key prefix each, named in the set
    `<ROOT>:stores`."""

    def __init__(self, url: str, store_class: type[MirroredStore]) -> None:
        self.url = url
        self.cls = store_class
        self.key = f"{store_class.ROOT}:stores"

    @contextmanager
    def _client(self) -> Iterator[Any]:
        client = self.cls.connect(self.url)
        try:
            with self.cls._faults(self.url):
                yield client
        finally:
            client.close()

    def names(self) -> list[str]:
        with self._client() as client:
            return sorted(n.decode() for n in client.smembers(self.key))

    def exists(self, name: str) -> bool:
        return name in self.names()

    def create(self, name: str) -> None:
        self.cls(self.url, store=name).close()

    def remove(self, name: str) -> None:
        with _shared_lock:
            if (self.cls.ROOT, self.url, name) in _shared:
                raise StoreError(f'cannot remove store "{name}": it is open in this process')
        with self._client() as client:
            pattern = self.cls.prefix(name).replace("{", "\\{").replace("}", "\\}") + "*"
            keys = list(client.scan_iter(match=pattern, count=1000))
            for i in range(0, len(keys), PAGE):
                client.unlink(*keys[i:i + PAGE])
            client.srem(self.key, name)
