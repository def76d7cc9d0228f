"""BM25, source lookup, session tails and temporal sub-types on both stores: SQLite's FTS5 `bm25()` is the
reference, `store.base.bm25` reproduces it bit for bit, and the Postgres store ranks with that function from
the stems and counters it keeps, so both stores give the same floats in the same order."""

from __future__ import annotations

import math
import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest
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


def expected(active: list[Insight], term: str, cap: float | None = None) -> list[tuple[str, float]]:
    """`bm25()` by the definition, from the insights' terms: what both stores must return, in insertion order
    (`cap`: a length counts at most that many average lengths)."""
    docs = [(ins.id, terms(document(ins.content, ins.tags, ins.entities))) for ins in active]
    total = sum(len(d) for _, d in docs)
    hits = [(id_, d) for id_, d in docs if term in d]
    avgdl = total / len(docs) if docs else 0.0
    return [(id_, bm25(d.count(term), len(d) if cap is None else min(len(d), cap * avgdl), len(docs), len(hits),
                       total)) for id_, d in hits]


# ------------------------------------------------------------------ the formula against FTS5


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=12),
    deleted=st.sets(st.integers(0, 11)),
    cap=st.sampled_from([0.5, 1.0, 1.5, 3.0]),
)
def test_bm25_is_sqlite_fts5s_to_the_bit(docs: list[list[str]], deleted: set[int], cap: float) -> None:
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
                # the length cap (RecallConfig.bm25_length_cap), computed beside FTS5 from the same counts;
                # so large a cap that no length reaches it is FTS5's own score
                assert sq.term_scores(term, cap) == expected(active, term, cap)
                assert sq.term_scores(term, 1e9) == sq.term_scores(term)
        finally:
            sq.close()


def test_bm25_floors_the_idf_of_a_term_in_most_insights() -> None:
    assert bm25(1, 3, 4, 3, 12) == 1e-6 * ((1 * 2.2) / (1 + 1.2 * (0.25 + 0.75 * 3 / 3.0)))
    assert bm25(2, 4, 10, 1, 30) == math.log(9.5 / 1.5) * ((2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 4 / 3.0)))


# ------------------------------------------------------------------ the two stores


CORPUS = [
    insight("a", "Redis caches the session data because latency matters", ("infra",), ("Redis",), "Alice"),
    insight("b", "caching caching and more caching of cached pages", source="alice"),
    insight("c", "数据库连接池配置 uses Redis", ("db",), ("Redis", "PostgreSQL"), "ALICE"),
    insight("d", "a note with a long token " + LONG, source="Ünal"),
    insight("e", "latency budget for the cache tier", (), ("Cache",), "ünal"),
    insight("f", "nothing in common here", source="Bob"),
]
TERMS = [stem("redis"), stem("caching"), stem("latency"), "数据", "池配", stem(LONG), "nothing", "absent"]


@pytest.fixture
def sq(tmp_path: Path):
    s = SQLiteStore(tmp_path / "ref.db")
    yield s
    s.close()


@pytest.fixture
def pg(pg_url: str, pg_store_name: str):
    from mnemon_core.store.postgres import PostgresStore

    s = PostgresStore(pg_url, store=pg_store_name)
    yield s
    s.close()


def scores(store, cap: float | None = None) -> dict[str, list[tuple[str, float]]]:
    return {t: store.term_scores(t, cap) for t in TERMS}


def by_score(rows: list[tuple[str, float]]) -> list[str]:
    return [id_ for id_, _ in sorted(rows, key=lambda r: (-r[1], r[0]))]


@pytest.mark.integration
def test_term_scores_are_equal_on_both_stores(sq, pg) -> None:
    put(sq, CORPUS)
    put(pg, CORPUS)
    before = scores(sq)
    assert scores(pg) == before
    assert scores(pg, 1.0) == scores(sq, 1.0) == {t: expected(CORPUS, t, 1.0) for t in TERMS}
    assert before == {t: expected(CORPUS, t) for t in TERMS}
    assert by_score(before[stem("caching")]) == ["b", "e", "a"]  # tf 4 beats tf 1; the shorter insight next
    assert [i for i, _ in before["数据"]] == ["c"] and [i for i, _ in before[stem(LONG)]] == ["d"]
    assert before["absent"] == []
    # a soft delete changes N, the term's document frequency and the average length
    for s in (sq, pg):
        with s.transaction():
            s.soft_delete(["b", "f"], T0)
    after = scores(sq)
    assert scores(pg) == after == {t: expected([c for c in CORPUS if c.id not in "bf"], t) for t in TERMS}
    assert after[stem("latency")] != before[stem("latency")] and after["nothing"] == []
    # inside a write transaction a store ranks with its own uncommitted insights
    more = [insight("g", "redis redis redis"), insight("h", "gone", source="x")]
    for s in (sq, pg):
        with s.transaction():
            put(s, more)
            s.soft_delete(["h"], T0)
            assert s.term_scores(stem("redis")) == expected([c for c in CORPUS if c.id not in "bf"] + more[:1],
                                                             stem("redis"))
    assert scores(pg) == scores(sq)
    assert by_score(pg.term_scores(stem("redis")))[0] == "g"


