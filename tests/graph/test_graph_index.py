"""The graph index file (`graph/index.py`, written by `graph/fold.py`) and the memo that starts from it
(`graph/memo.py`): its answers are the store's, with any delta of writes since the file, after a kill -9 during a
fold, with another process writing; a damaged, torn, foreign or differently coded file is detected, never
believed, and rebuilt by the next writer."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, run_cli
from mnemon_core import Memory
from mnemon_core.models import Edge, Insight, Intent
from mnemon_core.graph import GraphView, fold, fold_index, index_file, index_state
from mnemon_core.recall.pipeline import smart_recall
from mnemon_core.store import NO_FILTERS
from mnemon_core.store.mapfile import Rejected
from mnemon_core.store.sqlite import SQLiteStore
from mnemon_core.text import tokens_of

VOCAB = ["redis", "cache", "latency", "postgres", "pool", "kafka", "queue", "deploy", "outage", "disk", "caches",
         "café", "naïve", "x1"]
ENTITIES = ["Redis", "Postgres", "Kafka", "Ünïcode", "AWS", "WAY", "Way"]  # WAY: a spelling that is a stop word
SOURCES = ["user", "agent", "Alice", "alice", "ALICE"]
TYPES = ["temporal", "semantic", "causal", "entity", "supersedes"]
SUBS = [None, "backbone", "proximity", "conversation", "other"]
QUERIES = ["why redis cache latency", "Postgres pool", "alice kafka queue", "when did the disk outage", "café AWS",
           "which way kafka"]


def _insight(i: int, rng: random.Random) -> tuple[Insight, frozenset[str]]:
    words = rng.choices(VOCAB, k=rng.randint(1, 6))
    ents = sorted(set(rng.choices(ENTITIES, k=rng.randint(0, 2))))
    ts = f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:00:00Z"
    ins = Insight(id=f"n{rng.getrandbits(40):010x}", content=" ".join(words + ents), importance=rng.randint(1, 5),
                  category=rng.choice(["fact", "decision", "general"]), source=rng.choice(SOURCES), entities=ents,
                  created_at=ts, updated_at=ts, stored_at=ts)
    return ins, tokens_of(ins.content, ins.tags, ins.entities)


def _edges(ids: list[str], rng: random.Random, k: int) -> list[Edge]:
    out = []
    for _ in range(k):
        a, b = rng.choice(ids), rng.choice(ids)
        typ = rng.choice(TYPES)
        sub = rng.choice(SUBS) if typ == "temporal" else None
        out.append(Edge(source_id=a, target_id=b, edge_type=typ, weight=rng.choice([0.2, 0.5, 0.5, 1.0]),
                        metadata={"sub_type": sub} if sub else {}, created_at="2026-01-01T00:00:00Z"))
    return out


def _fill(store: SQLiteStore, rng: random.Random, n: int, n_edges: int) -> list[str]:
    ids = []
    with store.transaction():
        for i in range(n):
            ins, toks = _insight(i, rng)
            store.insert_insight(ins, toks)
            ids.append(ins.id)
        if ids:
            store.upsert_edges(_edges(ids, rng, n_edges))
    return ids


def _answers(view: GraphView) -> dict:
    """Everything recall reads of the memo, by id, and recall's results for a few queries (through the memo
    of the view's store)."""
    store = view.store
    view.sync()
    ids = [r.id for r in store.index_rows()]
    nodes = view.intern(ids)
    view.ensure_meta(nodes)
    name = view.ids.__getitem__
    e = view.edges(nodes)
    adjacency = {
        name(int(n)): [(name(int(e.nbr[j])), int(e.etype[j]), float(e.weight[j]), int(e.sub[j]))
                       for j in range(int(e.start[k]), int(e.start[k] + e.degree[k]))]
        for k, n in enumerate(nodes.tolist())
    }
    entities = [x.lower() for x in ENTITIES]
    posts = view.postings(VOCAB, entities)
    out = {
        "active": {name(n): bool(a) for n, a in zip(nodes.tolist(), view.active(nodes).tolist())},
        "meta": {name(n): (int(view.importance[n]), int(view.created_key[n]), view.created[n]) for n in nodes.tolist()},
        "rank": [name(n) for n in nodes[np.argsort(view.id_rank(nodes))].tolist()],
        "adjacency": adjacency,
        "postings": [sorted(map(name, p.tolist())) for p in posts],
        "sources": [sorted(map(name, p.tolist())) for p in view.source_postings([s.lower() for s in SOURCES])],
        "terms": [sorted((name(n), s) for n, s in zip(p[0].tolist(), p[1].tolist()))
                  for p in view.term_postings(["redi", "cach", "latenc", "café", "naïv", "x1", "zz"])],
        "terms, lengths capped": [sorted((name(n), round(s, 12)) for n, s in zip(p[0].tolist(), p[1].tolist()))
                                  for p in view.term_postings(["redi", "cach", "latenc", "café"], 1.0)],
        "superseded": sorted(map(name, view.superseded().tolist())),
    }
    for recipe in ("hybrid", "spec"):
        from mnemon_core.recall.config import recipe as named

        for q in QUERIES:
            found = smart_recall(store, q, intent=Intent.GENERAL, intent_source="auto", limit=10, scope=NO_FILTERS,
                                 config=named(recipe))
            out[f"{recipe}:{q}"] = ([(r.id, r.score, r.via) for r in found.results], found.meta.traversed)
    return out


