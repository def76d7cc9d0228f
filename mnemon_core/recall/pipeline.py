"""Smart recall, start to end (spec §5.2): anchors (RRF over four signals) → graph → rerank → WHY order.

`smart_recall` takes the intent already decided and the query vector already embedded (`Memory.recall` does
both, and the access bump and output shaping after); everything in between is here, reading the store only
through the `GraphView` memo and a few batched signal queries, all inside the category/source scope.

The recipe (`RecallConfig`) picks the keyword score (the spec's token coverage, or BM25), the graph step (the
spec's beam search, or the relevance flow of `flow.py`) and how confidence and WHY order are decided.
The beam search and rerank run as numpy array operations; the tests hold them to a plain-Python reference of
the same steps (`tests/reference_engine.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import NamedTuple

import numpy as np

from ..embed import Calibration
from ..entities import ASCII_WORD_RE, extract_entities, query_entities
from ..models import EdgeType, Intent
from ..store import Filters, Store
from ..store.base import AnnSearch
from ..text import terms, token_set
from .anchors import Anchor, fuse, top_ranked, vector_ranking
from .config import SPEC, RecallConfig
from .constants import ROLE_SOURCES, SIGNALS, VIA_ENTITY, VIA_KEYWORD, VIA_TIME, VIA_VECTOR
from .evidence import causal_support, coverage, forward, label, query_keys, sure_causal
from .flow import relevance_flow
from ..graph import EDGE_TYPES, SUB_TYPES, GraphView, graph_view, tally
from .output import hint
from .prior import asks_for_help, asks_what_you_said, preference_factor, source_factor
from .rerank import GRAPH, Scored, combine, rerank_arrays, top_arrays, why_chains, why_order
from .results import RecallMeta
from .traverse import Edges, beam_search_arrays
from .updates import newer_first
from .when import Window, named_window, window_factor

__all__ = ["AnnSearch", "Outcome", "VectorInput", "scope_of", "smart_recall", "vector_input"]


class VectorInput(NamedTuple):
    """The query's unit vector, the store's vectors of the same model (row ids, unit rows) and the model's
    calibration, which maps raw cosines onto the scale the spec's thresholds were set on.

    With `ann` (a store's HNSW index, `store/ann.py`, used above its size threshold) ids and matrix are empty:
    the vector signal's top-k comes from the index — approximate, the one place recall is — and the cosine
    of every other insight recall scores (beam bonus, rerank similarity) is read exactly by id.
    """

    query: np.ndarray
    ids: list[str]
    matrix: np.ndarray
    calibration: Calibration
    ann: AnnSearch | None = None


def vector_input(store: Store, model: str, query: np.ndarray, calibration: Calibration) -> VectorInput:
    """The vector side of recall for `model`: the store's ANN index when it has a usable one, else the matrix."""
    ann = store.ann_index(model, int(query.shape[0]))
    if ann is not None:
        return VectorInput(query, [], np.zeros((0, int(query.shape[0])), dtype=np.float32), calibration, ann)
    ids, mat = store.vector_matrix(model, int(query.shape[0]))
    return VectorInput(query, ids, mat, calibration)


class Outcome(NamedTuple):
    results: list[Scored]  # ranked, cut to the limit, WHY-ordered when the intent is WHY
    meta: RecallMeta
    labels: dict[str, str] | None = None  # id → the recipe's confidence (None: from the rounded score)


class _Signals(NamedTuple):
    anchors: list[Anchor]
    # The rerank signals a node has only when it matches, by name: (its sorted nodes, their values) — keyword:
    # share of the query's tokens held, or BM25 / the best; entity: share of the query's entities named.
    matched: dict[str, tuple[np.ndarray, np.ndarray]]
    cosines: np.ndarray | None  # calibrated cosine per vector-matrix row (float64), None without vectors
    cosine_of: Callable[[np.ndarray], np.ndarray] | None  # node indices → calibrated cosine (0 without a vector)
    similarity_range: tuple[float, float] | None  # (floor, best) of the `relative` similarity term, else None
    entity_keys: list[str]  # the query's entities (lower-case), sources it names included
    entity_posts: list[np.ndarray]  # of each: the nodes naming it (or said by it), sorted
    term_nodes: list[np.ndarray]  # per query term (or token): the sorted nodes holding it
    source_factor: dict[str, float]  # the who-said-it prior for this query (prior.py)
    preference_factor: float  # of an insight stating a preference, for this query (prior.py; 1: none)
    window: Window | None  # the time the query names (when.py), None: none or the factor is off
    vector_vote: tuple[np.ndarray, np.ndarray]  # (sorted nodes of the vector ranking, their reciprocal rank)


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
    config: RecallConfig = SPEC,
    asked_at: datetime | None = None,
) -> Outcome:
    view = graph_view(store)
    if vectors is not None and not vectors.ids and vectors.ann is None:
        vectors = None
    with view.lock:
        view.sync()
        view.use_vectors(vectors.ids if vectors is not None else [])
        sig = _signals(store, view, query, scope, vectors, config, asked_at)
        run = _run_flow if config.graph == "flow" else _run_arrays
        results, traversed = run(view, sig, intent, scope, limit, config)
        labels = _labels(view, query, results, sig, config) if config.confidence == "evidence" else None
    if intent == Intent.WHY and len(results) > 1:
        causal = store.edges_among([r.id for r in results], str(EdgeType.causal))
        if config.why_order == "chains":  # only causal edges someone stated order an answer
            links = forward([e for e in causal if sure_causal(e)])
            results = why_chains(results, links)
        else:
            links = forward(causal)
            results = why_order(results, links)
        if labels is not None:
            results, got = causal_support(results, [labels[r.id] for r in results], links)
            labels = {r.id: c for r, c in zip(results, got)}
    meta = RecallMeta(
        intent=intent, intent_source=intent_source, anchor_count=len(sig.anchors), traversed=traversed,
        hint=hint(results, limit),
        no_match=labels is not None and bool(results) and all(c == "low" for c in labels.values()),
    )
    return Outcome(results, meta, labels)


