"""Smart recall, start to end (spec §5.2): anchors (RRF over four signals) → beam search → rerank → WHY order.

`smart_recall` takes the intent already decided and the query vector already embedded (`Memory.recall` does
both, and the access bump and output shaping after); everything in between is here, reading the store only
through `GraphView` and a few batched signal queries, all inside the category/source scope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..embed import Calibration
from ..entities import ASCII_WORD_RE, extract_entities, query_entities
from ..models import EdgeType, Intent
from ..store import Filters, Store
from ..text import token_set
from .anchors import entity_ranking, fuse, keyword_ranking, vector_ranking
from .config import SMART, RecallConfig
from .graph import graph_view
from .output import hint
from .rerank import Scored, rank, rerank, why_order
from .results import RecallMeta
from .traverse import beam_search

__all__ = ["Outcome", "VectorInput", "scope_of", "smart_recall"]


class VectorInput(NamedTuple):
    """The query's unit vector, the store's vectors of the same model (row ids, unit rows) and the model's
    calibration, which maps raw cosines onto the scale the spec's thresholds were set on."""

    query: np.ndarray
    ids: list[str]
    matrix: np.ndarray
    calibration: Calibration


class Outcome(NamedTuple):
    results: list[Scored]  # ranked, cut to the limit, WHY-ordered when the intent is WHY
    meta: RecallMeta


def smart_recall(
    store: Store,
    query: str,
    *,
    intent: Intent,
    intent_source: str,
    limit: int,
    scope: Filters,
    vectors: VectorInput | None = None,
    config: RecallConfig = SMART,
) -> Outcome:
    view = graph_view(store)
    view.sync()
    k = config.anchor_top_k
    scoped = scope.category is not None or scope.source is not None

    # Signal 1: keyword. token_hits covers every insight holding a query token, so its coverage is also
    # the rerank's keyword score.
    q_tokens = token_set(query)
    hits = store.token_hits(q_tokens, filters=scope) if q_tokens else []
    keyword = {h.id: h.hits / len(q_tokens) for h in hits}

    # Signal 2: vector (calibrated cosine > 0.1), only with a query vector and stored vectors.
    cosine: Callable[[str], float] | None = None
    vector_rank: list[str] = []
    if vectors is not None and vectors.ids:
        cal = vectors.calibration(vectors.matrix @ vectors.query.astype(np.float32, copy=False))
        rows = view.vector_rows(vectors.ids)
        cosine = _lookup(cal, rows)
        in_scope = (lambda ids: view.in_scope(ids, scope)) if scoped else None
        vector_rank = vector_ranking(vectors.ids, cal, k, min_cos=config.vector_min_cos, in_scope=in_scope)

    # Signal 3: recency, always.
    time_rank = [ins.id for ins in store.latest(limit=k, filters=scope)]

    # Signal 4: entity, with the same extractor as remember (known-entity path case-insensitive).
    entity = _entity_scores(store, query, scope)
    entity_rank = entity_ranking(entity.hits, entity.n, view.meta(list(entity.hits)), k)

    anchors = fuse(
        {"keyword": keyword_ranking(hits, k), "vector": vector_rank, "time": time_rank, "entity": entity_rank},
        config.rrf_k,
    )

    params = config.traversal[intent]
    traversal = beam_search(
        anchors,
        lambda ids: view.neighbours(ids, scope),
        config.phi(intent),
        beam_width=params.beam_width,
        max_depth=params.max_depth,
        max_visited=params.max_visited,
        lambda1=config.lambda1,
        lambda2=config.lambda2,
        cosine=cosine,
    )

    scored = rerank(
        traversal.scores,
        traversal.via,
        weights=config.rerank_weights[intent].effective(cosine is not None),
        keyword=keyword,
        entity=entity.share,
        similarity=cosine,
        superseded=view.superseded(),
        superseded_factor=config.superseded_factor,
    )
    results = rank(scored, view.meta(list(traversal.scores)), limit)
    if intent == Intent.WHY and len(results) > 1:
        causal = store.edges_among([r.id for r in results], str(EdgeType.causal))
        results = why_order(results, [(e.source_id, e.target_id) for e in causal])
    meta = RecallMeta(
        intent=intent, intent_source=intent_source, anchor_count=len(anchors), traversed=len(traversal.scores),
        hint=hint(len(results), limit),
    )
    return Outcome(results, meta)


class _EntityScores(NamedTuple):
    n: int  # distinct query entities (case-insensitive)
    hits: dict[str, int]  # id → distinct query entities it names
    share: dict[str, float]  # id → hits / n


def _entity_scores(store: Store, query: str, scope: Filters) -> _EntityScores:
    words = ASCII_WORD_RE.findall(query)
    candidates = [*words, *extract_entities(query)]
    known = store.known_entities(candidates, casefold=True).values() if candidates else ()
    lowered = {e.lower() for e in query_entities(query, set(known)) if e}
    if not lowered:
        return _EntityScores(0, {}, {})
    hits = store.entity_hits(lowered, scope)
    n = len(lowered)
    return _EntityScores(n, hits, {id_: c / n for id_, c in hits.items()})


def _lookup(cal: np.ndarray, rows: dict[str, int]) -> Callable[[str], float]:
    """id → calibrated cosine (0 for an insight without a vector of this model)."""

    def cosine(id_: str) -> float:
        r = rows.get(id_)
        return 0.0 if r is None else float(cal[r])

    return cosine


def scope_of(category: str | None, source: str | None) -> Filters:
    """`--cat` / `--source` as a scope; empty means unset."""
    return Filters(category=category or None, source=source or None)
