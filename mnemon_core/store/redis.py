"""Redis as a store: `MNEMON_DATABASE_URL=redis://[:password@]host:port/db`; extra `mnemon-core[redis]`.

The design documents' key-value row ("remember = SET key, link degenerates, recall = GET key"), on Redis 8's own
types only, so any Redis 8 serves (no module). The store keeps its rows in the process and writes a commit in one
`MULTI`/`EXEC` (`store/mirrored.py`, which also holds the keys every such store has: the oplog, the change log,
the write lock); the rows are laid out as (under the store's prefix `mnemon:{<store>}:`):

| key | type | holds |
| --- | --- | --- |
| `i:<id>` | hash | an insight: its columns, its tokens (JSON), its vector's model and float32 bytes |
| `order` | sorted set | every insight by insertion number |
| `recent` | sorted set | the active insights by `created_at` (recency) |
| `e:<id>` | hash | the edges touching it, both ways: `<type> <source> <target>` → weight, metadata, time |
| `v:<dim>:<model hash>` | vector set | the active insights' vectors of one model (`VADD … NOQUANT`, `VSIM`: cosine) |
| `vsets` | set | the names of the store's vector sets |
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import StoreError
from ..models import Edge, Insight
from ..redact import redact
from .mirror import EdgeKey, Mirror, Row, row_of
from .mirrored import MirroredStore, Stores, _redis, epoch, faults
from .sql import WRITE_LOCK_TIMEOUT_S, json_lists, json_mapping, metadata_json
from .vectors import encode

SCHEMES = ("redis://", "rediss://")
PROBE = "mnemon:no-such-key"  # asked of a server at connect: a Redis without vector sets knows no VCARD
_SEP = " "  # between an edge field's type, source and target (ids and types hold no space)


# ---------------------------------------------------------------------------------------------- rows as stored

_FIELDS = {  # Insight field → hash field
    "content": "c", "category": "cat", "importance": "imp", "source": "src", "access_count": "acc",
    "created_at": "ca", "updated_at": "ua", "deleted_at": "da", "last_accessed_at": "la",
    "effective_importance": "ei", "stored_at": "sa",
}


def _hash_of(row: Row) -> dict[str, Any]:
    ins = row.insight
    out: dict[str, Any] = {"id": ins.id, "seq": row.seq, "tags": json.dumps(list(ins.tags), ensure_ascii=False),
                           "ent": json.dumps(list(ins.entities), ensure_ascii=False),
                           "tok": json.dumps(sorted(row.tokens), ensure_ascii=False)}
    for name, field in _FIELDS.items():
        value = getattr(ins, name)
        if value is not None:
            out[field] = str(value) if name in ("category",) else value
    if row.vector is not None:
        out["model"], out["vec"] = row.model or "", row.vector
    return out


def _row_of(h: dict[bytes, bytes]) -> Row:
    g = {k.decode(): v for k, v in h.items()}

    def text(field: str) -> str | None:
        v = g.get(field)
        return None if v is None else v.decode()

    ins = Insight.model_construct(
        id=text("id"), content=text("c"), category=text("cat") or "general", importance=int(g["imp"]),
        tags=json_lists(text("tags")), entities=json_lists(text("ent")), source=text("src") or "",
        access_count=int(g.get("acc") or 0), created_at=text("ca"), updated_at=text("ua"), deleted_at=text("da"),
        last_accessed_at=text("la"), effective_importance=float(g.get("ei") or 0.5), stored_at=text("sa"),
    )
    vec = g.get("vec")
    return row_of(ins, int(g["seq"]), json_lists(text("tok")), text("model") if vec is not None else None, vec)


def _edge_field(key: EdgeKey) -> str:
    return f"{key[2]}{_SEP}{key[0]}{_SEP}{key[1]}"


def _edge_value(e: Edge) -> str:
    return json.dumps([float(e.weight), metadata_json(e.metadata), e.created_at], ensure_ascii=False)


def _edge_of(field: bytes, value: bytes) -> Edge:
    typ, s, t = field.decode().split(_SEP)
    w, meta, at = json.loads(value)
    return Edge.model_construct(source_id=s, target_id=t, edge_type=typ, weight=w, metadata=json_mapping(meta),
                                created_at=at)


def vset(p: str, model: str, dim: int) -> str:
    return f"{p}v:{dim}:{hashlib.sha1(model.encode()).hexdigest()[:12]}"


# ---------------------------------------------------------------------------------------------- one store


class RedisStore(MirroredStore):
    """`Store` over one store's keys in a Redis 8."""

    ROOT = "mnemon"
    SERVER = "Redis"
    NEEDS = "a Redis 8 with vector sets"

    @classmethod
    def connect(cls, url: str) -> Any:
        """A client of the URL, checked: it answers, and knows vector sets (`VADD`, Redis 8)."""
        if not url.startswith(SCHEMES):
            raise StoreError(f"a Redis URL is redis://[:password@]host:port/db; got {redact(url)!r}")
        redis = _redis()
        with faults(url):
            client = redis.Redis.from_url(url, protocol=2, socket_connect_timeout=5,
                                          socket_timeout=WRITE_LOCK_TIMEOUT_S)
            client.ping()
            try:
                client.execute_command("VCARD", PROBE)  # 0 (no such vector set) on a Redis 8
            except redis.exceptions.ResponseError as e:
                client.close()
                if "unknown command" not in str(e).lower():
                    raise
                raise StoreError(f"Redis at {redact(url)} has no vector sets (VADD): a Redis 8 or later is "
                                 "needed") from e
        return client

    def _all_ids(self) -> list[str]:
        return [i.decode() for i in self.r.zrange(self.p + "order", 0, -1)]

    def _read(self, ids: Sequence[str]) -> list[tuple[Row | None, list[Edge]]]:
        pipe = self.r.pipeline(transaction=False)
        for id_ in ids:
            pipe.hgetall(self.p + "i:" + id_)
            pipe.hgetall(self.p + "e:" + id_)
        got = pipe.execute()
        return [(_row_of(h) if h else None, [_edge_of(f, v) for f, v in e.items()])
                for h, e in zip(got[::2], got[1::2])]

    def _queue_rows(self, pipe: Any, mirror: Mirror) -> None:
        p = self.p
        vsets = {v.decode() for v in self.r.smembers(p + "vsets")}
        moved = mirror.vectors_moved()
        for id_ in sorted(mirror.changed_rows):
            row = mirror.rows.get(id_)
            key = p + "i:" + id_
            pipe.delete(key)
            target = None
            if row is None:
                pipe.zrem(p + "order", id_)
                pipe.zrem(p + "recent", id_)
            else:
                pipe.hset(key, mapping=_hash_of(row))
                pipe.zadd(p + "order", {id_: row.seq})
                if row.active:
                    pipe.zadd(p + "recent", {id_: epoch(row.insight.created_at)})
                    if row.vector is not None:
                        target = vset(p, row.model or "", len(row.vector) // 4)
                else:
                    pipe.zrem(p + "recent", id_)
            if id_ not in moved:  # its vector set holds it as it is (a recall's access bump)
                continue
            for name in sorted(vsets - {target} if target else vsets):
                pipe.execute_command("VREM", name, id_)
            if target is not None and row is not None:
                pipe.execute_command("VADD", target, "FP32", row.vector, id_, "NOQUANT")
                pipe.sadd(p + "vsets", target)
        for k in sorted(mirror.changed_edges):
            e, field = mirror.edges.get(k), _edge_field(k)
            for end in dict.fromkeys(k[:2]):
                if e is None:
                    pipe.hdel(p + "e:" + end, field)
                else:
                    pipe.hset(p + "e:" + end, field, _edge_value(e))

    def _index_nearest(self, model: str, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        got = self.r.execute_command("VSIM", vset(self.p, model, int(vec.shape[0])), "FP32", encode(vec),
                                     "WITHSCORES", "COUNT", k)
        # VSIM's score is (1 + cosine) / 2
        pairs = got.items() if isinstance(got, dict) else zip(got[::2], got[1::2])
        return [(i.decode(), 2.0 * float(s) - 1.0) for i, s in pairs]


def open_store(settings: Settings) -> RedisStore:
    return RedisStore(settings.database_url or "", store=settings.store, readonly=settings.readonly,
                      oplog_retention=settings.oplog_retention)


def catalog(settings: Settings) -> Stores:
    return Stores(settings.database_url or "", RedisStore)
