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

`beam_search_arrays` runs all anchors' levels as numpy array operations over dense node indices (tens of
thousands of transitions a query). The same algorithm written out over ids, the reference, is the tests'
oracle (`tests/reference_engine.py`); the tests hold the two to identical scores and labels on random graphs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

import numpy as np

from ..graph.memo import Edges
from .constants import LAMBDA1

__all__ = ["ArrayGraph", "ArrayTraversed", "Edges", "beam_search_arrays"]

# How the array engine stays identical to the reference beam search while sorting little:
# * Transitions are gathered in "array order": anchor, beam position, then the node's edges in (neighbour id,
#   type) order. Where several edges of one node lead to the same neighbour, only the best-scored (first on a
#   tie) is kept: the reference takes it first, and the others can neither discover the neighbour again nor
#   beat its score.
# * With one transition per (beam node, neighbour), a neighbour is first discovered by the earliest beam node
#   that reaches it, i.e. its first occurrence in array order, whatever the score order inside a node.
# * Score order inside a node matters only when the visit budget runs out mid-level; only the anchors for
#   which that happens get their transitions sorted.
# * Offers of equal score are taken in array order, which is also the reference's order among equal scores,
#   so the label of a node's best score is that of its first best offer in array order.


class ArrayGraph(Protocol):
    def size(self) -> int:
        """Nodes indexed so far; every neighbour index `edges` returns is below it."""
        ...

    def edges(self, nodes: np.ndarray) -> Edges: ...

    def allowed(self, nodes: np.ndarray) -> np.ndarray | None:
        """Which nodes the traversal may enter (None: all)."""
        ...

    def id_rank(self, nodes: np.ndarray) -> np.ndarray:
        """A number per node that orders nodes as their ids order."""
        ...


class ArrayTraversed(NamedTuple):
    nodes: np.ndarray  # every node reached, ascending index
    scores: np.ndarray  # its best traversal score
    via_type: np.ndarray  # edge type code of the transition that set it, -1 = still the anchor's own label


def beam_search_arrays(
    anchor_nodes: np.ndarray,
    anchor_scores: np.ndarray,
    graph: ArrayGraph,
    phi: np.ndarray,
    *,
    beam_width: int,
    max_depth: int,
    max_visited: int,
    lambda1: float = LAMBDA1,
    bonus: Callable[[np.ndarray], np.ndarray] | None = None,
) -> ArrayTraversed:
    """The beam search over dense indices: anchors (distinct, in processing order) with their start scores, φ
    by edge type code, and `bonus(nodes)` = λ2 · max(0, cos) per node (None without vectors)."""
    n_anchors = int(anchor_nodes.shape[0])
    anchor_nodes = anchor_nodes.astype(np.int64, copy=False)
    count = np.ones(n_anchors, dtype=np.int64)
    cap = max(graph.size(), 1)
    visited = np.zeros((n_anchors, cap), dtype=bool)
    visited[np.arange(n_anchors), anchor_nodes] = True
    # Every score offered to the global map, in processing order: the anchors, then transitions level by level.
    seen_nodes = [anchor_nodes]
    seen_scores = [anchor_scores.astype(np.float64, copy=False)]
    seen_types = [np.full(n_anchors, -1, dtype=np.int64)]
    # The beams of the live anchors as (anchor, node, score) rows, grouped by anchor, each beam best first.
    pa = np.arange(n_anchors, dtype=np.int64)
    pu = anchor_nodes
    ps = seen_scores[0]
    for _depth in range(max_depth):
        live = count[pa] < max_visited
        pa, pu, ps = pa[live], pu[live], ps[live]
        if pa.size == 0:
            break
        e = graph.edges(pu)
        if graph.size() > cap:  # neighbours seen for the first time were indexed
            cap = max(graph.size(), cap * 2)
            grown = np.zeros((n_anchors, cap), dtype=bool)
            grown[:, : visited.shape[1]] = visited
            visited = grown
        total = int(e.degree.sum())
        if total == 0:
            break
        # Gather: one row per (beam row, edge), in array order.
        t_pair = np.repeat(np.arange(pa.size, dtype=np.int64), e.degree)
        offsets = np.cumsum(e.degree) - e.degree
        t_edge = np.repeat(e.start - offsets, e.degree) + np.arange(total, dtype=np.int64)
        t_nbr = e.nbr[t_edge]
        ok = graph.allowed(t_nbr)
        if ok is not None:
            t_pair, t_edge, t_nbr = t_pair[ok], t_edge[ok], t_nbr[ok]
            if t_pair.size == 0:
                break
        t_type = e.etype[t_edge]
        step = lambda1 * phi[t_type] * e.weight[t_edge]
        if bonus is not None:
            step = step + bonus(t_nbr)
        t_score = ps[t_pair] + step
        # One transition per (beam row, neighbour): the best, the first of equals. Rows of a group are adjacent.
        t_pair, t_nbr, t_type, t_score = _best_per_neighbour(t_pair, t_nbr, t_type, t_score)
        t_anchor = pa[t_pair]
        # New: the first row reaching a neighbour the anchor had not visited before this level.
        fresh = np.flatnonzero(~visited[t_anchor, t_nbr])
        _, first = np.unique(t_anchor[fresh] * cap + t_nbr[fresh], return_index=True)
        new = np.zeros(t_pair.size, dtype=bool)
        new[fresh[first]] = True
        processed = _apply_budget(max_visited - count, pa, t_pair, t_score, new)
        seen_nodes.append(t_nbr[processed])
        seen_scores.append(t_score[processed])
        seen_types.append(t_type[processed])
        found = processed & new
        na, nu, ns = t_anchor[found], t_nbr[found], t_score[found]
        visited[na, nu] = True
        count += np.bincount(na, minlength=n_anchors)
        pa, pu, ps = _next_beam(na, nu, ns, beam_width, graph)

    nodes = np.concatenate(seen_nodes)
    scores = np.concatenate(seen_scores)
    types = np.concatenate(seen_types)
    best = np.full(max(cap, int(nodes.max()) + 1), -np.inf)
    np.maximum.at(best, nodes, scores)
    # The label comes from the first offer (in processing order) that reached the best score.
    at_best = np.flatnonzero(scores == best[nodes])
    reached, first = np.unique(nodes[at_best], return_index=True)
    return ArrayTraversed(reached, best[reached], types[at_best[first]])


