"""Recall as data: a `RecallConfig` whose defaults are the spec's constants, and the named recipe `SMART`.

A variant (a wider beam, other rerank weights) is one changed value, so recipes can be compared side by side
(`benchmarks/`), and every step takes the numbers it needs from here rather than from globals.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..models import EdgeType, Intent
from . import constants as C

__all__ = ["SMART", "RecallConfig", "RerankWeights", "Traversal"]


class Traversal(BaseModel):
    """Beam-search budget of one intent."""

    model_config = ConfigDict(frozen=True)

    beam_width: int = Field(ge=1, description="nodes kept per depth level, per anchor")
    max_depth: int = Field(ge=0, description="levels expanded from each anchor")
    max_visited: int = Field(ge=1, description="nodes discovered per anchor (the anchor counts 1)")


class RerankWeights(BaseModel):
    model_config = ConfigDict(frozen=True)

    keyword: float
    entity: float
    similarity: float
    graph: float

    def effective(self, has_vectors: bool) -> tuple[float, float, float, float]:
        """(kw, ent, sim, graph); without vectors similarity drops out and the rest are rescaled to sum 1."""
        if has_vectors:
            return self.keyword, self.entity, self.similarity, self.graph
        total = self.keyword + self.entity + self.graph
        if total <= 0:
            return 0.0, 0.0, 0.0, 0.0
        return self.keyword / total, self.entity / total, 0.0, self.graph / total


def _traversal() -> dict[Intent, Traversal]:
    return {i: Traversal(beam_width=b, max_depth=d, max_visited=v) for i, (b, d, v) in C.TRAVERSAL.items()}


def _rerank() -> dict[Intent, RerankWeights]:
    return {
        i: RerankWeights(keyword=k, entity=e, similarity=s, graph=g) for i, (k, e, s, g) in C.RERANK_WEIGHTS.items()
    }


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
    superseded_factor: float = Field(default=C.SUPERSEDED_FACTOR)

    def phi(self, intent: Intent) -> dict[str, float]:
        """φ of every edge type (plain strings, 0 for types without a weight, e.g. supersedes)."""
        weights = self.edge_weights.get(intent, {})
        return {str(t): float(weights.get(t, 0.0)) for t in EdgeType}


SMART = RecallConfig()
