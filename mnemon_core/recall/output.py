"""Recall output shapes (reference §1.2, §4.5): compact (default), `--verbose`, `--brief`, and the hint.

A smart recall gives one typed result, `VerboseRecallResult` (`verbose` builds it from the pipeline's rows);
each face shapes it: `compact(found)`, `brief(found, n)`, or the result itself for `--verbose`.

Compact and brief round the score half away from zero to 3 decimals and take the confidence label from the
*rounded* score (< 0.25 low, < 0.6 medium, else high). With the `hybrid` recipe's evidence rule, a result that
matched none of the query's words or entities and is not close in meaning (calibrated cosine below 0.5) is
"low" whatever its score: it was found only through the graph or the recency signal. Brief replaces the
content with a whitespace-collapsed excerpt of at most `--excerpt-chars` characters (ending in "…" when cut).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..models import Insight, Intent
from .config import RecallConfig
from .constants import (
    CONFIDENCE_HIGH,
    CONFIDENCE_LOW,
    CONFIDENCE_MIN_SIMILARITY,
    DETAIL_COMMAND,
    NO_MATCH_HINT,
    SCORE_DECIMALS,
    SPARSE_HINT,
)
from .rerank import Scored
from .results import (
    BriefHit,
    BriefRecallResult,
    RecallHit,
    RecallMeta,
    RecallResult,
    Signals,
    VerboseHit,
    VerboseRecallResult,
)

__all__ = ["brief", "brief_basic", "compact", "confidence", "excerpt", "hint", "round_score", "verbose"]


def round_score(score: float, decimals: int = SCORE_DECIMALS) -> float:
    """Half away from zero on score × 10^decimals, as Go's math.Round does (0.0005 → 0.001)."""
    scale = 10**decimals
    scaled = score * scale
    return math.copysign(math.floor(abs(scaled) + 0.5), scaled) / scale


def matched(r: Scored | Signals) -> bool:
    """The result shares a word or an entity with the query, or is close to it in meaning."""
    return r.keyword > 0 or r.entity > 0 or r.similarity >= CONFIDENCE_MIN_SIMILARITY


def confidence(rounded: float, result: Scored | Signals | None = None, evidence: bool = False) -> str:
    if rounded < CONFIDENCE_LOW or (evidence and result is not None and not matched(result)):
        return "low"
    if rounded < CONFIDENCE_HIGH:
        return "medium"
    return "high"


def hint(results: Sequence[Scored], limit: int, config: RecallConfig | None = None) -> str:
    """"sparse_results" when nothing came back or fewer than limit/2 (integer division); with the evidence
    rule, "no_match" when results came back but none of them matches the query (see `matched`)."""
    if config is not None and config.confidence == "evidence" and results and not any(map(matched, results)):
        return NO_MATCH_HINT
    return SPARSE_HINT if not results or len(results) < limit // 2 else ""


def excerpt(content: str, max_chars: int) -> str:
    """Whitespace collapsed; longer than `max_chars` → the first max_chars-1 characters (trimmed) and "…"."""
    text = " ".join(content.split())
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 1].strip() + "…"


def verbose(
    results: Sequence[Scored], insights: Mapping[str, Insight], intent: Intent, meta: RecallMeta,
    evidence: bool = False,
) -> VerboseRecallResult:
    """The typed result of a smart recall from the pipeline's ranked rows (`evidence`: the recipe's confidence
    rule, kept for the shapes below)."""
    hits = [
        VerboseHit(
            insight=insights[r.id], score=r.score, intent=intent, via=r.via,
            signals=Signals(keyword=r.keyword, entity=r.entity, similarity=r.similarity, graph=r.graph),
            superseded=r.superseded,
        )
        for r in results
    ]
    return VerboseRecallResult(results=hits, meta=meta, evidence=evidence)


def compact(found: VerboseRecallResult) -> RecallResult:
    hits = []
    for h in found.results:
        ins = h.insight
        score = round_score(h.score)
        hits.append(
            RecallHit(
                id=ins.id, content=ins.content, category=ins.category, importance=ins.importance, intent=h.intent,
                matched_via=h.via, confidence=confidence(score, h.signals, found.evidence), score=score,
                superseded=h.superseded,
            )
        )
    return RecallResult(results=hits, hint=found.meta.hint, meta=found.meta)


def brief(found: VerboseRecallResult, max_chars: int) -> BriefRecallResult:
    hits = []
    for h in found.results:
        ins = h.insight
        score = round_score(h.score)
        hits.append(
            BriefHit(id=ins.id, excerpt=excerpt(ins.content, max_chars), category=ins.category, score=score,
                     confidence=confidence(score, h.signals, found.evidence), superseded=h.superseded)
        )
    return BriefRecallResult(
        results=hits, hint=found.meta.hint, detail_command=DETAIL_COMMAND if hits else "", meta=found.meta
    )


def brief_basic(insights: Sequence[Insight], max_chars: int) -> BriefRecallResult:
    """`--basic --brief`: excerpts of the LIKE matches, no score, no hint."""
    hits = [BriefHit(id=i.id, excerpt=excerpt(i.content, max_chars), category=i.category) for i in insights]
    return BriefRecallResult(results=hits, detail_command=DETAIL_COMMAND if hits else "")
