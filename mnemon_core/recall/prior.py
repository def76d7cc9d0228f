"""Recall step 4, before the cut: what an insight is, apart from how well it matches — who said it.

In an imported chat the user's messages hold what the user knows, decided and prefers; the assistant's replies
restate and elaborate them at length, so they match a query's words and meaning about as well while rarely
being what the query is after (BEAM: 87 % of the evidence is the user's). The `hybrid` recipe multiplies the
score of an insight whose source is such a role by a factor (`RecallConfig.source_factor`); a source that names
a person (LoCoMo's speakers) or the defaults of `remember` are untouched.

A question about what the one asked said before ("how did you recommend …", "what have you suggested") is after
those replies: for it the factor is lifted (`RecallConfig.replies_asked_about`). A request to the assistant ("can
you help me …", "what would you suggest") is not, and keeps it: it is still the user's facts that answer it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from .graph import GraphView

__all__ = ["asks_what_you_said", "source_factor"]

# The addressee's earlier speech: "did/have/had you …", or "you (have/had/'ve) said/recommended/…".
_YOUR_EARLIER_WORDS = re.compile(
    r"\b(?:did|have|had)\s+you\b|\byou(?:'ve|\s+have|\s+had)?\s+(?:said|told|recommended|suggested|mentioned|"
    r"proposed|advised|explained|described|outlined|gave|showed|wrote|shared|listed)\b",
    re.IGNORECASE,
)


def asks_what_you_said(query: str) -> bool:
    """Whether the query asks what its addressee (the assistant) said earlier."""
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

