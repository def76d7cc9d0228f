"""Step 2.5: the built-in diff (spec 5.3, reference §3.3 [L]).

Only byte-identical content among all active insights skips the write. Everything else is added; the
ADD / UPDATE / CONFLICT / DUPLICATE label is advice for the host LLM, computed from the top keyword matches
(Jaccard of tokens, replaced by cosine when the cosine is high) and a few cosine-only neighbours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..store import Store, TokenHit
from ..text import jaccard, token_set
from .constants import (
    DIFF_ADD_BELOW,
    DIFF_CANDIDATES,
    DIFF_COSINE_GATE,
    DIFF_COSINE_ONLY,
    DIFF_DUPLICATE_ABOVE,
    DIFF_EXTENSION_RATIO,
    DIFF_NEGATION_AT,
    NEGATION_PHRASES,
)

# Polarity words for "X is allowed" vs "X is not allowed" (PR #135): a restatement whose polarity differs
# is a CONFLICT, never a DUPLICATE.
_POLARITY = re.compile(r"\b(not|no|never|cannot|can't|without|none|nothing|nobody)\b|n't\b")


@dataclass(frozen=True)
class DiffMatch:
    id: str
    similarity: float
    token_similarity: float
    suggestion: str


def classify(similarity: float, new: str, old: str, token_sim: float) -> str:
    if similarity < DIFF_ADD_BELOW:
        return "ADD"
    a, b = new.lower(), old.lower()
    if similarity >= DIFF_NEGATION_AT and any(p in a or p in b for p in NEGATION_PHRASES):
        return "CONFLICT"
    if similarity > DIFF_DUPLICATE_ABOVE:
        if token_sim > DIFF_DUPLICATE_ABOVE and _polarity(a) != _polarity(b):
            return "CONFLICT"
        if len(new) > len(old) * DIFF_EXTENSION_RATIO:
            return "UPDATE"  # an extension of the old text, never its duplicate
        return "DUPLICATE"
    return "UPDATE"


def _polarity(text: str) -> int:
    return len(_POLARITY.findall(text)) % 2


def suggest(
    store: Store,
    content: str,
    tokens: frozenset[str],
    by_coverage: list[TokenHit],
    cosines: dict[str, float] | None = None,
) -> tuple[str, list[DiffMatch]]:
    """The advisory label and the matches behind it. `tokens`: the new content's tokens; `by_coverage`: the
    insights holding most of them (`Store.token_tops`); `cosines`: calibrated cosine of the new vector with each
    embedded active insight (absent without vectors)."""
    # Top 5 by keyword coverage, ties → higher importance.
    top = [h.id for h in by_coverage[:DIFF_CANDIDATES]]
    cos = cosines or {}
    extra = []
    if cos:
        extra = [i for i, c in sorted(cos.items(), key=lambda kv: (-kv[1], kv[0])) if c >= DIFF_COSINE_ONLY]
        extra = [i for i in extra if i not in top][:DIFF_CANDIDATES]
    rows = store.get_insights(top + extra)
    matches: list[DiffMatch] = []
    for id_ in top + extra:
        ins = rows.get(id_)
        if ins is None:
            continue
        tok = jaccard(tokens, token_set(ins.content))
        sim = tok
        c = cos.get(id_)
        if c is not None and c >= DIFF_COSINE_GATE and c > sim:
            sim = c
        label = classify(sim, content, ins.content, tok)
        if id_ in extra and label == "ADD":
            continue
        matches.append(DiffMatch(id_, sim, tok, label))
    matches.sort(key=lambda m: (-m.similarity, m.id))
    if not matches:
        return "ADD", []
    if any(m.suggestion == "DUPLICATE" for m in matches):
        return "DUPLICATE", matches
    return matches[0].suggestion, matches
