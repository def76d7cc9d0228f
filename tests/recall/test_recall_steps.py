"""Recall steps on plain data (spec §5.2, reference §4.3-4.5): RRF, anchor labels, beam search, rerank, the WHY
order and the output helpers — and the array engine held to the reference implementation (the tests' oracle,
`reference_engine.py`) on random graphs."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticValidationError

from mnemon_core.graph import Edges
from mnemon_core.models import Intent
from mnemon_core.recall import output
from mnemon_core.recall.anchors import Anchor, fuse, rrf, top_ranked, vector_ranking
from mnemon_core.recall.config import SPEC, RecallConfig, RerankWeights
from mnemon_core.recall.constants import EDGE_WEIGHTS, RERANK_WEIGHTS, SIGNALS, TRAVERSAL
from mnemon_core.recall.rerank import Scored, top_arrays, why_order
from mnemon_core.recall.results import confidence, excerpt, round_score
from mnemon_core.recall.traverse import beam_search_arrays
from reference_engine import beam_search, graph_scores, rank, rerank

# ---------------------------------------------------------------- RRF and anchors


def test_rrf_sums_one_over_k_plus_rank_plus_one():
    scores = rrf([["a", "b", "c"], ["c", "a"], ["d"]], k=60)
    assert scores == {
        "a": 1 / 61 + 1 / 62,
        "b": 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 61,
    }


def test_rrf_counts_an_id_once_per_list():
    assert rrf([["a", "a", "b"]], k=60) == {"a": 1 / 61, "b": 1 / 63}


def test_fuse_normalises_to_the_top_anchor_and_labels_via():
    anchors = fuse({"keyword": ["a", "b"], "vector": ["b"], "time": ["c", "a"], "entity": ["e"]})
    top = 1 / 61 + 1 / 62  # b: keyword rank 1 + vector rank 0; a: keyword rank 0 + time rank 1
    assert [a.id for a in anchors] == ["a", "b", "c", "e"]  # a and b tie at the top: id decides
    assert anchors[0] == Anchor("a", 1.0, "hybrid")
    assert anchors[1] == Anchor("b", 1.0, "hybrid")
    assert anchors[2] == Anchor("c", (1 / 61) / top, "time")
    assert anchors[3] == Anchor("e", (1 / 61) / top, "entity")
    assert fuse({"keyword": ["x"]}) == [Anchor("x", 1.0, "keyword")]
    assert fuse({"keyword": [], "time": []}) == []


def test_vector_ranking_keeps_cosines_above_the_floor_best_first():
    ids = ["a", "b", "c", "d", "e"]
    cos = np.array([0.1, 0.5, 0.3, 0.5, 0.11])
    assert vector_ranking(ids, cos, 3) == ["b", "d", "c"]  # 0.5 tie → id; 0.1 itself is not above 0.1
    assert vector_ranking(ids, cos, 10) == ["b", "d", "c", "e"]
    assert vector_ranking(ids, cos, 2, in_scope=lambda xs: {"d", "e"}) == ["d", "e"]


def test_vector_ranking_scope_search_widens_past_rejected_rows():
    ids = [f"n{i:03d}" for i in range(200)]
    cos = np.linspace(0.9, 0.2, 200)
    assert vector_ranking(ids, cos, 2, in_scope=lambda xs: {"n150", "n199"} & set(xs)) == ["n150", "n199"]


def test_top_ranked_by_count_then_importance_newer_id():
    ids = ["a", "b", "c", "d", "e"]  # id_rank = position
    count = np.array([1, 2, 1, 1, 1])
    importance = np.array([3, 1, 5, 3, 3])
    created = np.array([100, 100, 100, 200, 100])  # epoch seconds: d is the newest
    order = top_ranked(count, importance, created, np.arange(5))
    assert [ids[r] for r in order] == ["b", "c", "d", "a", "e"]
    assert [ids[r] for r in top_ranked(count, importance, created, np.arange(5), top_k=2)] == ["b", "c"]
    assert top_ranked(count[:0], importance[:0], created[:0], np.arange(0)).size == 0


# ---------------------------------------------------------------- beam search (reference)


def graph_of(edges: list[tuple[str, str, str, float]]):
    """A neighbour function over undirected-looking edge lists (both directions, as the store returns them)."""
    adj: dict[str, dict[tuple[str, str], float]] = {}
    for a, b, t, w in edges:
        for x, y in ((a, b), (b, a)):
            key = (y, t)
            adj.setdefault(x, {})[key] = max(w, adj.get(x, {}).get(key, 0.0))

    def neighbours(ids):
        return {i: sorted((o, t, w) for (o, t), w in adj.get(i, {}).items()) for i in ids}

    return neighbours


def test_beam_scores_add_lambda1_phi_weight_per_hop():
    phi = SPEC.phi(Intent.WHY)
    n = graph_of([("a", "b", "causal", 0.5), ("b", "c", "temporal", 1.0)])
    out = beam_search([Anchor("a", 1.0, "keyword")], n, phi, beam_width=15, max_depth=2, max_visited=500)
    assert out.scores["b"] == 1.0 + 0.7 * 0.5  # hop 1
    assert out.scores["c"] == 1.35 + 0.2 * 1.0  # hop 2
    # Scores add up along a path, so stepping back from b re-reaches the anchor higher (1.35 + 0.35 = 1.7 >
    # 1.0): its best score rises and its label becomes the edge type.
    assert out.scores["a"] == 1.35 + 0.7 * 0.5
    assert out.via == {"a": "causal", "b": "causal", "c": "temporal"}
    deeper = beam_search([Anchor("a", 1.0, "keyword")], n, phi, beam_width=15, max_depth=3, max_visited=500)
    assert deeper.scores["b"] == 1.55 + 0.2  # c → b beats b's first score


def test_beam_cosine_term_is_lambda2_times_positive_cosine():
    phi = SPEC.phi(Intent.GENERAL)
    n = graph_of([("a", "b", "semantic", 0.8), ("a", "c", "semantic", 0.8)])
    cos = {"b": 0.5, "c": -0.4}
    out = beam_search([Anchor("a", 1.0, "time")], n, phi, beam_width=10, max_depth=1, max_visited=500,
                      cosine=lambda i: cos.get(i, 0.0))
    assert out.scores["b"] == pytest.approx(1.0 + 0.25 * 0.8 + 0.4 * 0.5)
    assert out.scores["c"] == pytest.approx(1.0 + 0.25 * 0.8)


def test_beam_respects_depth_width_and_visit_budget():
    # a star: the anchor links to 30 leaves; each leaf links to its own child.
    edges = [("hub", f"l{i:02d}", "entity", 1.0) for i in range(30)]
    edges += [(f"l{i:02d}", f"c{i:02d}", "entity", 1.0) for i in range(30)]
    n = graph_of(edges)
    phi = SPEC.phi(Intent.ENTITY)
    one = beam_search([Anchor("hub", 1.0, "keyword")], n, phi, beam_width=10, max_depth=1, max_visited=400)
    assert len(one.scores) == 31  # depth 1: only the leaves
    two = beam_search([Anchor("hub", 1.0, "keyword")], n, phi, beam_width=10, max_depth=2, max_visited=400)
    # depth 2: only the 10 best leaves (ties → id: l00..l09) are expanded
    assert sorted(k for k in two.scores if k.startswith("c")) == [f"c{i:02d}" for i in range(10)]
    budget = beam_search([Anchor("hub", 1.0, "keyword")], n, phi, beam_width=10, max_depth=2, max_visited=5)
    assert sorted(budget.scores) == ["hub", "l00", "l01", "l02", "l03"]  # the anchor counts 1


def test_beam_never_leaves_the_scope_the_neighbour_function_allows():
    base = graph_of([("a", "x", "causal", 1.0), ("x", "b", "causal", 1.0)])

    def scoped(ids):
        return {i: [e for e in base([i])[i] if e[0] != "x"] for i in ids}

    out = beam_search([Anchor("a", 1.0, "keyword")], scoped, SPEC.phi(Intent.WHY), beam_width=15, max_depth=5,
                      max_visited=500)
    assert set(out.scores) == {"a"}


def test_spec_traversal_budgets_and_weights():
    assert TRAVERSAL == {Intent.WHY: (15, 5, 500), Intent.WHEN: (10, 5, 400), Intent.ENTITY: (10, 4, 400),
                         Intent.GENERAL: (10, 4, 500)}
    assert {i: [w[t] for t in ("causal", "temporal", "entity", "semantic")] for i, w in EDGE_WEIGHTS.items()} == {
        Intent.WHY: [0.70, 0.20, 0.05, 0.05], Intent.WHEN: [0.15, 0.65, 0.10, 0.10],
        Intent.ENTITY: [0.10, 0.05, 0.55, 0.30], Intent.GENERAL: [0.25, 0.25, 0.25, 0.25],
    }
    assert SPEC.phi(Intent.WHY)["supersedes"] == 0.0
    assert SIGNALS == ("keyword", "entity", "similarity", "graph")
    assert RERANK_WEIGHTS[Intent.WHY] == {"keyword": 0.10, "entity": 0.10, "similarity": 0.30, "graph": 0.50}
    assert RERANK_WEIGHTS[Intent.ENTITY] == {"keyword": 0.20, "entity": 0.40, "similarity": 0.20, "graph": 0.20}


# ---------------------------------------------------------------- rerank and WHY order


def test_rerank_weights_renormalise_without_vectors():
    w = RerankWeights({"graph": 0.50, "keyword": 0.10, "similarity": 0.30, "entity": 0.10})
    assert list(w.effective(True).items()) == [("keyword", 0.10), ("entity", 0.10), ("similarity", 0.30),
                                               ("graph", 0.50)]  # in SIGNALS order, whatever the table's
    assert list(w.effective(False).values()) == pytest.approx([0.10 / 0.7, 0.10 / 0.7, 0.0, 0.50 / 0.7])
    # A signal the table does not name weighs 0; a name that is no signal is refused, naming it.
    assert RerankWeights({"graph": 1.0}).effective(False) == {"keyword": 0.0, "entity": 0.0, "similarity": 0.0,
                                                              "graph": 1.0}
    with pytest.raises(PydanticValidationError, match="unknown rerank signal 'recency'"):
        RerankWeights({"recency": 0.5})


@given(st.dictionaries(st.sampled_from(SIGNALS), st.floats(0, 1)), st.text(min_size=1))
def test_rerank_weights_by_name_any_table(table: dict[str, float], name: str) -> None:
    """Any table of signal names: every signal weighed, in SIGNALS order; without vectors the similarity drops
    out and the rest sum to 1 (or all 0); a name that is no signal is refused whatever the table holds."""
    w = RerankWeights(table)
    assert list(w.effective(True)) == list(SIGNALS)
    assert w.effective(True) == {n: table.get(n, 0.0) for n in SIGNALS}
    without = w.effective(False)
    assert list(without) == list(SIGNALS) and without["similarity"] == 0.0
    kept = sum(v for n, v in table.items() if n != "similarity")
    assert sum(without.values()) == pytest.approx(1.0 if kept > 0 else 0.0)
    if name not in SIGNALS:
        with pytest.raises(PydanticValidationError, match="unknown rerank signal"):
            RerankWeights({**table, name: 0.5})


def test_graph_scores_min_max_and_all_zero_when_equal():
    assert graph_scores({"a": 1.0, "b": 2.0, "c": 1.5}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert graph_scores({"a": 0.7, "b": 0.7}) == {"a": 0.0, "b": 0.0}


def test_rerank_formula_and_supersede_demotion():
    out = {s.id: s for s in rerank(
        {"a": 1.0, "b": 3.0}, {"a": "keyword", "b": "causal"},
        weights={"keyword": 0.1, "entity": 0.1, "similarity": 0.3, "graph": 0.5},
        matched={"keyword": {"a": 0.5}, "entity": {"b": 1.0}}, similarity=lambda i: {"a": 0.8, "b": -0.2}[i],
        superseded={"b"},
    )}
    assert out["a"].score == pytest.approx(0.1 * 0.5 + 0.3 * 0.8)
    assert out["b"].score == pytest.approx((0.1 * 1.0 + 0.5 * 1.0) * 0.25)
    assert out["b"].superseded and not out["a"].superseded
    assert out["b"].signals["similarity"] == 0.0  # only a positive cosine counts


def test_rank_breaks_ties_by_importance_newer_then_id():
    s = [Scored(i, 0.5, "", _none(), False) for i in ("d", "c", "b", "a")] + [Scored("z", 0.9, "", _none(), False)]
    meta = {"a": (3, "2026-01-01T00:00:00Z"), "b": (3, "2026-03-01T00:00:00Z"), "c": (5, "2025-01-01T00:00:00Z"),
            "d": (3, "2026-01-01T00:00:00Z"), "z": (1, "2020-01-01T00:00:00Z")}
    assert [r.id for r in rank(s, meta)] == ["z", "c", "b", "a", "d"]
    assert [r.id for r in rank(s, meta, 2)] == ["z", "c"]
    # The array version (what recall runs) orders the same rows the same way.
    score = np.array([r.score for r in s])
    importance = np.array([meta[r.id][0] for r in s])
    for limit in (5, 2):
        rows = top_arrays(score, lambda rows: importance[rows], lambda r: (meta[s[r].id][1], s[r].id), limit)
        assert [s[r].id for r in rows] == [r.id for r in rank(s, meta, limit)]


def _none(**signals: float) -> dict[str, float]:
    """Every rerank signal 0 but those given."""
    return {n: signals.get(n, 0.0) for n in SIGNALS}


def _scored(*ids: str) -> list[Scored]:
    return [Scored(i, 1.0 - k / 10, "", _none(), False) for k, i in enumerate(ids)]


def test_why_order_puts_causes_first_ready_nodes_by_rank():
    results = _scored("effect", "x", "cause", "mid")
    edges = [("cause", "mid"), ("mid", "effect"), ("outside", "x")]
    assert [r.id for r in why_order(results, edges)] == ["x", "cause", "mid", "effect"]


def test_why_order_appends_cycles_in_rank_order():
    results = _scored("a", "b", "c", "d")
    edges = [("a", "b"), ("b", "a"), ("d", "c")]  # a⇄b is a cycle; d causes c
    assert [r.id for r in why_order(results, edges)] == ["d", "c", "a", "b"]


# ---------------------------------------------------------------- output helpers


def test_round_score_half_away_from_zero_and_confidence_from_the_rounded_score():
    assert round_score(0.0005) == 0.001
    assert round_score(0.0004) == 0.0
    assert round_score(0.92857) == 0.929
    assert round_score(-0.0005) == -0.001
    assert confidence(round_score(0.2496)) == "medium"  # 0.2496 rounds to 0.25
    assert confidence(0.249) == "low"
    assert confidence(0.599) == "medium"
    assert confidence(0.6) == "high"


def _hits(n: int, keyword: float = 0.5, similarity: float = 0.0) -> list[Scored]:
    return [Scored(f"i{k}", 0.5, "keyword", _none(keyword=keyword, similarity=similarity), False) for k in range(n)]


def test_hint_is_sparse_below_half_the_limit_integer_division():
    assert output.hint(_hits(0), 1) == "sparse_results"
    assert output.hint(_hits(4), 10) == "sparse_results"
    assert output.hint(_hits(5), 10) == ""
    assert output.hint(_hits(2), 5) == ""  # 5 // 2 = 2
    assert output.hint(_hits(1), 1) == ""


def test_the_hint_is_the_specs_for_every_recipe() -> None:
    assert output.hint(_hits(4, keyword=0.0), 10) == "sparse_results"  # 4 < 10 // 2, whether or not they matched
    assert output.hint(_hits(1, keyword=0.0), 10) == "sparse_results"
    assert output.hint(_hits(6, keyword=0.0), 10) == ""


def test_excerpt_collapses_whitespace_and_cuts_with_an_ellipsis():
    assert excerpt("a  b\n\tc", 240) == "a b c"
    assert excerpt("abcdefghij", 10) == "abcdefghij"
    assert excerpt("abcdefghijk", 10) == "abcdefghi…"
    assert excerpt("abcd efghijk", 6) == "abcd…"  # trailing space trimmed before the ellipsis
    assert excerpt("数据库备份每天运行", 4) == "数据库…"


# ---------------------------------------------------------------- the array engine = the reference


class PlainArrayGraph:
    """An `ArrayGraph` over a fixed random graph, for the engine equivalence test."""

    def __init__(self, ids: list[str], adj: dict[int, list[tuple[int, int, float]]], allowed: set[int] | None):
        self.ids = ids
        self.adj = adj
        self.allow = allowed
        nbr, etype, weight, start, deg = [], [], [], [], []
        for n in range(len(ids)):
            start.append(len(nbr))
            rows = sorted(adj.get(n, []), key=lambda r: (ids[r[0]], r[1]))
            deg.append(len(rows))
            for o, t, w in rows:
                nbr.append(o)
                etype.append(t)
                weight.append(w)
        self.flat = (np.array(start), np.array(deg), np.array(nbr, dtype=np.int64), np.array(etype, dtype=np.int64),
                     np.array(weight, dtype=np.float64))
        self.rank = np.argsort(np.argsort(np.array(ids)))

    def size(self) -> int:
        return len(self.ids)

    def edges(self, nodes: np.ndarray) -> Edges:
        start, deg, nbr, etype, weight = self.flat
        return Edges(start[nodes], deg[nodes], nbr, etype, weight)

    def allowed(self, nodes: np.ndarray) -> np.ndarray | None:
        if self.allow is None:
            return None
        return np.isin(nodes, list(self.allow))

    def id_rank(self, nodes: np.ndarray) -> np.ndarray:
        return self.rank[nodes]


TYPES = ("causal", "entity", "semantic", "supersedes", "temporal")  # codes in name order


@pytest.mark.parametrize("seed", range(60))
def test_array_engine_matches_the_reference_beam_search(seed: int):
    rng = random.Random(seed)
    n = rng.randint(5, 120)
    ids = [f"{rng.getrandbits(32):08x}-{i}" for i in range(n)]
    adj: dict[int, dict[tuple[int, int], float]] = {}
    for _ in range(rng.randint(0, n * 6)):
        a, b = rng.randrange(n), rng.randrange(n)
        if a == b:
            continue
        t = rng.randrange(len(TYPES))
        # Coarse weights make equal scores (ties) common, which is where engines could drift apart.
        w = rng.choice([1.0, 0.5, 0.25, round(rng.random(), 2)])
        for x, y in ((a, b), (b, a)):
            adj.setdefault(x, {})[(y, t)] = max(w, adj.get(x, {}).get((y, t), 0.0))
    lists = {k: [(o, t, w) for (o, t), w in v.items()] for k, v in adj.items()}
    allowed = None if seed % 3 else set(rng.sample(range(n), k=max(1, n * 2 // 3)))
    intent = list(Intent)[seed % 4]
    phi_map = SPEC.phi(intent)
    phi = np.array([phi_map[t] for t in TYPES])
    params = SPEC.traversal[intent]
    width = rng.choice([1, 2, 3, params.beam_width])
    visits = rng.choice([2, 5, 17, params.max_visited])
    cos = {i: rng.choice([0.0, -0.3, 0.2, 0.5, round(rng.random(), 3)]) for i in range(n)} if seed % 2 else None
    pool = [i for i in range(n) if allowed is None or i in allowed]
    anchors_idx = rng.sample(pool, k=min(len(pool), rng.randint(1, 12)))
    starts = [rng.choice([1.0, 0.5, round(rng.random(), 3)]) for _ in anchors_idx]
    anchors = [Anchor(ids[i], s, rng.choice(["keyword", "time", "hybrid"])) for i, s in zip(anchors_idx, starts)]

    def neighbours(xs):
        out = {}
        for x in xs:
            i = ids.index(x)
            rows = [(ids[o], TYPES[t], w) for o, t, w in lists.get(i, []) if allowed is None or o in allowed]
            out[x] = sorted(rows)
        return out

    ref = beam_search(
        anchors, neighbours, phi_map, beam_width=width, max_depth=params.max_depth, max_visited=visits,
        cosine=(lambda x: cos[ids.index(x)]) if cos is not None else None,
    )
    cos_arr = np.array([cos[i] for i in range(n)]) if cos is not None else None
    got = beam_search_arrays(
        np.array(anchors_idx), np.array(starts), PlainArrayGraph(ids, lists, allowed), phi,
        beam_width=width, max_depth=params.max_depth, max_visited=visits,
        bonus=(lambda nodes: 0.4 * np.maximum(0.0, cos_arr[nodes])) if cos_arr is not None else None,
    )
    labels = {a.id: a.via for a in anchors}
    got_scores = {ids[i]: s for i, s in zip(got.nodes.tolist(), got.scores.tolist())}
    got_via = {ids[i]: (labels[ids[i]] if t < 0 else TYPES[t]) for i, t in zip(got.nodes.tolist(), got.via_type.tolist())}
    assert got_scores == ref.scores  # exactly: same floats in the same order of operations
    assert got_via == ref.via


def test_recall_config_is_data():
    wide = RecallConfig(traversal={**SPEC.traversal})
    assert wide == SPEC
    assert SPEC.anchor_top_k == 20 and SPEC.rrf_k == 60 and SPEC.vector_min_cos == 0.1
    assert SPEC.lambda1 == 1.0 and SPEC.lambda2 == 0.4 and SPEC.superseded_factor == 0.25