def _best_per_neighbour(
    t_pair: np.ndarray, t_nbr: np.ndarray, t_type: np.ndarray, t_score: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Keep, for each run of rows with the same (pair, neighbour), the first row with the run's best score."""
    n = t_pair.size
    brk = np.empty(n, dtype=bool)
    brk[0] = True
    np.not_equal(t_nbr[1:], t_nbr[:-1], out=brk[1:])
    brk[1:] |= t_pair[1:] != t_pair[:-1]
    if brk.all():
        return t_pair, t_nbr, t_type, t_score
    starts = np.flatnonzero(brk)
    group = np.cumsum(brk) - 1
    top = np.maximum.reduceat(t_score, starts)
    cand = np.flatnonzero(t_score == top[group])
    g = group[cand]
    keep = cand[np.concatenate(([True], g[1:] != g[:-1]))]
    return t_pair[keep], t_nbr[keep], t_type[keep], t_score[keep]


def _apply_budget(
    room: np.ndarray, pa: np.ndarray, t_pair: np.ndarray, t_score: np.ndarray, new: np.ndarray
) -> np.ndarray:
    """Which rows are processed: a row is, while its anchor has made fewer than room[anchor] new discoveries
    before it in the reference order (beam row, score desc, array order).

    Beam rows come in order, so counting new discoveries per beam row tells, for each anchor, the one beam
    row in which its room runs out: rows of earlier beam rows are all processed, of later ones none, and only
    that beam row's transitions need sorting by score.
    """
    n_pairs = pa.size
    per_pair = np.bincount(t_pair[new], minlength=n_pairs)
    before = np.cumsum(per_pair) - per_pair
    first_of_anchor = np.searchsorted(pa, pa, side="left")
    before -= before[first_of_anchor]  # new discoveries in the anchor's earlier beam rows
    need = room[pa]
    pair_state = np.where(before + per_pair < need, 1, np.where(before >= need, 0, 2))  # all / none / partial
    processed = pair_state[t_pair] == 1
    partial = np.flatnonzero(pair_state[t_pair] == 2)
    if partial.size:
        order = partial[np.lexsort((partial, -t_score[partial], t_pair[partial]))]
        pairs = t_pair[order]
        is_new = new[order]
        k = np.cumsum(is_new) - is_new
        k -= k[np.searchsorted(pairs, pairs, side="left")]
        processed[order] = (before[pairs] + k) < need[pairs]
    return processed


def _next_beam(
    na: np.ndarray, nu: np.ndarray, ns: np.ndarray, beam_width: int, graph: ArrayGraph
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per anchor, the beam_width best discoveries by score, then id; grouped by anchor, best first.

    `na` comes grouped by anchor. Equal scores are put in id order explicitly, only where they occur, so the
    main sort need not be stable.
    """
    if na.size == 0:
        return na, nu, ns
    order = np.argsort(-ns)
    order = order[np.argsort(na[order].astype(np.int16), kind="stable")]
    na, nu, ns = na[order], nu[order], ns[order]
    first = np.ones(na.size, dtype=bool)
    first[1:] = na[1:] != na[:-1]
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], na.size)
    sizes = ends - starts
    rank = np.arange(na.size) - np.repeat(starts, sizes)
    cut = ns[np.repeat(np.minimum(starts + beam_width, ends) - 1, sizes)]  # each anchor's beam_width-th score
    keep = ns >= cut  # the beam plus rows tied with its last score
    same = np.zeros(na.size, dtype=bool)
    same[1:] = (ns[1:] == ns[:-1]) & ~first[1:] & keep[1:]
    if same.any():
        # Rows of equal score: re-sort the kept rows by (anchor, score desc, id) and rank again.
        idx = np.flatnonzero(keep)
        idx = idx[np.lexsort((graph.id_rank(nu[idx]), -ns[idx], na[idx]))]
        na, nu, ns = na[idx], nu[idx], ns[idx]
        first = np.ones(na.size, dtype=bool)
        first[1:] = na[1:] != na[:-1]
        starts = np.flatnonzero(first)
        rank = np.arange(na.size) - np.repeat(starts, np.diff(np.append(starts, na.size)))
    pick = np.flatnonzero(rank < beam_width)
    return na[pick], nu[pick], ns[pick]
