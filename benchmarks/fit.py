"""One weight set for both benchmarks: two-fold cross-validation of the `hybrid` recipe over LoCoMo conversations
and BEAM chats together.

Each fold holds half of each benchmark: LoCoMo's conversations halved in file order (as `locomo.py --fit` has
always split them), BEAM's chats alternately (1, 3, 5, … / 2, 4, 6, …: the first five dev chats have three
batches, the last five five). The objective is the mean R@10 over the fold's benchmarks and modes, so each counts
the same however many questions it has. The weights with vectors are the no-vector weights (LoCoMo's
cross-validated set, `locomo.py --fit`) scaled by 1 - share with `share` on similarity; a grid of shares, reply
factors, similarity terms and preference factors (`SHARES`, `REPLIES`, `SIMILARITIES`: the calibrated cosine or
the cosine relative to the query's nearest, `PREFERENCES`; and the shipped set) is scored once per conversation,
the best on one fold is tested on the other, and the best on everything is the shipped set (`HYBRID_WEIGHTS`,
`REPLY_SOURCE_FACTOR`, `PREFERENCE_FACTOR` in `mnemon_core/recall/constants.py`). Nothing is fitted per benchmark or per question.
(A grid, not `locomo.fit`'s coordinate ascent over every weight: on a shared two-core machine one ascent over
both benchmarks took longer than a session.)

    python -m benchmarks.fit                 # the table for RESULTS.md
    python -m benchmarks.fit --beam-vectors 100K-1,100K-2,100K-3,100K-4   # mnemon-local on those chats only
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import beam as B
from benchmarks import locomo as L

KINDS = ("mnemon-local", "mnemon-none")
Benchmarks = dict[str, list[L.Conversation]]  # benchmark name → its conversations


def folds(locomo: Sequence[L.Conversation], beam: Sequence[L.Conversation]) -> tuple[Benchmarks, Benchmarks]:
    """Two folds, each with half of each benchmark."""
    half = (len(locomo) + 1) // 2
    return ({"LoCoMo": list(locomo[:half]), "BEAM": list(beam[0::2])},
            {"LoCoMo": list(locomo[half:]), "BEAM": list(beam[1::2])})


# The grid: the weights with vectors are the no-vector weights (fitted on LoCoMo, `locomo.py --fit`) scaled by
# 1 - share, with `share` on similarity, so both modes rank by one weight set; the share, the reply factor and
# the preference factor are the values searched.
SHARES = (0.1, 0.15, 0.2, 0.25, 0.3)
REPLIES = (0.6, 0.8)
SIMILARITIES = ("relative", "cosine")  # the rerank's similarity term (RecallConfig.similarity)
PREFERENCES = (1.0, 1.3, 1.6)  # a stated preference's factor for a request (RecallConfig.preference_factor)


def candidates(shares: Sequence[float] = SHARES, replies: Sequence[float] = REPLIES,
               similarities: Sequence[str] = SIMILARITIES,
               preferences: Sequence[float] = PREFERENCES) -> list[L.Fitted]:
    """Every (similarity share, reply factor, similarity term, preference factor) of the grid as a fitted set,
    the shipped one first."""
    shipped = L.Fitted.shipped()
    nv = shipped.no_vectors
    out = [shipped]
    for share in shares:
        vectors = L._normalised([nv[0] * (1 - share), nv[1] * (1 - share), share, nv[3] * (1 - share)])
        out += [dataclasses.replace(shipped, vectors=vectors, reply=r, similarity=sim, preference=p)
                for sim in similarities for r in replies for p in preferences]
    return list(dict.fromkeys(out))


Table = dict[tuple[str, str, int], tuple[int, float]]  # (sample id, kind, candidate) → (questions, sum of R@10)


def _fold_r10(table: Table, part: Benchmarks, kind: str, cand: int) -> dict[str, float]:
    out = {}
    for name, convs in part.items():
        got = [table[(c.sample_id, kind, cand)] for c in convs if (c.sample_id, kind, cand) in table]
        n = sum(g[0] for g in got)
        if n:
            out[name] = sum(g[1] for g in got) / n
    return out


def _objective(table: Table, part: Benchmarks, kinds: Sequence[str], cand: int) -> float:
    """Mean R@10 over every benchmark and mode of `part`: each counts the same however many questions it has."""
    got = [r for kind in kinds for r in _fold_r10(table, part, kind, cand).values()]
    return sum(got) / len(got)


def cross_validate(
    locomo: Sequence[L.Conversation], beam: Sequence[L.Conversation], *, beam_vectors: Sequence[str] | None = None,
    shares: Sequence[float] = SHARES, replies: Sequence[float] = REPLIES,
    preferences: Sequence[float] = PREFERENCES, store_dir: Path | None = None,
    seed: int = 0, kinds: Sequence[str] = KINDS, log: Any = sys.stderr,
) -> str:
    """Markdown: per test fold, the grid's set chosen on the other fold and R@10 per benchmark and mode beside the
    shipped recipe's; then the choice on everything (in sample). Every candidate is scored once per
    conversation; a fold's R@10 is over its questions. `beam_vectors` limits mnemon-local to those BEAM chats."""
    cands = candidates(shares, replies, preferences=preferences)
    a, b = folds(locomo, beam)
    everything: Benchmarks = {"LoCoMo": list(locomo), "BEAM": list(beam)}
    table: Table = {}
    local = [c for c in beam if beam_vectors is None or c.sample_id in beam_vectors]
    for kind in kinds:
        convs = [*locomo, *(local if kind == "mnemon-local" else beam)]
        with L.mnemon_stores(convs, [kind], store_dir=store_dir, seed=seed, log=log) as stores:
            seen: dict[Any, int] = {}
            for i, cand in enumerate(cands):
                # Without vectors the weights with vectors play no part: candidates differing only there score alike.
                key = cand if kind == "mnemon-local" else (cand.no_vectors, cand.decay, cand.reply, cand.preference)
                for conv in convs:
                    if key in seen:
                        table[(conv.sample_id, kind, i)] = table[(conv.sample_id, kind, seen[key])]
                    else:
                        s = L.scores_of(stores, [conv], kind, cand.config())
                        table[(conv.sample_id, kind, i)] = (s.n, s.at(10) * s.n)
                seen.setdefault(key, i)
                print(f"  {kind} {cand}: {_objective(table, everything, [kind], i):.4f}", file=log)
    head = ["fitted on", "tested on", "weights with vectors (kw, ent, sim, graph)", "similarity", "reply",
            "preference",
            *(f"{bench} {kind.split('-')[1]}: fitted / shipped" for kind in kinds for bench in everything)]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- | --- | --- | ---: | ---: |" + " ---: |" * 2 * len(kinds)]

    def names(part: Benchmarks) -> str:
        return ", ".join(c.sample_id for convs in part.values() for c in convs)

    for train, test in ((a, b), (b, a), (everything, everything)):
        best = max(range(len(cands)), key=lambda i: (_objective(table, train, kinds, i), -i))
        got = cands[best]
        cells = ["all", "all (in sample)"] if train is everything else [names(train), names(test)]
        local = "mnemon-local" in kinds
        cells += [str(got.vectors) if local else "-", got.similarity if local else "-", f"{got.reply:.2f}",
                  f"{got.preference:.2f}"]
        for kind in kinds:
            fitted, shipped = _fold_r10(table, test, kind, best), _fold_r10(table, test, kind, 0)
            cells += [f"{fitted[n]:.3f} / {shipped[n]:.3f}" if n in fitted else "-" for n in everything]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fit", description=__doc__.split("\n\n")[0])
    p.add_argument("--locomo", default=str(L.DEFAULT_DATA), help="LoCoMo JSON (default: %(default)s)")
    p.add_argument("--beam", default=str(B.DEFAULT_DATA), help="BEAM JSON (default: %(default)s)")
    p.add_argument("--store-dir", default=None, help="build the mnemon stores here and keep them")
    p.add_argument("--seed", type=int, default=0, help="seed of the mnemon stores' insight ids (default 0)")
    p.add_argument("--kinds", default=",".join(KINDS), help="fit with vectors, without, or both (default: %(default)s)")
    p.add_argument("--shares", default=",".join(map(str, SHARES)), help="similarity shares of the grid "
                   "(default: %(default)s)")
    p.add_argument("--replies", default=",".join(map(str, REPLIES)), help="reply factors of the grid "
                   "(default: %(default)s)")
    p.add_argument("--preferences", default=",".join(map(str, PREFERENCES)), help="preference factors of the "
                   "grid (default: %(default)s)")
    p.add_argument("--beam-vectors", default="", help="comma-separated BEAM chats mnemon-local is scored on "
                   "(default: all)")
    args = p.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not kinds or any(k not in KINDS for k in kinds):
        p.error(f"--kinds takes {' and/or '.join(KINDS)}")
    def floats(text: str) -> list[float]:
        try:
            return [float(x) for x in text.split(",") if x.strip()]
        except ValueError:
            p.error(f"not a list of numbers: {text!r}")

    command = "python -m benchmarks.fit" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    table = cross_validate(L.load_conversations(args.locomo), B.load_chats(args.beam),
                           beam_vectors=[c.strip() for c in args.beam_vectors.split(",") if c.strip()] or None,
                           shares=floats(args.shares), replies=floats(args.replies),
                           preferences=floats(args.preferences),
                           store_dir=Path(args.store_dir) if args.store_dir else None, seed=args.seed,
                           kinds=kinds)
    print(table + f"\nCommand:\n\n    {command}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
