"""`related` (reference §6): the insights around one, breadth-first over edges in both directions."""

from __future__ import annotations

from collections import deque

from .models import EdgeType, RelatedHit
from .store import Store


def walk(store: Store, id: str, *, edge_type: EdgeType | None, depth: int) -> list[RelatedHit]:
    """Every insight up to `depth` hops from `id` (over `edge_type` edges only, when given), nearest first, each
    once with the hop count and the type of the edge it was reached by. Edges are followed in (type, source,
    target) order, so the answer is deterministic. Only active insights are returned."""
    seen = {id}
    found: list[tuple[str, int, EdgeType]] = []
    frontier = deque([(id, 0)])
    while frontier:
        node, d = frontier.popleft()
        if d >= depth:
            continue
        for e in sorted(store.edges_of([node]), key=lambda e: (e.edge_type, e.source_id, e.target_id)):
            if edge_type is not None and e.edge_type != edge_type:
                continue
            other = e.target_id if e.source_id == node else e.source_id
            if other in seen:
                continue
            seen.add(other)
            found.append((other, d + 1, e.edge_type))
            frontier.append((other, d + 1))
    rows = store.get_insights([f[0] for f in found])
    return [
        RelatedHit(id=i, content=rows[i].content, category=rows[i].category, importance=rows[i].importance,
                   depth=d, via_edge_type=t)
        for i, d, t in found
        if i in rows
    ]
