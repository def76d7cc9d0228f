"""Semantic graph builder (spec 004 §4.4): calibrated cosine ≥ 0.80 with an embedded insight links both
ways (weight = cosine), best 3. Without vectors nothing is auto-linked; candidates fall back to tokens."""

from __future__ import annotations

from ..models import Edge, EdgeType, Insight
from .constants import SEMANTIC_AUTO_LINK, SEMANTIC_AUTO_MAX
from .target import WriteTarget


def ranked(cosines: dict[str, float], exclude: str | None = None) -> list[tuple[str, float]]:
    """Cosines best first, ties by id, so the choice is deterministic."""
    return sorted(((i, c) for i, c in cosines.items() if i != exclude), key=lambda kv: (-kv[1], kv[0]))


def create_semantic_edges(store: WriteTarget, new: Insight, cosines: dict[str, float], now: str) -> list[str]:
    """Link `new` with its best neighbours; returns them (each linked both ways)."""
    best = [(i, c) for i, c in ranked(cosines, new.id) if c >= SEMANTIC_AUTO_LINK][:SEMANTIC_AUTO_MAX]
    edges = [Edge(source_id=s, target_id=t, edge_type=EdgeType.semantic, weight=cos,
                  metadata={"created_by": "auto", "cosine": f"{cos:.4f}"}, created_at=now)
             for other, cos in best for s, t in ((new.id, other), (other, new.id))]
    store.upsert_edges(edges)
    return [other for other, _ in best]
