"""What `recall` returns, as pydantic models whose `model_dump(mode="json")` is the CLI's JSON (reference §1.2,
§4.5): the compact default, `--verbose` and `--brief` shapes. Keys the reference marks omitempty are dropped
when empty (`superseded` only appears when true)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_serializer

from ..models import Category, Insight, Intent, OmitEmpty
from .constants import EXCERPT_CHARS

__all__ = [
    "BriefHit",
    "BriefRecallResult",
    "RecallHit",
    "RecallMeta",
    "RecallResult",
    "Signals",
    "VerboseHit",
    "VerboseRecallResult",
]


class RecallMeta(OmitEmpty):
    """How a smart recall ran. Shown under `meta` with `--verbose`; always readable from the library."""

    _omit_empty = frozenset({"hint"})

    intent: Intent
    intent_source: str = Field(description='"auto" (detected from the query) or "override" (--intent)')
    anchor_count: int = Field(description="distinct anchors chosen by RRF over the four signals")
    traversed: int = Field(description="distinct insights the beam search scored (anchors included)")
    hint: str = Field(default="", description='"sparse_results" when fewer than limit/2 results')


class Signals(BaseModel):
    """The four rerank signals of one result, each in [0, 1] (spec §5.2 "Signals 透明度")."""

    keyword: float = Field(description="share of the query's tokens the insight holds")
    entity: float = Field(description="share of the query's entities the insight names")
    similarity: float = Field(description="calibrated cosine with the query when > 0, else 0 (0 without vectors)")
    graph: float = Field(description="min-max normalised beam-search score over all candidates")


class RecallHit(OmitEmpty):
    """One compact result: what an agent needs to use a memory, nothing more."""

    _omit_empty = frozenset({"category", "importance", "matched_via", "superseded"})

    id: str
    content: str
    category: Category | str = ""
    importance: int = 0
    intent: Intent
    matched_via: str = Field(default="", description="keyword | vector | time | entity | hybrid, or the edge type")
    confidence: str = Field(description='"low" (< 0.25), "medium" (< 0.6) or "high", from the rounded score')
    score: float = Field(description="final score rounded half away from zero to 3 decimals")
    superseded: bool = Field(default=False, description="another insight claims to replace this one")


class RecallResult(OmitEmpty):
    """The default (compact) recall output. `meta` is not part of the JSON but is kept for library callers."""

    _omit_empty = frozenset({"hint"})

    results: list[RecallHit]
    hint: str = ""
    meta: RecallMeta | None = Field(default=None, exclude=True)


class VerboseHit(OmitEmpty):
    _omit_empty = frozenset({"via", "superseded"})

    insight: Insight
    score: float
    intent: Intent
    via: str = ""
    signals: Signals
    superseded: bool = False


class VerboseRecallResult(BaseModel):
    """What a smart recall found, before any shaping (`Memory.retrieve`): the ranked hits with their full
    insights, raw scores, labels and four signals, and the run's meta. Its JSON is `recall --verbose`;
    `compact()` and `brief()` give the other shapes (`recall/output.py`)."""

    results: list[VerboseHit]
    meta: RecallMeta
    evidence: bool = Field(
        default=False, exclude=True,
        description="the recipe's confidence rule: a hit matching no word, entity or meaning is \"low\"",
    )

    def compact(self) -> RecallResult:
        """The default shape: what an agent needs of each hit (`recall`'s JSON)."""
        from .output import compact

        return compact(self)

    def brief(self, excerpt_chars: int = EXCERPT_CHARS) -> BriefRecallResult:
        """Excerpts of at most `excerpt_chars` characters instead of contents (`recall --brief`)."""
        from .output import brief

        return brief(self, excerpt_chars)


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
    _omit_empty = frozenset({"hint", "detail_command"})

    results: list[BriefHit]
    hint: str = ""
    detail_command: str = Field(default="", description='"mnemon show <id>" when there are results')
    meta: RecallMeta | None = Field(default=None, exclude=True)
