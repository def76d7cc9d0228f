"""BM25: SQLite's FTS5 `bm25()` is the reference, and `store.base.bm25` reproduces it bit for bit."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemon_core.models import Insight
from mnemon_core.store.base import bm25
from mnemon_core.store.sqlite import SQLiteStore
from mnemon_core.text import document, stem, terms, token_set

T0 = "2026-01-01T00:00:00Z"
LONG = "y" * 300  # longer than a GIN key may be: Postgres indexes it by its md5
WORDS = ["cache", "caching", "cached", "redis", "latency", "数据库连接", "配置", LONG, "alpha", "beta", "gamma"]


def insight(id_: str, content: str, tags: tuple[str, ...] = (), entities: tuple[str, ...] = (),
            source: str = "user") -> Insight:
    return Insight(id=id_, content=content, tags=list(tags), entities=list(entities), source=source, created_at=T0,
                   updated_at=T0, stored_at=T0)


def put(store, rows: list[Insight]) -> None:
    with store.transaction():
        for ins in rows:
            store.insert_insight(ins, token_set(document(ins.content, ins.tags, ins.entities)))


def expected(active: list[Insight], term: str) -> list[tuple[str, float]]:
    """`bm25()` by the definition, from the insights' terms: what both stores must return, in insertion order."""
    docs = [(ins.id, terms(document(ins.content, ins.tags, ins.entities))) for ins in active]
    total = sum(len(d) for _, d in docs)
    hits = [(id_, d) for id_, d in docs if term in d]
    return [(id_, bm25(d.count(term), len(d), len(docs), len(hits), total)) for id_, d in hits]


# ------------------------------------------------------------------ the formula against FTS5


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=12),
    deleted=st.sets(st.integers(0, 11)),
)
def test_bm25_is_sqlite_fts5s_to_the_bit(docs: list[list[str]], deleted: set[int]) -> None:
    rows = [insight(f"i{n:02}", " ".join(words)) for n, words in enumerate(docs)]
    gone = [r.id for n, r in enumerate(rows) if n in deleted]
    with tempfile.TemporaryDirectory() as d:
        sq = SQLiteStore(Path(d) / "bm25.db")
        try:
            put(sq, rows)
            with sq.transaction():
                sq.soft_delete(gone, T0)
            active = [r for r in rows if r.id not in gone]
            for term in {stem(w) for w in WORDS for w in terms(w)}:
                assert sq.term_scores(term) == expected(active, term)  # exact floats, same order
        finally:
            sq.close()


def test_bm25_floors_the_idf_of_a_term_in_most_insights() -> None:
    assert bm25(1, 3, 4, 3, 12) == 1e-6 * ((1 * 2.2) / (1 + 1.2 * (0.25 + 0.75 * 3 / 3.0)))
    assert bm25(2, 4, 10, 1, 30) == math.log(9.5 / 1.5) * ((2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 4 / 3.0)))
