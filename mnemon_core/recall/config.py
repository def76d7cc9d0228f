"""Recall as data: a `RecallConfig` whose defaults are the spec's constants, and the named recipes.

- `SPEC`: the documents' formulas exactly (coverage keyword score, additive beam-search graph score, per-intent
  rerank table, confidence from the score alone, WHY order over the whole list).
- `HYBRID`, the default: BM25 keyword score, relevance that flows over the graph (`flow.py`), who said it as an
  entity, one fitted weight set, confidence as coverage of the query, WHY order within chains of stated causal
  links. Each departure and the measurement behind it: docs/recall.md.

A variant (a wider beam, other rerank weights) is one changed value, so recipes can be compared side by side
(`benchmarks/`), and every step takes the numbers it needs from here rather than from globals.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator

from ..errors import ValidationError
from ..models import EdgeType, Intent
from . import constants as C

__all__ = ["DEFAULT_RECIPE", "HYBRID", "RECIPES", "SPEC", "Flow", "RecallConfig", "RerankWeights", "Traversal", "recipe"]


class Traversal(BaseModel):
    """Beam-search budget of one intent."""

    model_config = ConfigDict(frozen=True)

    beam_width: int = Field(ge=1, description="nodes kept per depth level, per anchor")
    max_depth: int = Field(ge=0, description="levels expanded from each anchor")
    max_visited: int = Field(ge=1, description="nodes discovered per anchor (the anchor counts 1)")


class RerankWeights(RootModel[dict[str, float]]):
    """The rerank's weight of each signal, by name (`constants.SIGNALS`); a signal not named weighs 0."""

    model_config = ConfigDict(frozen=True)

    @field_validator("root")
    @classmethod
    def _known(cls, weights: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(weights) - set(C.SIGNALS))
        if unknown:
            raise ValueError(f"unknown rerank signal {unknown[0]!r}: use {', '.join(C.SIGNALS)}")
        return weights

    def effective(self, has_vectors: bool) -> dict[str, float]:
        """The weight of every signal, in `SIGNALS` order; without vectors the signals that need them drop out
        and the rest are rescaled to sum 1."""
        weights = {n: self.root.get(n, 0.0) for n in C.SIGNALS}
        if has_vectors:
            return weights
        kept = {n: w for n, w in weights.items() if n not in C.VECTOR_SIGNALS}
        total = sum(kept.values())
        return {n: kept[n] / total if n in kept and total > 0 else 0.0 for n in C.SIGNALS}


class Flow(BaseModel):
    """How far relevance flows from the anchors (`flow.py`), and what each kind of edge passes on."""

    model_config = ConfigDict(frozen=True)

    hops: int = Field(ge=1, description="edges a path may have")
    decay: float = Field(ge=0, le=1, description="factor per edge after the first")
    expand: int = Field(ge=1, description="nodes of each level past the anchors whose edges are followed")
    sub_type_factor: dict[str, float] = Field(description="factor of a temporal sub-type (1 when absent)")


def _traversal() -> dict[Intent, Traversal]:
    return {i: Traversal(beam_width=b, max_depth=d, max_visited=v) for i, (b, d, v) in C.TRAVERSAL.items()}


def _rerank() -> dict[Intent, RerankWeights]:
    return {i: RerankWeights(w) for i, w in C.RERANK_WEIGHTS.items()}


def _edge_weights() -> dict[Intent, dict[EdgeType, float]]:
    return {i: dict(w) for i, w in C.EDGE_WEIGHTS.items()}


