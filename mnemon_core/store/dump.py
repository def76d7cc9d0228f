"""Every row of a store, for copying it losslessly (`mnemon migrate`): insights (soft-deleted ones too, in
insertion order, with their tokens and vectors), edges (primary-key order), the oplog (by id) and the remember
sessions' tails (by session), plus a checksum over all of it that does not depend on the backend.

Rows are built with `model_construct`: a copy must carry what is stored, even values today's validation
would refuse (e.g. the legacy `narrative` category of soft-deleted rows).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..models import Edge, Insight, OplogEntry
from ..text import document, token_set
from .postgres import DumpRow

__all__ = ["Checksum", "DumpRow", "sqlite_insights", "sqlite_oplog", "sqlite_tails"]


def _insight(r: tuple[Any, ...]) -> Insight:
    return Insight.model_construct(
        id=r[0], content=r[1], category=r[2] or "general", importance=r[3], tags=json.loads(r[4] or "[]"),
        entities=json.loads(r[5] or "[]"), source=r[6] or "", access_count=r[7] or 0, created_at=r[8],
        updated_at=r[9], deleted_at=r[10], last_accessed_at=r[11],
        effective_importance=r[12] if r[12] is not None else 0.5, stored_at=r[13],
    )


def sqlite_insights(store: Any) -> Iterator[DumpRow]:
    """All insights of a `SQLiteStore`, in rowid order. A blob that is not whole float32 values is dropped."""
    from .sqlite import _INSIGHT_COLS

    cols = ", ".join("i." + c.strip() for c in _INSIGHT_COLS.split(","))
    cur = store.db.execute(
        f"SELECT {cols}, f.terms, i.embedding, i.embed_model FROM insights i "
        "LEFT JOIN insights_fts f ON f.rowid = i.rowid ORDER BY i.rowid"
    )
    for r in cur:
        ins = _insight(r)
        if r[14] is None:
            toks = token_set(document(ins.content, ins.tags, ins.entities))
        else:
            toks = frozenset(r[14].split())
        blob = r[15]
        vec = np.frombuffer(blob, dtype="<f4").astype(np.float32) if blob and len(blob) % 4 == 0 else None
        yield DumpRow(ins, toks, vec, r[16] if vec is not None else None)


def sqlite_oplog(store: Any) -> Iterator[OplogEntry]:
    for r in store.db.execute("SELECT id, operation, insight_id, detail, created_at FROM oplog ORDER BY id"):
        yield OplogEntry.model_construct(id=r[0], operation=r[1], insight_id=r[2], detail=r[3] or "",
                                         created_at=r[4])


def sqlite_tails(store: Any) -> Iterator[tuple[str, str]]:
    """(session, insight id) by session; none from a file older than the table (a read-only source is not
    migrated)."""
    if store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'conversation_tails'").fetchone():
        yield from store.db.execute("SELECT session, insight_id FROM conversation_tails ORDER BY session")


@dataclass
class Checksum:
    """Counts and a SHA-256 over the rows that pass through `insights`, `edges`, `oplog` and `tails`
    (generators that hash as they yield, so a copy reads each row once)."""

    insights: int = 0
    active: int = 0
    deleted: int = 0
    vectors: int = 0
    edges: int = 0
    oplog: int = 0
    tails: int = 0
    _h: dict[str, Any] = field(default_factory=lambda: {k: hashlib.sha256() for k in ("i", "e", "o", "t")})

    def insights_of(self, rows: Iterable[DumpRow]) -> Iterator[DumpRow]:
        h = self._h["i"]
        for row in rows:
            ins = row.insight
            fields = [
                ins.id, ins.content, str(ins.category), ins.importance, list(ins.tags), list(ins.entities),
                ins.source, ins.access_count, ins.created_at, ins.updated_at, ins.deleted_at,
                ins.last_accessed_at, repr(float(ins.effective_importance)), ins.stored_at, sorted(row.tokens),
                row.model,
            ]
            h.update(json.dumps(fields, ensure_ascii=False).encode())
            if row.vector is not None:
                h.update(np.asarray(row.vector, dtype="<f4").tobytes())
                self.vectors += 1
            h.update(b"\n")
            self.insights += 1
            if ins.deleted_at is None:
                self.active += 1
            else:
                self.deleted += 1
            yield row

    def edges_of(self, edges: Iterable[Edge]) -> Iterator[Edge]:
        h = self._h["e"]
        for e in edges:
            fields = [e.source_id, e.target_id, str(e.edge_type), repr(float(e.weight)), e.metadata, e.created_at]
            h.update(json.dumps(fields, ensure_ascii=False, sort_keys=True).encode() + b"\n")
            self.edges += 1
            yield e

    def oplog_of(self, entries: Iterable[OplogEntry]) -> Iterator[OplogEntry]:
        h = self._h["o"]
        for o in entries:
            h.update(json.dumps([o.id, o.operation, o.insight_id, o.detail, o.created_at],
                                ensure_ascii=False).encode() + b"\n")
            self.oplog += 1
            yield o

    def tails_of(self, tails: Iterable[tuple[str, str]]) -> Iterator[tuple[str, str]]:
        h = self._h["t"]
        for session, insight_id in tails:
            h.update(json.dumps([session, insight_id], ensure_ascii=False).encode() + b"\n")
            self.tails += 1
            yield session, insight_id

    @property
    def digest(self) -> str:
        whole = hashlib.sha256()
        for k in ("i", "e", "o", "t"):
            whole.update(self._h[k].digest())
        return "sha256:" + whole.hexdigest()

    def counts(self) -> dict[str, int]:
        return {"insights": self.insights, "active": self.active, "deleted": self.deleted, "vectors": self.vectors,
                "edges": self.edges, "oplog": self.oplog, "tails": self.tails}
