"""What `recall` returns, as pydantic models whose `model_dump(mode="json")` is the CLI's JSON (reference §1.2,
§4.5): the compact default, `--verbose` and `--brief` shapes, and how one is made from the other. Keys the
reference marks omitempty are dropped when empty (`superseded` only appears when true).

A smart recall gives one typed result, `VerboseRecallResult`; `compact()` and `brief()` shape it. Both round
the score half away from zero to 3 decimals. Confidence is the hit's own label where the recipe gave one (the
`hybrid` recipe: how much of the query it covers, `evidence.py`), else the spec's, from the *rounded* score
(< 0.25 low, < 0.6 medium, else high). Brief replaces the content with a whitespace-collapsed excerpt of at
most `--excerpt-chars` characters (ending in "…" when cut).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, create_model, model_serializer

from ..models import Category, Insight, Intent, OmitEmpty
from .constants import CONFIDENCE_HIGH, CONFIDENCE_LOW, DETAIL_COMMAND, EXCERPT_CHARS, SCORE_DECIMALS, SIGNALS

__all__ = [
    "BriefHit",
    "BriefRecallResult",
    "BudgetHit",
    "BudgetRecallResult",
    "RecallHit",
    "RecallMeta",
    "RecallResult",
    "Signals",
    "VerboseHit",
    "VerboseRecallResult",
    "brief_basic",
    "confidence",
    "excerpt",
    "round_score",
]


HINT = '"sparse_results" when nothing or fewer than limit/2 results came back (integer division)'
NO_MATCH = ("true when results came back but none of them covers the query (every confidence is low): what "
            "recency or the graph offered; `hybrid` recipe only")


class RecallMeta(OmitEmpty):
    """How a smart recall ran. Shown under `meta` with `--verbose`; always readable from the library."""

    _omit_empty = frozenset({"hint", "no_match", "vectors_pending"})

    intent: Intent
    intent_source: str = Field(description='"auto" (detected from the query) or "override" (--intent)')
    anchor_count: int = Field(description="distinct anchors chosen by RRF over the four signals")
    traversed: int = Field(description="distinct insights the beam search scored (anchors included)")
    hint: str = Field(default="", description=HINT)
    no_match: bool = Field(default=False, description=NO_MATCH)
    vectors_pending: int = Field(default=0, description="insights a large import wrote whose vectors are still "
                                 "being filled in: the vector signal could not rank them yet; absent when 0")


# What each rerank signal of `recall --verbose` is, by name; `Signals` has one field per name of `SIGNALS`.
SIGNAL_DESCRIPTIONS = {
    "keyword": "share of the query's tokens the insight holds",
    "entity": "share of the query's entities the insight names",
    "similarity": "calibrated cosine with the query when > 0, else 0 (0 without vectors)",
    "graph": "min-max normalised beam-search score over all candidates",
}
Signals = create_model(  # type: ignore[call-overload]
    "Signals",
    __doc__="The rerank signals of one result, each in [0, 1] (spec §5.2 \"Signals 透明度\"), in `SIGNALS` order.",
    __module__=__name__,
    **{n: (float, Field(description=SIGNAL_DESCRIPTIONS[n])) for n in SIGNALS},
)


class RecallHit(OmitEmpty):
    """One compact result: what an agent needs to use a memory, nothing more."""

    _omit_empty = frozenset({"category", "importance", "matched_via", "superseded"})

    id: str
    content: str
    category: Category | str = ""
    importance: int = 0
    intent: Intent
    matched_via: str = Field(
        default="", description="keyword | vector | time | entity | hybrid, or the edge type that brought it"
    )
    confidence: str = Field(
        description='"low", "medium" or "high": how much of the query it covers (hybrid recipe), or from the '
        "rounded score (< 0.25, < 0.6; spec recipe)"
    )
    score: float = Field(description="final score rounded half away from zero to 3 decimals")
    superseded: bool = Field(default=False, description="another insight claims to replace this one")


class RecallResult(OmitEmpty):
    """The default (compact) recall output. `meta` is not part of the JSON but is kept for library callers."""

    _omit_empty = frozenset({"hint", "no_match"})

    results: list[RecallHit]
    hint: str = Field(default="", description=HINT)
    no_match: bool = Field(default=False, description=NO_MATCH)
    meta: RecallMeta | None = Field(default=None, exclude=True)


PASSAGE = "the memory's best-matching passage, … where it was cut; `show <id>` gives the whole"


class VerboseHit(OmitEmpty):
    _omit_empty = frozenset({"via", "superseded", "passage"})

    insight: Insight
    score: float
    intent: Intent
    via: str = ""
    signals: Signals
    superseded: bool = False
    passage: str = Field(default="", description=f"within a token budget: {PASSAGE} (empty: shown whole)")
    confidence: str = Field(
        default="", exclude=True, description="the recipe's label for this hit; empty: from the rounded score"
    )


class VerboseRecallResult(BaseModel):
    """What a smart recall found, before any shaping (`Memory.retrieve`): the ranked hits with their full
    insights, raw scores, labels and four signals, and the run's meta. Its JSON is `recall --verbose`;
    `compact()` and `brief()` give the other shapes."""

    results: list[VerboseHit]
    meta: RecallMeta

    def budgeted(self) -> BudgetRecallResult:
        """What an agent reads within a token budget (`recall --max-tokens N`; `budget.fit` chooses the hits and
        their passages): each memory's id, its content or passage, and its confidence."""
        hits = [
            BudgetHit(id=h.insight.id, content=h.passage or h.insight.content, truncated=bool(h.passage),
                      confidence=h.confidence or confidence(round_score(h.score)), superseded=h.superseded)
            for h in self.results
        ]
        return BudgetRecallResult(results=hits, hint=self.meta.hint, no_match=self.meta.no_match, meta=self.meta)

    def compact(self) -> RecallResult:
        """The default shape: what an agent needs of each hit (`recall`'s JSON)."""
        hits = []
        for h in self.results:
            ins = h.insight
            score = round_score(h.score)
            hits.append(
                RecallHit(
                    id=ins.id, content=ins.content, category=ins.category, importance=ins.importance,
                    intent=h.intent, matched_via=h.via, confidence=h.confidence or confidence(score), score=score,
                    superseded=h.superseded,
                )
            )
        return RecallResult(results=hits, hint=self.meta.hint, no_match=self.meta.no_match, meta=self.meta)

    def brief(self, excerpt_chars: int = EXCERPT_CHARS) -> BriefRecallResult:
        """Excerpts of at most `excerpt_chars` characters instead of contents (`recall --brief`)."""
        hits = []
        for h in self.results:
            ins = h.insight
            score = round_score(h.score)
            hits.append(
                BriefHit(id=ins.id, excerpt=excerpt(ins.content, excerpt_chars), category=ins.category,
                         score=score, confidence=h.confidence or confidence(score), superseded=h.superseded)
            )
        return BriefRecallResult(
            results=hits, hint=self.meta.hint, no_match=self.meta.no_match,
            detail_command=DETAIL_COMMAND if hits else "", meta=self.meta,
        )