_OPEN: list[SQLiteStore] = []  # the memo holds its store weakly: keep the stores these tests compare with


def _without_index(path: Path) -> SQLiteStore:
    s = SQLiteStore(path)
    s.graph_place = lambda: None  # type: ignore[method-assign]  # the memo reads everything from the store
    _OPEN.append(s)
    return s


def _plain(path: Path) -> GraphView:
    """A memo that reads everything from the store (as without the file)."""
    return GraphView(_without_index(path))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), n=st.integers(1, 40), later=st.integers(0, 12), deletes=st.integers(0, 4))
def test_the_index_answers_as_the_store_does(tmp_path_factory, monkeypatch, seed, n, later, deletes) -> None:
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("gx") / "mnemon.db"
    store = SQLiteStore(path)
    ids = _fill(store, rng, n, 3 * n)
    store.soft_delete(rng.sample(ids, min(deletes, len(ids) // 3)), "2026-02-01T00:00:00Z")
    assert fold_index(store, force=True) > 0
    view = GraphView(store)
    assert _answers(view) == _answers(_plain(path))
    assert view.index_file is not None
    # Writes after the file: the delta (new insights, edges, deletes), then a fresh view of the same file.
    ids += _fill(store, rng, later, 2 * later + 1)
    store.upsert_edges(_edges(ids, rng, 5))
    store.soft_delete(rng.sample(ids, min(2, len(ids) // 4)), "2026-02-02T00:00:00Z")
    expect = _answers(_plain(path))
    assert _answers(view) == expect
    assert _answers(GraphView(store)) == expect
    assert view.index_file is not None and (later == 0 or view._delta)


def _store_of(tmp_path: Path, n: int = 60, seed: int = 3) -> tuple[Path, SQLiteStore]:
    path = tmp_path / "mnemon.db"
    store = SQLiteStore(path)
    _fill(store, random.Random(seed), n, 3 * n)
    return path, store


@pytest.mark.parametrize("damage, reason", [
    (lambda b: b[:-40], "torn"),
    (lambda b: b[:len(b) // 2] + bytes([b[len(b) // 2] ^ 0x10]) + b[len(b) // 2 + 1:], "checksum"),
    (lambda b: b"XXXXXXXX" + b[8:], "bad magic"),
    (lambda b: b[:30] + b"!" + b[31:], "header checksum"),
])
def test_a_damaged_file_is_never_believed_and_is_rebuilt(tmp_path: Path, monkeypatch, damage, reason) -> None:
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    path, store = _store_of(tmp_path)
    assert fold_index(store) > 0
    expect = _answers(_plain(path))
    f = path.with_name(path.name + ".gidx")
    f.write_bytes(damage(f.read_bytes()))
    reader = SQLiteStore(path)
    assert index_file(reader) is None
    state = index_state(reader)
    assert isinstance(state, Rejected) and reason in state.reason
    view = GraphView(reader)
    assert _answers(view) == expect and view.index_file is None
    assert fold_index(reader) > 0  # the next writer writes it anew
    assert index_file(reader) is not None
    assert _answers(GraphView(reader)) == expect


def test_a_file_of_another_store_is_not_used(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    pa, sa = _store_of(tmp_path / "a", seed=1)
    pb, sb = _store_of(tmp_path / "b", seed=1)  # the same rows, the same counter
    assert fold_index(sa) > 0
    shutil.copy(pa.with_name(pa.name + ".gidx"), pb.with_name(pb.name + ".gidx"))
    assert index_file(sb) is None and "another store" in index_state(sb).reason


def test_a_file_coded_with_other_edge_types_is_rebuilt(tmp_path: Path, monkeypatch) -> None:
    """The header names the edge types whose positions the codes are: a file of a release whose list differs (a
    type added that does not sort last would shift every code after it) is rejected, never read with the wrong
    codes, and the next writer writes it anew; so is a file of the format before the names were recorded."""
    from mnemon_core.graph import index
    from mnemon_core.store import mapfile

    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    path, store = _store_of(tmp_path)
    expect = _answers(_plain(path))
    with monkeypatch.context() as m:
        m.setattr(index, "EDGE_TYPES", ("causal", "contradicts", "entity", "semantic", "supersedes", "temporal"))
        assert fold_index(store) > 0
    reader = SQLiteStore(path)
    assert index_file(reader) is None
    assert "edge types" in index_state(reader).reason and "contradicts" in index_state(reader).reason
    assert _answers(GraphView(reader)) == expect
    assert fold_index(reader) > 0 and index_file(reader) is not None
    assert index_file(reader).header["edge_types"] == list(index.EDGE_TYPES)
    assert _answers(GraphView(reader)) == expect
    f = path.with_name(path.name + ".gidx")
    mapfile.write(f, {**index_file(reader).header, "format": 2}, {}, index.MAGIC)
    older = SQLiteStore(path)
    assert index_file(older) is None and "format 2 (this release reads 3)" in index_state(older).reason


_FOLDER = """
import os, sys, time
sys.path.insert(0, {root!r})
from mnemon_core.graph import fold
from mnemon_core.store.sqlite import SQLiteStore
from mnemon_core.models import Edge
fold.MIN_ROWS = 1
store = SQLiteStore({db!r})
ids = [r.id for r in store.index_rows()]
real_fsync = os.fsync
def slow_fsync(fd):
    print("syncing", flush=True)
    time.sleep(30)
    real_fsync(fd)
os.fsync = slow_fsync
store.upsert_edge(Edge(source_id=ids[0], target_id=ids[1], edge_type="causal", weight=0.3,
                       created_at="2026-03-01T00:00:00Z"))
fold.fold_index(store, force=True)
"""


def test_kill_9_during_a_fold_leaves_the_old_file_or_none(tmp_path: Path, monkeypatch) -> None:
    """A writer killed after writing its temporary file and before the rename: readers keep the old file with
    the delta; the next fold removes the leftover."""
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    path, store = _store_of(tmp_path)
    assert fold_index(store) > 0
    old = index_file(store)
    proc = subprocess.Popen([sys.executable, "-c", _FOLDER.format(root=str(ROOT), db=str(path))],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "syncing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    leftovers = list(tmp_path.glob("mnemon.db.gidx.tmp-*"))
    assert leftovers
    reader = SQLiteStore(path)
    gx = index_file(reader)
    assert gx is not None and gx.counter == old.counter  # the old file, whole
    view = GraphView(reader)
    assert _answers(view) == _answers(_plain(path))
    assert len(view._delta) == 2  # the edge the killed process committed before its fold
    assert fold_index(reader, force=True) > 0
    assert not list(tmp_path.glob("mnemon.db.gidx.tmp-*"))


_WRITER = """
import sys
sys.path.insert(0, {root!r})
from mnemon_core import Memory
from mnemon_core.graph import fold
fold.MIN_ROWS, fold.FOLD_MIN, fold.FOLD_SHARE = 1, 40, 0.0
mem = Memory(data_dir={data!r}, embedder="none")
for i in range(40):
    mem.remember(f"redis cache latency note {{i}} from the other process", source="alice", no_diff=True)
    if i % 7 == 3:
        mem.forget(mem.recent(3)[-1].id)
print("done", flush=True)
"""


def test_another_process_writing(tmp_path: Path, monkeypatch) -> None:
    """A long-lived reader recalls while another process remembers, forgets and folds: every answer after the
    writer finishes is the store's, and the reader follows the new files."""
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    data = tmp_path / "d"
    mem = Memory(data_dir=data, embedder="none")
    mem.import_draft({"schema_version": "1", "insights": [
        {"content": f"{' '.join(random.Random(i).choices(VOCAB, k=4))} item {i}", "source": random.Random(i).choice(SOURCES)}
        for i in range(80)]})
    store = mem.store
    assert index_file(store) is not None
    first = index_file(store)
    proc = subprocess.Popen([sys.executable, "-c", _WRITER.format(root=str(ROOT), data=str(data))],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "MNEMON_DAEMON": "off"})
    view = GraphView(store)
    while proc.poll() is None:
        _answers(view)
    assert proc.returncode == 0 and proc.stdout.read().strip() == "done"
    db = data / "data" / "default" / "mnemon.db"
    assert _answers(view) == _answers(_plain(db))
    assert view.index_file is not None and view.index_file is not first  # the writer folded


def _big_store(tmp_path: Path) -> Path:
    """A store large enough for the real threshold, written through `import` (which writes the file)."""
    data = tmp_path / "big"
    rng = random.Random(5)
    items = [{"content": f"{' '.join(rng.choices(VOCAB, k=5))} {rng.choice(ENTITIES)} item {i}",
              "source": rng.choice(SOURCES), "created_at": f"2026-01-{1 + i % 28:02d}T00:{i % 60:02d}:00Z"}
             for i in range(fold.MIN_ROWS)]
    (tmp_path / "draft.json").write_text(json.dumps({"schema_version": "1", "insights": items}))
    r = run_cli("import", str(tmp_path / "draft.json"), env={"MNEMON_DATA_DIR": str(data), "MNEMON_DAEMON": "off"})
    assert r.code == 0, r.err
    return data


def test_cli_status_readonly_and_a_damaged_file(tmp_path: Path) -> None:
    data = _big_store(tmp_path)
    env = {"MNEMON_DATA_DIR": str(data), "MNEMON_DAEMON": "off", "MNEMON_EMBEDDER": "none"}
    st_ = run_cli("status", env=env).json()["graph_index"]
    assert (st_["state"], st_["nodes"], st_["behind"]) == ("mapped", fold.MIN_ROWS, 0)
    assert st_["path"].endswith("mnemon.db.gidx") and st_["age_s"] >= 0 and st_["bytes"] > 0
    query = ["recall", "redis cache Kafka", "--verbose"]
    with_index = run_cli("--readonly", *query, env=env)
    assert with_index.code == 0, with_index.err
    f = data / "data" / "default" / "mnemon.db.gidx"
    blob = bytearray(f.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    f.write_bytes(bytes(blob))
    st_ = run_cli("--readonly", "status", env=env).json()["graph_index"]
    assert st_["state"] == "rejected" and "checksum" in st_["reason"]
    without = run_cli("--readonly", *query, env=env)
    assert without.code == 0 and without.json() == with_index.json()
    run_cli("remember", "one more redis note", env=env)  # a writer rebuilds what it cannot believe
    assert run_cli("status", env=env).json()["graph_index"]["state"] == "mapped"


def test_readonly_in_a_directory_nobody_may_write(tmp_path: Path) -> None:
    from test_boundary import unwritable

    data = _big_store(tmp_path)
    env = {"MNEMON_DATA_DIR": str(data), "MNEMON_DAEMON": "off", "MNEMON_EMBEDDER": "none"}
    store_dir = data / "data" / "default"
    expect = run_cli("--readonly", "recall", "redis Kafka", "--verbose", env=env).json()
    with unwritable(store_dir, *store_dir.iterdir()):
        st_ = run_cli("--readonly", "status", env=env)
        assert st_.code == 0 and st_.json()["graph_index"]["state"] == "mapped", st_.err
        r = run_cli("--readonly", "recall", "redis Kafka", "--verbose", env=env)
        assert (r.code, r.err) == (0, "") and r.json() == expect


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), n=st.integers(1, 50), later=st.integers(0, 8),
       query=st.lists(st.sampled_from(VOCAB + ["zz"]), min_size=0, max_size=5), limit=st.integers(1, 6))
def test_token_tops_from_the_index_are_the_stores(tmp_path_factory, monkeypatch, seed, n, later, query, limit) -> None:
    """What `remember` ranks before it writes (diff label, token candidates), from the file and its delta."""
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("tt") / "mnemon.db"
    store = SQLiteStore(path)
    ids = _fill(store, rng, n, n)
    fold_index(store, force=True)
    ids += _fill(store, rng, later, later)
    store.soft_delete(rng.sample(ids, min(1, len(ids) // 5)), "2026-02-01T00:00:00Z")
    got = GraphView(store).token_tops(frozenset(query), limit)
    if any(not (t.isascii() and t.isalnum()) for t in query):
        assert got is None  # only the store matches these as FTS5 does
    else:
        assert got == store.token_tops(frozenset(query), limit)
    assert GraphView(_without_index(path)).token_tops(frozenset(query), limit) is None


def test_recall_through_the_index_is_the_stores_on_both_backends(mem, store_backend, monkeypatch) -> None:
    """SQLite (the file beside the database) and Postgres (the file beside the client): after an import that
    writes it, and remembers, forgets and links after it (the delta)."""
    if store_backend in ("kuzu", "redis", "falkordb"):
        pytest.skip("Kùzu, Redis and FalkorDB keep no graph index file (test_store_contract)")
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    rng = random.Random(11)
    mem.import_draft({"schema_version": "1", "insights": [
        {"content": f"{' '.join(rng.choices(VOCAB, k=4))} {rng.choice(ENTITIES)} item {i}",
         "source": rng.choice(SOURCES), "created_at": f"2026-01-{1 + i % 28:02d}T00:00:00Z"} for i in range(60)]})
    store = mem.store
    gx = index_file(store)
    assert gx is not None and gx.n == 60
    ids = [r.id for r in store.index_rows()]
    for i in range(6):
        mem.remember(f"redis cache latency kafka follow-up {i}", source=rng.choice(SOURCES))
    mem.forget(ids[3])
    mem.link(ids[5], ids[7], type="supersedes")
    mem.link(ids[8], ids[9], type="causal", weight=0.4)
    assert index_file(store) is gx  # the delta is small: no fold yet
    plain = Memory(settings=mem.settings)
    plain.store.graph_place = lambda: None
    view = GraphView(store)
    assert _answers(view) == _answers(GraphView(plain.store))
    assert view.index_file is gx and len(view._delta) > 6
    plain.close()


@pytest.mark.integration
def test_clients_of_one_postgres_store_keep_their_own_files(pg_url, pg_store_name, tmp_path, monkeypatch) -> None:
    """Two clients (two data dirs: two machines of a fleet) writing one Postgres store in turn: each keeps its
    own file and folds it only when its delta is large. A fold once moved the shared log's floor to its own
    counter, so the other client's file fell below it and was written anew at its next write, every write."""
    monkeypatch.setattr(fold, "MIN_ROWS", 1)
    a, b = (Memory(data_dir=tmp_path / k, database_url=pg_url, store=pg_store_name, embedder="none") for k in "ab")
    a.import_draft({"schema_version": "1", "insights": [
        {"content": f"{VOCAB[i % len(VOCAB)]} note {i} about {ENTITIES[i % len(ENTITIES)]}"} for i in range(40)]})
    for m in (a, b):
        m.remember(f"first write through {m.settings.data_dir.name}")
    files = [index_file(m.store) for m in (a, b)]
    assert all(f is not None for f in files) and files[0].path != files[1].path
    stat = [os.stat(f.path).st_mtime_ns for f in files]
    for i in range(4):
        for m in (a, b):
            m.remember(f"write {i} through {m.settings.data_dir.name}")
            assert fold_index(m.store) == 0
    assert [os.stat(f.path).st_mtime_ns for f in files] == stat
    assert all(index_file(m.store) is f for m, f in zip((a, b), files))
    for m in (a, b):
        m.close()
