"""The plain-Python reference engine: the spec recipe's beam search and rerank (spec §5.2 Steps 3-4, reference
§4.4-4.5) written out over ids, dicts and a neighbour function, easy to read and to check by hand.

The product runs one engine, the array versions in `mnemon_core/recall` (`beam_search_arrays`,
`rerank_arrays`, `top_arrays`); this module is the tests' oracle for it: `recall/test_recall_steps.py` holds the
array beam to `beam_search` on random graphs, and `recall/test_recall.py` runs the whole pipeline with
`run_reference` in place of the array steps and expects identical results. A formula changes here and there.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from mnemon_core.models import Intent
from mnemon_core.recall.anchors import Anchor
from mnemon_core.recall.config import RecallConfig
from mnemon_core.recall.constants import LAMBDA1, LAMBDA2, SIGNALS, SUPERSEDED_FACTOR
from mnemon_core.graph import EDGE_TYPES, GraphView
from mnemon_core.recall.rerank import Scored
from mnemon_core.store import Filters

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


def graph_scores(raw: Mapping[str, float]) -> dict[str, float]:
    """Min–max normalisation of traversal scores; all 0 when they are all equal."""
    if not raw:
        return {}
    lo, hi = min(raw.values()), max(raw.values())
    span = hi - lo
    if span <= 0:
        return dict.fromkeys(raw, 0.0)
    return {id_: (v - lo) / span for id_, v in raw.items()}


def rerank(
    traversal: Mapping[str, float],
    via: Mapping[str, str],
    *,
    weights: Mapping[str, float],
    matched: Mapping[str, Mapping[str, float]],
    similarity: Callable[[str], float] | None = None,
    superseded: Collection[str] = (),
    superseded_factor: float = SUPERSEDED_FACTOR,
) -> list[Scored]:
    """Score every candidate (unsorted): Σ weight × signal over SIGNALS. `matched`: the signals an insight has
    only when it matches (keyword, entity), by name, id → value; `similarity(id)` is the calibrated cosine
    (None: no vectors)."""
    graph = graph_scores(traversal)
    out: list[Scored] = []
    for id_, g in graph.items():
        found = {n: values.get(id_, 0.0) for n, values in matched.items()}
        found["graph"] = g
        found["similarity"] = max(0.0, similarity(id_)) if similarity is not None else 0.0
        signals = {n: found[n] for n in SIGNALS}
        score = sum(weights[n] * v for n, v in signals.items())
        sup = id_ in superseded
        if sup:
            score *= superseded_factor
        out.append(Scored(id_, score, via.get(id_, ""), signals, sup))
    return out


def rank(scored: Iterable[Scored], meta: Mapping[str, tuple[int, str]], limit: int | None = None) -> list[Scored]:
    """Best first: score, then importance, newer created_at, id. `meta`: id → (importance, created_at)."""
    rows = sorted(scored, key=lambda s: s.id)
    rows.sort(key=lambda s: meta[s.id][1] if s.id in meta else "", reverse=True)
    rows.sort(key=lambda s: (-s.score, -(meta[s.id][0] if s.id in meta else 0)))
    return rows if limit is None else rows[:limit]


# ---------------------------------------------------------------- the reference steps over a GraphView


def neighbours(
    view: GraphView, ids: Sequence[str], scope: Filters | None = None
) -> dict[str, list[tuple[str, str, float]]]:
    """id → [(neighbour id, edge type, weight)], sorted by neighbour id then type; neighbours outside `scope`
    are left out (traversal cannot leave the scope)."""
    nodes = view.intern(ids)
    e = view.edges(nodes)
    out: dict[str, list[tuple[str, str, float]]] = {}
    for id_, lo, deg in zip(ids, e.start.tolist(), e.degree.tolist()):
        nbr = e.nbr[lo : lo + deg]
        keep = view.scope_mask(nbr, scope) if scope is not None else np.ones(deg, dtype=bool)
        out[id_] = [
            (view.ids[n], EDGE_TYPES[t], w)
            for n, t, w, k in zip(nbr.tolist(), e.etype[lo : lo + deg].tolist(), e.weight[lo : lo + deg].tolist(),
                                  keep.tolist())
            if k
        ]
    return out


def meta(view: GraphView, ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """id → (importance, created_at) of the active insights among ids."""
    nodes = view.intern(ids)
    act = view.active(nodes)
    return {
        id_: (int(view.importance[n]), view.created[n]) for id_, n, ok in zip(ids, nodes.tolist(), act.tolist()) if ok
    }


def run_reference(
    view: GraphView, sig, intent: Intent, scope: Filters, limit: int, config: RecallConfig
) -> tuple[list[Scored], int]:
    """`pipeline._run_arrays` (steps 3-4 of the spec recipe) the plain way: same arguments, same results."""
    cosine: Callable[[str], float] | None = None
    if sig.cosine_of is not None:
        cos_of = sig.cosine_of

        def cosine(id_: str) -> float:
            return float(cos_of(view.intern([id_]))[0])

    params = config.traversal[intent]
    walked = beam_search(
        sig.anchors,
        lambda ids: neighbours(view, ids, scope),
        config.phi(intent),
        beam_width=params.beam_width,
        max_depth=params.max_depth,
        max_visited=params.max_visited,
        lambda1=config.lambda1,
        lambda2=config.lambda2,
        cosine=cosine,
    )
    superseded = {view.ids[i] for i in view.superseded().tolist()}
    scored = rerank(
        walked.scores,
        walked.via,
        weights=config.weights(intent, cosine is not None),
        matched={name: {view.ids[n]: v for n, v in zip(nodes.tolist(), values.tolist())}
                 for name, (nodes, values) in sig.matched.items()},
        similarity=cosine,
        superseded=superseded,
        superseded_factor=config.superseded_factor,
    )
    return rank(scored, meta(view, list(walked.scores)), limit), len(walked.scores)
