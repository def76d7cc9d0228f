"""benchmarks/fit.py, the one recipe for every benchmark: its splits (half of every benchmark per fold, and leave
one benchmark out), its grids, its objective and the `Fitted` set ↔ `RecallConfig` round trip, on plain data. The
fit itself runs on the full benchmarks, outside CI."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import fit as F
from benchmarks import lme
from benchmarks import locomo as L


def _conv(name: str, category: str = "x") -> L.Conversation:
    return L.Conversation(name, (), (L.Question("?", category, ("1",)),))


def _benchmarks() -> F.Benchmarks:
    types = ["a", "b", "a", "b", "a"]
    return {
        "LoCoMo": [_conv(f"conv-{i}") for i in range(6)],
        "BEAM": [_conv(f"100K-{i}") for i in range(1, 11)],
        "LongMemEval": [L.Conversation(f"q{i}", (), (lme.Ask("?", t, ("0:0",)),)) for i, t in enumerate(types)],
    }


def test_halves_hold_half_of_every_benchmark() -> None:
    a, b = F.halves(_benchmarks())
    assert [c.sample_id for c in a["LoCoMo"]] == ["conv-0", "conv-1", "conv-2"]
    assert [c.sample_id for c in b["LoCoMo"]] == ["conv-3", "conv-4", "conv-5"]
    assert [c.sample_id for c in a["BEAM"]] == ["100K-1", "100K-3", "100K-5", "100K-7", "100K-9"]
    assert [c.sample_id for c in b["BEAM"]] == ["100K-2", "100K-4", "100K-6", "100K-8", "100K-10"]
    # Alternately within each question type, by id: a = q0, q2, q4; b = q1, q3 → a takes q0, q4 and q1.
    assert [c.sample_id for c in a["LongMemEval"]] == ["q0", "q1", "q4"]
    assert [c.sample_id for c in b["LongMemEval"]] == ["q2", "q3"]


def test_splits_leave_each_benchmark_out_once() -> None:
    got = F.splits(_benchmarks())
    assert [name for name, _, _ in got] == [
        "within: A → B", "within: B → A", "leave out LoCoMo", "leave out BEAM", "leave out LongMemEval",
        "all (in sample)"]
    for name, train, test in got[2:5]:
        held = name.removeprefix("leave out ")
        assert list(test) == [held] and held not in train and len(train) == 2
    assert F.restrict(got[2][1], {"BEAM": [_conv("100K-2")]}) == {"BEAM": [_conv("100K-2")], "LongMemEval": []}


def test_grids_start_with_the_shipped_set() -> None:
    shipped = L.Fitted.shipped()
    assert (shipped.update_margin, shipped.hops) == (0.0, 1)
    cands = F.none_candidates({"update_margin": (0.0,), "hops": (2, 3)})
    assert cands[0] == shipped and len(cands) == 3
    assert [(c.update_margin, c.hops) for c in cands[1:]] == [(0.0, 2), (0.0, 3)]
    # A grid point equal to the shipped set is not scored twice.
    assert F.none_candidates({"update_margin": (0.0,), "hops": (1, 2)})[1:] == cands[1:2]
    nv = shipped.no_vectors
    (shared,) = F.vector_candidates(shipped, {"share": (0.2,)})
    assert shared.vectors == pytest.approx((nv[0] * 0.8, nv[1] * 0.8, 0.2, nv[3] * 0.8), abs=1e-4)
    assert shared.no_vectors == nv


def test_fitted_shipped_is_the_hybrid_recipe() -> None:
    from mnemon_core.recall.config import HYBRID
    from mnemon_core.recall.intent import Intent

    shipped = L.Fitted.shipped()
    config = shipped.config()
    for intent in Intent:
        for vectors in (True, False):
            assert config.weights(intent, vectors) == pytest.approx(HYBRID.weights(intent, vectors))
    assert config == HYBRID
    changed = L.Fitted(shipped.vectors, shipped.no_vectors, 0.5, 0.25, "cosine", 1.6, 0.0, 1).config()
    assert changed.flow.decay == 0.5 and changed.flow.hops == 1 and changed.source_factor == {"assistant": 0.25}
    assert changed.similarity == "cosine" and changed.preference_factor == 1.6 and changed.update_margin == 0.0


def test_objective_counts_each_benchmark_the_same() -> None:
    # LoCoMo: 10 questions, R@1 0.2, R@5 0.5, R@10 0.8; BEAM: 2 questions, all 1.0 → the mean of the two
    # benchmarks' mean of R@1, R@5, R@10, not of the 12 questions.
    by = {"LoCoMo": np.array([10, 0.2, 0.5, 0.8, 0.9]), "BEAM": np.array([2, 1.0, 1.0, 1.0, 1.0])}
    assert F.objective(by) == pytest.approx((0.5 + 1.0) / 2)
    rows = [("c", ["1", "2"], ("1",)), ("c", ["3"], ("1", "3"))]
    assert F.sums(rows).tolist() == [2, 1.5, 1.5, 1.5, 1.5]
    got = F.recall_by_benchmark(lambda c: F.sums(rows), {"LoCoMo": [_conv("a")], "BEAM": []})
    assert list(got) == ["LoCoMo"] and got["LoCoMo"].tolist() == [2, 0.75, 0.75, 0.75, 0.75]
