"""The contract: every value that crosses the `Memory` API, as pydantic models.

Field order is the spec's key order; `model_dump(mode="json")` of a result is exactly the JSON the CLI
prints. Keys the reference marks "omitempty" are dropped when empty (see `OmitEmpty`).
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_serializer


class Category(StrEnum):
    preference = "preference"
    decision = "decision"
    fact = "fact"
    insight = "insight"
    context = "context"
    general = "general"


class EdgeType(StrEnum):
    temporal = "temporal"
    semantic = "semantic"
    causal = "causal"
    entity = "entity"
    supersedes = "supersedes"

    @property
    def directed(self) -> bool:
        """`link` writes this type one way only (supersedes: new → old); every other type both ways."""
        return self is EdgeType.supersedes

    @property
    def marks_reverse(self) -> bool:
        """`link`'s copy against the agent's direction carries REVERSE_KEY, so the WHY order can still put the
        cause first."""
        return self is EdgeType.causal


# `link` writes a causal link both ways; the copy against the agent's direction carries this metadata, so the
# WHY order (cause first) can tell it from the link itself.
REVERSE_KEY = "direction"
REVERSE_VALUE = "reverse"


class Intent(StrEnum):
    WHY = "WHY"
    WHEN = "WHEN"
    ENTITY = "ENTITY"
    GENERAL = "GENERAL"


class EntityMode(StrEnum):
    merge = "merge"
    provided = "provided"
    auto = "auto"


def plain(value: Any) -> Any:
    """A result model, or a list of them, as the JSON data the CLI prints."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def printed(value: Any) -> str:
    """The JSON text the CLI prints for a result (2-space indent, non-ASCII as it is) and an MCP tool returns;
    what a recall's token budget counts (`recall/budget.py`)."""
    return json.dumps(plain(value), indent=2, ensure_ascii=False)


class OmitEmpty(BaseModel):
    """Drops the keys named in `_omit_empty` when their value is None, "", 0, False or empty."""

    _omit_empty: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        for key in self._omit_empty:
            if key in data and not data[key]:
                del data[key]
        return data


class Insight(OmitEmpty):
    """One memory. Times are RFC 3339 UTC strings with second precision (`2026-02-18T10:00:00Z`)."""

    _omit_empty = frozenset({"deleted_at"})

    id: str
    content: str
    category: Category = Category.general
    importance: int = 3
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    source: str = "user"
    access_count: int = 0
    created_at: str
    updated_at: str
    deleted_at: str | None = None
    # Kept in the store, not shown in the insight's JSON.
    last_accessed_at: str | None = Field(default=None, exclude=True)
    effective_importance: float = Field(default=0.5, exclude=True)
    stored_at: str | None = Field(default=None, exclude=True)


class Edge(BaseModel):
    source_id: str
    target_id: str
    edge_type: EdgeType
    weight: float = 1.0
    metadata: dict[str, str] = Field(default_factory=dict)
    created_at: str


class OplogEntry(BaseModel):
    id: int
    operation: str
    insight_id: str | None = None
    detail: str = ""
    created_at: str


# ---------------------------------------------------------------- remember


class EdgesCreated(BaseModel):
    temporal: int = 0
    entity: int = 0
    causal: int = 0
    semantic: int = 0


class SemanticCandidate(BaseModel):
    id: str
    content: str
    category: Category
    cosine: float = Field(description="cosine with the new insight, or token overlap without vectors")
    auto_linked: bool


class CausalCandidate(BaseModel):
    id: str
    content: str
    category: Category
    hop: int
    via_edge: EdgeType
    causal_signal: str
    suggested_sub_type: str


class RememberResult(BaseModel):
    """The JSON of spec 5.1 step five. A skipped exact duplicate has the same keys as an added insight (a
    departure from the original's five: docs/departures.md): the insight that holds the text, with zeros and
    empty lists for what this call did not do, and `replaced_id`."""

    id: str
    content: str
    category: Category = Category.general
    importance: int = 3
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    action: str = Field(description='"added" or "skipped" (byte-identical to an active insight)')
    diff_suggestion: str = Field(description="advisory label: ADD, UPDATE, CONFLICT or DUPLICATE")
    created_at: str = ""
    edges_created: EdgesCreated = Field(default_factory=EdgesCreated)
    semantic_candidates: list[SemanticCandidate] = Field(default_factory=list)
    causal_candidates: list[CausalCandidate] = Field(default_factory=list)
    embedded: bool = False
    effective_importance: float = 0.0
    auto_pruned: int = 0
    auto_pruned_ids: list[str] = Field(default_factory=list)
    replaced_id: str | None = None

    @model_serializer(mode="wrap")
    def _shape(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("replaced_id") is None:
            data.pop("replaced_id", None)
        return data


# ---------------------------------------------------------------- link / forget / show / search / related


class LinkResult(BaseModel):
    edge_type: EdgeType
    metadata: dict[str, str]
    source_id: str
    status: str = "linked"
    target_id: str
    weight: float


class ForgetResult(BaseModel):
    id: str
    message: str = "Insight soft-deleted successfully"
    status: str = "deleted"


class SearchHit(BaseModel):
    id: str
    content: str
    category: Category
    importance: int
    tags: list[str]
    score: float


class RelatedHit(BaseModel):
    id: str
    content: str
    category: Category
    importance: int
    depth: int
    via_edge_type: EdgeType


# ---------------------------------------------------------------- status / log / gc


class EntityCount(BaseModel):
    entity: str
    count: int


class OplogRetentionInfo(BaseModel):
    max_age_days: float = Field(description="rows older than this are trimmed (0: kept for ever)")
    max_rows: int = Field(description="at most this many of the newest rows are kept (0: no ceiling)")


class OplogStatus(BaseModel):
    rows: int
    oldest: str | None = Field(description="time of the oldest row kept; null when the oplog is empty")
    retention: OplogRetentionInfo


class GraphIndexStatus(BaseModel):
    """The graph index file recall maps (`graph/index.py`): in use, or rejected and why."""

    path: str
    state: str = Field(description="mapped: recall reads it; rejected: a check failed and the store is read")
    reason: str | None = None
    nodes: int | None = None
    edges: int | None = None
    bytes: int | None = None
    built_at: str | None = None
    age_s: float | None = Field(None, description="seconds since it was written")
    behind: int | None = Field(None, description="committed graph changes since it was written (the delta)")


class StatusResult(BaseModel):
    by_category: dict[str, int]
    db_path: str
    db_size_bytes: int
    deleted_insights: int
    edge_count: int
    graph_index: GraphIndexStatus | None = None
    oplog: OplogStatus
    oplog_count: int
    top_entities: list[EntityCount]
    total_insights: int
    vectors_pending: int = Field(default=0, description="active insights a large import wrote without their vectors, "
                                 "still to be filled in (the resident engine when idle, or `mnemon embed --all`)")


class GcCandidate(BaseModel):
    insight: Insight
    effective_importance: float
    days_since_access: float
    edge_count: int
    immune: bool


class GcActions(BaseModel):
    keep: str = "mnemon gc --keep <id>"
    purge: str = "mnemon forget <id>"


class GcResult(BaseModel):
    actions: GcActions = Field(default_factory=GcActions)
    candidates: list[GcCandidate] | None
    candidates_found: int
    max_insights: int
    threshold: float
    total_insights: int


class GcKeepResult(BaseModel):
    content: str
    effective_importance: float
    id: str
    immune: bool
    new_access: int
    status: str = "retained"
