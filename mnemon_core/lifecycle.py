"""Retention (reference §3.8): effective importance, immunity, auto-prune and gc.

EI = base(imp) × max(1, ln(1 + access)) × 0.5^(days_since_access / 30) × (1 + 0.1 × min(edges, 5))
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from .models import GcCandidate, Insight
from .store import Store
from .timeutil import days_since, iso
from .write.target import WriteTarget

HALF_LIFE_DAYS = 30.0
EDGE_BONUS = 0.1
EDGE_BONUS_CAP = 5
BASE_BY_IMPORTANCE = {5: 1.0, 4: 0.8, 3: 0.5, 2: 0.3}
BASE_OTHER = 0.15
IMMUNE_IMPORTANCE = 4
IMMUNE_ACCESS = 3
PRUNE_BATCH = 10
GC_THRESHOLD = 0.5
GC_LIMIT = 20
GC_KEEP_BOOST = 3


def last_access(ins: Insight) -> str:
    return ins.last_accessed_at or ins.created_at


def effective_importance(ins: Insight, edge_count: int, now_ts: float | None = None) -> float:
    base = BASE_BY_IMPORTANCE.get(ins.importance, BASE_OTHER)
    access = max(1.0, math.log(1 + ins.access_count))
    decay = 0.5 ** (days_since(last_access(ins), now_ts) / HALF_LIFE_DAYS)
    edges = 1 + EDGE_BONUS * min(edge_count, EDGE_BONUS_CAP)
    return base * access * decay * edges


def is_immune(ins: Insight) -> bool:
    return ins.importance >= IMMUNE_IMPORTANCE or ins.access_count >= IMMUNE_ACCESS


def refresh_ei(store: WriteTarget, ids: list[str], now_ts: float | None = None) -> dict[str, float]:
    """Recompute and store EI for these insights; returns the new values."""
    rows = store.get_insights(ids)
    counts = store.edge_counts(list(rows))
    values = {i: effective_importance(ins, counts.get(i, 0), now_ts) for i, ins in rows.items()}
    store.set_effective_importance(values)
    return values


@dataclass(frozen=True)
class GcScan:
    ei: dict[str, float]  # the fresh EI of every active insight, for the caller to store
    candidates: list[GcCandidate]  # the first `limit` of those found, lowest EI first
    found: int  # non-immune insights with EI below the threshold
    total: int  # active insights


def gc_scan(store: Store, *, threshold: float, limit: int, now_ts: float) -> GcScan:
    """What gc suggests forgetting: non-immune insights with EI below `threshold`, lowest first (ties: older,
    then id). Reads only; the caller stores `ei` unless it is read-only."""
    rows = list(store.iter_active())
    counts = store.edge_counts([r.id for r in rows])
    ei = {r.id: effective_importance(r, counts[r.id], now_ts) for r in rows}
    cands = sorted(
        (r for r in rows if ei[r.id] < threshold and not is_immune(r)),
        key=lambda r: (ei[r.id], r.created_at, r.id),
    )
    out = [
        GcCandidate(insight=r, effective_importance=round(ei[r.id], 4),
                    days_since_access=round(days_since(last_access(r), now_ts), 2),
                    edge_count=counts[r.id], immune=False)
        for r in cands[:limit]
    ]
    return GcScan(ei=ei, candidates=out, found=len(cands), total=len(rows))


def auto_prune(
    store: Store, *, max_insights: int, min_age_s: float, exclude: str | None, now: str, trigger: str | None
) -> list[str]:
    """Soft-delete up to min(excess, 10) non-immune insights with the lowest stored EI, older than the grace
    period (by `stored_at`), one `prune` oplog row each. `max_insights` ≤ 0 disables it."""
    if max_insights <= 0:
        return []
    active = store.count_active()
    excess = active - max_insights
    if excess <= 0:
        return []
    stored_before = iso(time.time() - min_age_s) if min_age_s > 0 else None
    victims = store.prune_candidates(exclude=exclude, stored_before=stored_before, limit=min(excess, PRUNE_BATCH),
                                     immune_importance=IMMUNE_IMPORTANCE, immune_access=IMMUNE_ACCESS)
    ids = [v.id for v in victims]
    store.soft_delete(ids, now)
    age = _fmt_age(min_age_s)
    trig = f" trigger={trigger[:8]}" if trigger else ""
    for id_ in ids:
        store.log("prune", id_, f"auto-prune: over capacity (active={active}, max={max_insights}){trig} "
                  f"min_age={age}", now)
    return ids


def _fmt_age(seconds: float) -> str:
    if seconds <= 0:
        return "0"
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    return f"{seconds:g}s"
