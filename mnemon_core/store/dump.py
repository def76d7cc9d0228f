"""A checksum over every row of a store that does not depend on the backend, for copying it losslessly
(`mnemon migrate`): the rows come from the `Dump` protocol (`store/base.py`) — insights (soft-deleted ones too,
in insertion order, with their tokens and vectors), edges (primary-key order), the oplog (by id) and the
remember sessions' tails (by session).

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

from ..models import Edge, OplogEntry
from .base import DumpRow

__all__ = ["Checksum", "DumpRow"]


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
