"""The last step of a smart recall: the pipeline's ranked rows become the typed result (`verbose`), with the
run's hint. The shapes a face prints are made from that result (`results.py`: `compact`, `brief`).

The hint keeps the spec's meaning for every recipe: "sparse_results" when nothing or fewer than limit/2
results came back (hosts read it). That nothing matched is said apart from it, by `no_match`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..models import Insight, Intent
from .constants import SPARSE_HINT
from .rerank import Scored
from .results import RecallMeta, Signals, VerboseHit, VerboseRecallResult

__all__ = ["hint", "verbose"]


def hint(results: Sequence[Scored], limit: int) -> str:
    """"sparse_results" when nothing came back or fewer than limit/2 (integer division), else ""."""
    return SPARSE_HINT if not results or len(results) < limit // 2 else ""


def verbose(
    results: Sequence[Scored], insights: Mapping[str, Insight], intent: Intent, meta: RecallMeta,
    labels: Sequence[str] | None = None,
) -> VerboseRecallResult:
    """The typed result of a smart recall from the pipeline's ranked rows; `labels`: the recipe's confidence
    of each row (None: from the rounded score)."""
    hits = [
        VerboseHit(
            insight=insights[r.id], score=r.score, intent=intent, via=r.via,
            signals=Signals(**r.signals),
            superseded=r.superseded, confidence=labels[i] if labels is not None else "",
        )
        for i, r in enumerate(results)
    ]
    return VerboseRecallResult(results=hits, meta=meta)
