"""The import's coarse quantizer (mnemon_core/write/ivf.py): with every list probed it is the exact product; a
near-duplicate is always found; rows added later are searched; `ImportQuantizer` switches on only above its
thresholds and follows the store's matrix; an import through it writes the exact path's semantic edges where the
neighbours are clear. Thresholds are lowered by parameter, on small stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemon_core import Memory
from mnemon_core.draft import load_draft
from mnemon_core.embed.base import IDENTITY, BaseEmbedder
from mnemon_core.models import Insight
from mnemon_core.store.sqlite import SQLiteStore
from mnemon_core.write import importer, ivf, similarity
from mnemon_core.write.constants import IVF_NEAR_COSINE, SEMANTIC_AUTO_LINK


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def _clustered(rng: np.random.Generator, n: int, dim: int, clusters: int, spread: float) -> np.ndarray:
    """Unit rows around `clusters` random directions (`spread`: the noise's share), as real embeddings bunch."""
    cent = _unit(rng.standard_normal((clusters, dim)))
    noise = _unit(rng.standard_normal((n, dim)))
    return _unit(np.sqrt(1 - spread**2) * cent[rng.integers(clusters, size=n)] + spread * noise)


def _at_cosine(rng: np.random.Generator, x: np.ndarray, cos: float) -> np.ndarray:
    """A unit vector at exactly `cos` from unit x (x plus an orthogonal direction)."""
    g = rng.standard_normal(x.shape[0]).astype(np.float64)
    g -= g.dot(x) * x
    g /= np.linalg.norm(g)
    return (cos * x.astype(np.float64) + np.sqrt(max(0.0, 1 - cos * cos)) * g).astype(np.float32)


def _pairs(q: np.ndarray, r: np.ndarray) -> set[tuple[int, int]]:
    return set(zip(q.tolist(), r.tolist()))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 200), dim=st.integers(2, 12), lists=st.integers(1, 16), queries=st.integers(1, 20),
       least=st.floats(-0.5, 0.95), seed=st.integers(0, 2**32 - 1))
