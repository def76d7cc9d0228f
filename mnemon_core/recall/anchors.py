"""Recall step 2: anchor selection (spec §5.2 Step 2, reference §4.3).

Four signals each rank up to `top_k` insights — keyword (coverage of the query's tokens), vector (calibrated
cosine > 0.1), recency (newest first, always) and entity (share of the query's entities) — and Reciprocal Rank
Fusion sums 1/(k + r + 1) over the lists an insight appears in (r 0-based, k = 60). Scores are divided by the
largest, so the top anchor starts the beam search at 1.0. An anchor found by one signal is labelled with it
(`keyword`, `vector`, `time`, `entity`); by two or more, `hybrid`.

Every function here works on plain data; the pipeline feeds them what the store returned.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .constants import ANCHOR_TOP_K, RRF_K, VECTOR_MIN_COS, VIA_HYBRID

__all__ = ["Anchor", "fuse", "rrf", "top_ranked", "vector_ranking"]


class Anchor(NamedTuple):
    id: str
    score: float  # normalised RRF: the best anchor has 1.0
    via: str


def rrf(ranked_lists: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Σ over the lists of 1 / (k + rank + 1), rank 0-based; an id counts once per list (its best rank)."""
    scores: dict[str, float] = {}
    for ranked in ranked_lists:
        seen: set[str] = set()
        for rank, id_ in enumerate(ranked):
            if id_ in seen:
                continue
            seen.add(id_)
            scores[id_] = scores.get(id_, 0.0) + 1.0 / (k + rank + 1)
    return scores


def fuse(signals: Mapping[str, Sequence[str]], k: int = RRF_K) -> list[Anchor]:
    """Anchors from named ranked lists: normalised RRF score and `via`, best first (ties → id)."""
    raw = rrf(list(signals.values()), k)
    if not raw:
        return []
    found: dict[str, list[str]] = {}
    for name, ranked in signals.items():
        for id_ in dict.fromkeys(ranked):
            found.setdefault(id_, []).append(name)
    top = max(raw.values())
    anchors = [
        Anchor(id_, score / top, found[id_][0] if len(found[id_]) == 1 else VIA_HYBRID) for id_, score in raw.items()
    ]
    anchors.sort(key=lambda a: (-a.score, a.id))
    return anchors


def vector_ranking(
    ids: Sequence[str],
    cosines: np.ndarray,
    top_k: int = ANCHOR_TOP_K,
    *,
    min_cos: float = VECTOR_MIN_COS,
    in_scope: Callable[[list[str]], Collection[str]] | None = None,
) -> list[str]:
    """Ids with cosine > min_cos, highest first (ties → id), at most top_k of those `in_scope` accepts.

    Only the best few rows are sorted: a partial selection takes 4·top_k (then more while the scope rejects
    too many), so a 100k-row matrix costs one vector comparison, not a sort.
    """
    above = np.flatnonzero(cosines > min_cos)
    if above.size == 0:
        return []
    vals = cosines[above]
    want = top_k if in_scope is None else top_k * 4
    out: list[str] = []
    done = 0  # rows of `order` already examined
    while True:
        if want < above.size:
            cut = np.partition(vals, above.size - want)[above.size - want]
            pick = above[vals >= cut]  # everything tied with the cut value comes along
        else:
            pick = above
        order = sorted(pick.tolist(), key=lambda i: (-float(cosines[i]), ids[i]))
        fresh = [ids[i] for i in order[done:]]
        done = len(order)
        keep = set(in_scope(fresh)) if in_scope is not None else None
        for id_ in fresh:
            if keep is None or id_ in keep:
                out.append(id_)
                if len(out) == top_k:
                    return out
        if pick.size >= above.size:
            return out
        want *= 4


def top_ranked(
    count: np.ndarray, importance: np.ndarray, created: np.ndarray, id_rank: np.ndarray, top_k: int = ANCHOR_TOP_K
) -> np.ndarray:
    """Rows of the top_k best by count desc, importance desc, created desc (newer), then id_rank asc — the
    keyword (coverage) and entity (share) orders of the anchors, in linear time.

    count, importance and created (epoch seconds, clamped to [0, 2^35)) are packed into one integer key, so
    a partial selection finds the cut and only rows tied on all three are compared by id.
    """
    n = int(count.shape[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    key = (
        (count.astype(np.int64) << 39)
        | (np.clip(importance, 0, 15).astype(np.int64) << 35)
        | np.clip(created, 0, (1 << 35) - 1).astype(np.int64)
    )
    if n > top_k:
        cut = np.partition(key, n - top_k)[n - top_k]
        rows = np.flatnonzero(key >= cut)
    else:
        rows = np.arange(n)
    return rows[np.lexsort((id_rank[rows], -key[rows]))][:top_k]