class BudgetHit(OmitEmpty):
    """One memory within a token budget: what the agent reads of it and the id that gives the rest."""

    _omit_empty = frozenset({"truncated", "superseded"})

    id: str
    content: str = Field(description=f"the memory whole, or {PASSAGE}")
    confidence: str = Field(description='"low", "medium" or "high", as in the compact shape')
    truncated: bool = Field(default=False, description="content is a passage of the memory")
    superseded: bool = Field(default=False, description="another insight claims to replace this one")


class BudgetRecallResult(OmitEmpty):
    """`recall --max-tokens N`: the best results in rank order whose printed JSON is at most N tokens (e5's
    tokenizer, `budget.py`). The ranking's details (score, intent, via, importance, category: ~50 tokens a
    memory) are left out so the budget goes to what the memories say."""

    _omit_empty = frozenset({"hint", "no_match"})

    results: list[BudgetHit]
    hint: str = Field(default="", description=HINT)
    no_match: bool = Field(default=False, description=NO_MATCH)
    meta: RecallMeta | None = Field(default=None, exclude=True)


class BriefHit(BaseModel):
    """`--brief`: an excerpt instead of the content; `score`/`confidence` absent for `--basic`."""

    id: str
    excerpt: str
    category: Category | str = ""
    score: float | None = None
    confidence: str = ""
    superseded: bool = False

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        for key in ("category", "confidence", "superseded"):
            if not data.get(key):
                data.pop(key, None)
        if data.get("score") is None:  # a pointer in the original: 0 is shown, absent is omitted
            data.pop("score", None)
        return data


class BriefRecallResult(OmitEmpty):
    _omit_empty = frozenset({"hint", "no_match", "detail_command"})

    results: list[BriefHit]
    hint: str = Field(default="", description=HINT)
    no_match: bool = Field(default=False, description=NO_MATCH)
    detail_command: str = Field(default="", description='"mnemon show <id>" when there are results')
    meta: RecallMeta | None = Field(default=None, exclude=True)


def round_score(score: float, decimals: int = SCORE_DECIMALS) -> float:
    """Half away from zero on score × 10^decimals, as Go's math.Round does (0.0005 → 0.001)."""
    scale = 10**decimals
    scaled = score * scale
    return math.copysign(math.floor(abs(scaled) + 0.5), scaled) / scale


def confidence(rounded: float) -> str:
    """The spec's label from the rounded score."""
    if rounded < CONFIDENCE_LOW:
        return "low"
    if rounded < CONFIDENCE_HIGH:
        return "medium"
    return "high"


def excerpt(content: str, max_chars: int) -> str:
    """Whitespace collapsed; longer than `max_chars` → the first max_chars-1 characters (trimmed) and "…"."""
    text = " ".join(content.split())
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 1].strip() + "…"


def brief_basic(insights: Sequence[Insight], max_chars: int) -> BriefRecallResult:
    """`--basic --brief`: excerpts of the LIKE matches, no score, no hint."""
    hits = [BriefHit(id=i.id, excerpt=excerpt(i.content, max_chars), category=i.category) for i in insights]
    return BriefRecallResult(results=hits, detail_command=DETAIL_COMMAND if hits else "")
