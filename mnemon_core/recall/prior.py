"""Recall step 4, before the cut: what an insight is, apart from how well it matches — who said it, and whether
it states a preference.

In an imported chat the user's messages hold what the user knows, decided and prefers; the assistant's replies
restate and elaborate them at length, so they match a query's words and meaning about as well while rarely
being what the query is after (BEAM: 87 % of the evidence is the user's). The `hybrid` recipe multiplies the
score of an insight whose source is such a role by a factor (`RecallConfig.source_factor`); a source that names
a person (LoCoMo's speakers) or the defaults of `remember` are untouched.

A question about what the one asked said before ("how did you recommend …", "what have you suggested"), or one
that points back at the conversation itself ("can you remind me …", "in our previous chat …": the two sides of
it, not the user's facts alone), is after those replies too: for it the factor is lifted
(`RecallConfig.replies_asked_about`). A request to the assistant ("can
you help me …", "what would you suggest") is not, and keeps it: it is still the user's facts that answer it.

What answers a request is often how the one asking likes things done, stated long before and in other words
("I prefer step-by-step explanations with concrete examples" for "can you walk me through this problem?"). For a
request (`asks_for_help`) the score of an insight that states a preference — its category is `preference`, or it
holds a preference word (`PREFERENCE_TERMS`) — is multiplied by `RecallConfig.preference_factor`. It only reorders
what the query's words, meaning and neighbours already brought: a preference about something else stays below
them. Both recipes leave it at 1 (off): it helped one benchmark only (docs/recall.md, departure 11).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from ..graph import GraphView
from ..store import Filters
from .constants import PREFERENCE_CATEGORY, PREFERENCE_TERMS

__all__ = ["asks_for_help", "asks_what_you_said", "preference_factor", "source_factor"]

# The addressee's earlier speech: "did/have/had you …", "you (have/had/'ve) said/recommended/…", or the earlier
# conversation itself: "remind me …", "our/the/that previous/earlier/last conversation/chat/discussion".
_YOUR_EARLIER_WORDS = re.compile(
    r"\bremind\s+me\b|\b(?:our|the|that)\s+(?:previous|earlier|last)\s+(?:conversation|chat|discussion)s?\b|"
    r"\b(?:did|have|had)\s+you\b|\byou(?:'ve|\s+have|\s+had)?\s+(?:said|told|recommended|suggested|mentioned|"
    r"proposed|advised|explained|described|outlined|gave|showed|wrote|shared|listed)\b",
    re.IGNORECASE,
)


# A request to the addressee: "can/could/would/will you …", "how should/do/can I …", "what … should I …",
# "help me", "walk me through", "do you think", "you suggest/recommend" (not "did you suggest": that is
# `asks_what_you_said`).
_REQUEST = re.compile(
    r"\b(?:can|could|would|will)\s+you\b|\bhow\s+(?:should|do|can|would)\s+i\b|"
    r"\b(?:what|which|where|how|when)\b[^?.!]*\bshould\s+i\b|\bhelp\s+me\b|\bwalk\s+me\b|"
    r"\bdo\s+you\s+think\b|\byou\s+(?:suggest|recommend)\b",
    re.IGNORECASE,
)


def asks_for_help(query: str) -> bool:
    """Whether the query asks its addressee for help or advice (and not what it said before)."""
    return _REQUEST.search(query) is not None and not asks_what_you_said(query)


def asks_what_you_said(query: str) -> bool:
    """Whether the query asks what its addressee (the assistant) said earlier, or points back at the conversation."""
    return _YOUR_EARLIER_WORDS.search(query) is not None


def source_factor(view: GraphView, nodes: np.ndarray, factors: Mapping[str, float]) -> np.ndarray | None:
    """Per node, the factor of its source (1 for a source without one); None when no factor applies."""
    if not factors:
        return None
    names = sorted(factors)
    out = np.ones(nodes.shape[0], dtype=np.float64)
    for name, posting in zip(names, view.source_postings(names)):
        if posting.size:
            out[np.isin(nodes, posting)] *= factors[name]
    return out


def preference_factor(view: GraphView, nodes: np.ndarray, factor: float) -> np.ndarray | None:
    """Per node, `factor` where the insight states a preference (its category, or a preference word among its
    stemmed terms), else 1; None when the factor is 1."""
    if factor == 1.0:
        return None
    states = view.scope_mask(nodes, Filters(category=PREFERENCE_CATEGORY))
    for posting, _ in view.term_postings(PREFERENCE_TERMS):
        states |= np.isin(nodes, posting)
    return np.where(states, factor, 1.0)
