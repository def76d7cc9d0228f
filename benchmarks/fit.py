"""One weight set for both benchmarks: two-fold cross-validation of the `hybrid` recipe over LoCoMo conversations
and BEAM chats together.

Each fold holds half of each benchmark: LoCoMo's conversations halved in file order (as `locomo.py --fit` has
always split them), BEAM's chats alternately (1, 3, 5, … / 2, 4, 6, …: the first five dev chats have three
batches, the last five five). The objective is the mean of the two benchmarks' R@10 on the fold, so each counts
the same however many questions it has. Coordinate ascent (`locomo.fit`) on one fold picks the rerank weights
with and without vectors, the flow's decay and the reply factor; the other fold tests them; then the same
search on everything gives the shipped set (`HYBRID_WEIGHTS`, `HYBRID_WEIGHTS_NO_VECTORS`, `FLOW_DECAY`,
`REPLY_SOURCE_FACTOR` in `mnemon_core/recall/constants.py`). Nothing is fitted per benchmark or per question.

    python -m benchmarks.fit                 # the table for RESULTS.md
"""

from __future__ import annotations

import argparse
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


def r10(stores: dict[tuple[str, str], L.MnemonRanker], part: Benchmarks, kind: str, config: Any) -> dict[str, float]:
    """Benchmark → R@10 of `config` on its conversations in `part`."""
    return {name: L._r10(stores, convs, kind, config) for name, convs in part.items() if convs}


def objective(stores: dict[tuple[str, str], L.MnemonRanker], part: Benchmarks) -> L.Objective:
    def mean(kind: str, config: Any) -> float:
        got = r10(stores, part, kind, config)
        return sum(got.values()) / len(got)

    return mean


def cross_validate(
    locomo: Sequence[L.Conversation], beam: Sequence[L.Conversation], *, store_dir: Path | None = None,
    seed: int = 0, kinds: Sequence[str] = KINDS, log: Any = sys.stderr,
) -> str:
    """Markdown: per test fold, the weights fitted on the other fold and R@10 per benchmark and mode beside the
    shipped recipe's; then the search on everything (in sample)."""
    from mnemon_core.recall.config import HYBRID

    start = L.Fitted.shipped()
    a, b = folds(locomo, beam)
    everything: Benchmarks = {"LoCoMo": list(locomo), "BEAM": list(beam)}
    head = ["fitted on", "tested on", "weights with vectors (kw, ent, sim, graph)", "without vectors", "decay",
            "reply", *(f"{bench} {kind.split('-')[1]}: fitted / shipped" for kind in kinds for bench in everything)]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- | --- | --- | ---: | ---: |" + " ---: |" * 2 * len(kinds)]

    def names(part: Benchmarks) -> str:
        return ", ".join(c.sample_id for convs in part.values() for c in convs)

    with L.mnemon_stores([*locomo, *beam], kinds, store_dir=store_dir, seed=seed, log=log) as stores:
        for train, test in ((a, b), (b, a), (everything, everything)):
            print(f"fitting on {names(train)}", file=log)
            got = L.fit(objective(stores, train), start, log, kinds)
            cells = ["all", "all (in sample)"] if train is everything else [names(train), names(test)]
            cells += [str(got.vectors), str(got.no_vectors), f"{got.decay:.2f}", f"{got.reply:.2f}"]
            for kind in kinds:
                fitted, shipped = r10(stores, test, kind, got.config()), r10(stores, test, kind, HYBRID)
                cells += [f"{fitted[n]:.3f} / {shipped[n]:.3f}" for n in everything]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fit", description=__doc__.split("\n\n")[0])
    p.add_argument("--locomo", default=str(L.DEFAULT_DATA), help="LoCoMo JSON (default: %(default)s)")
    p.add_argument("--beam", default=str(B.DEFAULT_DATA), help="BEAM JSON (default: %(default)s)")
    p.add_argument("--store-dir", default=None, help="build the mnemon stores here and keep them")
    p.add_argument("--seed", type=int, default=0, help="seed of the mnemon stores' insight ids (default 0)")
    p.add_argument("--kinds", default=",".join(KINDS), help="fit with vectors, without, or both (default: %(default)s)")
    args = p.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not kinds or any(k not in KINDS for k in kinds):
        p.error(f"--kinds takes {' and/or '.join(KINDS)}")
    command = "python -m benchmarks.fit" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    table = cross_validate(L.load_conversations(args.locomo), B.load_chats(args.beam),
                           store_dir=Path(args.store_dir) if args.store_dir else None, seed=args.seed,
                           kinds=kinds)
    print(table + f"\nCommand:\n\n    {command}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
