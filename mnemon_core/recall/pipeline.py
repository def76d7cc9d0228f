"""Smart recall, start to end (spec §5.2): anchors (RRF over four signals) → beam search → rerank → WHY order.

`smart_recall` takes the intent already decided and the query vector already embedded (`Memory.recall` does
both, and the access bump and output shaping after); everything in between is here, reading the store only
through the `GraphView` memo and a few batched signal queries, all inside the category/source scope.

`engine="arrays"` (the default) runs the beam search and rerank as numpy array operations; `"reference"` runs
the plain-Python versions of the same steps over ids. They give the same results (the tests hold them to it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import numpy as np

from ..embed import Calibration
from ..entities import ASCII_WORD_RE, extract_entities, query_entities
from ..models import REVERSE_KEY, REVERSE_VALUE, EdgeType, Intent
from ..store import Filters, Store
from ..text import token_set
from .anchors import Anchor, fuse, top_ranked, vector_ranking
from .config import SMART, RecallConfig
from .graph import EDGE_TYPES, GraphView, graph_view
from .output import hint
from .rerank import Scored, rank, rerank, rerank_arrays, top_arrays, why_order
from .results import RecallMeta
from .traverse import Edges, beam_search, beam_search_arrays

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


class _Signals(NamedTuple):
    anchors: list[Anchor]
    keyword: tuple[np.ndarray, np.ndarray]  # (sorted nodes holding a query token, share of the tokens held)
    entity: tuple[np.ndarray, np.ndarray]  # (sorted nodes naming a query entity, share of the entities named)
    cosines: np.ndarray | None  # calibrated cosine per vector-matrix row (float64), None without vectors


def scope_of(category: str | None, source: str | None) -> Filters:
    """`--cat` / `--source` as a scope; empty means unset."""
    return Filters(category=category or None, source=source or None)


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
    engine: Literal["arrays", "reference"] = "arrays",
) -> Outcome:
    view = graph_view(store)
    if vectors is not None and not vectors.ids:
        vectors = None
    with view.lock:
        view.sync()
        view.use_vectors(vectors.ids if vectors is not None else [])
        sig = _signals(store, view, query, scope, vectors, config)
        run = _run_arrays if engine == "arrays" else _run_reference
        results, traversed = run(view, sig, intent, scope, limit, config)
    if intent == Intent.WHY and len(results) > 1:
        causal = store.edges_among([r.id for r in results], str(EdgeType.causal))
        forward = [(e.source_id, e.target_id) for e in causal if e.metadata.get(REVERSE_KEY) != REVERSE_VALUE]
        results = why_order(results, forward)
    meta = RecallMeta(
        intent=intent, intent_source=intent_source, anchor_count=len(sig.anchors), traversed=traversed,
        hint=hint(len(results), limit),
    )
    return Outcome(results, meta)


# ---------------------------------------------------------------------------------------------- step 2


def _signals(
    store: Store, view: GraphView, query: str, scope: Filters, vectors: VectorInput | None, config: RecallConfig
) -> _Signals:
    k = config.anchor_top_k
    scoped = scope.category is not None or scope.source is not None
    tokens = sorted(token_set(query))
    entities = _query_entities(store, query)
    posts = view.postings(tokens, entities)

    # Signal 1: keyword — coverage of the query's tokens, which is also the rerank's keyword score.
    keyword = _shares(view, posts[: len(tokens)], scope)
    keyword_rank = _top(view, keyword, len(tokens), k)

    # Signal 2: vector (calibrated cosine > 0.1), only with a query vector and stored vectors.
    cosines = None
    vector_rank: list[str] = []
    if vectors is not None:
        raw = vectors.matrix @ vectors.query.astype(np.float32, copy=False)
        cosines = np.asarray(vectors.calibration(raw), dtype=np.float64)
        in_scope = (lambda ids: view.in_scope(ids, scope)) if scoped else None
        vector_rank = vector_ranking(vectors.ids, cosines, k, min_cos=config.vector_min_cos, in_scope=in_scope)

    # Signal 3: recency, always.
    time_rank = [ins.id for ins in store.latest(limit=k, filters=scope)]

    # Signal 4: entity — share of the query's entities an insight names (the same extractor as remember).
    entity = _shares(view, posts[len(tokens) :], scope)
    entity_rank = _top(view, entity, len(entities), k)

    anchors = fuse(
        {"keyword": keyword_rank, "vector": vector_rank, "time": time_rank, "entity": entity_rank}, config.rrf_k
    )
    return _Signals(anchors, keyword, entity, cosines)


def _query_entities(store: Store, query: str) -> list[str]:
    """The query's entities, lower-cased and distinct (known-entity path case-insensitive)."""
    words = ASCII_WORD_RE.findall(query)
    candidates = [*words, *extract_entities(query)]
    known = store.known_entities(candidates, casefold=True).values() if candidates else ()
    return sorted({e.lower() for e in query_entities(query, set(known)) if e})


def _shares(view: GraphView, postings: list[np.ndarray], scope: Filters) -> tuple[np.ndarray, np.ndarray]:
    """(nodes in scope holding ≥ 1 of the postings' keys, how many of them each holds / how many keys)."""
    if not postings:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    nodes, count = np.unique(np.concatenate(postings), return_counts=True)
    if scope.category is not None or scope.source is not None:
        keep = view.scope_mask(nodes, scope)
        nodes, count = nodes[keep], count[keep]
    return nodes, count / len(postings)