def _labels(
    view: GraphView, query: str, results: list[Scored], sig: _Signals, config: RecallConfig
) -> dict[str, str]:
    """Each result's confidence: how much of the query's terms and entities it covers (`evidence.py`)."""
    if not results:
        return {}
    qterms = list(dict.fromkeys(terms(query)))
    posts = view.term_postings(qterms, config.bm25_length_cap)  # the keyword signal's, memoised
    keys = query_keys(qterms, [p[0] for p in posts], sig.entity_keys, sig.entity_posts)
    covered = coverage(view.intern([r.id for r in results]), keys)
    return {r.id: label(float(c), r.signals["similarity"]) for r, c in zip(results, covered)}


# ---------------------------------------------------------------------------------------------- step 2


def _signals(
    store: Store, view: GraphView, query: str, scope: Filters, vectors: VectorInput | None, config: RecallConfig,
    asked_at: datetime | None = None,
) -> _Signals:
    k = config.anchor_top_k
    scoped = scope.category is not None or scope.source is not None
    bm25 = config.keyword == "bm25"
    tokens = [] if bm25 else sorted(token_set(query))
    entities = _query_entities(view, query)
    if config.source_entity:
        entities = sorted({*entities, *_query_sources(view, query)})
    posts = view.postings(tokens, entities)

    # Signal 1: keyword — coverage of the query's tokens, or BM25 of its stemmed terms; either score, BM25
    # divided by the best of this query, is also the rerank's keyword term.
    if bm25:
        term_posts = view.term_postings(list(dict.fromkeys(terms(query))), config.bm25_length_cap)
        keyword = _bm25(view, term_posts, scope)
        keyword_rank = _top_scores(view, keyword, k)
        term_nodes = [p[0] for p in term_posts]
    else:
        keyword = _shares(view, posts[: len(tokens)], scope)
        keyword_rank = _top(view, keyword, len(tokens), k)
        term_nodes = posts[: len(tokens)]

    # Signal 2: vector (calibrated cosine > 0.1), only with a query vector and stored vectors.
    cosines = None
    cosine_of = None
    vector_rank: list[str] = []
    if vectors is not None:
        in_scope = (lambda ids: view.in_scope(ids, scope)) if scoped else None
        if vectors.ann is not None:
            vector_rank, cosine_of = _ann_signal(view, vectors, vectors.ann, k, config, in_scope)
        else:
            raw = vectors.matrix @ vectors.query.astype(np.float32, copy=False)
            cosines = np.asarray(vectors.calibration(raw), dtype=np.float64)
            vector_rank = vector_ranking(vectors.ids, cosines, k, min_cos=config.vector_min_cos, in_scope=in_scope)
            cos_ext = np.append(cosines, 0.0)  # row -1 (no vector) reads the trailing 0

            def cosine_of(nodes: np.ndarray) -> np.ndarray:
                return cos_ext[view.vector_rows(nodes)]

    # Signal 3: recency, always.
    time_rank = store.latest_ids(limit=k, filters=scope)

    # Signal 4: entity — share of the query's entities an insight names (the same extractor as remember);
    # with `source_entity`, an insight whose source the query names counts as naming it.
    entity_posts = posts[len(tokens) :]
    if config.source_entity:
        entity_posts = [np.union1d(p, s) for p, s in zip(entity_posts, view.source_postings(entities))]
    entity = _shares(view, entity_posts, scope)
    entity_rank = _top(view, entity, len(entities), k)

    anchors = fuse(
        {VIA_KEYWORD: keyword_rank, VIA_VECTOR: vector_rank, VIA_TIME: time_rank, VIA_ENTITY: entity_rank},
        config.rrf_k,
    )
    similarity_range = None
    if config.similarity == "relative" and vector_rank and cosine_of is not None:
        # The nearest memory's cosine and the k-th nearest's (fewer than k above the threshold: the threshold).
        ends = cosine_of(view.intern([vector_rank[0], vector_rank[-1]]))
        floor = float(ends[1]) if len(vector_rank) >= k else config.vector_min_cos
        similarity_range = (floor, float(ends[0]))
    factors = {} if config.replies_asked_about and asks_what_you_said(query) else config.source_factor
    prefers = config.preference_factor if config.preference_factor != 1.0 and asks_for_help(query) else 1.0
    window = named_window(query, asked_at) if config.time_window_factor != 1.0 and asked_at is not None else None
    return _Signals(anchors, {"keyword": keyword, "entity": entity}, cosines, cosine_of, similarity_range, entities,
                    entity_posts, term_nodes, factors, prefers, window,
                    _reciprocal_ranks(view, vector_rank if config.vector_vote > 0 else [], config.rrf_k))


