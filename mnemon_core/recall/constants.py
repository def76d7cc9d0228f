"""The read pipeline's constants, named as spec §5.2, spec 004 §4.5 and reference §4 / Appendix B name them."""

from __future__ import annotations

from ..models import EdgeType, Intent

# Step 2: anchors (reference §4.3)
ANCHOR_TOP_K = 20  # per signal
RRF_K = 60  # rank r (0-based) contributes 1 / (RRF_K + r + 1)
VECTOR_MIN_COS = 0.1  # a vector anchor needs calibrated cosine > this

# Step 3: beam search (reference §4.4): neighbour = current + λ1·φ(type)·weight + λ2·max(0, cos)
LAMBDA1 = 1.0
LAMBDA2 = 0.4

# φ per intent (spec 004 §4.5, reference §4.2); `supersedes` has no entry ⇒ 0.
EDGE_WEIGHTS: dict[Intent, dict[EdgeType, float]] = {
    Intent.WHY: {EdgeType.causal: 0.70, EdgeType.temporal: 0.20, EdgeType.entity: 0.05, EdgeType.semantic: 0.05},
    Intent.WHEN: {EdgeType.causal: 0.15, EdgeType.temporal: 0.65, EdgeType.entity: 0.10, EdgeType.semantic: 0.10},
    Intent.ENTITY: {EdgeType.causal: 0.10, EdgeType.temporal: 0.05, EdgeType.entity: 0.55, EdgeType.semantic: 0.30},
    Intent.GENERAL: {
        EdgeType.causal: 0.25, EdgeType.temporal: 0.25, EdgeType.entity: 0.25, EdgeType.semantic: 0.25,
    },
}

# (beam width, max depth, max visited) per intent (spec §5.2 Step 3).
TRAVERSAL: dict[Intent, tuple[int, int, int]] = {
    Intent.WHY: (15, 5, 500),
    Intent.WHEN: (10, 5, 400),
    Intent.ENTITY: (10, 4, 400),
    Intent.GENERAL: (10, 4, 500),
}

# Step 4: the rerank signals by name, in the spec's order (that of `recall --verbose`'s `signals`); a weight table
# names the signals it weighs (one not named weighs 0). The similarity signal needs vectors: without them it
# drops out and the other weights are renormalised to sum to 1 (spec §5.2 Step 4).
SIGNALS = ("keyword", "entity", "similarity", "graph")
VECTOR_SIGNALS = frozenset({"similarity"})
RERANK_WEIGHTS: dict[Intent, dict[str, float]] = {
    Intent.WHY: {"keyword": 0.10, "entity": 0.10, "similarity": 0.30, "graph": 0.50},
    Intent.WHEN: {"keyword": 0.15, "entity": 0.15, "similarity": 0.30, "graph": 0.40},
    Intent.ENTITY: {"keyword": 0.20, "entity": 0.40, "similarity": 0.20, "graph": 0.20},
    Intent.GENERAL: {"keyword": 0.25, "entity": 0.25, "similarity": 0.25, "graph": 0.25},
}
SUPERSEDED_FACTOR = 0.25  # [L] score × this for any target of a `supersedes` edge

# ---- the `hybrid` recipe (docs/recall.md): the departures from the spec and the values fitted for them

