"""`link` (spec 003 "link"): an edge the agent draws by hand between two existing insights. Its rules: the
type from the closed list (`EdgeType`), a weight in [0, 1], metadata an object of strings, never an insight to
itself; a directed type (`EdgeType.directed`) is written one way, every other type both ways, and the copy of
a causal link against the agent's direction says so (`EdgeType.marks_reverse`). `Memory.link` resolves the
two ids and calls `link` here."""

from __future__ import annotations

import json

from .. import once
from ..context import Context
from ..errors import NotFoundError, ValidationError
from ..models import REVERSE_KEY, REVERSE_VALUE, Edge, EdgeType, LinkResult
from .validate import validate_text

__all__ = ["CREATED_BY", "EDGE_TYPES", "edge_type", "link", "parse_metadata"]

EDGE_TYPES = ", ".join(t.value for t in EdgeType)  # as error messages list them
# The metadata's `created_by` when the caller names none: the face the link came through.
CREATED_BY = {"cli": "cli", "mcp": "mcp", "agent": "agent"}


def edge_type(value: object, field: str) -> EdgeType:
    """An edge type as any face gives it (any case, spaces around), or a ValidationError naming the list."""
    try:
        return EdgeType(str(value).strip().lower())
    except ValueError:
        raise ValidationError(f'invalid edge type "{value}"; valid: {EDGE_TYPES}', field=field) from None


def link(
    ctx: Context, source_id: str, target_id: str, *, type: str | EdgeType, weight: float,
    metadata: dict[str, str] | str | None, created_by: str | None,
) -> LinkResult:
    """Write the link between two resolved ids (the caller has checked that it may write)."""
    etype = edge_type(type, "type")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ValidationError(f"weight must be a number, got {weight.__class__.__name__} {weight!r:.50}",
                              field="weight")
    if not 0.0 <= weight <= 1.0:
        raise ValidationError(f"weight must be between 0.0 and 1.0, got {weight:.2f}", field="weight")
    meta = parse_metadata(metadata)
    if source_id == target_id:
        raise ValidationError(f"cannot link insight {source_id} to itself", field="target_id")
    store = ctx.store
    for label, id_ in (("source", source_id), ("target", target_id)):
        if store.get_insight(id_) is None:
            raise NotFoundError(f"{label} insight {id_} not found", id=id_)
    meta["created_by"] = validate_text(created_by, "created_by") if created_by else CREATED_BY.get(
        ctx.settings.origin, "agent")
    now, _ = ctx.clock()

    edges = [Edge(source_id=source_id, target_id=target_id, edge_type=etype, weight=float(weight),
                  metadata=meta, created_at=now)]
    if not etype.directed:
        back = {**meta, REVERSE_KEY: REVERSE_VALUE} if etype.marks_reverse else meta
        edges.append(Edge(source_id=target_id, target_id=source_id, edge_type=etype, weight=float(weight),
                          metadata=back, created_at=now))
    with once.writing(store, now):
        for e in edges:
            store.upsert_edge(e)
        ctx.log("link", source_id, f"{source_id[:8]}→{target_id[:8]} type={etype} weight={weight:.2f}", now)
    return LinkResult(edge_type=etype, metadata=meta, source_id=source_id, target_id=target_id,
                      weight=float(weight))


def parse_metadata(metadata: dict[str, str] | str | None) -> dict[str, str]:
    """A link's metadata: a JSON object (or a dict) of string values, each a valid text."""
    if metadata is None or metadata == "":
        return {}
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError as e:
            raise ValidationError(f"invalid metadata JSON: {e}", field="metadata") from None
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValidationError("invalid metadata JSON: must be an object of string values", field="metadata")
    return {validate_text(str(k), "metadata"): validate_text(v, "metadata") for k, v in metadata.items()}