def test_every_list_probed_is_the_exact_product(
    n: int, dim: int, lists: int, queries: int, least: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    mat = _unit(rng.standard_normal((n, dim)))
    q = _unit(rng.standard_normal((queries, dim)))
    idx = ivf.CoarseIndex("k", [f"r{i}" for i in range(n)], mat, lists=min(lists, n))
    qq, rr, vv = idx.search(q, least, nprobe=idx.lists)
    raw = mat @ q.T
    clear = np.abs(raw - least) > 1e-5  # a product summed in another order may round across the floor
    got = {p for p in _pairs(qq, rr) if clear[p[1], p[0]]}
    r, c = np.nonzero((raw >= least) & clear)
    assert got == _pairs(c, r)
    assert vv == pytest.approx(raw[rr, qq], abs=1e-5)  # the cosines themselves are exact
    assert len(_pairs(qq, rr)) == qq.size  # no row twice for one query


@settings(max_examples=60, deadline=None)
@given(n=st.integers(50, 400), clusters=st.integers(1, 30), spread=st.floats(0.2, 0.95),
       lists=st.integers(2, 40), cos=st.floats(IVF_NEAR_COSINE + 1e-4, 1.0), seed=st.integers(0, 2**32 - 1))
def test_a_near_duplicate_is_always_found(
    n: int, clusters: int, spread: float, lists: int, cos: float, seed: int
) -> None:
    """A stored vector and a slightly perturbed copy (cosine ≥ IVF_NEAR_COSINE): found with one list probed
    besides the near margin, on any clustering."""
    rng = np.random.default_rng(seed)
    mat = _clustered(rng, n, 24, clusters, spread)
    idx = ivf.CoarseIndex("k", [f"r{i}" for i in range(n)], mat, lists=min(lists, n))
    rows = rng.choice(n, size=min(n, 10), replace=False)
    q = np.stack([_at_cosine(rng, mat[r], cos) for r in rows])
    qq, rr, _ = idx.search(q, 0.99, nprobe=1)
    assert {(j, int(r)) for j, r in enumerate(rows)} <= _pairs(qq, rr)


def test_rows_added_later_are_searched() -> None:
    rng = np.random.default_rng(5)
    mat = _clustered(rng, 600, 32, 12, 0.6)
    idx = ivf.CoarseIndex("k", [f"r{i}" for i in range(400)], mat[:400], lists=20)
    idx.add([f"r{i}" for i in range(400, 600)], mat[400:])
    assert idx.size == 600
    qq, rr, _ = idx.search(mat[380:420], 0.999, nprobe=idx.lists)
    assert _pairs(qq, rr) == {(j, 380 + j) for j in range(40)}  # each finds itself, old rows and new
    assert [idx.ids[r] for r in rr[np.argsort(qq)]] == [f"r{i}" for i in range(380, 420)]


def test_training_is_deterministic() -> None:
    mat = _clustered(np.random.default_rng(2), 3000, 16, 20, 0.5)
    a, b = ivf.train(mat, 30), ivf.train(mat, 30)
    assert np.array_equal(a, b)
    assert a.shape == (30, 16) and np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_the_list_count_grows_with_the_store() -> None:
    assert ivf.lists_for(1) == 1
    assert ivf.lists_for(10_000) < ivf.lists_for(100_000) < ivf.lists_for(1_000_000)
    assert ivf.lists_for(10**12) == ivf.lists_for(10**11)  # capped


def test_the_quantizer_switches_on_above_its_thresholds() -> None:
    rng = np.random.default_rng(1)
    mat = _clustered(rng, 1000, 16, 10, 0.5)
    ids = [f"r{i}" for i in range(1000)]
    q = ivf.ImportQuantizer(min_rows=500, lists=10)
    assert q.for_batch("m", ids[:499], mat[:499], left=10**6) is None  # a small store: the exact product
    assert q.for_batch("m", ids[:600], mat[:600], left=1) is None  # too little left to repay the training
    assert q.builds == 0
    idx = q.for_batch("m", ids[:600], mat[:600], left=10**6)
    assert idx is not None and q.builds == 1 and idx.size == 600
    # The next batch: the rows the last one wrote are appended, not retrained.
    assert q.for_batch("m", ids[:800], mat[:800], left=10**6) is idx and idx.size == 800 and q.builds == 1
    # Grown IVF_REGROW-fold: retrained, when it still pays.
    big = _clustered(rng, 1300, 16, 10, 0.5)
    again = q.for_batch("m", [f"r{i}" for i in range(1300)], big, left=10**6)
    assert again is not idx and q.builds == 2 and again.size == 1300
    # A row removed under the import (another process): the lists are dropped and trained again.
    held = [f"r{i}" for i in range(1300) if i != 7]
    third = q.for_batch("m", held, np.delete(big, 7, axis=0), left=10**6)
    assert third is not again and q.builds == 3 and "r7" not in third.ids
    assert q.for_batch("other", held, np.delete(big, 7, axis=0), left=0) is None  # another model, nothing left


def _store(tmp_path: Path, mat: np.ndarray, model: str) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "mnemon.db")
    with store.transaction():
        for i, v in enumerate(mat):
            t = "2024-01-01T00:00:00Z"
            store.insert_insight(Insight(id=f"s{i:04d}", content=f"note {i}", created_at=t, updated_at=t), {"note"})
            store.set_vector(f"s{i:04d}", v, model)
    return store


