"""The SQLite store on its own: migrations from an older file, nested transactions, the vector cache."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemon_core.models import Edge, Insight
from mnemon_core.store.sql import metadata_json
from mnemon_core.store.sqlite import MIGRATIONS, SQLiteStore

V0115_SCHEMA = """
CREATE TABLE insights (id TEXT PRIMARY KEY, content TEXT NOT NULL, category TEXT DEFAULT 'general',
  importance INTEGER DEFAULT 3, tags TEXT DEFAULT '[]', entities TEXT DEFAULT '[]', source TEXT DEFAULT 'user',
  access_count INTEGER DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted_at TEXT,
  last_accessed_at TEXT, embedding BLOB, effective_importance REAL DEFAULT 0.5);
CREATE TABLE edges (source_id TEXT NOT NULL REFERENCES insights(id) ON DELETE CASCADE,
  target_id TEXT NOT NULL REFERENCES insights(id) ON DELETE CASCADE,
  edge_type TEXT NOT NULL CHECK (edge_type IN ('temporal','semantic','causal','entity','narrative')),
  weight REAL DEFAULT 1.0, metadata TEXT DEFAULT '{}', created_at TEXT NOT NULL,
  PRIMARY KEY (source_id, target_id, edge_type));
CREATE TABLE oplog (id INTEGER PRIMARY KEY AUTOINCREMENT, operation TEXT NOT NULL, insight_id TEXT,
  detail TEXT DEFAULT '', created_at TEXT NOT NULL);
INSERT INTO insights (id, content, category, entities, created_at, updated_at)
  VALUES ('a', 'Qdrant filtering is fast', 'fact', '["Qdrant"]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'),
         ('b', 'an old story', 'narrative', '[]', '2026-01-02T00:00:00Z', '2026-01-02T00:00:00Z');