# Flow (flow.py): relevance reaches a node over at most FLOW_HOPS edges; every edge after the first multiplies
# it by FLOW_DECAY; past the anchors, the edges of the FLOW_EXPAND best nodes of a level are followed. One hop:
# chosen in every split of the three-benchmark fit (benchmarks/fit.py; RESULTS.md, "One recipe for three
# benchmarks"); two hops (the value before) ranked neighbours of neighbours above the matches themselves.
FLOW_HOPS = 1
FLOW_DECAY = 0.9
FLOW_EXPAND = 60
# A temporal edge passes on its weight × φ × this factor of its sub-type (1 when absent): a proximity link
# ("within a day") says less than a conversation step or the source's backbone.
FLOW_SUB_TYPE: dict[str, float] = {"proximity": 0.3}
# φ of the flow per intent: the spec's φ (EDGE_WEIGHTS) divided by the intent's largest (the type the intent
# cares most about passes everything on), except temporal, which is 1 for every intent (the order of a
# conversation is the context of every kind of question), and semantic, times FLOW_SEMANTIC (an auto-link says
# "similar", which the similarity term already scores; passed on at full strength it costs R@10).
FLOW_SEMANTIC = 0.3
FLOW_EDGE_WEIGHTS: dict[Intent, dict[EdgeType, float]] = {
    i: {
        **{t: round(v / max(w.values()), 4) for t, v in w.items()},
        EdgeType.temporal: 1.0,
        EdgeType.semantic: round(FLOW_SEMANTIC * w[EdgeType.semantic] / max(w.values()), 4),
    }
    for i, w in EDGE_WEIGHTS.items()
}
# Sources that are roles, not someone: the defaults of remember, import and the faces. A query saying "the user"
# names no one in particular, so these never count as the query's entities (`source_entity`).
ROLE_SOURCES = frozenset({"user", "assistant", "agent", "system", "import", "chat-export"})
# Who said it (prior.py): an assistant's reply in an imported chat restates what the user said at length; its
# score is multiplied by this (chosen by cross-validation over LoCoMo and BEAM: benchmarks/RESULTS.md, "BEAM").
REPLY_SOURCE_FACTOR: dict[str, float] = {"assistant": 0.6}
# A stated preference answers a request (prior.py): for a query asking for help or advice, the score of an insight
# in the preference category or holding one of these stemmed words (prefer, preferred, preference, rather,
# favourite) is multiplied by PREFERENCE_FACTOR when `RecallConfig.preference_factor` is set to it. Off in the
# `hybrid` recipe: it helped BEAM only, where it was fitted; fitted without BEAM (LoCoMo and LongMemEval) the
# factor is 1 (benchmarks/fit.py; RESULTS.md, "One recipe for three benchmarks").
PREFERENCE_CATEGORY = "preference"
PREFERENCE_TERMS = ("prefer", "rather", "favorit", "favourit")
PREFERENCE_FACTOR = 1.3
# The time a query names (when.py): "last Saturday", "a week ago", "in the past month", read against when it is
# asked; an insight created inside that window has its score multiplied by this.
TIME_WINDOW_FACTOR = 1.5
# Knowledge updates (updates.py): a newer result goes ahead of an older one when it scores at least
# (1 - UPDATE_MARGIN) of it and the two hold mostly the same query terms (Jaccard >= UPDATE_MIN_OVERLAP), when
# `RecallConfig.update_margin` is set to it. Off in the `hybrid` recipe: it put the newer of two near-ties first
# far more often than it found an update, and cost R@1 on all three benchmarks (LoCoMo 0.385 → 0.361, BEAM
# 0.347 → 0.318, LongMemEval 0.341 → 0.321); every split of the fit chose margin 0 (RESULTS.md, "One recipe for
# three benchmarks").
UPDATE_MARGIN = 0.1
UPDATE_MIN_OVERLAP = 0.5
# Anchors per signal: more than the spec's 20, since the flow ranks their neighbourhood too.
HYBRID_ANCHOR_TOP_K = 100
# Rerank weights by signal, the same for every intent. Without vectors: fitted by
# two-fold cross-validation on the LoCoMo dev conversations; with vectors: the same weights × (1 - 0.25) and 0.25
# on similarity (the `relative` term: RecallConfig.similarity), the share and the term chosen by cross-validation
# over LoCoMo and BEAM (benchmarks/fit.py; RESULTS.md, "BEAM").
HYBRID_WEIGHTS_NO_VECTORS = {"keyword": 0.4459, "entity": 0.2508, "similarity": 0.0, "graph": 0.3033}
HYBRID_WEIGHTS = {"keyword": 0.3344, "entity": 0.1881, "similarity": 0.25, "graph": 0.2275}
# Evidence confidence (evidence.py): the weighted share of the query's terms and entities a result holds.
# At least this share is "high", at least the medium share (or a calibrated cosine of at least
# CONFIDENCE_MIN_SIMILARITY: a paraphrase) "medium", anything less "low", whatever the score.
CONFIDENCE_HIGH_COVERAGE = 0.6
CONFIDENCE_MEDIUM_COVERAGE = 0.3
CONFIDENCE_MIN_SIMILARITY = 0.5
# Stemmed query terms that say what is asked, not about what: never a key of the coverage. (what, which, who,
# how, when and where are stopwords already.)
QUESTION_TERMS = frozenset({"whi", "whose", "whom", "为什", "什么", "為什", "什麼", "為甚", "甚麼"})

# Output (reference §4.5)
CONFIDENCE_LOW = 0.25  # rounded score < this → "low"
CONFIDENCE_HIGH = 0.6  # rounded score < this → "medium", else "high"
SCORE_DECIMALS = 3
EXCERPT_CHARS = 240  # [L] --brief
SPARSE_HINT = "sparse_results"
DETAIL_COMMAND = "mnemon show <id>"
RECALL_LIMIT = 10

# What the agent reads within a token budget (`recall --max-tokens N`, budget.py), in tokens of e5's tokenizer.
MAX_TOKENS_MIN = 150  # the envelope (~30 tokens), one memory's (its id, confidence: ~45) and a passage worth reading
MAX_TOKENS_MAX = 100_000
PASSAGE_TOKENS = 128  # a memory longer than this (or than a PASSAGE_SHARE-th of the budget) is shown as a passage
PASSAGE_SHARE = 10
MIN_PASSAGE_TOKENS = 32  # the last memory is shown as a shorter passage only when at least this much is left
ELLIPSIS = "…"  # where a passage was cut from its memory

# Anchor labels (`via` of an anchor); a node reached by the beam is labelled with the edge type instead.
VIA_KEYWORD = "keyword"
VIA_VECTOR = "vector"
VIA_TIME = "time"
VIA_ENTITY = "entity"
VIA_HYBRID = "hybrid"
VIA_CAUSAL = "causal"  # a WHY result that is the cause or effect of one that covers the query (evidence.py)
