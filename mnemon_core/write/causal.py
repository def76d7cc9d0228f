"""Causal graph builder (spec 004 §4.3, reference §3.6): a causal keyword in either text plus token overlap
≥ 0.15 with one of the 10 most recent insights of the same source gives one directed edge, cause → effect.
The side that holds the keyword is the effect."""

from __future__ import annotations

import re
from functools import lru_cache

from ..models import Edge, EdgeType, Insight
from ..text import overlap_max_len, token_set
from .constants import CAUSAL_LOOKBACK, CAUSAL_MIN_OVERLAP
from .target import WriteTarget

CAUSAL_KEYWORDS_EN = (
    "because", "therefore", "due to", "caused by", "as a result", "decided to", "chosen because", "so that",
    "in order to", "leads to", "results in",
)
CAUSAL_KEYWORDS_ZH = ("因为", "所以", "由于", "导致", "因此", "决定", "为了", "以便")

_CAUSAL_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(k) for k in CAUSAL_KEYWORDS_EN) + r")\b"
    + "|" + "|".join(CAUSAL_KEYWORDS_ZH),
    re.IGNORECASE,
)

# Sub-type guess, first family that matches wins: prevents > enables > causes.
SUB_TYPE_CUES = (
    ("prevents", ("despite", "prevented", "prevents", "blocked", "阻止", "防止")),
    ("enables", ("so that", "in order to", "enables", "leads to", "为了", "以便")),
    ("causes", ("because", "caused by", "due to", "因为", "由于")),
)


def causal_signal(text: str) -> str:
    """The first causal keyword in the text, in its original casing, or ""."""
    m = _CAUSAL_RE.search(text)
    return m.group(0) if m else ""


@lru_cache(maxsize=4096)  # each insight asks it of its look-back window: the same texts again and again
def has_causal_keyword(text: str) -> bool:
    return _CAUSAL_RE.search(text) is not None


def suggest_sub_type(text: str) -> str:
    low = text.lower()
    for sub_type, cues in SUB_TYPE_CUES:
        if any(c in low for c in cues):
            return sub_type
    return "causes"


def create_causal_edges(store: WriteTarget, new: Insight, tokens: frozenset[str], now: str) -> int:
    edges: list[Edge] = []
    new_kw = has_causal_keyword(new.content)
    recent = store.latest(source=new.source, exclude=new.id, limit=CAUSAL_LOOKBACK)
    if not recent:
        return 0
    others = store.insight_tokens([o.id for o in recent])
    for old in recent:
        old_kw = has_causal_keyword(old.content)
        if not (new_kw or old_kw):
            continue
        old_tokens = others[old.id] if old.id in others else token_set(old.content)
        overlap = overlap_max_len(tokens, old_tokens)
        if overlap < CAUSAL_MIN_OVERLAP:
            continue
        src, dst = (old.id, new.id) if new_kw else (new.id, old.id)
        meta = {"overlap": f"{overlap:.4f}", "sub_type": suggest_sub_type(new.content + " " + old.content)}
        edges.append(Edge(source_id=src, target_id=dst, edge_type=EdgeType.causal, weight=overlap, metadata=meta,
                          created_at=now))
    store.upsert_edges(edges)
    return len(edges)
