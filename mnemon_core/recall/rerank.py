"""Recall steps 4 and 5: multi-factor rerank (spec §5.2 Step 4, reference §4.5) and the WHY causal order (Step 5).

Every node the beam reached is scored

    final = w_kw·keyword + w_ent·entity + w_sim·similarity + w_gr·graph

with the intent's weights (renormalised over keyword, entity and graph when there are no vectors), where
keyword = share of the query's tokens the insight holds, entity = share of the query's entities it names,
similarity = calibrated cosine when > 0, graph = min–max normalised traversal score over all candidates (all 0
when they are equal). A target of a `supersedes` edge is multiplied by 0.25 and marked. Results are sorted by
score, then importance, newer, id — so the same store and query always give the same list.

For WHY, the cut list is re-ordered with Kahn's algorithm over the causal edges among the results: causes
before effects, ready nodes taken best-ranked first, nodes caught in a cycle appended in rank order. The
`hybrid` recipe applies that order only inside each causal chain (`why_chains`), so a best answer without a
cause is not pushed below a chain of weaker ones.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .constants import SIGNALS, SUPERSEDED_FACTOR

GRAPH = "graph"  # the signal the traversal gives

__all__ = ["Scored", "combine", "rerank_arrays", "top_arrays", "why_chains", "why_order"]


class Scored(NamedTuple):
    id: str
    score: float
    via: str
    signals: dict[str, float]  # each rerank signal's value, by name in `SIGNALS` order
    superseded: bool


def rerank_arrays(
    raw: np.ndarray,
    *,
    weights: Mapping[str, float],
    signals: Mapping[str, np.ndarray],
    superseded: np.ndarray,
    superseded_factor: float = SUPERSEDED_FACTOR,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Score every candidate (one row per aligned array; `signals`: every one but graph, by name, a missing one
    0): returns (final score, every signal in `SIGNALS` order, graph the min-max normalised `raw`)."""
    lo, hi = (float(raw.min()), float(raw.max())) if raw.size else (0.0, 0.0)
    span = hi - lo
    graph = (raw - lo) / span if span > 0 else np.zeros_like(raw)
    full = {n: graph if n == GRAPH else signals.get(n, np.zeros_like(raw)) for n in SIGNALS}
    return combine(weights, full, superseded, superseded_factor), full


def combine(
    weights: Mapping[str, float], signals: Mapping[str, np.ndarray], superseded: np.ndarray,
    superseded_factor: float = SUPERSEDED_FACTOR,
) -> np.ndarray:
    """Σ weight·signal over `SIGNALS` (in that order), × the factor for superseded rows."""
    score = sum(weights[n] * signals[n] for n in SIGNALS)
    return np.where(superseded, score * superseded_factor, score)


def top_arrays(
    score: np.ndarray, importance: Callable[[np.ndarray], np.ndarray], key: Callable[[int], tuple[str, str]],
    limit: int,
) -> list[int]:
    """Rows of the `limit` best scores, best first: score, importance, newer, id.

    Only rows that can make the cut are compared on the full key: the best `limit` scores and whatever ties
    the last of them. `key(row)` → (created_at, id).
    """
    n = int(score.shape[0])
    if n == 0:
        return []
    if n > limit:
        cut = np.partition(score, n - limit)[n - limit]
        rows = np.flatnonzero(score >= cut)
    else:
        rows = np.arange(n)
    imp = importance(rows)
    items = [(float(score[r]), int(i), *key(int(r)), int(r)) for r, i in zip(rows.tolist(), imp.tolist())]
    items.sort(key=lambda t: t[3])  # id
    items.sort(key=lambda t: t[2], reverse=True)  # newer
    items.sort(key=lambda t: (-t[0], -t[1]))  # score, importance
    return [t[4] for t in items[:limit]]


def why_order(results: Sequence[Scored], causal: Iterable[tuple[str, str]]) -> list[Scored]:
    """Kahn's topological sort over causal edges (source causes target) among `results`, which come ranked.

    Ready nodes are taken in rank order; whatever a cycle keeps back is appended in rank order.
    """
    pos = {r.id: i for i, r in enumerate(results)}
    out_edges: dict[int, list[int]] = {}
    indegree = [0] * len(results)
    for src, dst in set(causal):
        if src in pos and dst in pos and src != dst:
            out_edges.setdefault(pos[src], []).append(pos[dst])
            indegree[pos[dst]] += 1
    ready = [i for i, d in enumerate(indegree) if d == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in out_edges.get(i, ()):
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, j)
    if len(order) < len(results):
        taken = set(order)
        order.extend(i for i in range(len(results)) if i not in taken)
    return [results[i] for i in order]


def why_chains(results: Sequence[Scored], causal: Iterable[tuple[str, str]]) -> list[Scored]:
    """WHY order within causal chains: the results joined by causal edges (among themselves) form chains; each
    chain is put in `why_order`, starting where its best-ranked member stood; every result outside a chain
    keeps its place in score order."""
    pos = {r.id: i for i, r in enumerate(results)}
    parent = list(range(len(results)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    links = [(src, dst) for src, dst in set(causal) if src in pos and dst in pos and src != dst]
    for src, dst in links:
        a, b = root(pos[src]), root(pos[dst])
        if a != b:
            parent[max(a, b)] = min(a, b)  # the root is the chain's best-ranked member
    chains: dict[int, list[Scored]] = {}
    for i, r in enumerate(results):
        chains.setdefault(root(i), []).append(r)
    out: list[Scored] = []
    for i in range(len(results)):
        if root(i) == i:
            members = chains[i]
            out.extend(why_order(members, links) if len(members) > 1 else members)
    return out
