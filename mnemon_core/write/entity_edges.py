"""Entity graph builder (spec 004 §4.2): link the new insight to the most recent insights sharing each of
its entities, both ways, weight 1.0 — at most 5 per entity and 50 edges in all."""

from __future__ import annotations

from ..models import Edge, EdgeType, Insight
from .constants import ENTITY_LINKS_PER_ENTITY, ENTITY_MAX_EDGES
from .target import WriteTarget


def create_entity_edges(store: WriteTarget, new: Insight, now: str) -> int:
    edges: list[Edge] = []
    for entity in new.entities:
        if len(edges) >= ENTITY_MAX_EDGES:
            break
        for other in store.with_entity(entity, exclude=new.id, limit=ENTITY_LINKS_PER_ENTITY):
            if len(edges) >= ENTITY_MAX_EDGES:
                break
            meta = {"entity": entity}  # on a pair sharing several entities, the last one wins
            edges += [Edge(source_id=s, target_id=t, edge_type=EdgeType.entity, weight=1.0, metadata=meta,
                           created_at=now) for s, t in ((new.id, other), (other, new.id))]
    store.upsert_edges(edges)
    return len(edges)
