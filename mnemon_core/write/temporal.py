"""Temporal graph builder (spec 004 §4.1, reference §3.6): a backbone to the previous insight of the same
source, and proximity edges to recent insights of any source within 24 hours. An import writes no temporal edges
per insight; it links its conversation steps and repairs the backbone through what it added, once, at the end.

Beside the spec's two, a third sub-type: `conversation`, between consecutive memories of one conversation (the
previous `remember` of the same session; consecutive items of an import draft). The backbone runs per source,
so in a dialogue a question and its answer (two speakers) are otherwise only "within a day" of each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from ..models import Edge, EdgeType, Insight
from ..store import Filters, Store
from ..timeutil import hours_between, iso, parse
from .constants import TEMPORAL_MAX_PROXIMITY, TEMPORAL_WINDOW_HOURS
from .target import WriteTarget


def sequence_edges(prev_id: str, new_id: str, now: str, sub_type: str = "backbone") -> list[Edge]:
    """prev ⇄ new, weight 1.0: prev→new `precedes`, new→prev `succeeds`."""
    return [
        Edge(source_id=prev_id, target_id=new_id, edge_type=EdgeType.temporal, weight=1.0,
             metadata={"sub_type": sub_type, "direction": "precedes"}, created_at=now),
        Edge(source_id=new_id, target_id=prev_id, edge_type=EdgeType.temporal, weight=1.0,
             metadata={"sub_type": sub_type, "direction": "succeeds"}, created_at=now),
    ]


def create_temporal_edges(store: WriteTarget, new: Insight, now: str, session: str | None = None) -> int:
    """The backbone and proximity edges of `new`, and with a `session` the conversation step from the
    session's previous memory (unless that is the backbone neighbour already)."""
    edges: list[Edge] = []
    prev = store.latest(source=new.source, exclude=new.id, limit=1)
    backbone_id = None
    if prev:
        backbone_id = prev[0].id
        edges += sequence_edges(prev[0].id, new.id, now)
    linked = {backbone_id}
    if session is not None:
        tail = store.session_tail(session)
        if tail is not None and tail not in linked and tail != new.id:
            edges += sequence_edges(tail, new.id, now, "conversation")
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
        edges += [Edge(source_id=s, target_id=t, edge_type=EdgeType.temporal, weight=w, metadata=meta,
                       created_at=now) for s, t in ((new.id, other.id), (other.id, new.id))]
    store.upsert_edges(edges)
    return len(edges)


def conversation_steps(store: WriteTarget, steps: Iterable[tuple[str, str]], now: str) -> set[str]:
    """Conversation edges for each (previous, next) pair of one conversation; returns the ids linked."""
    touched: set[str] = set()
    edges: list[Edge] = []
    for a, b in steps:
        edges += sequence_edges(a, b, now, "conversation")
        touched.update((a, b))
    store.upsert_edges(edges)
    return touched


def repair_backbone(store: Store, chained: dict[str, str], now: str) -> set[str]:
    """Rebuild the temporal backbone through `chained` ({id: source}), per source, in created_at order: each
    chained insight is linked to its chronological neighbours (precedes / succeeds, weight 1.0), and the
    direct backbone link between the two existing insights around a run of chained ones is removed. No
    proximity edges. Returns every id whose edges changed."""
    touched: set[str] = set()
    for source in sorted(set(chained.values())):
        rows = list(store.iter_active(Filters(source=source)))  # insertion order, so ties keep it
        rows.sort(key=lambda r: r.created_at)
        inside = [r.id in chained for r in rows]
        k = 0
        while k < len(rows):
            if not inside[k]:
                k += 1
                continue
            end = k
            while end < len(rows) and inside[end]:
                end += 1
            if k > 0 and end < len(rows):  # existing neighbours on both sides of the run
                left, right = rows[k - 1].id, rows[end].id
                for e in store.edges_among([left, right], EdgeType.temporal.value):
                    if e.metadata.get("sub_type") == "backbone":
                        store.delete_edge(e.source_id, e.target_id, EdgeType.temporal.value)
                        touched.update((left, right))
            k = end
        links: list[Edge] = []  # one statement for the source's links, after its removals as before
        for a, b, ia, ib in zip(rows, rows[1:], inside, inside[1:]):
            if ia or ib:
                links += sequence_edges(a.id, b.id, now)
                touched.update((a.id, b.id))
        store.upsert_edges(links)
    return touched
