"""Recall step 4½, on the cut list: knowledge updates — the newer statement before the older one.

A user says in March that the dashboard API answers in 400 ms and in May that it now answers in 250 ms: both
match "how fast is the dashboard API?" about equally, and which comes first is decided by small differences in
wording. This step puts the newer first when the two are about the same thing — they hold mostly the same of
the query's terms (Jaccard of the sets ≥ `min_overlap`) — and the newer scores at least `1 - margin` of the
older. It only reorders the results already chosen, so nothing enters or leaves the list. Both recipes leave it
off (`RecallConfig.update_margin` 0): it cost R@1 on every benchmark (docs/recall.md, departure 11).
"""

from __future__ import annotations

import numpy as np

from .constants import UPDATE_MIN_OVERLAP

__all__ = ["newer_first"]


def newer_first(
    order: list[int], score: np.ndarray, created: np.ndarray, terms: np.ndarray, *, margin: float,
    min_overlap: float = UPDATE_MIN_OVERLAP,
) -> list[int]:
    """`order` (rows, best first) with each row moved up past the rows right above it that it updates.

    score[row], created[row] (comparable, larger is newer) and terms[row] (a boolean row of the query terms the
    result holds) describe each row. Rows are placed in rank order; a row moves up one place at a time while the
    row above is older, holds mostly the same query terms and scores at most its score / (1 - margin). Only
    neighbours swap, so a row never passes one it does not update."""
    if margin <= 0 or len(order) < 2:
        return list(order)
    out: list[int] = []
    for row in order:
        at = len(out)
        while at > 0 and _updates(row, out[at - 1], score, created, terms, margin, min_overlap):
            at -= 1
        out.insert(at, row)
    return out


def _updates(row: int, other: int, score: np.ndarray, created: np.ndarray, terms: np.ndarray, margin: float,
             min_overlap: float) -> bool:
    return bool(created[row] > created[other] and score[row] >= (1.0 - margin) * score[other]
                and _same(terms[row], terms[other], min_overlap))


def _same(a: np.ndarray, b: np.ndarray, min_overlap: float) -> bool:
    union = int(np.count_nonzero(a | b))
    return union > 0 and np.count_nonzero(a & b) / union >= min_overlap
