"""The keyword, entity and source indexes of a store whose database has none mnemon can rank with exactly, kept
in memory by the engine: built from the stored rows in one scan at the first keyword query, then kept in step
by the store's own writes.

A graph database's full-text index tokenises and scores its own way; recall must rank as on SQLite, to the last
bit (`base.bm25` over the stemmed terms, the spec's coverage over the distinct tokens). Kùzu lets one process
hold a database for writing (or several for reading, and then nobody writes), so the process that holds it sees
every write and an index it keeps cannot go stale. Only active insights are indexed: soft-deleted ones leave,
as they leave SQLite's `insights_bm25`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from typing import NamedTuple

from .base import NO_FILTERS, Filters, TokenHit, bm25, rank_by_coverage


class Indexed(NamedTuple):
    """What the indexes need of one active insight."""

    seq: int  # insertion order
    importance: int
    created_at: str
    category: str
    source: str
    tokens: frozenset[str]  # distinct pre-tokenised tokens (coverage)
    stems: tuple[str, ...]  # stemmed terms in order, duplicates kept (BM25)
    entities: tuple[str, ...]  # distinct, in order
    content: str  # exact-duplicate checks, substring search


def ascii_lower(text: str) -> str:
    """ASCII letters folded only, as SQLite's NOCASE and LIKE fold them."""
    return text.translate(_ASCII_FOLD)