def _reciprocal_ranks(view: GraphView, ranking: list[str], rrf_k: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted nodes of `ranking`, (rrf_k + 1) / (rrf_k + 1 + rank) of each): 1 for the first, as RRF weighs."""
    nodes = view.intern(ranking) if ranking else np.zeros(0, dtype=np.int64)
    vote = (rrf_k + 1) / (rrf_k + 1 + np.arange(nodes.shape[0], dtype=np.float64))
    order = np.argsort(nodes, kind="stable")
    return nodes[order], vote[order]


def relative_similarity(cosine: np.ndarray, floor: float, best: float) -> np.ndarray:
    """The cosine on the scale of the query's own nearest memories: 1 at the nearest, 0 at the floor and
    below. A calibrated cosine's spread differs by model and query — a long message is close to most queries —
    so, like BM25 over the query's best, the term says how near a memory is compared with the nearest."""
    if best - floor <= 1e-9:  # no spread (float32 cosines differ by more): a tinier one would overflow the divide
        return (cosine >= best).astype(np.float64)
    return np.clip((cosine - floor) / (best - floor), 0.0, 1.0)


# Candidates asked of the ANN index per anchor slot (more when a scope rejects some).
ANN_CANDIDATES = 4


def _ann_signal(
    view: GraphView, vectors: VectorInput, ann: AnnSearch, k: int, config: RecallConfig,
    in_scope: Callable[[list[str]], Collection[str]] | None,
) -> tuple[list[str], Callable[[np.ndarray], np.ndarray]]:
    """The vector signal from an ANN index: its nearest candidates ranked as `vector_ranking` ranks the matrix,
    and a per-query memo of exact cosines by node for the beam bonus and the rerank."""
    q = vectors.query.astype(np.float32, copy=False)
    want = k * ANN_CANDIDATES
    while True:
        keys, raw = ann.search(q, want)
        found = ann.ids(keys)
        ids = [i for i in found if i is not None]
        cos = np.asarray(vectors.calibration(raw[[i is not None for i in found]]), dtype=np.float64)
        rank = vector_ranking(ids, cos, k, min_cos=config.vector_min_cos, in_scope=in_scope)
        if len(rank) >= k or len(keys) < want or (cos.size and cos.min() <= config.vector_min_cos):
            break
        want *= 4
    known = view.intern(ids)
    memo = np.full(max(view.size(), 1), np.nan, dtype=np.float64)
    memo[known] = cos

    def cosine_of(nodes: np.ndarray) -> np.ndarray:
        nonlocal memo
        if memo.shape[0] < view.size():
            memo = np.concatenate([memo, np.full(view.size() - memo.shape[0], np.nan)])
        out = memo[nodes]
        miss = np.unique(nodes[np.isnan(out)])
        if miss.size:
            fresh = ann.cosines([view.ids[n] for n in miss.tolist()], q)
            cal = np.asarray(vectors.calibration(np.nan_to_num(fresh)), dtype=np.float64)
            memo[miss] = np.where(np.isnan(fresh), 0.0, cal)  # no vector: 0, as row -1 reads in the matrix path
            out = memo[nodes]
        return out

    return rank, cosine_of