INSERT INTO edges VALUES ('a', 'b', 'narrative', 1.0, '{}', '2026-01-02T00:00:00Z');
INSERT INTO edges VALUES ('b', 'a', 'temporal', 1.0, '{}', '2026-01-02T00:00:00Z');
PRAGMA user_version = 1;
"""


def schema(path) -> dict[str, list[str]]:
    db = sqlite3.connect(path)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE '%fts%'")]
    out = {t: sorted(r[1] for r in db.execute(f"PRAGMA table_info({t})")) for t in sorted(tables)}
    out["indexes"] = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'"))
    out["triggers"] = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"))
    db.close()
    return out


def test_old_file_and_blank_file_end_with_the_same_schema(tmp_path) -> None:
    old = tmp_path / "old.db"
    db = sqlite3.connect(old)
    db.executescript(V0115_SCHEMA)
    db.close()
    SQLiteStore(old).close()
    SQLiteStore(tmp_path / "new.db").close()
    assert schema(old) == schema(tmp_path / "new.db")
    s = SQLiteStore(old)
    assert s.db.execute("PRAGMA user_version").fetchone()[0] == 100 + len(MIGRATIONS)
    assert [e.edge_type for e in s.iter_edges()] == ["temporal"]  # narrative edges purged
    assert s.get_insight("b") is None and s.count_deleted() == 1  # narrative insights soft-deleted
    assert s.count_active() == 1  # the counter starts from the migrated rows
    assert s.get_insight("a").stored_at == "2026-01-01T00:00:00Z"  # stored_at backfilled
    assert [h.id for h in s.token_hits({"qdrant"})] == ["a"]  # search tables backfilled
    assert s.with_entity("Qdrant", exclude="x", limit=5) == ["a"]
    assert s.db.execute("SELECT created_at, seq FROM insight_entities").fetchall() == [("2026-01-01T00:00:00Z", 1)]
    s.upsert_edge(Edge(source_id="a", target_id="b", edge_type="supersedes", created_at="2026-01-03T00:00:00Z"))
    s.close()


def test_migrations_are_numbered_without_gaps() -> None:
    assert [m.__name__[:4] for m in MIGRATIONS] == [f"_m{n:03d}"[:4] for n in range(1, len(MIGRATIONS) + 1)]


def _insight(id_: str, content: str = "x") -> Insight:
    t = "2026-01-01T00:00:00Z"
    return Insight(id=id_, content=content, created_at=t, updated_at=t, stored_at=t)


def test_the_active_counter_follows_every_write(tmp_path) -> None:
    s = SQLiteStore(tmp_path / "t.db")

    def counted() -> int:
        return s.db.execute("SELECT count(*) FROM insights WHERE deleted_at IS NULL").fetchone()[0]

    with s.transaction():
        for i in range(4):
            s.insert_insight(_insight(f"i{i}", f"c{i}"), {"x"})
    assert s.count_active() == counted() == 4
    s.soft_delete(["i0", "i1"], "2026-01-02T00:00:00Z")
    assert s.count_active() == counted() == 2
    s.soft_delete(["i1"], "2026-01-03T00:00:00Z")  # deleted again: still one fewer, not two
    s.db.execute("UPDATE insights SET deleted_at = NULL WHERE id = 'i0'")  # restored by hand
    s.db.execute("DELETE FROM insights WHERE id IN ('i1', 'i2')")  # one deleted row, one active
    assert s.count_active() == counted() == 2
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.insert_insight(_insight("i9", "c9"), {"x"})
            raise RuntimeError("rolled back")
    assert s.count_active() == counted() == 2
    s.close()


def test_nested_transaction_rolls_back_inner_only(tmp_path) -> None:
    s = SQLiteStore(tmp_path / "t.db")
    with s.transaction():
        s.insert_insight(_insight("outer"), {"x"})
        with pytest.raises(RuntimeError):
            with s.transaction():
                s.insert_insight(_insight("inner"), {"x"})
                raise RuntimeError("boom")
    assert s.get_insight("outer") is not None and s.get_insight("inner") is None
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.insert_insight(_insight("gone"), {"x"})
            raise RuntimeError("boom")
    assert s.get_insight("gone") is None
    s.close()


def test_vector_matrix_follows_writes_from_another_connection(tmp_path) -> None:
    path = tmp_path / "v.db"
    a, b = SQLiteStore(path), SQLiteStore(path)
    with a.transaction():
        for i in range(3):
            a.insert_insight(_insight(f"i{i}"), {"x"})
            a.set_vector(f"i{i}", np.eye(4, dtype=np.float32)[i] * 2, "m")
    ids, mat = b.vector_matrix("m", 4)
    assert ids == ["i0", "i1", "i2"]
    assert np.allclose(np.linalg.norm(mat, axis=1), 1.0)
    with a.transaction():
        a.soft_delete(["i1"], "2026-01-02T00:00:00Z")
        a.insert_insight(_insight("i3"), {"x"})
        a.set_vector("i3", np.ones(4, dtype=np.float32), "m")
        a.insert_insight(_insight("other"), {"x"})
        a.set_vector("other", np.ones(8, dtype=np.float32), "m")  # another dimension: ignored
    ids, _ = b.vector_matrix("m", 4)
    assert ids == ["i0", "i2", "i3"]
    assert b.vector_counts() == {"m:4": 3, "m:8": 1}
    a.close()
    b.close()


def test_token_hits_with_more_tokens_than_a_compound_select_allows(tmp_path) -> None:
    s = SQLiteStore(tmp_path / "t.db")
    words = [f"w{i}" for i in range(1200)]
    with s.transaction():
        s.insert_insight(_insight("long", " ".join(words)), set(words))
        s.insert_insight(_insight("short", "w5 w900"), {"w5", "w900"})
    hits = {h.id: h.hits for h in s.token_hits(words)}
    assert hits == {"long": 1200, "short": 2}
    s.close()


def test_vector_cache_recovers_from_a_rolled_back_write(tmp_path) -> None:
    s = SQLiteStore(tmp_path / "r.db")
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.insert_insight(_insight("gone"), {"x"})
            s.set_vector("gone", np.ones(4, dtype=np.float32), "m")
            assert s.vector_matrix("m", 4)[0] == ["gone"]  # read inside the transaction
            raise RuntimeError("boom")
    with s.transaction():
        s.insert_insight(_insight("kept"), {"x"})
        s.set_vector("kept", np.ones(4, dtype=np.float32), "m")
    assert s.vector_matrix("m", 4)[0] == ["kept"]
    s.close()


def test_graph_changes_name_what_own_commits_touched(tmp_path) -> None:
    s = SQLiteStore(tmp_path / "m.db")
    t = "2026-01-01T00:00:00Z"
    v0 = s.graph_version()
    with s.transaction():
        for i in "abcd":
            s.insert_insight(Insight(id=i, content=i, created_at=t, updated_at=t), {i})
    v1 = s.graph_version()
    assert s.graph_changes(v0, v1) == {"a", "b", "c", "d"}
    with s.transaction():
        s.upsert_edge(Edge(source_id="a", target_id="b", edge_type="causal", created_at=t))
        s.upsert_edge(Edge(source_id="c", target_id="b", edge_type="semantic", created_at=t))
    v2 = s.graph_version()
    assert s.graph_changes(v1, v2) == {"a", "b", "c"}
    with s.transaction():
        s.soft_delete(["b"], t)  # b and every neighbour whose list loses an edge
    v3 = s.graph_version()
    assert s.graph_changes(v2, v3) == {"a", "b", "c"} and s.graph_changes(v0, v3) == {"a", "b", "c", "d"}
    with pytest.raises(RuntimeError), s.transaction():
        s.delete_edge("c", "b", "semantic")
        raise RuntimeError("rolled back")
    v4 = s.graph_version()
    assert v4 != v3 and s.graph_changes(v3, v4) is None  # a reader may have seen the rolled-back row
    other = SQLiteStore(tmp_path / "m.db")
    other.upsert_edge(Edge(source_id="a", target_id="c", edge_type="causal", created_at=t))
    other.close()
    s.upsert_edge(Edge(source_id="a", target_id="d", edge_type="causal", created_at=t))
    assert s.graph_changes(v4, s.graph_version()) is None  # another connection committed in between
    v5 = s.graph_version()
    s.delete_edge("a", "d", "causal")  # outside a transaction: a commit of its own
    assert s.graph_changes(v5, s.graph_version()) == {"a", "d"}
    s.close()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=5), st.integers(), st.booleans(),
                                                      st.floats(allow_nan=False)), max_size=3))
def test_edge_metadata_is_encoded_as_json_with_sorted_keys(value) -> None:
    """The cached encoding gives what `json.dumps` gives, also after a mapping with equal-hashing values."""
    for v in (value, {k: 1 for k in value}, {k: True for k in value}, value):
        assert metadata_json(v) == json.dumps(v, ensure_ascii=False, sort_keys=True)


def _busy() -> sqlite3.OperationalError:
    e = sqlite3.OperationalError("database is locked")
    e.sqlite_errorcode = sqlite3.SQLITE_BUSY_RECOVERY  # type: ignore[attr-defined]
    return e


def test_an_open_refused_as_locked_is_tried_again(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    # SQLite may answer an open "database is locked" without waiting on the busy handler (several processes
    # opening a WAL file right after its writer was killed): the open is tried again, not failed at once.
    from mnemon_core.store import sqlite as module

    real, tries = SQLiteStore._open, []

    def flaky(self, readonly: bool) -> None:
        tries.append(readonly)
        if len(tries) < 3:
            raise _busy()
        real(self, readonly)

    monkeypatch.setattr(module, "OPEN_RETRY_S", 0.001)
    SQLiteStore(tmp_path / "m.db").close()
    monkeypatch.setattr(SQLiteStore, "_open", flaky)
    store = SQLiteStore(tmp_path / "m.db")
    assert len(tries) == 3 and store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_an_open_locked_past_the_busy_timeout_fails_in_one_line(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemon_core.errors import StoreError
    from mnemon_core.store import sqlite as module

    def locked(self, readonly: bool) -> None:
        raise _busy()

    monkeypatch.setattr(module, "OPEN_RETRY_S", 0.001)
    monkeypatch.setattr(module, "BUSY_TIMEOUT_MS", 30)
    monkeypatch.setattr(SQLiteStore, "_open", locked)
    with pytest.raises(StoreError) as caught:
        SQLiteStore(tmp_path / "m.db")
    assert str(caught.value) == f"cannot open database {tmp_path / 'm.db'}: database is locked"


def test_the_edges_check_is_the_edge_type_enum(tmp_path) -> None:
    """The edges table accepts exactly the `EdgeType` list (its CHECK is generated from the enum): every type
    is stored, any other name is refused by the database itself."""
    from mnemon_core.models import EdgeType

    s = SQLiteStore(tmp_path / "m.db")
    for i in ("a", "b"):
        s.insert_insight(Insight(id=i, content=i, created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z"),
                         frozenset())
    for t in EdgeType:
        s.upsert_edge(Edge(source_id="a", target_id="b", edge_type=t, weight=0.5, created_at="2026-01-01T00:00:00Z"))
    assert sorted(str(e.edge_type) for e in s.iter_edges()) == sorted(str(t) for t in EdgeType)
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        s.db.execute("INSERT INTO edges (source_id, target_id, edge_type, created_at) VALUES ('a', 'b', 'narrative', 'x')")
    s.close()