def test_batch_cosines_through_the_lists_equal_the_exact_ones_where_neighbours_are_clear(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    mat = _clustered(rng, 800, 48, 25, 0.8)
    store = _store(tmp_path, mat, "m")
    src = rng.choice(800, size=60, replace=False)
    planted = [_at_cosine(rng, mat[r], float(c)) for r, c in zip(src, rng.uniform(0.85, 1.0, 60))]
    fresh = list(_clustered(rng, 40, 48, 25, 0.8))
    vectors = dict(enumerate(planted + fresh))
    exact = similarity.BatchCosines(store, "m", IDENTITY, vectors, floor=SEMANTIC_AUTO_LINK)
    q = ivf.ImportQuantizer(min_rows=100, payback=0)
    approx = similarity.BatchCosines(store, "m", IDENTITY, vectors, floor=SEMANTIC_AUTO_LINK, quantizer=q, left=100)
    assert q.builds == 1
    for i in vectors:
        e, a = exact.of(i), approx.of(i)
        assert a.keys() == e.keys() and [a[k] for k in e] == pytest.approx(list(e.values()), abs=1e-5)
    assert sum(map(len, (exact.of(i) for i in vectors))) >= 60  # the planted neighbours are there
    store.close()


class _Preset(BaseEmbedder):
    """text → a chosen vector (identity calibration)."""

    def __init__(self, vecs: dict[str, np.ndarray], dim: int) -> None:
        super().__init__("test/preset", dimensions=dim, calibration=IDENTITY)
        self.vecs = vecs

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        return np.stack([self.vecs[t] for t in texts])

    def available(self) -> bool:
        return True


def _semantic(mem: Memory) -> dict[tuple[str, str], float]:
    content = {i.id: i.content for i in mem.store.get_insights(
        [e.source_id for e in mem.store.iter_edges()] + [e.target_id for e in mem.store.iter_edges()]).values()}
    return {(content[e.source_id], content[e.target_id]): e.weight for e in mem.store.iter_edges()
            if e.edge_type.value == "semantic"}


def test_an_import_through_the_lists_writes_the_exact_paths_semantic_edges(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store of 400 clustered vectors, then a draft of 240 in batches of 40: near-duplicates of stored
    insights, of insights of earlier batches of the same draft (found only if the lists take the import's own
    writes), and unrelated ones. Through the lists (thresholds lowered) and exactly: the same semantic edges."""
    monkeypatch.setattr(importer, "IMPORT_BATCH", 40)
    rng = np.random.default_rng(3)
    dim = 64
    base = _clustered(rng, 400, dim, 20, 0.7)
    vecs = {f"stored fact {i}": v for i, v in enumerate(base)}
    later: list[tuple[str, np.ndarray]] = []
    stored = iter(rng.permutation(400).tolist())
    fresh: list[int] = []  # unrelated items of the draft, each a target once (so no pair is near by a detour)
    for j in range(240):
        kind = j % 3
        if kind == 0:  # close to a stored insight
            v = _at_cosine(rng, base[next(stored)], float(rng.uniform(0.85, 0.99)))
        elif kind == 1 and j >= 80 and fresh and fresh[0] < j - 40:  # close to one of this draft, batches back
            v = _at_cosine(rng, later[fresh.pop(0)][1], float(rng.uniform(0.85, 0.99)))
        else:
            v = _clustered(rng, 1, dim, 20, 0.7)[0]
            fresh.append(j)
        later.append((f"new fact {j}", v))
    vecs.update(later)

    def draft(texts: list[str]) -> Any:
        return load_draft({"schema_version": "1", "source": "t", "insights": [
            {"content": t, "category": "fact", "created_at": f"2024-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}Z"}
            for k, t in enumerate(texts)], "edges": []})

    out = {}
    for mode, quantizer in (("exact", ivf.ImportQuantizer(min_rows=10**9)),
                            ("ivf", ivf.ImportQuantizer(min_rows=300, payback=0))):
        with Memory(data_dir=data_dir / mode, store="default", embedder=_Preset(vecs, dim)) as mem:
            importer.import_draft(mem._context(), draft([f"stored fact {i}" for i in range(400)]))
            before = _semantic(mem)
            importer.import_draft(mem._context(), draft([t for t, _ in later]), quantizer=quantizer)
            out[mode] = (before, _semantic(mem), quantizer.builds)
    (b_exact, exact, _), (b_ivf, approx, builds) = out["exact"], out["ivf"]
    assert builds == 1 and b_exact == b_ivf
    assert approx.keys() == exact.keys()
    assert [approx[k] for k in exact] == pytest.approx(list(exact.values()), abs=1e-5)
    news = {k for k in exact if k[0].startswith("new") and k[1].startswith("new")}
    assert len(news) >= 2 * 30  # both ways: the draft's own near-duplicates across batches were linked
    assert len(exact) - len(b_exact) >= 2 * 120