def _query_entities(view: GraphView, query: str) -> list[str]:
    """The query's entities, lower-cased and distinct (known-entity path case-insensitive)."""
    words = ASCII_WORD_RE.findall(query)
    candidates = [*words, *extract_entities(query)]
    known = view.known_entities(candidates) if candidates else set()
    return sorted({e.lower() for e in query_entities(query, known) if e})


def vector_text(store: Store, query: str, config: RecallConfig) -> str:
    """The text the query's vector is made of: with `vector_without_speakers`, the query without the names of
    who said things (and their "'s"). Those names are the entity signal's to score; in the vector they make a
    short line by that speaker ("Nate: see you later!") as near as what the query asks about. Unchanged when
    nothing else would be left."""
    if not config.vector_without_speakers:
        return query
    view = graph_view(store)
    with view.lock:
        view.sync()
        names = _query_sources(view, query)
    if not names:
        return query
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    left = " ".join(re.sub(rf"\b(?:{alternatives})(?:['’]s)?\b", " ", query, flags=re.IGNORECASE).split())
    return left if any(ch.isalnum() for ch in left) else query


def _query_sources(view: GraphView, query: str) -> list[str]:
    """The query's words (lower-case) that are the source of an active insight: who said it (a role such as
    "user" names no one)."""
    words = {w.lower() for w in [*ASCII_WORD_RE.findall(query), *extract_entities(query)]}
    names = sorted(w for w in words if w and w not in ROLE_SOURCES)
    return [n for n, hit in zip(names, view.source_postings(names)) if hit.size]


def _bm25(
    view: GraphView, postings: list[tuple[np.ndarray, np.ndarray]], scope: Filters
) -> tuple[np.ndarray, np.ndarray]:
    """(nodes in scope holding ≥ 1 of the terms, their BM25 over the terms / the best of them)."""
    if not postings:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    nodes, score = tally([p[0] for p in postings], [p[1] for p in postings])
    if scope.category is not None or scope.source is not None:
        keep = view.scope_mask(nodes, scope)
        nodes, score = nodes[keep], score[keep]
    top = float(score.max()) if score.size else 0.0
    return nodes, (score / top if top > 0 else np.zeros_like(score))


def _top_scores(view: GraphView, hits: tuple[np.ndarray, np.ndarray], k: int) -> list[str]:
    """Ids of the k best hits by score, then importance, newer, id."""
    nodes, score = hits
    if nodes.size == 0:
        return []
    if nodes.size > k:  # only what can make the cut is ordered on the full key
        cut = np.partition(score, nodes.size - k)[nodes.size - k]
        keep = score >= cut
        nodes, score = nodes[keep], score[keep]
    view.ensure_meta(nodes)
    rows = np.lexsort((view.id_rank(nodes), -view.created_key[nodes], -view.importance[nodes], -score))[:k]
    return [view.ids[n] for n in nodes[rows].tolist()]


def _shares(view: GraphView, postings: list[np.ndarray], scope: Filters) -> tuple[np.ndarray, np.ndarray]:
    """(nodes in scope holding ≥ 1 of the postings' keys, how many of them each holds / how many keys)."""
    if not postings:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    nodes, count = tally(postings)
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
    bonus = None
    cosine_of = sig.cosine_of
    if cosine_of is not None:
        lambda2 = config.lambda2

        def bonus(nodes: np.ndarray) -> np.ndarray:
            return lambda2 * np.maximum(0.0, cosine_of(nodes))

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
    found = _matched(sig, nodes)
    if cosine_of is not None:
        found["similarity"] = np.maximum(0.0, cosine_of(nodes))
    superseded = np.isin(nodes, view.superseded())
    score, signals = rerank_arrays(
        walked.scores,
        weights=config.weights(intent, cosine_of is not None),
        signals=found,
        superseded=superseded,
        superseded_factor=config.superseded_factor,
    )
    rows = _best_rows(view, nodes, score, limit)
    ids = view.ids
    labels = {a.id: a.via for a in sig.anchors}
    out = []
    for r in rows:
        node = int(nodes[r])
        code = int(walked.via_type[r])
        via = labels[ids[node]] if code < 0 else EDGE_TYPES[code]
        out.append(Scored(ids[node], float(score[r]), via, _row(signals, r), bool(superseded[r])))
    return out, int(nodes.shape[0])


