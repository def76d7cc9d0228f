"""The tokenizer shared by keyword search, diff, causal overlap and rerank (reference §4.6), the overlap
measures built on it, and the stemmed terms BM25 ranks by.

Lower-case; split on anything that is not a Unicode letter, digit or combining mark; Han characters are cut
out of words and each Han run yields overlapping bigrams (a lone Han character yields itself); 80 English
stopwords are dropped ("not" and "no" among them, as in the original).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

STOPWORDS = frozenset(
    """a an the is are was were be been being have has had do does did will would could should may might
    shall can to of in for on with at by from as into about that this it its or and but if not no so up out
    than then too very just also more some any all each i me my we you your he she they them his her our
    their what which who how when where""".split()
)

_ASCII_WORD = re.compile(r"[a-z0-9]+")


def is_han(ch: str) -> bool:
    o = ord(ch)
    return (
        0x4E00 <= o <= 0x9FFF
        or 0x3400 <= o <= 0x4DBF
        or 0xF900 <= o <= 0xFAFF
        or 0x20000 <= o <= 0x2FA1F
        or 0x2E80 <= o <= 0x2FDF
        or o in (0x3005, 0x3007)
        or 0x3021 <= o <= 0x3029
    )


def _han_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _words(text: str) -> Iterable[str]:
    """Raw lower-case pieces: words, and Han runs as bigrams."""
    if text.isascii():
        yield from _ASCII_WORD.findall(text.lower())
        return
    word: list[str] = []
    han: list[str] = []
    for ch in text.lower():
        if is_han(ch):
            if word:
                yield "".join(word)
                word = []
            han.append(ch)
            continue
        if han:
            yield from _han_bigrams("".join(han))
            han = []
        if unicodedata.category(ch)[0] in "LNM":
            word.append(ch)
        elif word:
            yield "".join(word)
            word = []
    if word:
        yield "".join(word)
    if han:
        yield from _han_bigrams("".join(han))


def tokenize(text: str) -> list[str]:
    """Tokens in order of appearance, stopwords removed (duplicates kept)."""
    return [w for w in _words(text) if w not in STOPWORDS]


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def document(content: str, tags: Iterable[str], entities: Iterable[str]) -> str:
    """The text an insight is searched by: its content, tags and entities."""
    return " ".join([content, *tags, *entities])


def tokens_of(content: str, tags: Iterable[str], entities: Iterable[str]) -> frozenset[str]:
    """The tokens an insight is found by: content, tags and entities."""
    return token_set(document(content, tags, entities))


_stemmer: Any = None


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """The Snowball English (Porter2) stem of an ASCII token; other tokens (Han bigrams, other scripts, where
    an English stemmer would only do harm) are their own stem. So are digit runs and tokens under three
    characters, which Porter2 leaves as they are (skipping the stemmer for them: a draft's numbers are
    mostly distinct, so the cache does not catch them)."""
    if not token.isascii() or token.isdigit() or len(token) < 3:
        return token
    global _stemmer
    if _stemmer is None:  # imported at the first stem: the CLI's --version and help never pay for it
        from snowballstemmer.english_stemmer import EnglishStemmer

        _stemmer = EnglishStemmer()
    return str(_stemmer.stemWord(token))


def terms(text: str) -> list[str]:
    """BM25's view of a text: its tokens in order, duplicates kept (term frequency counts), each stemmed."""
    return [stem(t) for t in tokenize(text)]


def coverage(query: frozenset[str], doc: frozenset[str]) -> float:
    """Share of the query's tokens found in the document: |Q ∩ D| / |Q|."""
    if not query:
        return 0.0
    return len(query & doc) / len(query)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def overlap_max_len(a: frozenset[str], b: frozenset[str]) -> float:
    """|A ∩ B| / max(|A|, |B|): the causal builder's overlap."""
    m = max(len(a), len(b))
    return len(a & b) / m if m else 0.0


def overlap_min_len(a: frozenset[str], b: frozenset[str]) -> float:
    """max(|A∩B|/|A|, |A∩B|/|B|): the token fallback for semantic candidates."""
    m = min(len(a), len(b))
    return len(a & b) / m if m else 0.0
