"""Recall's confidence under the `hybrid` recipe: how much of the query a result covers, not how it ranked.

A score says how a result compares with the other candidates of this query (the keyword term is BM25 divided
by the query's best), so a query about nothing stored still gets a top result with a fair score as soon as one
word matched. Confidence asks another question: how much of what the query is about does this memory hold?

    coverage = Σ w(key) over the query's keys the result holds / Σ w(key) over all the query's keys

The keys are the query's distinct stemmed terms (the ones BM25 ranks by, question words such as "why" left
out: they say what is asked, not what about) and its entities (a stored entity name, a speaker the query
names) that are not already one of its terms. A key's weight is its rarity in the store,
w = 1 / (1 + ln(1 + n)) with n the active insights holding it: a term no memory holds weighs 1, one in every
memory little. So "why did we pick Qdrant as our database?" over facts that mention a database but never
Qdrant covers the common key and misses the rare ones: low. A coverage of at least `CONFIDENCE_HIGH_COVERAGE`
is "high", of at least `CONFIDENCE_MEDIUM_COVERAGE` "medium"; a result close in meaning (calibrated cosine ≥
`CONFIDENCE_MIN_SIMILARITY`) is at least medium even with no shared word: a paraphrase.

For WHY, a result joined by a causal edge someone stated (`sure_causal`) to a result that covers the query
answers it as the other's cause or effect: it takes that result's confidence and is labelled
`matched_via: "causal"`, whatever edge the flow reached it over.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..models import REVERSE_KEY, REVERSE_VALUE, Edge
from ..text import stem
from .constants import (
    CONFIDENCE_HIGH_COVERAGE,
    CONFIDENCE_MEDIUM_COVERAGE,
    CONFIDENCE_MIN_SIMILARITY,
    QUESTION_TERMS,
    VIA_CAUSAL,
)
from .rerank import Scored

__all__ = ["LABELS", "causal_support", "coverage", "forward", "key_weight", "label", "query_keys", "sure_causal"]

LABELS = ("low", "medium", "high")


def key_weight(holders: int) -> float:
    """The weight of a query key held by `holders` active insights: 1 for none, smaller the more hold it."""
    return 1.0 / (1.0 + float(np.log1p(holders)))


def query_keys(
    terms: Sequence[str], term_posts: Sequence[np.ndarray], entities: Sequence[str], entity_posts: Sequence[np.ndarray]
) -> list[tuple[np.ndarray, float]]:
    """(postings: sorted node indices, weight) of the query's keys: its terms without the question words, then
    its entities that are not one of those terms (`entities` lower-case, as recall extracts them)."""
    keys = [(post, key_weight(int(post.size))) for t, post in zip(terms, term_posts) if t not in QUESTION_TERMS]
    keys += [(post, key_weight(int(post.size))) for e, post in zip(entities, entity_posts) if stem(e) not in terms]
    return keys


def coverage(nodes: np.ndarray, keys: Sequence[tuple[np.ndarray, float]]) -> np.ndarray:
    """Per node: the weighted share of the keys it holds (0 when the query has no key)."""
    held = np.zeros(nodes.shape[0], dtype=np.float64)
    total = 0.0
    for post, w in keys:
        total += w
        if post.size:
            at = np.minimum(np.searchsorted(post, nodes), post.size - 1)
            held += w * (post[at] == nodes)
    return held / total if total > 0 else held


def label(covered: float, similarity: float) -> str:
    """"high" / "medium" / "low" from the coverage and the calibrated cosine."""
    if covered >= CONFIDENCE_HIGH_COVERAGE:
        return "high"
    if covered >= CONFIDENCE_MEDIUM_COVERAGE or similarity >= CONFIDENCE_MIN_SIMILARITY:
        return "medium"
    return "low"


def sure_causal(edge: Edge) -> bool:
    """A causal edge someone stated (`link`, the judge, an import draft), not one the automatic builder made
    (keyword + token overlap, `write/causal.py`): on 138 labelled edges of real conversations 1 was right, and
    no overlap band did better than 0.02 (benchmarks/causal_precision.py), so none of them may put one memory
    before another."""
    return not ("overlap" in edge.metadata and edge.metadata.get("created_by", "auto") == "auto")


def forward(edges: Iterable[Edge]) -> list[tuple[str, str]]:
    """(cause, effect) of each stored direction that is not the reverse copy of a link."""
    return [(e.source_id, e.target_id) for e in edges if e.metadata.get(REVERSE_KEY) != REVERSE_VALUE]


def causal_support(
    results: Sequence[Scored], labels: Sequence[str], links: Iterable[tuple[str, str]]
) -> tuple[list[Scored], list[str]]:
    """WHY: a result causally linked (`links`, either direction) to one whose confidence is higher and not
    "low" takes that confidence and the `causal` label."""
    pos = {r.id: i for i, r in enumerate(results)}
    rank = {c: i for i, c in enumerate(LABELS)}
    best: dict[int, str] = {}
    for a, b in links:
        if a in pos and b in pos and a != b:
            for i, j in ((pos[a], pos[b]), (pos[b], pos[a])):
                if labels[j] != "low" and rank[labels[j]] > rank[best.get(i, labels[i])]:
                    best[i] = labels[j]
    out, got = list(results), list(labels)
    for i, c in best.items():
        got[i] = c
        out[i] = out[i]._replace(via=VIA_CAUSAL)
    return out, got