def _run_flow(
    view: GraphView, sig: _Signals, intent: Intent, scope: Filters, limit: int, config: RecallConfig
) -> tuple[list[Scored], int]:
    """Anchors → relevance flow (`flow.py`) → rerank with the flow as the graph term."""
    if not sig.anchors:
        return [], 0
    assert config.flow is not None
    cosine_of = sig.cosine_of
    w = config.weights(intent, cosine_of is not None)
    # What flows is what an insight says about the query's words and meaning; an entity match (who said it,
    # which project it names) is shared by too many neighbours to pass on (measured: docs/recall.md).
    said = w["keyword"] + w["similarity"]

    def signals(nodes: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """(the signals of nodes by name but graph, the similarity's rerank term, relevance); relevance =
        keyword and similarity terms weighted, scaled to [0, 1]: what the flow passes on."""
        found = _matched(sig, nodes)
        sim = np.maximum(0.0, cosine_of(nodes)) if cosine_of is not None else np.zeros(nodes.shape[0])
        found["similarity"] = sim
        term = relative_similarity(sim, *sig.similarity_range) if sig.similarity_range is not None else sim
        if said <= 0:
            return found, term, np.zeros(nodes.shape[0])
        return found, term, (w["keyword"] * found["keyword"] + w["similarity"] * term) / said

    anchor_nodes = view.intern([a.id for a in sig.anchors])
    phi_by_type = config.phi(intent)
    phi = np.array([phi_by_type.get(t, 0.0) for t in EDGE_TYPES], dtype=np.float64)
    sub = np.array([config.flow.sub_type_factor.get(t, 1.0) for t in SUB_TYPES], dtype=np.float64)
    flowed = relevance_flow(
        anchor_nodes, signals(anchor_nodes)[2], _Scoped(view, scope), phi, sub,
        hops=config.flow.hops, decay=config.flow.decay, expand=config.flow.expand,
    )
    nodes = flowed.nodes
    found, term, _ = signals(nodes)
    found[GRAPH] = flowed.graph
    superseded = np.isin(nodes, view.superseded())
    score = combine(w, {**found, "similarity": term}, superseded, config.superseded_factor)
    if config.vector_vote > 0:
        score = score + config.vector_vote * _lookup(*sig.vector_vote, nodes)
    for prior in (source_factor(view, nodes, sig.source_factor),
                  preference_factor(view, nodes, sig.preference_factor),
                  window_factor(view, nodes, sig.window, config.time_window_factor)):
        if prior is not None:
            score = score * prior
    rows = _best_rows(view, nodes, score, limit)
    if config.update_margin > 0 and sig.term_nodes and len(rows) > 1:
        picked = nodes[rows]
        held = np.stack([np.isin(picked, t) for t in sig.term_nodes], axis=1)
        order = newer_first(list(range(len(rows))), score[rows], view.created_key[picked], held,
                            margin=config.update_margin)
        rows = [rows[i] for i in order]
    ids = view.ids
    labels = {a.id: a.via for a in sig.anchors}
    out = []
    for r in rows:
        node = int(nodes[r])
        id_ = ids[node]
        # Labelled with the edge it came over when the graph gave it more than its own match did.
        via = labels.get(id_, "")
        graph = w[GRAPH] * flowed.graph[r]
        if flowed.via_type[r] >= 0 and (not via or graph > score[r] - graph):
            via = EDGE_TYPES[int(flowed.via_type[r])]
        out.append(Scored(id_, float(score[r]), via, _row(found, r), bool(superseded[r])))
    return out, int(nodes.shape[0])


def _best_rows(view: GraphView, nodes: np.ndarray, score: np.ndarray, limit: int) -> list[int]:
    """Rows of the `limit` best candidates: score, importance, newer, id."""
    view.ensure_meta(nodes)
    ids = view.ids
    return top_arrays(
        score, lambda r: view.importance[nodes[r]], lambda r: (view.created[int(nodes[r])], ids[int(nodes[r])]),
        limit,
    )


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


def _matched(sig: _Signals, nodes: np.ndarray) -> dict[str, np.ndarray]:
    """The signals a node has only when it matches (`_Signals.matched`), of nodes, by name."""
    return {name: _lookup(*values, nodes) for name, values in sig.matched.items()}


def _row(signals: Mapping[str, np.ndarray], r: int) -> dict[str, float]:
    """Row r of every signal, in `SIGNALS` order (as `recall --verbose` shows them)."""
    return {n: float(signals[n][r]) for n in SIGNALS}


def _lookup(keys: np.ndarray, values: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """values of nodes in the sorted `keys` (0 for the others)."""
    if keys.size == 0:
        return np.zeros(nodes.shape[0], dtype=np.float64)
    at = np.minimum(np.searchsorted(keys, nodes), keys.size - 1)
    return np.where(keys[at] == nodes, values[at], 0.0)
