"""Temporal graph builder (spec 004 §4.1, reference §3.6): a backbone to the previous insight of the same
source, and proximity edges to recent insights of any source within 24 hours.

Beside the spec's two, a third sub-type: `conversation`, between consecutive memories of one conversation (the
previous `remember` of the same session; consecutive items of an import draft). The backbone runs per source,
so in a dialogue a question and its answer (two speakers) are otherwise only "within a day" of each other.
"""

from __future__ import annotations

from datetime import datetime

from ..models import Edge, EdgeType, Insight
from ..store import Store
from ..timeutil import hours_between, iso, parse
from .constants import TEMPORAL_MAX_PROXIMITY, TEMPORAL_WINDOW_HOURS


def sequence_edges(prev_id: str, new_id: str, now: str, sub_type: str = "backbone") -> list[Edge]:
    """prev ⇄ new, weight 1.0: prev→new `precedes`, new→prev `succeeds`."""
    return [
        Edge(source_id=prev_id, target_id=new_id, edge_type=EdgeType.temporal, weight=1.0,
             metadata={"sub_type": sub_type, "direction": "precedes"}, created_at=now),
        Edge(source_id=new_id, target_id=prev_id, edge_type=EdgeType.temporal, weight=1.0,
             metadata={"sub_type": sub_type, "direction": "succeeds"}, created_at=now),
    ]


def create_temporal_edges(store: Store, new: Insight, now: str, session: str | None = None) -> int:
    """The backbone and proximity edges of `new`, and with a `session` the conversation step from the
    session's previous memory (unless that is the backbone neighbour already)."""
    created = 0
    prev = store.latest(source=new.source, exclude=new.id, limit=1)
    backbone_id = None
    if prev:
        backbone_id = prev[0].id
        for e in sequence_edges(prev[0].id, new.id, now):
            store.upsert_edge(e)
            created += 1
    linked = {backbone_id}
    if session is not None:
        tail = store.session_tail(session)
        if tail is not None and tail not in linked and tail != new.id:
            for e in sequence_edges(tail, new.id, now, "conversation"):
                store.upsert_edge(e)
                created += 1
            linked.add(tail)
        store.set_session_tail(session, new.id)
    t_new: datetime = parse(new.created_at)
    since = iso(t_new.timestamp() - TEMPORAL_WINDOW_HOURS * 3600)
    # The backbone and conversation neighbours take slots of the ten.
    for other in store.latest(since=since, exclude=new.id, limit=TEMPORAL_MAX_PROXIMITY):
        if other.id in linked:
            continue
        hours = abs(hours_between(other.created_at, new.created_at))
        meta = {"sub_type": "proximity", "hours_diff": f"{hours:.2f}"}
        w = 1.0 / (1.0 + hours)
        for s, t in ((new.id, other.id), (other.id, new.id)):
            store.upsert_edge(Edge(source_id=s, target_id=t, edge_type=EdgeType.temporal, weight=w,
                                   metadata=meta, created_at=now))
            created += 1
    return created
