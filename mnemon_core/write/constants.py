"""The write pipeline's constants, named as the spec and reference §3 / Appendix B name them."""

MAX_CONTENT_BYTES = 8000
MAX_TAGS = 20
MAX_TAG_BYTES = 100
MAX_ENTITIES = 50
MAX_ENTITY_BYTES = 200
MAX_SOURCE_BYTES = 100  # the MCP face's limit (reference §8.3); the CLI keeps free text under it too
MAX_SESSION_BYTES = 200  # a remember session or draft session name (conversation edges)

# Diff (advisory label, reference §3.3)
DIFF_CANDIDATES = 5
DIFF_ADD_BELOW = 0.5
DIFF_NEGATION_AT = 0.7
DIFF_DUPLICATE_ABOVE = 0.9
DIFF_COSINE_GATE = 0.85
DIFF_COSINE_ONLY = 0.70
DIFF_EXTENSION_RATIO = 1.25
NEGATION_PHRASES = (
    "no longer", "don't", "doesn't", "never", "switched from", "instead of", "rather than", "replaced",
    "deprecated", "不再", "放弃", "替换", "取消",
)

# Temporal graph (spec 004 §4.1)
TEMPORAL_WINDOW_HOURS = 24
TEMPORAL_MAX_PROXIMITY = 10

# Entity graph (§4.2)
ENTITY_LINKS_PER_ENTITY = 5
ENTITY_MAX_EDGES = 50

# Causal graph (§4.3)
CAUSAL_MIN_OVERLAP = 0.15
CAUSAL_LOOKBACK = 10
CAUSAL_CANDIDATE_HOPS = 2
CAUSAL_CANDIDATE_MAX = 10

# Semantic graph (§4.4); thresholds are on the embedder's calibrated cosine
SEMANTIC_AUTO_LINK = 0.80
SEMANTIC_AUTO_MAX = 3
SEMANTIC_REVIEW = 0.40
SEMANTIC_REVIEW_MAX = 5
SEMANTIC_TOKEN_FALLBACK = 0.10
# Token-overlap candidates ranked before the cut: overlap scores tie often (2 of 3 tokens), and the ties at the
# cut go by content, not by the random ids, so two stores of one draft offer the same candidates.
SEMANTIC_TOKEN_POOL = 50
ANN_COSINE_TOP = 20  # neighbours the write path asks a store's ANN index for (it uses at most the best 5)