@pytest.mark.integration
def test_postgres_lookups_use_their_indexes(pg) -> None:
    """In a store of some size the planner takes the new indexes for `term_scores` and `source_hits`: the
    queries' expressions are the indexed ones (the term keys; lower() under the "C" collation)."""
    from mnemon_core.store.postgres import DumpRow

    filler = [insight(f"z{n:05}", f"filler text number {n} of many", source=f"speaker{n}") for n in range(5000)]
    pg.load((DumpRow(i, token_set(i.content), None, None) for i in [*filler, *CORPUS]), [], [])  # ANALYZEs
    sent: list[tuple[str, object]] = []
    real = pg._exec
    pg._exec = lambda sql, args=(), **kw: sent.append((sql, args)) or []  # type: ignore[method-assign]
    try:
        pg.term_scores(stem("redis"))
        pg.source_hits(["alice"])
    finally:
        pg._exec = real  # type: ignore[method-assign]
    plans = ["\n".join(r[0] for r in real("EXPLAIN " + sql, args)) for sql, args in sent]
    for plan, index in zip(plans, ["insights_stems", "insights_source_lower"], strict=True):
        assert re.search(rf"Index Scan (on|using) {index}\b", plan), plan
    assert pg.term_scores(stem("redis")) == expected([*filler, *CORPUS], stem("redis"))
    assert pg.source_hits(["alice"]) == {"alice": ["a", "b", "c"]}


def test_source_hits_fold_ascii_letters_only(mem) -> None:
    put(mem.store, CORPUS)
    with mem.store.transaction():
        mem.store.soft_delete(["f"], T0)
    assert mem.store.source_hits(["alice", "Ünal", "ünal", "bob", "carol", "ALICE"]) == {
        "alice": ["a", "b", "c"], "Ünal": ["d"], "ünal": ["e"], "ALICE": ["a", "b", "c"]}
    assert mem.store.source_hits([]) == {}


def test_session_tails(mem) -> None:
    s = mem.store
    put(s, CORPUS[:3])
    assert s.session_tail("chat-1") is None
    with s.transaction():
        s.set_session_tail("chat-1", "a")
        s.set_session_tail("chat-2", "b")
        s.set_session_tail("chat-1", "c")  # the newest replaces the tail
    assert (s.session_tail("chat-1"), s.session_tail("chat-2"), s.session_tail("CHAT-1")) == ("c", "b", None)
    with s.transaction():
        s.soft_delete(["c"], T0)
    assert s.session_tail("chat-1") is None  # a forgotten tail continues nothing


def test_adjacency_carries_the_temporal_sub_type(mem) -> None:
    # Two speakers in one session: the backbone runs per source, the conversation edge joins the turns.
    q = mem.remember("Where does Priya live?", source="bob", session="talk").id
    a = mem.remember("Priya lives in Lisbon", source="priya", session="talk").id
    b = mem.remember("Priya works as an architect", source="priya", session="talk").id
    mem.link(q, b, type="causal", weight=0.5)
    name = {q: "q", a: "a", b: "b"}
    # (a proximity weight is 1 / (1 + hours between the two): rounded, as a slow store may cross a second)
    rows = Counter((name[i], name[o], t, round(w, 2), sub) for i, o, t, w, sub in mem.store.adjacency([q, a, b]))
    # every edge is stored both ways, and each is read from both of its ends
    assert rows == {r: 2 for x, y, t, w, sub in [
        ("a", "b", "temporal", 1.0, "backbone"), ("a", "q", "temporal", 1.0, "conversation"),
        ("b", "q", "temporal", 1.0, "proximity"), ("b", "q", "causal", 0.5, None),
    ] for r in [(x, y, t, w, sub), (y, x, t, w, sub)]}


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text("0123456789", min_size=1, max_size=12),
                 st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=2)))
def test_tokens_that_skip_the_stemmer_are_what_it_would_give(token: str) -> None:
    """Digit runs and tokens under three characters are their own stem without asking Snowball: the same."""
    from snowballstemmer.english_stemmer import EnglishStemmer

    assert stem(token) == EnglishStemmer().stemWord(token) == token
