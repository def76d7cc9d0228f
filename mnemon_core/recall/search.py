"""`search` (spec 003 "search"): keyword search with recall's keyword signal, BM25 over the query's stemmed
terms ("migration" finds "migrations"); score = BM25 / this query's best; ties by importance, newer, id.
`Memory.search` checks the input, calls `keyword_search` here and counts the access."""

from __future__ import annotations

from ..models import SearchHit
from ..store import Store
from ..text import terms

__all__ = ["keyword_search"]


def keyword_search(store: Store, query: str, limit: int) -> list[SearchHit]:
    """The `limit` best active insights for `query`, best first."""
    bm25: dict[str, float] = {}
    for term in dict.fromkeys(terms(query)):
        for id_, s in store.term_scores(term):
            bm25[id_] = bm25.get(id_, 0.0) + s
    ranked = sorted(bm25.items(), key=lambda kv: -kv[1])
    if len(ranked) > limit:  # only what can make the cut is read and ordered on the full key
        cut = ranked[limit - 1][1]
        ranked = [kv for kv in ranked if kv[1] >= cut]
    rows = store.get_insights([i for i, _ in ranked])
    found = sorted((kv for kv in ranked if kv[0] in rows), key=lambda kv: kv[0])
    found.sort(key=lambda kv: rows[kv[0]].created_at, reverse=True)
    found.sort(key=lambda kv: (-kv[1], -rows[kv[0]].importance))
    best = found[0][1] if found else 0.0
    return [
        SearchHit(id=i, content=rows[i].content, category=rows[i].category, importance=rows[i].importance,
                  tags=rows[i].tags, score=s / best if best > 0 else 0.0)
        for i, s in found[:limit]
    ]
