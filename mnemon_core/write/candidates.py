"""Step four (after the commit, read-only): candidates for the host LLM to judge (reference §3.7).

Semantic: calibrated cosine in [0.40, 0.80) — with `auto_linked` for those ≥ 0.80 already edged — best 5;
without vectors (or none survive), token overlap max(|A∩B|/|A|, |A∩B|/|B|) ≥ 0.10 over active insights.
Causal: a breadth-first walk over every edge type, both directions, up to 2 hops and 10 nodes.
"""

from __future__ import annotations

from collections import deque

from ..models import CausalCandidate, Insight, SemanticCandidate
from ..store import Store, TokenHit
from .causal import causal_signal, suggest_sub_type
from .constants import (
    CAUSAL_CANDIDATE_HOPS,
    CAUSAL_CANDIDATE_MAX,
    SEMANTIC_AUTO_LINK,
    SEMANTIC_REVIEW,
    SEMANTIC_REVIEW_MAX,
    SEMANTIC_TOKEN_FALLBACK,
    SEMANTIC_TOKEN_POOL,
)
from .semantic import ranked


def token_tops(store: Store, tokens: frozenset[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]]:
    """`Store.token_tops`, from the graph memo's index file where the store keeps one (`graph/memo.py`: the
    postings are mapped, not read), else from the store."""
    from ..graph import graph_view

    return graph_view(store).token_tops(tokens, limit) or store.token_tops(tokens, limit)


def semantic_candidates(
    store: Store, new: Insight, tokens: frozenset[str], cosines: dict[str, float] | None,
    by_overlap: list[TokenHit] | None = None,
) -> list[SemanticCandidate]:
    """`tokens`: the new content's distinct tokens; `cosines`: calibrated cosines with embedded insights;
    `by_overlap`: the token-overlap ranking if the caller already has it (`Store.token_tops`)."""
    picks: list[tuple[str, float, bool]] = []
    if cosines:
        picks = [(i, c, c >= SEMANTIC_AUTO_LINK) for i, c in ranked(cosines, new.id) if c >= SEMANTIC_REVIEW]
        picks = picks[:SEMANTIC_REVIEW_MAX]
    if not picks and tokens:
        if by_overlap is None:
            by_overlap = store.token_hits(tokens, exclude=new.id, limit=SEMANTIC_TOKEN_POOL, order="overlap")
        scored = [(h.id, h.hits / m) for h in by_overlap if h.id != new.id and (m := min(len(tokens), h.n_tokens))]
        scored = sorted((p for p in scored if p[1] >= SEMANTIC_TOKEN_FALLBACK), key=lambda p: -p[1])
        if len(scored) > SEMANTIC_REVIEW_MAX:  # keep the ties at the cut, to choose among them by content
            scored = [p for p in scored if p[1] >= scored[SEMANTIC_REVIEW_MAX - 1][1]]
        rows = store.texts([i for i, _ in scored])
        scored.sort(key=lambda p: (-p[1], rows[p[0]][0] if p[0] in rows else "", p[0]))
        picks = [(i, score, False) for i, score in scored[:SEMANTIC_REVIEW_MAX]]
    else:
        rows = store.texts([p[0] for p in picks])
    return [
        SemanticCandidate(id=i, content=rows[i][0], category=rows[i][1], cosine=round(c, 4), auto_linked=auto)
        for i, c, auto in picks
        if i in rows
    ]


def causal_candidates(store: Store, new: Insight) -> list[CausalCandidate]:
    seen = {new.id}
    found: list[tuple[str, tuple[str, str], int, str]] = []  # (neighbour, its content and category, hop, via)
    frontier = deque([(new.id, 0)])
    while frontier and len(found) < CAUSAL_CANDIDATE_MAX:
        node, hop = frontier.popleft()
        if hop >= CAUSAL_CANDIDATE_HOPS:
            continue
        edges = [(e.target_id if e.source_id == node else e.source_id, e) for e in store.edges_of([node])]
        active = store.texts([o for o, _ in edges if o not in seen])
        # Neighbours in an order the memories decide (edge type, heavier edge, content), not their random ids:
        # the walk stops at 10 nodes, and two stores built from the same draft must offer the same ones.
        edges.sort(key=lambda oe: (oe[1].edge_type, -oe[1].weight, active[oe[0]][0] if oe[0] in active
                                   else "", oe[0]))
        for other, e in edges:
            if other in seen:
                continue
            seen.add(other)
            if other in active and len(found) < CAUSAL_CANDIDATE_MAX:
                found.append((other, active[other], hop + 1, e.edge_type))
                frontier.append((other, hop + 1))
    out = []
    for id_, (content, category), hop, etype in found:
        out.append(
            CausalCandidate(
                id=id_, content=content, category=category, hop=hop, via_edge=etype,
                causal_signal=causal_signal(content) or causal_signal(new.content),
                suggested_sub_type=suggest_sub_type(new.content + " " + content),
            )
        )
    return out
