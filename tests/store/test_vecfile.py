"""The vector matrix file (`store/vecfile.py`): a fresh process that starts its vector cache from the mapped
file, plus the rows changed since, holds exactly the vectors a cache read from the store holds; a damaged,
torn, foreign or future file is never used; what a process writes after mapping never reaches the file."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemon_core.graph import fold, fold_index
from mnemon_core.models import Insight
from mnemon_core.store import vecfile
from mnemon_core.store.mapfile import Rejected
from mnemon_core.store.sqlite import SQLiteStore
from mnemon_core.store.vectors import VectorCache

DIM = 8
MODEL = "m/one"


def _vec(rng: random.Random) -> np.ndarray:
    v = np.array([rng.uniform(-1, 1) for _ in range(DIM)], dtype=np.float32)
    return v if rng.random() > 0.05 else np.zeros(DIM, dtype=np.float32)  # a zero vector stays zero


def _fill(store: SQLiteStore, rng: random.Random, n: int, first: bool = False) -> list[str]:
    """n insights, most with a vector (of MODEL, or another model); `first`: the first has one of MODEL."""
    ids = []
    with store.transaction():
        for i in range(n):
            ts = f"2026-01-{1 + i % 28:02d}T00:00:00Z"
            ins = Insight(id=f"v{rng.getrandbits(40):010x}", content=f"note {i}", created_at=ts, updated_at=ts,
                          stored_at=ts)
            store.insert_insight(ins, {"note"})
            ids.append(ins.id)
            if (first and i == 0) or rng.random() < 0.8:
                store.set_vector(ins.id, _vec(rng), MODEL if (first and i == 0) or rng.random() < 0.9 else "m/two")
    return ids


def _held(store: SQLiteStore) -> dict[str, bytes]:
    ids, mat = store.vector_matrix(MODEL, DIM)
    assert len(ids) == len(set(ids))
    return {i: mat[k].tobytes() for k, i in enumerate(ids)}


def _from_store(path: Path) -> dict[str, bytes]:
    s = SQLiteStore(path)
    s._mapped_vectors = lambda *a: None  # type: ignore[method-assign]  # every row from the store
    try:
        return _held(s)
    finally:
        s.close()


def _store_with_file(tmp_path: Path, n: int = 30, seed: int = 1) -> tuple[Path, SQLiteStore, list[str]]:
    path = tmp_path / "mnemon.db"
    store = SQLiteStore(path)
    ids = _fill(store, random.Random(seed), n, first=True)
    assert fold_index(store) > 0
    got = vecfile.load(vecfile.path_for(path, MODEL, DIM), MODEL, DIM, uid=store._meta("store_uid"),
                       counter=store._meta("vec_seq"))
    assert isinstance(got, VectorCache) and got.snapshot()[0]
    return path, store, ids


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), n=st.integers(1, 40), later=st.integers(0, 10), deletes=st.integers(0, 4),
       revectors=st.integers(0, 4))
def test_a_cache_from_the_file_holds_the_stores_vectors(tmp_path_factory, monkeypatch, seed, n, later, deletes,
                                                       revectors) -> None:
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    path, store, ids = _store_with_file(tmp_path_factory.mktemp("v"), n, seed)
    rng = random.Random(seed + 1)
    ids += _fill(store, rng, later)  # after the file: the reader reads these from the store
    with store.transaction():
        store.soft_delete(rng.sample(ids, min(deletes, len(ids))), "2026-02-01T00:00:00Z")
        for i in rng.sample(ids, min(revectors, len(ids))):
            store.set_vector(i, _vec(rng), rng.choice([MODEL, "m/two"]))
    reader = SQLiteStore(path)
    got = _held(reader)
    assert got == _from_store(path)
    assert (MODEL, DIM) in reader._vectors and reader._vectors[(MODEL, DIM)].high_water == store._meta("vec_seq")
    # The reader's own later writes land in its copy-on-write pages, never in the file.
    before = vecfile.path_for(path, MODEL, DIM).read_bytes()
    with reader.transaction():
        for i in ids[:3]:
            reader.set_vector(i, _vec(rng), MODEL)
    assert _held(reader) == _from_store(path)
    assert vecfile.path_for(path, MODEL, DIM).read_bytes() == before
    reader.close()


@pytest.mark.parametrize("damage, reason", [
    (lambda b: b[:-40], "torn"),
    (lambda b: b[: len(b) - 700] + bytes([b[len(b) - 700] ^ 0x10]) + b[len(b) - 699:], "checksum"),
    (lambda b: b"XXXXXXXX" + b[8:], "bad magic"),
])
def test_a_damaged_file_is_never_used(tmp_path: Path, monkeypatch, damage, reason) -> None:
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    path, store, _ = _store_with_file(tmp_path)
    f = vecfile.path_for(path, MODEL, DIM)
    f.write_bytes(damage(f.read_bytes()))
    got = vecfile.load(f, MODEL, DIM, uid=store._meta("store_uid"), counter=store._meta("vec_seq"))
    assert isinstance(got, Rejected) and reason in got.reason
    assert _held(SQLiteStore(path)) == _from_store(path)


def test_a_file_of_another_store_or_ahead_of_it_is_not_used(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    pa, sa, _ = _store_with_file(tmp_path / "a", seed=2)
    pb = tmp_path / "b" / "mnemon.db"
    _fill(SQLiteStore(pb), random.Random(2), 30)  # the same rows, another store
    shutil.copy(vecfile.path_for(pa, MODEL, DIM), vecfile.path_for(pb, MODEL, DIM))
    sb = SQLiteStore(pb)
    got = vecfile.load(vecfile.path_for(pb, MODEL, DIM), MODEL, DIM, uid=sb._meta("store_uid"),
                       counter=sb._meta("vec_seq"))
    assert isinstance(got, Rejected) and "another store" in got.reason
    assert _held(sb) == _from_store(pb)
    ahead = vecfile.load(vecfile.path_for(pa, MODEL, DIM), MODEL, DIM, uid=sa._meta("store_uid"), counter=0)
    assert isinstance(ahead, Rejected) and "ahead" in ahead.reason


@pytest.mark.integration
def test_a_postgres_client_maps_its_own_file(pg_url, pg_store_name, tmp_path: Path, monkeypatch) -> None:
    """A Postgres client's fold writes the vector matrix file beside its graph index file; a fresh client of
    that data dir starts its cache from the file and reads from the database only the rows changed since, and
    holds exactly the vectors a cache read from the database holds."""
    from mnemon_core.store.postgres import PostgresStore

    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    writer = PostgresStore(pg_url, store=pg_store_name, index_dir=tmp_path)
    rng = random.Random(3)
    _fill(writer, rng, 30, first=True)
    assert fold_index(writer) > 0
    path = vecfile.path_for(writer.graph_place().path, MODEL, DIM)
    assert path.exists()
    _fill(writer, rng, 5)  # after the file
    read: list[int] = []
    fresh = PostgresStore(pg_url, store=pg_store_name, index_dir=tmp_path, readonly=True)
    changes = fresh._vector_changes
    monkeypatch.setattr(fresh, "_vector_changes",
                        lambda after, top: (read.append(len(b)) or b for b in changes(after, top)))
    plain = PostgresStore(pg_url, store=pg_store_name, readonly=True)  # no index dir: no file
    try:
        assert _held(fresh) == _held(plain) and len(_held(fresh)) > 0
        assert 0 < sum(read) <= 5  # only what changed after the file, not its last transaction's again
    finally:
        for s in (writer, fresh, plain):
            s.close()