_ASCII_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Postings:
    """Inverted indexes over the active insights: token → ids, stemmed term → {id: tf}, entity → ids,
    ASCII-folded source → ids; dicts keep insertion order, so matches come back in it as FTS5 returns them."""

    def __init__(self, rows: Iterable[tuple[str, Indexed]] = ()) -> None:
        self.rows: dict[str, Indexed] = {}
        self._tokens: dict[str, dict[str, None]] = {}
        self._stems: dict[str, dict[str, int]] = {}
        self._entities: dict[str, dict[str, None]] = {}
        self._lower: dict[str, dict[str, None]] = {}  # entity.lower() → spellings
        self._sources: dict[str, dict[str, None]] = {}
        self._content: dict[str, dict[str, None]] = {}
        self.total_stems = 0
        for id_, row in sorted(rows, key=lambda r: r[1].seq):
            self.add(id_, row)

    def add(self, id_: str, row: Indexed) -> None:
        self.rows[id_] = row
        for t in row.tokens:
            self._tokens.setdefault(t, {})[id_] = None
        for t, n in Counter(row.stems).items():
            self._stems.setdefault(t, {})[id_] = n
        for e in row.entities:
            self._entities.setdefault(e, {})[id_] = None
            self._lower.setdefault(e.lower(), {})[e] = None
        self._sources.setdefault(ascii_lower(row.source), {})[id_] = None
        self._content.setdefault(row.content, {})[id_] = None
        self.total_stems += len(row.stems)

    def remove(self, id_: str) -> None:
        row = self.rows.pop(id_, None)
        if row is None:
            return
        for t in row.tokens:
            _drop(self._tokens, t, id_)
        for t in set(row.stems):
            _drop(self._stems, t, id_)
        for e in row.entities:
            _drop(self._entities, e, id_)
            if e not in self._entities:
                _drop(self._lower, e.lower(), e)
        _drop(self._sources, ascii_lower(row.source), id_)
        _drop(self._content, row.content, id_)
        self.total_stems -= len(row.stems)

    # ------------------------------------------------------------------ `Insights` and `Search`

    def by_content(self, content: str) -> str | None:
        """The first active insight with exactly this content."""
        return next(iter(self._content.get(content, ())), None)

    def like(self, query: str, filters: Filters, limit: int) -> list[str]:
        """Active insights in scope whose content holds `query`, ASCII letters folded (SQLite's LIKE), by
        importance, newest, id."""
        needle = ascii_lower(query)
        found = [i for i, r in self.rows.items() if needle in ascii_lower(r.content) and in_scope(r, filters)]
        found.sort()
        found.sort(key=lambda i: self.rows[i].created_at, reverse=True)
        found.sort(key=lambda i: -self.rows[i].importance)
        return found[:limit]

    def _hits(self, toks: list[str], filters: Filters, exclude: str | None) -> list[TokenHit]:
        counts: Counter[str] = Counter()
        for t in toks:
            counts.update(self._tokens.get(t, {}).keys())
        out = []
        for id_, n in counts.items():
            r = self.rows[id_]
            if id_ == exclude or not in_scope(r, filters):
                continue
            out.append(TokenHit(id_, n, len(r.tokens), r.importance, r.created_at))
        return out

    def token_hits(
        self, tokens: Collection[str], *, filters: Filters = NO_FILTERS, exclude: str | None = None,
        limit: int | None = None, order: str = "coverage",
    ) -> list[TokenHit]:
        toks = sorted(set(tokens))
        hits = self._hits(toks, filters, exclude)
        if order == "overlap" and limit is not None:
            return _by_overlap(hits, len(toks))[:limit]
        ranked = rank_by_coverage(hits)
        return ranked if limit is None else ranked[:limit]

    def token_tops(self, tokens: Collection[str], limit: int) -> tuple[list[TokenHit], list[TokenHit]]:
        toks = sorted(set(tokens))
        hits = self._hits(toks, NO_FILTERS, None)
        return rank_by_coverage(hits)[:limit], _by_overlap(hits, len(toks))[:limit]

    def term_scores(self, term: str, length_cap: float | None = None) -> list[tuple[str, float]]:
        holders = self._stems.get(term)
        if not holders:
            return []
        n_docs, n_hits = len(self.rows), len(holders)
        return [(id_, bm25(tf, len(self.rows[id_].stems), n_docs, n_hits, self.total_stems, length_cap))
                for id_, tf in holders.items()]

    def source_hits(self, names: Collection[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name in dict.fromkeys(names):
            ids = self._sources.get(ascii_lower(name))
            if ids:
                out[name] = list(ids)
        return out

    def with_entity(self, entity: str, *, exclude: str, limit: int) -> list[str]:
        ids = [i for i in self._entities.get(entity, ()) if i != exclude]
        ids.sort(key=lambda i: (self.rows[i].created_at, self.rows[i].seq), reverse=True)
        return ids[:limit]

    def known_entities(self, candidates: Collection[str], *, casefold: bool = False) -> dict[str, str]:
        out: dict[str, str] = {}
        for c in candidates:
            if casefold:
                spellings = self._lower.get(c.lower())
                if spellings:
                    out[c.lower()] = min(spellings)
            elif c in self._entities:
                out[c] = c
        return out

    def entity_hits(self, entities_lower: Collection[str], filters: Filters = NO_FILTERS) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for el in set(entities_lower):
            ids: set[str] = set()
            for spelling in self._lower.get(el, ()):
                ids.update(self._entities[spelling])
            counts.update(ids)
        return {i: n for i, n in counts.items() if in_scope(self.rows[i], filters)}

    def top_entities(self, limit: int) -> list[tuple[str, int]]:
        ranked = sorted(((e, len(ids)) for e, ids in self._entities.items()), key=lambda x: (-x[1], x[0]))
        return ranked[:limit]


def _drop(index: dict[str, dict[str, object]], key: str, id_: str) -> None:
    ids = index.get(key)
    if ids is not None:
        ids.pop(id_, None)
        if not ids:
            del index[key]


def in_scope(r: Indexed, filters: Filters) -> bool:
    return (filters.category is None or r.category == filters.category) and (
        filters.source is None or r.source == filters.source)


def _by_overlap(hits: list[TokenHit], n_query: int) -> list[TokenHit]:
    """hits / min(|query|, n_tokens) desc, then id: SQLite's `CAST(hits AS REAL) / max(1, min(?, n_tokens))`."""
    return sorted(hits, key=lambda h: (-(float(h.hits) / max(1, min(n_query, h.n_tokens))), h.id))
