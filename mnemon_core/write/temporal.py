"""Temporal graph builder (spec 004 §4.1, reference §3.6): a backbone to the previous insight of the same
source, and proximity edges to recent insights of any source within 24 hours."""

from __future__ import annotations

from datetime import datetime

from ..models import Edge, EdgeType, Insight
from ..store import Store
from ..timeutil import hours_between, iso, parse
from .constants import TEMPORAL_MAX_PROXIMITY, TEMPORAL_WINDOW_HOURS


def backbone_edges(prev: Insight, new: Insight, now: str) -> list[Edge]:
    """prev ⇄ new, weight 1.0: prev→new `precedes`, new→prev `succeeds`."""
    return [
        Edge(source_id=prev.id, target_id=new.id, edge_type=EdgeType.temporal, weight=1.0,
             metadata={"sub_type": "backbone", "direction": "precedes"}, created_at=now),
        Edge(source_id=new.id, target_id=prev.id, edge_type=EdgeType.temporal, weight=1.0,
             metadata={"sub_type": "backbone", "direction": "succeeds"}, created_at=now),
    ]


def create_temporal_edges(store: Store, new: Insight, now: str) -> int:
    created = 0
    prev = store.latest(source=new.source, exclude=new.id, limit=1)
    backbone_id = None
    if prev:
        backbone_id = prev[0].id
        for e in backbone_edges(prev[0], new, now):
            store.upsert_edge(e)
            created += 1
    t_new: datetime = parse(new.created_at)
    since = iso(t_new.timestamp() - TEMPORAL_WINDOW_HOURS * 3600)
    # The backbone neighbour takes one of the ten slots.
    for other in store.latest(since=since, exclude=new.id, limit=TEMPORAL_MAX_PROXIMITY):
        if other.id == backbone_id:
            continue
        hours = abs(hours_between(other.created_at, new.created_at))
        meta = {"sub_type": "proximity", "hours_diff": f"{hours:.2f}"}
        w = 1.0 / (1.0 + hours)
        for s, t in ((new.id, other.id), (other.id, new.id)):
            store.upsert_edge(Edge(source_id=s, target_id=t, edge_type=EdgeType.temporal, weight=w,
                                   metadata=meta, created_at=now))
            created += 1
    return created
