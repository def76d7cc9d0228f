"""A store's vectors in Milvus, beside a SQLite, Postgres or Kùzu store: `MNEMON_VECTOR_URL=milvus:///abs/file.db`
(Milvus Lite, embedded, a local file) or `http://host:19530` (a Milvus server); extra `mnemon-core[milvus]`.

The design documents' mapping for a vector database: remember = upsert, recall = ANN search, link = a metadata
reference, which the relational store beside it carries (edges, keyword indexes, the oplog stay there). Milvus
holds one collection per store and dimension (`mnemon_<store>_<dim>`): the insight id (primary key), its embedding
model, `active` (a soft-deleted insight's vector is kept for `mnemon migrate`, as on SQLite), `ts` (when it was
written, ns: readers refresh what changed since) and the vector, with a cosine index.

Milvus has no transactions to join. A transaction's vector writes wait in this process (its reads see them) and go
to Milvus just before the store commits; a rollback drops them. What a crash between the two leaves behind is a
vector whose insight never committed: the store beside it is the truth, so every vector read keeps only vectors of
the store's active insights, and such a vector is never served.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..config import Settings
from ..daemon.resident import locked_elsewhere
from ..errors import StoreError, import_extra
from ..models import Insight
from ..redact import redact
from . import base
from .base import DumpRow, Store
from .holder import open_held
from .vectors import AnsweredAnn, VectorCache, encode, normalise
from .vectors import nearest as exact_nearest

SCHEMES = ("milvus://", "http://", "https://")
PREFIX = "mnemon_"
ID_MAX = 512  # the longest insight id a collection holds (VARCHAR primary key)
MODEL_MAX = 512
PAGE = 1000  # ids per get, rows per insert
# A reader of a Milvus server looks this far back past the newest write it saw (other writers' clocks); Milvus Lite
# has one process, whose writes carry its own clock, so it looks back not at all.
REFRESH_SLACK_NS = 5_000_000_000
SEARCH_MARGIN = 16  # extra neighbours asked for, so that vectors of insights not in the store can be dropped

# url → [MilvusClient, the MilvusVectors using it]; Milvus Lite serves one client per file and process, and one
# process at a time holds the file (`store/holder.py`): the last one closed lets it go
_clients: dict[str, list[Any]] = {}
_loaded: set[tuple[str, str]] = set()  # (url, collection) loaded by this process's client
# (url, collection prefix) → how many writes this process has sent: with Milvus Lite (one process per file) a
# reader whose caches saw the current count has nothing to read back (the engine keeps several stores objects)
_writes: dict[tuple[str, str], int] = {}
_clients_lock = threading.Lock()
LITE = "milvus://"
LOCK_FILE = "LOCK"  # Milvus Lite's advisory lock in its data directory (the .db path), held while a process has it


def _pymilvus() -> Any:
    return import_extra("pymilvus", "milvus")


def lite_path(url: str) -> str | None:
    """The file a Milvus Lite URL names (None for a server's URL)."""
    if not url.startswith(LITE):
        return None
    target = url[len(LITE):]
    if not target.startswith("/") or not target.endswith(".db"):
        raise StoreError(f"a Milvus Lite URL names an absolute .db file, milvus:///abs/file.db; got {redact(url)!r}")
    return target


def _held(path: str) -> bool:
    """Another process holds the Milvus Lite file (its lock taken)."""
    try:
        fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    return locked_elsewhere(fd)


def acquire(url: str, data_dir: str | None = None) -> Any:
    """The process's client of a Milvus URL, counted until `let_go`. A Milvus Lite file another process holds is
    waited for (`data_dir`: whose engines are asked to let it go); any other failure to open it is one line."""
    if not url.startswith(SCHEMES):
        raise StoreError(
            f"MNEMON_VECTOR_URL must be milvus:///abs/file.db or http(s)://host:port, got {redact(url)!r}")
    path = lite_path(url)
    pymilvus = _pymilvus()
    # their log lines (one per scan: "failed to get mvccTs …"; a traceback when a file is held) are not ours: a
    # failure reaches the user as one line of its own
    for name in ("pymilvus", "milvus_lite"):
        logging.getLogger(name).setLevel(logging.CRITICAL)

    def open_client() -> Any:
        try:
            return pymilvus.MilvusClient(path or url)
        except Exception as e:  # noqa: BLE001 - pymilvus raises its own and grpc's errors
            if path is not None and _held(path):
                raise _Held from e
            raise StoreError(f"cannot open Milvus at {redact(url)}: {_first_line(e)}") from e

    with _clients_lock:
        entry = _clients.get(url)
        if entry is None:
            c = open_client() if path is None else open_held(open_client, lambda e: isinstance(e, _Held), path,
                                                              "Milvus Lite", data_dir)
            entry = _clients[url] = [c, 0]
        entry[1] += 1
        return entry[0]


def let_go(url: str) -> None:
    """One user of the URL's client less; the last closes it (and lets a Milvus Lite file go)."""
    with _clients_lock:
        entry = _clients.get(url)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _clients[url]
        for key in [k for k in _loaded if k[0] == url]:
            _loaded.discard(key)
    with contextlib.suppress(Exception):
        entry[0].close()
    path = lite_path(url)
    if path is not None:
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(path)


class _Held(Exception):
    """The Milvus Lite file is held by another process."""


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def collection_prefix(store: str) -> str:
    """`mnemon_<store>_`: Milvus names take letters, digits and underscores, so other characters become `_`
    and a hash of the name keeps two stores apart."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", store)
    if safe != store:
        safe += "_" + hashlib.sha1(store.encode()).hexdigest()[:8]
    return f"{PREFIX}{safe}_"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class MilvusVectors:
    """The collections of one store in Milvus."""

    def __init__(self, url: str, store: str, data_dir: str | None = None) -> None:
        self.url = url
        self.client = acquire(url, data_dir)
        self._closed = False
        self.prefix = collection_prefix(store)
        # Milvus Lite: one process holds the file, so every write is this process's own and is in its caches
        self.one_process = url.startswith(LITE)
        self.slack_ns = 0 if self.one_process else REFRESH_SLACK_NS
        self._dims: set[int] | None = None

    def writes(self) -> int:
        """Writes this process has sent to these collections (any object's)."""
        return _writes.get((self.url, self.prefix), 0)

    def _wrote(self) -> None:
        with _clients_lock:
            _writes[(self.url, self.prefix)] = self.writes() + 1

    def _name(self, dim: int) -> str:
        return f"{self.prefix}{dim}"

    def dims(self) -> set[int]:
        """The dimensions of this store's collections, each loaded: a collection another process made is found
        released, and Milvus answers no get, query or search on it until it is loaded."""
        if self._dims is None:
            names = self.client.list_collections()
            self._dims = {int(n[len(self.prefix):]) for n in names
                          if n.startswith(self.prefix) and n[len(self.prefix):].isdigit()}
            for dim in self._dims:
                self._load(self._name(dim))
        return self._dims

    def _load(self, name: str) -> None:
        if (self.url, name) not in _loaded:
            self.client.load_collection(name)
            _loaded.add((self.url, name))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            let_go(self.url)

    def _ensure(self, dim: int) -> str:
        name = self._name(dim)
        if dim not in self.dims():
            pymilvus = _pymilvus()
            schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("id", pymilvus.DataType.VARCHAR, is_primary=True, max_length=ID_MAX)
            schema.add_field("model", pymilvus.DataType.VARCHAR, max_length=MODEL_MAX)
            schema.add_field("active", pymilvus.DataType.BOOL)
            schema.add_field("ts", pymilvus.DataType.INT64)
            schema.add_field("vec", pymilvus.DataType.FLOAT_VECTOR, dim=dim)
            index = self.client.prepare_index_params()
            index.add_index("vec", index_type="AUTOINDEX", metric_type="COSINE")
            if not self.client.has_collection(name):
                self.client.create_collection(name, schema=schema, index_params=index, consistency_level="Strong")
            self._load(name)
            self.dims().add(dim)
        return name

    def upsert(self, rows: list[tuple[str, str, np.ndarray, bool]]) -> None:
        """(id, model, vector, active) rows, each id's row in other dimensions removed."""
        ts = time.time_ns()
        by_dim: dict[int, list[dict[str, Any]]] = {}
        for id_, model, vec, active in rows:
            by_dim.setdefault(int(vec.shape[0]), []).append(
                {"id": id_, "model": model, "active": bool(active), "ts": ts, "vec": vec.astype(np.float32).tolist()})
        for dim, batch in by_dim.items():
            name = self._ensure(dim)
            for other in sorted(self.dims() - {dim}):  # a new model may have another dimension
                self.client.delete(self._name(other), ids=[r["id"] for r in batch])
            for i in range(0, len(batch), PAGE):
                self.client.upsert(name, batch[i:i + PAGE])
        self._wrote()

    def get(self, ids: Sequence[str]) -> dict[str, tuple[str, np.ndarray, bool]]:
        """id → (model, vector, active) of those stored."""
        out: dict[str, tuple[str, np.ndarray, bool]] = {}
        ids = list(dict.fromkeys(ids))
        for dim in sorted(self.dims()):
            for i in range(0, len(ids), PAGE):
                for r in self.client.get(self._name(dim), ids=ids[i:i + PAGE],
                                         output_fields=["id", "model", "active", "vec"]):
                    out[r["id"]] = (r["model"], np.asarray(r["vec"], dtype=np.float32), bool(r["active"]))
        return out

    def rows(self, filter: str, fields: Sequence[str], dims: Collection[int] | None = None) -> Iterator[dict[str, Any]]:
        """Every row matching a filter, in each collection (of `dims`), a page at a time."""
        for dim in sorted(self.dims() if dims is None else set(dims) & self.dims()):
            it = self.client.query_iterator(self._name(dim), batch_size=PAGE, filter=filter,
                                            output_fields=[*fields, "id"])
            try:
                while page := it.next():
                    for r in page:
                        r.setdefault("dim", dim)
                        yield r
            finally:
                it.close()

    def search(self, model: str, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        dim = int(vec.shape[0])
        if dim not in self.dims() or k <= 0:
            return []
        hits = self.client.search(self._name(dim), data=[vec.astype(np.float32).tolist()], limit=k,
                                  filter=f"active == true and model == {_quote(model)}", output_fields=["id"],
                                  search_params={"metric_type": "COSINE"})
        return [(h["id"], float(h["distance"])) for h in hits[0]]

    def count(self, model: str, dim: int) -> int:
        if dim not in self.dims():
            return 0
        r = self.client.query(self._name(dim), filter=f"active == true and model == {_quote(model)}",
                              output_fields=["count(*)"])
        return int(r[0]["count(*)"]) if r else 0

    def drop(self) -> None:
        for dim in sorted(self.dims()):
            self.client.drop_collection(self._name(dim))
            _loaded.discard((self.url, self._name(dim)))
        self._dims = set()
        self._wrote()


class _Ann(AnsweredAnn):
    """Milvus's index over (model, dim)."""

    store: WithVectors

    def cosines(self, ids: list[str], query: np.ndarray) -> np.ndarray:
        out = np.full(len(ids), np.nan, dtype=np.float32)
        found = self.store._current(dict.fromkeys(self.store.inner.get_insights(ids)))
        q = normalise(query)
        for n, id_ in enumerate(ids):
            got = found.get(id_)
            if got is not None and got[0] == self.model and got[1].shape[0] == self.dim and got[2]:
                out[n] = float(normalise(got[1]) @ q)
        return out


class WithVectors:
    """A store whose `Vectors` protocol is served by Milvus; every other call goes to the store beside it."""

    def __init__(self, inner: Store, vectors: MilvusVectors) -> None:
        self.inner = inner
        self.milvus = vectors
        self._lock = threading.RLock()
        self._depth = 0
        self._marks: list[int] = []
        # A transaction's writes not sent yet: (id, model, vector) to set, or (id, None, None) to deactivate.
        self._pending: list[tuple[str, str | None, np.ndarray | None]] = []
        self._caches: dict[tuple[str, int], VectorCache] = {}
        # per cache: the newest `ts` it holds, and the process's write count (`MilvusVectors.writes`) it saw
        self._seen: dict[tuple[str, int], tuple[int, int]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    # ------------------------------------------------------------------ lifecycle

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock, self.inner.transaction():
            self._marks.append(len(self._pending))
            self._depth += 1
            try:
                yield
                if self._depth == 1:
                    self._send()  # before the store commits: a crash between leaves only unserved vectors
            except BaseException:
                mark = self._marks[-1]
                if len(self._pending) > mark or self._depth == 1:
                    del self._pending[mark:]
                    self._caches.clear()  # they had the undone writes; rebuilt from Milvus and what is left
                    self._seen.clear()
                raise
            finally:
                self._depth -= 1
                self._marks.pop()

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.milvus.close()

    # ------------------------------------------------------------------ writes

    def _write(self, op: tuple[str, str | None, np.ndarray | None]) -> None:
        with self._lock:
            self._pending.append(op)
            for cache in self._caches.values():
                _apply(cache, [op])
            if self._depth == 0:
                self._send()

    def _send(self) -> None:
        """The waiting writes, the last of each id winning; a deactivated vector not written in this transaction
        is read back from Milvus to be written again, inactive."""
        ops, self._pending = self._pending, []
        rows: dict[str, tuple[str, np.ndarray, bool]] = {}
        off: set[str] = set()
        for id_, model, vec in ops:
            if vec is not None:
                rows[id_] = (model or "", vec, True)
                off.discard(id_)
            elif id_ in rows:
                rows[id_] = (rows[id_][0], rows[id_][1], False)
            else:
                off.add(id_)
        for id_, (model, vec, _) in self.milvus.get(sorted(off)).items() if off else ():
            rows[id_] = (model, vec, False)
        if rows:
            before = self.milvus.writes()
            try:
                self.milvus.upsert([(k, m, v, a) for k, (m, v, a) in rows.items()])
            except Exception as e:  # noqa: BLE001 - the store's transaction rolls back with it
                raise StoreError(
                    f"cannot write vectors to Milvus at {redact(self.milvus.url)}: {_first_line(e)}") from e
            for key, (ns, seen) in self._seen.items():  # this write is in the caches already (`_write`)
                if seen == before:
                    self._seen[key] = (ns, before + 1)

    def set_vector(self, id: str, vector: np.ndarray, model: str) -> None:
        self._write((id, model, np.asarray(vector, dtype=np.float32)))

    def soft_delete(self, ids: Sequence[str], now: str) -> None:
        with self.transaction():
            self.inner.soft_delete(ids, now)
            for id_ in dict.fromkeys(ids):
                self._write((id_, None, None))

    # ------------------------------------------------------------------ reads

    def _current(self, deleted: dict[str, str | None]) -> dict[str, tuple[str, np.ndarray, bool]]:
        """id → (model, vector, active) as this transaction sees it, of insights of the store (`deleted`: their
        `deleted_at`)."""
        got = self.milvus.get(list(deleted))
        for id_, model, vec in self._pending:
            if id_ not in deleted:
                continue
            if vec is not None:
                got[id_] = (model or "", vec, True)
            elif id_ in got:
                got[id_] = (got[id_][0], got[id_][1], False)
        return {k: (m, v, a and deleted[k] is None) for k, (m, v, a) in got.items()}

    def get_vector(self, id: str, model: str) -> np.ndarray | None:
        ins = self.inner.get_insight(id, include_deleted=True)
        got = self._current({id: ins.deleted_at}).get(id) if ins is not None else None
        return got[1] if got is not None and got[0] == model else None

    def vector_matrix(self, model: str, dim: int) -> tuple[list[str], np.ndarray]:
        """(ids, unit vectors) of the store's active insights embedded by `model` in `dim` dimensions: the rows
        written since the last call read from a Milvus server (Milvus Lite's are all this process's own, already in
        the cache), kept only for insights active in the store."""
        with self._lock:
            cache = self._current_cache(model, dim)
            if cache is not None:  # Milvus Lite, and no other object of this process wrote since
                return cache.snapshot()
            cache = self._caches.get((model, dim))
            writes = self.milvus.writes()  # before the read: a write after it is read next time
            seen_ns = self._seen.get((model, dim), (-1, -1))[0]
            since = seen_ns - self.milvus.slack_ns if cache is not None else -1
            rows = list(self.milvus.rows(f"ts > {since}", ["model", "active", "ts", "vec"], [dim]))
            if cache is None:
                cache = self._caches[(model, dim)] = VectorCache(model, dim)
            if rows:
                active = set(self.inner.insight_meta([r["id"] for r in rows if r["active"]]))
                cache.apply([(r["id"], encode(np.asarray(r["vec"], dtype=np.float32)), r["model"],
                              r["id"] in active) for r in rows], 0)
                seen_ns = max(seen_ns, max(int(r["ts"]) for r in rows))
                _apply(cache, self._pending)  # this transaction's writes stay on top
            elif since == -1:
                _apply(cache, self._pending)
            self._seen[(model, dim)] = (seen_ns, writes)
            return cache.snapshot()

    def _current_cache(self, model: str, dim: int) -> VectorCache | None:
        """The cache of (model, dim) when it holds every vector there is: Milvus Lite has one process per file,
        so when no store object of this process wrote since the cache's last read, nothing else did."""
        cache = self._caches.get((model, dim))
        seen = self._seen.get((model, dim))
        if cache is None or seen is None or not self.milvus.one_process or seen[1] != self.milvus.writes():
            return None
        return cache

    def ann_index(self, model: str, dim: int) -> _Ann | None:
        """Milvus's index as recall's vector signal once it holds `ANN_MIN_ROWS` vectors of (model, dim); below,
        None: recall scans the matrix exactly."""
        cache = self._current_cache(model, dim)
        count = len(cache.snapshot()[0]) if cache is not None else self.milvus.count(model, dim)
        if count < max(1, base.ANN_MIN_ROWS):
            return None
        return _Ann(self, model, dim)

    def nearest(self, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Milvus's nearest neighbours by cosine, vectors of insights the store has not (or no longer) dropped;
        inside a transaction with writes waiting, exactly from the matrix."""
        vec = np.asarray(vector, dtype=np.float32)
        if self._pending:
            return exact_nearest(self, model, vec, k)
        hits = self.milvus.search(model, vec, k + SEARCH_MARGIN)
        active = set(self.inner.insight_meta([h[0] for h in hits]))
        return [h for h in hits if h[0] in active][:k]

    def maintain_vector_index(self, model: str, dim: int) -> int:
        return 0  # Milvus indexes every write

    def _active_vectors(self) -> dict[str, tuple[str, int]]:
        """id → (model, dim) of every active vector of the store's active insights."""
        found = {r["id"]: (r["model"], r["dim"]) for r in self.milvus.rows("active == true", ["model"])}
        for id_, model, vec in self._pending:
            if vec is None:
                found.pop(id_, None)
            else:
                found[id_] = (model or "", int(vec.shape[0]))
        active = set(self.inner.insight_meta(list(found)))
        return {k: v for k, v in found.items() if k in active}

    def vector_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for model, dim in self._active_vectors().values():
            out[f"{model}:{dim}"] = out.get(f"{model}:{dim}", 0) + 1
        return dict(sorted(out.items()))

    def unembedded(self, model: str, limit: int) -> list[Insight]:
        have = {k for k, (m, _) in self._active_vectors().items() if m == model}
        # The store holds no vectors: its answer is every active insight in order; those Milvus has go.
        return [i for i in self.inner.unembedded(model, limit + len(have)) if i.id not in have][:limit]

    def dump_insights(self) -> Iterator[DumpRow]:
        page: list[DumpRow] = []
        for row in self.inner.dump_insights():
            page.append(row)
            if len(page) == PAGE:
                yield from self._with_vectors(page)
                page = []
        yield from self._with_vectors(page)

    def _with_vectors(self, rows: list[DumpRow]) -> Iterator[DumpRow]:
        found = self._current({r.insight.id: r.insight.deleted_at for r in rows})
        for r in rows:
            got = found.get(r.insight.id)
            yield r if got is None else r._replace(vector=got[1], model=got[0])


def _apply(cache: VectorCache, ops: Sequence[tuple[str, str | None, np.ndarray | None]]) -> None:
    cache.apply([(id_, None if vec is None else encode(vec), model, vec is not None) for id_, model, vec in ops],
                cache.high_water)


def with_vectors(store: Store, settings: Settings) -> WithVectors:
    return WithVectors(store, MilvusVectors(settings.vector_url or "", settings.store, str(settings.data_dir)))
