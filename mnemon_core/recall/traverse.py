"""Recall step 3: beam search from every anchor (spec §5.2 Step 3, reference §4.4).

From each anchor (start score = its normalised RRF score), level by level, every node in the beam is expanded
through all its edges in both directions. Moving from u to a neighbour v scores

    score(v) = score(u) + λ1 · φ(edge type) · edge weight + λ2 · max(0, cos(query, v))

(the cosine term only with vectors). A global map keeps each node's best score over all anchors and paths;
when a transition improves it, the node's `via` becomes the edge type (an anchor can be relabelled). A node not
yet visited *from this anchor* enters the next level; the best `beam_width` of them are kept. An anchor stops
after `max_depth` levels, or as soon as it has discovered `max_visited` nodes (itself included).

Deterministic: the beam is expanded best first; each node's transitions are scored, then taken in order of
score, neighbour id and edge type, then budgeted; the next beam is cut by score, then id. Anchors advance
level by level together, so one neighbour lookup serves every anchor at a depth (one store query per level).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from .anchors import Anchor
from .constants import LAMBDA1, LAMBDA2

__all__ = ["Neighbours", "Traversed", "beam_search"]

# ids → for each id, its (neighbour id, edge type, edge weight) edges, both directions, deduplicated.
Neighbours = Callable[[Sequence[str]], Mapping[str, Sequence[tuple[str, str, float]]]]


class Traversed(NamedTuple):
    scores: dict[str, float]  # best traversal score of every node reached (anchors included)
    via: dict[str, str]  # the anchor label, or the edge type of the transition that set the best score


class _Walk:
    """One anchor's search state: its own visited set and budget, its current beam."""

    __slots__ = ("beam", "count", "visited")

    def __init__(self, anchor: Anchor) -> None:
        self.visited = {anchor.id}
        self.count = 1
        self.beam: list[tuple[str, float]] = [(anchor.id, anchor.score)]


def beam_search(
    anchors: Sequence[Anchor],
    neighbours: Neighbours,
    phi: Mapping[str, float],
    *,
    beam_width: int,
    max_depth: int,
    max_visited: int,
    lambda1: float = LAMBDA1,
    lambda2: float = LAMBDA2,
    cosine: Callable[[str], float] | None = None,
) -> Traversed:
    """Run the beam from every anchor (in the order given) and return the global best scores and labels.

    `neighbours(ids)` gives each id's edges; `cosine(id)` the neighbour's cosine with the query (None: no
    vectors, the λ2 term is 0).
    """
    best = {a.id: a.score for a in anchors}
    via = {a.id: a.via for a in anchors}
    walks = [_Walk(a) for a in anchors]
    inf = float("-inf")
    for _depth in range(max_depth):
        live = [w for w in walks if w.beam and w.count < max_visited]
        if not live:
            break
        adjacency = neighbours(sorted({node for w in live for node, _ in w.beam}))
        bonus: dict[str, float] = {}
        for walk in live:
            visited = walk.visited
            nxt: list[tuple[str, float]] = []
            for node, score in walk.beam:
                if walk.count >= max_visited:
                    break
                moves = []
                for nbr, etype, weight in adjacency.get(node, ()):
                    step = lambda1 * phi.get(etype, 0.0) * weight
                    if cosine is not None:
                        b = bonus.get(nbr)
                        if b is None:
                            b = bonus[nbr] = lambda2 * max(0.0, cosine(nbr))
                        step += b
                    moves.append((-(score + step), nbr, etype))
                moves.sort()
                for neg, nbr, etype in moves:
                    if walk.count >= max_visited:
                        break
                    total = -neg
                    if total > best.get(nbr, inf):
                        best[nbr] = total
                        via[nbr] = etype
                    if nbr not in visited:
                        visited.add(nbr)
                        walk.count += 1
                        nxt.append((nbr, total))
            nxt.sort(key=lambda item: (-item[1], item[0]))
            walk.beam = nxt[:beam_width]
    return Traversed(best, via)
