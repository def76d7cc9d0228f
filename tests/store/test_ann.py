"""The optional HNSW index beside a SQLite store (mnemon_core/store/ann.py): built from the store's vectors,
memory-mapped for search, exact over rows changed since it was written, refreshed in place."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnemon_core import Memory
from mnemon_core.embed.base import BaseEmbedder, Calibration
from mnemon_core.models import Insight
from mnemon_core.store import ann, base
from mnemon_core.store.sqlite import SQLiteStore

pytest.importorskip("usearch")

DIM = 16
MODEL = "test/16"


def _store(tmp_path: Path, n: int, seed: int = 3) -> tuple[SQLiteStore, list[str], np.ndarray]:
    store = SQLiteStore(tmp_path / "mnemon.db")
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"id-{i:04d}" for i in range(n)]
    with store.transaction():
        for i, id_ in enumerate(ids):
            now = f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"
            store.insert_insight(Insight(id=id_, content=f"note {i}", created_at=now, updated_at=now), {"note"})
            store.set_vector(id_, vecs[i], MODEL)
    return store, ids, vecs


def _exact(store: SQLiteStore, q: np.ndarray, k: int) -> list[str]:
    ids, mat = store.vector_matrix(MODEL, DIM)
    sims = mat @ q
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-sims[i], ids[i]))[:k]]


def test_index_file_sits_beside_the_database_per_model(tmp_path: Path) -> None:
    p = ann.index_path(tmp_path / "mnemon.db", MODEL, DIM)
    assert p.parent == tmp_path and p.name.startswith("mnemon.vec.") and p.suffix == ".usearch"
    assert ann.index_path(tmp_path / "mnemon.db", "other", DIM) != p


def test_search_matches_the_exact_scan_on_a_small_store(tmp_path: Path) -> None:
    store, _, vecs = _store(tmp_path, 400)
    idx = ann.AnnIndex(store.db, store.path, MODEL, DIM)
    assert not idx.exists()
    assert idx.build(threads=1) == 400
    assert idx.exists() and idx.delta() == 0
    rng = np.random.default_rng(9)
    for _ in range(20):
        q = rng.standard_normal(DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        keys, cos = idx.search(q, 10)
        assert [i for i in idx.ids(keys)] == _exact(store, q, 10)  # 400 points, ef 128: the graph finds them all
        np.testing.assert_allclose(cos, np.sort(vecs @ q)[::-1][:10], rtol=0, atol=1e-5)


def test_rows_changed_after_the_build_are_searched_exactly(tmp_path: Path) -> None:
    store, ids, vecs = _store(tmp_path, 300)
    idx = ann.AnnIndex(store.db, store.path, MODEL, DIM)
    idx.build(threads=1)
    q = vecs[7]
    # A new insight whose vector is the query itself, and the old best match deleted.
    with store.transaction():
        now = "2024-02-01T00:00:00Z"
        store.insert_insight(Insight(id="fresh", content="fresh", created_at=now, updated_at=now), {"fresh"})
        store.set_vector("fresh", q, MODEL)
        store.soft_delete([ids[7]], now)
    assert idx.delta() == 2
    keys, cos = idx.search(q, 5)
    got = idx.ids(keys)
    assert got[0] == "fresh" and cos[0] == pytest.approx(1.0, abs=1e-6)
    assert ids[7] not in got
    assert got == _exact(store, q, 5)


def test_refresh_folds_the_delta_into_the_file(tmp_path: Path) -> None:
    store, ids, vecs = _store(tmp_path, 200)
    idx = ann.AnnIndex(store.db, store.path, MODEL, DIM)
    idx.build(threads=1)
    new = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    with store.transaction():
        store.set_vector(ids[3], new, MODEL)  # a replaced vector
        store.soft_delete([ids[4]], "2024-02-01T00:00:00Z")
    assert idx.delta() == 2
    assert idx.refresh(threads=1) == 2
    reader = ann.AnnIndex(store.db, store.path, MODEL, DIM)  # another process's view of the new file
    assert reader.delta() == 0 and reader.open() and reader.size() == 199
    keys, cos = reader.search(new, 1)
    assert reader.ids(keys) == [ids[3]] and cos[0] == pytest.approx(1.0, abs=1e-6)
    assert ids[4] not in reader.ids(reader.search(vecs[4], 10)[0])


def test_the_delta_follows_writes_one_at_a_time(tmp_path: Path) -> None:
    """Between searches only the rows changed since the last search are read; a row changed twice, a row
    deleted after it was changed and a row added after the file all answer as the exact scan does."""
    store, ids, vecs = _store(tmp_path, 300)
    idx = ann.AnnIndex(store.db, store.path, MODEL, DIM)
    idx.build(threads=1)
    rng = np.random.default_rng(9)
    fresh = rng.standard_normal((4, DIM)).astype(np.float32)
    fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
    steps = [
        lambda: store.set_vector(ids[5], fresh[0], MODEL),
        lambda: store.set_vector(ids[5], fresh[1], MODEL),  # the same row again
        lambda: store.set_vector(ids[6], fresh[2], MODEL),
        lambda: store.soft_delete([ids[6]], "2024-02-01T00:00:00Z"),
        lambda: (store.insert_insight(Insight(id="new", content="new note", created_at="2024-03-01T00:00:00Z",
                                              updated_at="2024-03-01T00:00:00Z"), {"note"}),
                 store.set_vector("new", fresh[3], MODEL)),
    ]
    for size, step in zip([1, 1, 2, 2, 3], steps):
        with store.transaction():
            step()
        assert idx.delta() == size
        for q in [*fresh, vecs[5], vecs[6]]:
            keys, _ = idx.search(q, 10)
            assert idx.ids(keys) == _exact(store, q, 10)


def test_other_models_and_dimensions_stay_out(tmp_path: Path) -> None:
    store, ids, vecs = _store(tmp_path, 50)
    with store.transaction():
        store.set_vector(ids[0], np.ones(8, dtype=np.float32), MODEL)  # wrong dimension
        store.set_vector(ids[1], vecs[1], "other-model")
    idx = ann.AnnIndex(store.db, store.path, MODEL, DIM)
    assert idx.build(threads=1) == 48
    assert not {ids[0], ids[1]} & set(idx.ids(idx.search(vecs[1], 50)[0]))


def test_without_usearch_the_index_reports_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "usearch" else real(name, *a))
    assert ann.available() is False
    monkeypatch.undo()
    assert ann.available() is True


# ---------------------------------------------------------------- recall through the index


class _Embedder(BaseEmbedder):
    """16-d vectors: texts sharing their first word point the same way (plus a per-text wobble)."""

    def __init__(self) -> None:
        super().__init__(MODEL, dimensions=DIM, calibration=Calibration(0.1, 1.0))

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        out = []
        for t in texts:
            head = np.random.default_rng(sum(map(ord, t.split()[0]))).standard_normal(DIM)
            wobble = np.random.default_rng(sum(map(ord, t)) * 31 + len(t)).standard_normal(DIM)
            out.append(head + 0.7 * wobble)
        return np.asarray(out, dtype=np.float32)

    def available(self) -> bool:
        return True


_TOPICS = ["billing", "search", "deploy", "cache", "auth", "mobile"]


def _recalls(mem: Memory) -> list[list[tuple[str, float, str, float]]]:
    out = []
    for q in ["billing invoices late", "cache warmup", "why did deploy fail", "auth tokens expire", "mobile crash"]:
        r = mem.recall(q, verbose=True, limit=10)
        out.append([(h.insight.id, round(h.score, 9), h.via, round(h.signals.similarity, 6)) for h in r.results])
    return out


def test_recall_through_the_index_matches_the_exact_scan(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(embedder=_Embedder()) as mem:
        for i in range(90):
            topic = _TOPICS[i % len(_TOPICS)]
            mem.remember(f"{topic} note {i}: item {i * 7 % 13} changed", category="fact", source=f"s{i % 3}")
        exact = _recalls(mem)
        assert mem.store.ann_index(MODEL, DIM) is None  # no file yet
        idx = ann.AnnIndex(mem.store.db, mem.store.path, MODEL, DIM)
        assert idx.build(threads=1) == 90
        assert mem.store.ann_index(MODEL, DIM) is None  # below ANN_MIN_ROWS: still the exact scan
    monkeypatch.setattr(base, "ANN_MIN_ROWS", 50)
    with Memory(embedder=_Embedder()) as mem:
        assert mem.store.ann_index(MODEL, DIM) is not None
        via_index = _recalls(mem)
        assert all(exact)
        # Same insights, order and labels; scores equal up to float32 rounding (a dot product per row by id
        # against the matrix-vector product).
        assert [[(i, v) for i, _, v, _ in r] for r in via_index] == [[(i, v) for i, _, v, _ in r] for r in exact]
        for got, want in zip(via_index, exact):
            assert [x[1] for x in got] == pytest.approx([x[1] for x in want], abs=1e-6)
            assert [x[3] for x in got] == pytest.approx([x[3] for x in want], abs=1e-5)
        # A vector written after the file: found through the exact delta.
        mem.remember("zebra crossing painted", category="fact")
        top = mem.recall("zebra crossing painted", verbose=True).results[0]
        assert top.insight.content == "zebra crossing painted" and top.signals.similarity == pytest.approx(1.0)
    monkeypatch.setattr(ann, "available", lambda: False)  # without usearch: the exact scan
    with Memory(embedder=_Embedder()) as mem:
        assert mem.store.ann_index(MODEL, DIM) is None
        assert mem.recall("cache warmup").results


def test_maintain_vector_index_builds_the_file_once_the_store_is_large(tmp_path, monkeypatch) -> None:
    from mnemon_core.models import Insight
    from mnemon_core.store import base
    from mnemon_core.store.sqlite import SQLiteStore

    s = SQLiteStore(tmp_path / "m.db")
    rng = np.random.default_rng(0)
    with s.transaction():
        for i in range(6):
            t = "2026-01-01T00:00:00Z"
            s.insert_insight(Insight(id=f"i{i}", content=f"c{i}", created_at=t, updated_at=t, stored_at=t), {"c"})
            s.set_vector(f"i{i}", rng.standard_normal(8).astype(np.float32), "m")
    monkeypatch.setattr(base, "ANN_MIN_ROWS", 10)
    assert s.maintain_vector_index("m", 8) == 0 and s.ann_index("m", 8) is None  # small: exact scan
    monkeypatch.setattr(base, "ANN_MIN_ROWS", 5)
    assert s.maintain_vector_index("m", 8) == 6
    assert s.ann_index("m", 8) is not None
    s.close()


def test_write_path_cosines_come_from_the_index_above_the_threshold(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory(embedder=_Embedder()) as mem:
        for i in range(90):
            topic = _TOPICS[i % len(_TOPICS)]
            mem.remember(f"{topic} note {i}: item {i * 7 % 13} changed", category="fact", source=f"s{i % 3}")
        ann.AnnIndex(mem.store.db, mem.store.path, MODEL, DIM).build(threads=1)
        query = mem.embed_texts(["cache warmup note"])[0]
        exact = mem.cosines(query, floor=-1.0)
    monkeypatch.setattr(base, "ANN_MIN_ROWS", 50)
    with Memory(embedder=_Embedder()) as mem:
        assert mem.store.ann_index(MODEL, DIM) is not None
        got = mem.cosines(query, floor=-1.0)
    assert len(got) == 20
    best = sorted(exact.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    assert [i for i, _ in sorted(got.items(), key=lambda kv: (-kv[1], kv[0]))[:5]] == [i for i, _ in best]
    assert [got[i] for i, _ in best] == pytest.approx([c for _, c in best], abs=1e-5)


def test_writes_fold_a_large_delta_into_the_file(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows written after the file are scanned exactly by every search; once more than ANN_DELTA_MAX of them
    have piled up, the next remember (or import batch) folds them in, before its own transaction."""
    with Memory(embedder=_Embedder()) as mem:
        for i in range(60):
            mem.remember(f"{_TOPICS[i % len(_TOPICS)]} note {i}", category="fact")
        idx = ann.AnnIndex(mem.store.db, mem.store.path, MODEL, DIM)
        assert idx.build(threads=1) == 60
    monkeypatch.setattr(base, "ANN_MIN_ROWS", 50)
    monkeypatch.setattr(ann, "ANN_DELTA_MAX", 3)
    with Memory(embedder=_Embedder()) as mem:
        for i in range(4):  # 4 rows past the file: stale only after the fourth
            mem.remember(f"late note {i}", category="fact")
        index = mem.store.ann_index(MODEL, DIM)
        assert index.size() == 60 and index.delta() == 4 and index.stale()
        added = mem.remember("the fifth late note", category="fact")  # folds the four, then writes its own
        index = mem.store.ann_index(MODEL, DIM)
        assert index.size() == 64 and index.delta() == 1
        assert mem.recall("the fifth late note", verbose=True).results[0].insight.id == added.id
        mem.remember("one more", category="fact")
        mem.remember("and another", category="fact")
        mem.remember("and the last", category="fact")
        draft = {"schema_version": "1", "insights": [{"content": f"imported note {i}"} for i in range(3)]}
        mem.import_draft(draft)  # the batch folds the four remembered since, then adds its three
        index = mem.store.ann_index(MODEL, DIM)
        assert index.size() == 68 and index.delta() == 3
