"""`mnemon receipt`: what crossed the memory boundary recently, shareable for an audit without sharing the memory.

The shape is the original's `mnemon.memory.receipt.v1` (reference §1.2): per oplog row its operation and time,
and the SHA-256 of its insight id and of its detail (the content of a `remember`, the query of a `recall`)
instead of the values themselves. Nothing else from the row is printed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from ..models import OplogEntry

SCHEMA = "mnemon.memory.receipt.v1"
EVENT_NAME = "mnemon.memory.operation.observed"
PRIVACY_NOTE = ("Raw memory contents, recall queries, paths, and operation details are omitted; only hashes "
                "and operation metadata are emitted.")


class ReceiptPrivacy(BaseModel):
    raw_detail_included: Literal[False] = False
    hash_algorithm: Literal["sha256"] = "sha256"
    note: str = PRIVACY_NOTE


class ReceiptEvent(BaseModel):
    event_name: str = EVENT_NAME
    operation: str
    created_at: str
    insight_id_hash: str | None = None  # left out of the JSON when the row names no insight
    detail_hash: str | None = None  # left out when the row has no detail
    detail_present: bool


class Receipt(BaseModel):
    schema_: str = SCHEMA
    generated_at: str
    store: str
    limit: int
    count: int
    privacy: ReceiptPrivacy = ReceiptPrivacy()
    events: list[ReceiptEvent]

    def plain(self) -> dict:
        """The JSON object, in the original's field order, without the absent hashes."""
        data = self.model_dump(mode="json", exclude_none=True)
        return {"schema": data.pop("schema_"), **data}


def sha256(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text else None


def build(store: str, limit: int, entries: Sequence[OplogEntry], generated_at: str) -> Receipt:
    events = [
        ReceiptEvent(operation=e.operation, created_at=e.created_at, insight_id_hash=sha256(e.insight_id),
                     detail_hash=sha256(e.detail), detail_present=bool(e.detail))
        for e in entries
    ]
    return Receipt(generated_at=generated_at, store=store, limit=limit, count=len(events), events=events)