class RecallConfig(BaseModel):
    """Every number smart recall uses. Defaults: spec §5.2 / 004 §4.5 / reference §4."""

    model_config = ConfigDict(frozen=True)

    anchor_top_k: int = Field(default=C.ANCHOR_TOP_K, ge=1, description="anchors per signal")
    rrf_k: int = Field(default=C.RRF_K, ge=0)
    vector_min_cos: float = Field(default=C.VECTOR_MIN_COS, description="vector anchors need a cosine above this")
    lambda1: float = Field(default=C.LAMBDA1, description="weight of φ(edge type) × edge weight per hop")
    lambda2: float = Field(default=C.LAMBDA2, description="weight of the neighbour's cosine with the query")
    edge_weights: dict[Intent, dict[EdgeType, float]] = Field(default_factory=_edge_weights)
    traversal: dict[Intent, Traversal] = Field(default_factory=_traversal)
    rerank_weights: dict[Intent, RerankWeights] = Field(default_factory=_rerank)
    rerank_weights_no_vectors: dict[Intent, RerankWeights] | None = Field(
        default=None, description="weights without vectors; None: the others with similarity dropped, rescaled"
    )
    superseded_factor: float = Field(default=C.SUPERSEDED_FACTOR)
    source_factor: dict[str, float] = Field(
        default_factory=dict, description="score × this for an insight whose (lower-case) source is the key (prior.py)"
    )
    replies_asked_about: bool = Field(
        default=False, description="a query asking what its addressee said earlier (\"how did you recommend …\") "
        "lifts source_factor: those replies are what it is after (prior.py)"
    )
    preference_factor: float = Field(
        default=1.0, gt=0, description="score × this for an insight that states a preference when the query asks "
        "for help or advice (prior.py); 1: off"
    )
    time_window_factor: float = Field(
        default=1.0, gt=0, description="score × this for an insight created within the time the query names "
        "(\"last Saturday\", \"a week ago\", \"in the past month\"), read against when it is asked (when.py); 1: off"
    )
    update_margin: float = Field(
        default=0.0, ge=0, le=1, description="a newer result about the same query terms goes ahead of an older one "
        "whose score it is within this share of (updates.py); 0: off"
    )
    # What the recipes differ in (the defaults are the spec's).
    keyword: Literal["coverage", "bm25"] = Field(
        default="coverage", description="coverage: share of the query's tokens; bm25: BM25 over stemmed terms"
    )
    bm25_length_cap: float | None = Field(
        default=None, gt=0, description="BM25 counts a memory longer than this many average lengths as that long "
        "(a long memory holding the query's rare words is not ranked below short ones sharing a common word for "
        "its length alone); None: FTS5's bm25(), the whole length"
    )
    graph: Literal["beam", "flow"] = Field(
        default="beam", description="beam: the spec's additive beam-search score; flow: relevance from neighbours"
    )
    flow: Flow | None = Field(default=None, description="the flow's reach (graph = flow)")
    similarity: Literal["cosine", "relative"] = Field(
        default="cosine", description="the rerank's similarity term — cosine: the calibrated cosine; relative: "
        "the cosine between the query's nearest memory (1) and its anchor_top_k-th nearest (0), as BM25 is "
        "relative to the query's best (pipeline.py)"
    )
    vector_vote: float = Field(
        default=0.0, ge=0, description="score + this × the memory's reciprocal rank in the vector ranking, "
        "(rrf_k + 1) / (rrf_k + 1 + rank), 1 for the nearest: the dense ranking's own vote, as RRF fuses it, beside "
        "the similarity term of the rerank (graph = flow, with vectors); 0: off"
    )
    source_entity: bool = Field(default=False, description="an insight's source counts as one of its entities")
    vector_without_speakers: bool = Field(
        default=False, description="the query's vector is made of the query without the names of who said things "
        "(the entity signal scores those; pipeline.vector_text)"
    )
    confidence: Literal["score", "evidence"] = Field(
        default="score", description="score: from the rounded score; evidence: how much of the query's terms "
        "and entities a result covers (evidence.py), with `no_match` when every result is low"
    )
    why_order: Literal["all", "chains"] = Field(
        default="all", description="all: Kahn's order over the whole list, every causal edge; chains: only within "
        "chains of the causal edges someone stated"
    )

    def weights(self, intent: Intent, has_vectors: bool) -> dict[str, float]:
        """The rerank's weight of every signal for this intent, by name in `SIGNALS` order."""
        if not has_vectors and self.rerank_weights_no_vectors is not None:
            return self.rerank_weights_no_vectors[intent].effective(True)
        return self.rerank_weights[intent].effective(has_vectors)

    def phi(self, intent: Intent) -> dict[str, float]:
        """φ of every edge type (plain strings, 0 for types without a weight, e.g. supersedes)."""
        weights = self.edge_weights.get(intent, {})
        return {str(t): float(weights.get(t, 0.0)) for t in EdgeType}


SPEC = RecallConfig()


def _all_intents(weights: dict[str, float]) -> dict[Intent, RerankWeights]:
    return dict.fromkeys(Intent, RerankWeights(weights))


HYBRID = RecallConfig(
    anchor_top_k=C.HYBRID_ANCHOR_TOP_K,
    keyword="bm25",
    graph="flow",
    flow=Flow(hops=C.FLOW_HOPS, decay=C.FLOW_DECAY, expand=C.FLOW_EXPAND, sub_type_factor=dict(C.FLOW_SUB_TYPE)),
    edge_weights={i: dict(w) for i, w in C.FLOW_EDGE_WEIGHTS.items()},
    rerank_weights=_all_intents(C.HYBRID_WEIGHTS),
    rerank_weights_no_vectors=_all_intents(C.HYBRID_WEIGHTS_NO_VECTORS),
    similarity="relative",
    source_entity=True,
    vector_without_speakers=True,
    source_factor=dict(C.REPLY_SOURCE_FACTOR),
    replies_asked_about=True,
    time_window_factor=C.TIME_WINDOW_FACTOR,
    confidence="evidence",
    why_order="chains",
)

RECIPES: dict[str, RecallConfig] = {"hybrid": HYBRID, "spec": SPEC}
DEFAULT_RECIPE = "hybrid"


def recipe(name: str | None) -> RecallConfig:
    """The recipe called `name` (None: the default)."""
    key = DEFAULT_RECIPE if name is None else str(name).strip().lower()
    if key not in RECIPES:
        raise ValidationError(f"unknown recipe {name!r}: use {' or '.join(RECIPES)}", field="recipe")
    return RECIPES[key]
