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

# The import's coarse quantizer (`write/ivf.py`): an inverted file over k-means centroids that answers the
# batch's "stored insights ≥ floor" from a few lists instead of the product with every stored vector. Chosen by
# measurement (`benchmarks/ivf_import.py`, RESULTS.md "Import with vectors: an inverted file").
# Below this many stored vectors the exact product is cheap beside the rest of an insight's import (~1 ms): at
# 10k rows 71 ms per 500-insight batch (0.14 ms an insight), at 20k 171 ms, at 50k 356 ms, against 14 / 22 / 36 ms
# through the lists (measured, `ivf_import.py recall`, a loaded core); every small store keeps exact answers.
IVF_MIN_ROWS = 20_000
# Lists ≈ IVF_LISTS_PER_ROOT × √N: a search costs L centroid products + nprobe × N / L rows, least near √(nprobe·N)
# = 4√N; 2√N keeps the build (N × L) and the per-list calls fewer. At 300k (synthetic, no near margin) 2√N lists
# found more at a given nprobe than √N (0.998 against 0.995 at nprobe 16) for the same CPU per batch.
IVF_LISTS_PER_ROOT = 2.0
IVF_MAX_LISTS = 4096
# Lists scanned per search: the import only wants cosines ≥ 0.80 (calibrated), whose neighbours share a list or
# sit in the next few. Without the near margin below, at 1M (2,000 lists) nprobe 8 found 0.991 of the exact
# path's rows ≥ floor (0.978 of those under 0.85), 16 found 0.9985 (0.996): 16 for ≥ 0.99 with room.
IVF_NPROBE = 16
# Besides the nprobe best, a search probes every list whose centroid is within 2√(2 − 2·this) of its best one:
# that provably holds every stored row at this cosine or closer (a near-duplicate, a restatement), whatever the
# clusters look like; on the synthetic store it is ~8 lists within the margin (0.09), inside the nprobe best.
IVF_NEAR_COSINE = 0.999
# k-means: a fixed seed (two imports of one draft into one store find the same neighbours), a few Lloyd
# iterations (6, not tuned) on a sample of IVF_SAMPLE_PER_LIST rows per centroid (faiss asks for 39 at least).
IVF_SEED = 20261206
IVF_ITERATIONS = 6
IVF_SAMPLE_PER_LIST = 40
# Retrained (more lists, fresh centroids) once the store has grown by this factor since the last training, so a
# 1M import started on an empty store does not search 1M rows through the 283 lists trained at 20k.
IVF_REGROW = 2.0
# Built only when the import's vectors still to write repay the build: training and assignment cost about
# (L + iterations × sample per list) products with every stored vector, an exact insight one. The estimate is
# above the measured build (20k rows: 0.32 CPU s, the products of ~940 insights; estimated 1,244), so no margin.
IVF_PAYBACK = 1.0
