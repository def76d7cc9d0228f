"""One ranking per system per question, scored under each protocol a peer publishes (and ours).

No memory system publishes our metric (../shared/spec/peers.md §0): each headline is defined by its own benchmark
script. The same 20-item ranking of a system is scored here under all of them, so a row can be read beside the
peer's own headline and beside ours. Pure Python: no peer package, no model (tests/test_peers_protocols.py).

LoCoMo protocols, all over the same turn-level ranking (one memory per dialogue turn):
- `ours`: fractional R@k = |evidence ∩ top k| / |evidence|, categories 1-4, questions with evidence (the
  evidence repaired as benchmarks/locomo.py does), averaged over questions.
- `mempalace-dialog`: MemPalace `benchmarks/locomo_bench.py --granularity dialog`: the same fraction at k = 10
  over every question of categories 1-5, with the evidence strings taken as written (a malformed one is never
  found) and a question with empty evidence scored 1.0.
- `session-any@5`: engram `benchmarks/locomo_bench.py` (and the session-level R@5 headlines): the top 10 items
  mapped to their sessions (first occurrence kept), hit if any evidence session is among the first 5;
  categories 1-5, questions whose evidence list is not empty.
- `session-frac@10`: MemPalace `--granularity session` read on a turn ranking: the fraction of evidence
  sessions among the first 10 distinct sessions of the ranking, categories 1-5, empty evidence scored 1.0.
- `turn-any@20`: taOSmd `locomo_runner` evidence recall: hit if any evidence turn is in the top 20,
  categories 1-4, questions with evidence.
BEAM: fractional R@k and any@k over `source_chat_ids` per ability (the loader decides which questions count).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

KS = (1, 5, 10, 20)
LOCOMO_OURS_CATEGORIES = frozenset({1, 2, 3, 4})
LOCOMO_ALL_CATEGORIES = frozenset({1, 2, 3, 4, 5})
SESSION_DEPTH = 10  # engram retrieves top_k * 2 = 10 documents before mapping them to sessions
SESSION_K = 5
MEMPALACE_K = 10
TAOSMD_K = 20


@dataclass(frozen=True)
class Ranked:
    """One question as a system answered it. `evidence`: the repaired evidence units that exist in the
    haystack; `evidence_raw`: the evidence strings as the data has them (MemPalace scores those);
    `session_of`: unit id → session id for the haystack (shared by every question of it)."""

    haystack: str
    label: int | str  # LoCoMo category or BEAM ability
    question: str
    ranked: tuple[str, ...]
    evidence: tuple[str, ...]
    evidence_raw: tuple[str, ...] = ()
    session_of: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


def fraction_at(ranked: Sequence[str], gold: Iterable[str], k: int, *, empty: float | None = None) -> float:
    """|gold ∩ ranked[:k]| / |gold|; a question with no gold scores `empty` (an error when None)."""
    gold = set(gold)
    if not gold:
        if empty is None:
            raise ValueError("a question without evidence has no recall")
        return empty
    top = set(ranked[:k])
    return sum(g in top for g in gold) / len(gold)


def any_at(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 when any gold item is among the first k, else 0.0."""
    top = set(ranked[:k])
    return float(any(g in top for g in gold))


def sessions_of(ranked: Sequence[str], session_of: dict[str, str], depth: int | None = None) -> list[str]:
    """The sessions of the first `depth` ranked units, each once, in rank order."""
    out: dict[str, None] = {}
    for unit in ranked[:depth]:
        out.setdefault(session_of.get(unit, unit), None)
    return list(out)


@dataclass(frozen=True)
class Protocol:
    name: str
    keep: Callable[[Ranked], bool]
    score: Callable[[Ranked], float]
    what: str


def _evidence_sessions(r: Ranked) -> set[str]:
    return {r.session_of[e] for e in r.evidence if e in r.session_of}


LOCOMO_PROTOCOLS: tuple[Protocol, ...] = (
    Protocol("R@10 (ours)", lambda r: r.label in LOCOMO_OURS_CATEGORIES and bool(r.evidence),
             lambda r: fraction_at(r.ranked, r.evidence, 10), "turn fractional R@10, cats 1-4"),
    Protocol("MemPalace dialog R@10", lambda r: r.label in LOCOMO_ALL_CATEGORIES,
             lambda r: fraction_at(r.ranked, r.evidence_raw, MEMPALACE_K, empty=1.0),
             "turn fractional R@10, cats 1-5, raw evidence, empty = 1.0"),
    Protocol("session any@5", lambda r: r.label in LOCOMO_ALL_CATEGORIES and bool(r.evidence_raw),
             lambda r: any_at(sessions_of(r.ranked, r.session_of, SESSION_DEPTH), _evidence_sessions(r), SESSION_K),
             "top-10 turns to sessions, any-hit in first 5, cats 1-5"),
    Protocol("session frac@10", lambda r: r.label in LOCOMO_ALL_CATEGORIES,
             lambda r: fraction_at(sessions_of(r.ranked, r.session_of), _evidence_sessions(r), 10, empty=1.0),
             "fraction of evidence sessions in the first 10 sessions, cats 1-5, empty = 1.0"),
    Protocol("turn any@20", lambda r: r.label in LOCOMO_OURS_CATEGORIES and bool(r.evidence),
             lambda r: any_at(r.ranked, r.evidence, TAOSMD_K), "any evidence turn in top 20, cats 1-4"),
)


def mean_over(rows: Iterable[Ranked], protocol: Protocol) -> tuple[float, int]:
    """(mean score, questions counted) of `protocol` over the rows it keeps."""
    kept = [protocol.score(r) for r in rows if protocol.keep(r)]
    return (sum(kept) / len(kept) if kept else float("nan")), len(kept)


def recall_curve(rows: Iterable[Ranked], ks: Sequence[int] = KS, *, labels: frozenset | None = None,
                 hit: Callable[[Sequence[str], Iterable[str], int], float] = fraction_at) -> dict[int, float]:
    """k → mean of `hit` over rows with evidence (and a label in `labels`, when given)."""
    kept = [r for r in rows if r.evidence and (labels is None or r.label in labels)]
    if not kept:
        return {k: float("nan") for k in ks}
    return {k: sum(hit(r.ranked, r.evidence, k) for r in kept) / len(kept) for k in ks}


def by_label(rows: Iterable[Ranked], k: int = 10) -> dict[int | str, tuple[float, int]]:
    """label → (mean fractional R@k over its questions with evidence, count)."""
    groups: dict[int | str, list[float]] = {}
    for r in rows:
        if r.evidence:
            groups.setdefault(r.label, []).append(fraction_at(r.ranked, r.evidence, k))
    return {label: (sum(v) / len(v), len(v)) for label, v in sorted(groups.items(), key=lambda kv: str(kv[0]))}
