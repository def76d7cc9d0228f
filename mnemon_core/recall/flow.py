"""Recall step 3 of the `hybrid` recipe: the graph term as relevance that flows from the anchors to their
neighbourhood, so a memory next to a strong match (the answer after a question, the next step of a decision)
is found and ranked by what it is next to.

The anchors start with their own query relevance (the rerank's keyword and similarity terms). An edge
passes on what reaches its near end times

    factor(edge) = φ(intent, type) · sub-type factor · weight        (each in [0, 1])

and every edge after the first multiplies by `decay` as well. A node's graph score is the best amount that
reaches it from another node over at most `hops` edges (a path never returns to the node it started from).
Because every factor is at most 1, the score can only shrink along a path: a node many hops into a dense region
can never outscore the matches it was reached from — the failure of the spec's additive score.

Level 1 follows the edges of every anchor; each later level follows the edges of the `expand` nodes the last
level reached best (ties: id order). Deterministic: the best offer wins, equal offers go to the lower edge type
code, then the origin earlier in id order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .traverse import ArrayGraph, Edges

__all__ = ["Flowed", "relevance_flow"]


class Flowed(NamedTuple):
    nodes: np.ndarray  # every candidate: the anchors and every node reached, ascending index
    graph: np.ndarray  # the best relevance that reached it from another node (0: none)
    via_type: np.ndarray  # edge type code of the last edge of that path, -1: nothing reached it


def relevance_flow(
    anchor_nodes: np.ndarray,
    anchor_relevance: np.ndarray,
    graph: ArrayGraph,
    phi: np.ndarray,
    sub_factor: np.ndarray,
    *,
    hops: int,
    decay: float,
    expand: int,
) -> Flowed:
    """`phi[type code]` and `sub_factor[sub-type code]` give the factor of each edge kind (0: not followed)."""
    anchors, first = np.unique(anchor_nodes.astype(np.int64, copy=False), return_index=True)
    value = anchor_relevance.astype(np.float64, copy=False)[first]
    origin = anchors.copy()  # the node each frontier value started from
    frontier = anchors
    offers_to: list[np.ndarray] = []
    offers_val: list[np.ndarray] = []
    offers_type: list[np.ndarray] = []
    offers_origin: list[np.ndarray] = []
    for level in range(hops):
        if frontier.size == 0:
            break
        src, nbr, etype, factor = _gather(graph, frontier, phi, sub_factor)
        gain = factor * (decay if level > 0 else 1.0)
        val = value[src] * gain
        keep = (val > 0) & (nbr != origin[src])
        src, nbr, etype, val = src[keep], nbr[keep], etype[keep], val[keep]
        if nbr.size == 0:
            break
        offers_to.append(nbr)
        offers_val.append(val)
        offers_type.append(etype)
        offers_origin.append(origin[src])
        if level + 1 == hops:
            break
        # The next frontier: each reached node once, with its best offer, the `expand` best of them.
        best = _best(nbr, val, etype, origin[src], graph)
        order = np.lexsort((graph.id_rank(nbr[best]), -val[best]))[:expand]
        pick = best[order]
        frontier, value, origin = nbr[pick], val[pick], origin[src][pick]

    if not offers_to:
        return Flowed(anchors, np.zeros(anchors.size), np.full(anchors.size, -1, dtype=np.int64))
    to = np.concatenate(offers_to)
    val = np.concatenate(offers_val)
    etype = np.concatenate(offers_type)
    orig = np.concatenate(offers_origin)
    best = _best(to, val, etype, orig, graph)
    nodes = np.union1d(anchors, to[best])
    at = np.searchsorted(nodes, to[best])
    scores = np.zeros(nodes.size)
    via = np.full(nodes.size, -1, dtype=np.int64)
    scores[at] = val[best]
    via[at] = etype[best]
    return Flowed(nodes, scores, via)


def _gather(
    graph: ArrayGraph, frontier: np.ndarray, phi: np.ndarray, sub_factor: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One row per edge of the frontier that may be followed: (frontier position, neighbour, type, factor)."""
    e: Edges = graph.edges(frontier)
    total = int(e.degree.sum())
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0)
    src = np.repeat(np.arange(frontier.size, dtype=np.int64), e.degree)
    offsets = np.cumsum(e.degree) - e.degree
    edge = np.repeat(e.start - offsets, e.degree) + np.arange(total, dtype=np.int64)
    nbr = e.nbr[edge]
    etype = e.etype[edge]
    sub = e.sub[edge] if e.sub is not None else np.zeros(total, dtype=np.int64)
    factor = phi[etype] * sub_factor[sub] * e.weight[edge]
    ok = factor > 0
    allowed = graph.allowed(nbr)
    if allowed is not None:
        ok &= allowed
    return src[ok], nbr[ok], etype[ok], factor[ok]


def _best(
    to: np.ndarray, val: np.ndarray, etype: np.ndarray, origin: np.ndarray, graph: ArrayGraph
) -> np.ndarray:
    """Row of the best offer to each distinct target: highest value, then lower type code, then origin id."""
    order = np.lexsort((graph.id_rank(origin), etype, -val, to))
    first = np.ones(order.size, dtype=bool)
    first[1:] = to[order][1:] != to[order][:-1]
    return order[first]