def _top(view: GraphView, hits: tuple[np.ndarray, np.ndarray], n_keys: int, k: int) -> list[str]:
    """Ids of the k best hits: share, importance, newer, id."""
    nodes, share = hits
    if nodes.size == 0:
        return []
    view.ensure_meta(nodes)
    count = np.rint(share * n_keys).astype(np.int64)
    rows = top_ranked(count, view.importance[nodes], view.created_key[nodes], view.id_rank(nodes), k)
    return [view.ids[n] for n in nodes[rows].tolist()]


# ---------------------------------------------------------------------------------------------- steps 3-4


def _run_arrays(
    view: GraphView, sig: _Signals, intent: Intent, scope: Filters, limit: int, config: RecallConfig
) -> tuple[list[Scored], int]:
    if not sig.anchors:
        return [], 0
    phi_by_type = config.phi(intent)
    phi = np.array([phi_by_type.get(t, 0.0) for t in EDGE_TYPES], dtype=np.float64)
    cos_ext = None
    bonus = None
    if sig.cosines is not None:
        cos_ext = np.append(sig.cosines, 0.0)  # row -1 (no vector) reads the trailing 0
        lambda2 = config.lambda2
        cos_pos = np.maximum(0.0, cos_ext)

        def bonus(nodes: np.ndarray) -> np.ndarray:
            return lambda2 * cos_pos[view.vector_rows(nodes)]

    params = config.traversal[intent]
    anchor_nodes = view.intern([a.id for a in sig.anchors])
    walked = beam_search_arrays(
        anchor_nodes,
        np.array([a.score for a in sig.anchors], dtype=np.float64),
        _Scoped(view, scope),
        phi,
        beam_width=params.beam_width,
        max_depth=params.max_depth,
        max_visited=params.max_visited,
        lambda1=config.lambda1,
        bonus=bonus,
    )
    nodes = walked.nodes
    keyword = _lookup(*sig.keyword, nodes)
    entity = _lookup(*sig.entity, nodes)
    similarity = cos_ext[view.vector_rows(nodes)] if cos_ext is not None else None
    superseded = np.isin(nodes, view.superseded())
    score, graph, sim = rerank_arrays(
        walked.scores,
        weights=config.rerank_weights[intent].effective(sig.cosines is not None),
        keyword=keyword,
        entity=entity,
        similarity=similarity,
        superseded=superseded,
        superseded_factor=config.superseded_factor,
    )
    view.ensure_meta(nodes)
    ids = view.ids
    rows = top_arrays(
        score, lambda r: view.importance[nodes[r]], lambda r: (view.created[int(nodes[r])], ids[int(nodes[r])]),
        limit,
    )
    labels = {a.id: a.via for a in sig.anchors}
    out = []
    for r in rows:
        node = int(nodes[r])
        code = int(walked.via_type[r])
        via = labels[ids[node]] if code < 0 else EDGE_TYPES[code]
        out.append(
            Scored(ids[node], float(score[r]), via, float(keyword[r]), float(entity[r]), float(sim[r]),
                   float(graph[r]), bool(superseded[r]))
        )
    return out, int(nodes.shape[0])


class _Scoped:
    """The view as `beam_search_arrays` sees it: edges never leave the scope."""

    def __init__(self, view: GraphView, scope: Filters) -> None:
        self.view = view
        self.scope = scope

    def size(self) -> int:
        return self.view.size()

    def edges(self, nodes: np.ndarray) -> Edges:
        return self.view.edges(nodes)

    def allowed(self, nodes: np.ndarray) -> np.ndarray | None:
        if self.scope.category is None and self.scope.source is None:
            return None
        return self.view.scope_mask(nodes, self.scope)

    def id_rank(self, nodes: np.ndarray) -> np.ndarray:
        return self.view.id_rank(nodes)


def _lookup(keys: np.ndarray, values: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """values of nodes in the sorted `keys` (0 for the others)."""
    if keys.size == 0:
        return np.zeros(nodes.shape[0], dtype=np.float64)
    at = np.minimum(np.searchsorted(keys, nodes), keys.size - 1)
    return np.where(keys[at] == nodes, values[at], 0.0)


def _run_reference(
    view: GraphView, sig: _Signals, intent: Intent, scope: Filters, limit: int, config: RecallConfig
) -> tuple[list[Scored], int]:
    cosine: Callable[[str], float] | None = None
    if sig.cosines is not None:
        cos = sig.cosines
        rows = view.vector_index()

        def cosine(id_: str) -> float:
            r = rows.get(id_)
            return 0.0 if r is None else float(cos[r])

    params = config.traversal[intent]
    walked = beam_search(
        sig.anchors,
        lambda ids: view.neighbours(ids, scope),
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
        weights=config.rerank_weights[intent].effective(cosine is not None),
        keyword={view.ids[n]: v for n, v in zip(sig.keyword[0].tolist(), sig.keyword[1].tolist())},
        entity={view.ids[n]: v for n, v in zip(sig.entity[0].tolist(), sig.entity[1].tolist())},
        similarity=cosine,
        superseded=superseded,
        superseded_factor=config.superseded_factor,
    )
    return rank(scored, view.meta(list(walked.scores)), limit), len(walked.scores)
