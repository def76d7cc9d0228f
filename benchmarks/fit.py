"""One recipe for every benchmark: the `hybrid` recipe's levers chosen on some conversations and scored on others,
within the benchmarks and leave one benchmark out.

Three benchmarks, each through its harness's loader: LoCoMo's six dev conversations (`locomo.py`), BEAM's ten dev
chats (`beam.py`), LongMemEval's 98 dev questions (`lme.py`; with vectors its stratified sample). Splits:
- **within** (two folds, each with half of every benchmark: LoCoMo's conversations halved in file order, BEAM's
  chats alternately, LongMemEval's questions alternately within each question type), chosen on one fold and
  scored on the other, and the reverse;
- **leave one benchmark out**: chosen on two benchmarks, scored on the third, for each of the three;
- **all**: chosen on everything (in sample): the set that ships.

The objective is the mean over the training benchmarks and modes of (R@1 + R@5 + R@10) / 3: each benchmark counts
the same however many questions it has, and the top of the list (what an agent reads first) counts as well as
R@10. The levers are chosen in two stages, each a small grid scored once per conversation: first what both modes
share, on mnemon-none (`NONE_GRID`), then, with that fixed, the vectors' share of the rerank on mnemon-local
(`VECTOR_GRID`: the weights with vectors are the no-vector weights × (1 - share), `share` on similarity; the
dense ranking's own vote). Nothing
is fitted per benchmark or per question. The same run scores the same-run baselines (FTS5, dense, RRF) on every
test set, so each held-out figure stands beside the best plain ranking of the same questions.

    python -m benchmarks.fit                      # every split; the tables for RESULTS.md
    python -m benchmarks.fit --kinds mnemon-none  # the first stage only (no vectors needed)
    python -m benchmarks.fit --vectors-only --lme-vectors 10  # the second stage alone, LongMemEval's first ten
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import beam as B
from benchmarks import lme
from benchmarks import locomo as L
from mnemon_core.recall.constants import SIGNALS

KINDS = ("mnemon-local", "mnemon-none")
BASELINES = ("fts5", "dense", "rrf", "rrf-dense0.5")
OBJECTIVE_KS = (1, 5, 10)  # the objective: the mean of R@k over these
Benchmarks = dict[str, list[L.Conversation]]  # benchmark name → its conversations

# Stage 1, on mnemon-none (what both modes share): BM25's length cap, around the shipped update order (off), flow
# (one hop), reply factor (0.6) and preference factor (1), which the grid of update margin {0, 0.1} × hops {1, 2} ×
# reply {0.6, 0.8} × preference {1, 1.3} chose before (RESULTS.md, "One recipe for three benchmarks").
NONE_GRID: dict[str, tuple[Any, ...]] = {
    "length_cap": (None, 1.5, 3.0, 6.0),
}
# Stage 2, on mnemon-local: the similarity term's share of the rerank, the vector ranking's own vote.
SIMILARITY = "similarity"  # the rerank signal whose share stage 2 chooses
VECTOR_GRID: dict[str, tuple[Any, ...]] = {
    "share": (0.1, 0.15, 0.25, 0.35),
    "vector_vote": (0.0, 0.1, 0.2, 0.4),
}


def load(locomo: Path = L.DEFAULT_DATA, beam: Path = B.DEFAULT_DATA,
         longmemeval: Path = lme.DEFAULT_DATA, lme_vectors: int | None = None) -> tuple[Benchmarks, Benchmarks]:
    """(every conversation per benchmark, those mnemon-local and the vector baselines run on: LongMemEval's
    stratified sample, or its first `lme_vectors` questions in the file's order)."""
    questions = lme.load_questions(longmemeval)
    loco, chats = L.load_conversations(locomo), B.load_chats(beam)
    return ({"LoCoMo": loco, "BEAM": chats, "LongMemEval": questions},
            {"LoCoMo": loco, "BEAM": chats, "LongMemEval": lme.stratified_sample(questions)[:lme_vectors]})


def halves(benchmarks: Benchmarks) -> tuple[Benchmarks, Benchmarks]:
    """Two folds, each with half of every benchmark."""
    a: Benchmarks = {}
    b: Benchmarks = {}
    for name, convs in benchmarks.items():
        if name == "LoCoMo":
            half = (len(convs) + 1) // 2
            a[name], b[name] = list(convs[:half]), list(convs[half:])
        elif name == "LongMemEval":  # alternately within each question type, by id
            by_type: dict[Any, list[L.Conversation]] = {}
            for c in convs:
                by_type.setdefault(c.questions[0].category, []).append(c)
            first = {c.sample_id for group in by_type.values()
                     for c in sorted(group, key=lambda c: c.sample_id)[0::2]}
            a[name] = [c for c in convs if c.sample_id in first]
            b[name] = [c for c in convs if c.sample_id not in first]
        else:  # BEAM: alternately (the first five dev chats have three batches, the last five five)
            a[name], b[name] = list(convs[0::2]), list(convs[1::2])
    return a, b


Split = tuple[str, Benchmarks, Benchmarks]  # (name, fitted on, tested on)


def splits(benchmarks: Benchmarks) -> list[Split]:
    """Within (A → B, B → A), leave one benchmark out (each of them), all (in sample)."""
    a, b = halves(benchmarks)
    out: list[Split] = [("within: A → B", a, b), ("within: B → A", b, a)]
    for name in benchmarks:
        rest = {n: c for n, c in benchmarks.items() if n != name}
        out.append((f"leave out {name}", rest, {name: benchmarks[name]}))
    out.append(("all (in sample)", benchmarks, benchmarks))
    return out


def restrict(part: Benchmarks, to: Benchmarks) -> Benchmarks:
    """`part`'s conversations that are also in `to` (the vector mode's subset of a split)."""
    ids = {c.sample_id for convs in to.values() for c in convs}
    return {n: [c for c in convs if c.sample_id in ids] for n, convs in part.items()}


# ---------------------------------------------------------------------------------------------------- candidates


def none_candidates(grid: dict[str, tuple[Any, ...]] = NONE_GRID) -> list[L.Fitted]:
    """The shipped set, then every point of the first stage's grid."""
    shipped = L.Fitted.shipped()
    out = [shipped]
    for values in itertools.product(*grid.values()):
        out.append(dataclasses.replace(shipped, **dict(zip(grid, values))))
    return list(dict.fromkeys(out))


def with_share(base: L.Fitted, share: float) -> L.Fitted:
    """`base` with the weights with vectors = its no-vector weights × (1 - share), `share` on similarity."""
    w = [share if n == SIMILARITY else v * (1 - share) for n, v in zip(SIGNALS, base.no_vectors)]
    return dataclasses.replace(base, vectors=L._normalised(w))


def vector_candidates(base: L.Fitted, grid: dict[str, tuple[Any, ...]] = VECTOR_GRID) -> list[L.Fitted]:
    """The second stage's grid on top of the first stage's choice."""
    return list(dict.fromkeys(dataclasses.replace(with_share(base, share), vector_vote=vote)
                              for share in grid["share"] for vote in grid.get("vector_vote", (base.vector_vote,))))


def describe(f: L.Fitted, vectors: bool) -> str:
    shipped = L.Fitted.shipped()
    parts = [f"margin {f.update_margin:g}", f"hops {f.hops}", f"reply {f.reply:g}", f"preference {f.preference:g}",
             f"length cap {f.length_cap:g}" if f.length_cap is not None else "no length cap"]
    if vectors:
        parts += [f"share {f.vectors[SIGNALS.index(SIMILARITY)]:g}", f"vector vote {f.vector_vote:g}"]
    return ("shipped: " if f == shipped else "") + ", ".join(parts)


# ---------------------------------------------------------------------------------------------------- scoring

Sums = np.ndarray  # [questions, Σ R@1, Σ R@5, Σ R@10, Σ R@20] over a conversation's questions
SUM_KS = (1, 5, 10, 20)


def sums(rows: Sequence[tuple[Any, Sequence[str], Sequence[str]]]) -> Sums:
    out = np.zeros(1 + len(SUM_KS))
    for _, ranked, evidence in rows:
        out += [1.0, *(L.recall_at_k(ranked, evidence, k) for k in SUM_KS)]
    return out


class Table:
    """Every (conversation, kind, candidate)'s sums, computed once, when first asked for."""

    def __init__(self, stores: dict[tuple[str, str], L.MnemonRanker]) -> None:
        self.stores = stores
        self.cells: dict[tuple[str, str, L.Fitted], Sums] = {}

    def get(self, conv: L.Conversation, kind: str, cand: L.Fitted) -> Sums:
        key = (conv.sample_id, kind, cand if kind == "mnemon-local" else
               dataclasses.replace(cand, vectors=(0,) * 4, vector_vote=0.0))
        if key not in self.cells:
            ranker = self.stores[(conv.sample_id, kind)]
            config = cand.config()
            self.cells[key] = sums([
                (q.category, [ranker.dia[i] for i in L.recall_with(ranker.memory, q.question, config,
                                                                    asked_at=q.asked_at)], q.evidence)
                for q in conv.questions])
        return self.cells[key]


def recall_by_benchmark(get: Callable[[L.Conversation], Sums], part: Benchmarks) -> dict[str, Sums]:
    """benchmark → [n, mean R@1, R@5, R@10, R@20] over its questions in `part`."""
    out = {}
    for name, convs in part.items():
        total = sum((get(c) for c in convs), np.zeros(1 + len(SUM_KS)))
        if total[0]:
            out[name] = np.concatenate([[total[0]], total[1:] / total[0]])
    return out


def objective(by_benchmark: dict[str, Sums]) -> float:
    """Mean over benchmarks of the mean R@k over OBJECTIVE_KS."""
    cols = [1 + SUM_KS.index(k) for k in OBJECTIVE_KS]
    return float(np.mean([np.mean(v[cols]) for v in by_benchmark.values()]))


def choose(table: Table, kind: str, part: Benchmarks, cands: Sequence[L.Fitted]) -> L.Fitted:
    """The candidate with the best objective on `part` (ties: the earlier one)."""
    scored = [objective(recall_by_benchmark(lambda c, f=f: table.get(c, kind, f), part)) for f in cands]
    return cands[int(np.argmax(scored))]


def baseline_sums(benchmarks: Benchmarks, rankers: Sequence[str], log: Any) -> dict[tuple[str, str], Sums]:
    """(sample id, ranker) → sums, the harness's same-run baselines."""
    out: dict[tuple[str, str], Sums] = {}
    for convs in benchmarks.values():
        run = L.run(convs, rankers, log=log)
        for name, rows in run.rankings.items():
            by_conv: dict[str, list[tuple[Any, list[str], tuple[str, ...]]]] = {}
            for conv_id, category, _, ranked, evidence in rows:
                by_conv.setdefault(conv_id, []).append((category, ranked, evidence))
            for conv_id, conv_rows in by_conv.items():
                out[(conv_id, name)] = sums(conv_rows)
    return out


# ---------------------------------------------------------------------------------------------------- report


def cross_validate(everything: Benchmarks, vectors: Benchmarks, *, kinds: Sequence[str] = KINDS,
                   store_dir: Path | None = None, seed: int = 0, none_grid: dict[str, tuple[Any, ...]] = NONE_GRID,
                   log: Any = sys.stderr) -> str:
    """Markdown: per split, the levers chosen on its training set and R@1 / R@10 on its test set beside the
    shipped recipe's; then each test set against the same-run baselines of the same questions. `none_grid`
    empty: the first stage keeps the shipped set (the second stage alone)."""
    local = "mnemon-local" in kinds
    shipped = L.Fitted.shipped()
    none_convs = [c for convs in everything.values() for c in convs]
    local_convs = [c for convs in vectors.values() for c in convs] if local else []
    base = baseline_sums(vectors if local else everything, BASELINES if local else ("fts5",), log)
    if local:  # FTS5 on every question, too
        base.update(baseline_sums({n: [c for c in everything[n] if c not in vectors[n]] for n in everything},
                                  ("fts5",), log))
    with L.mnemon_stores(none_convs, ["mnemon-none"], store_dir=store_dir, seed=seed, log=log) as none_stores, \
            L.mnemon_stores(local_convs, ["mnemon-local"] if local else [], store_dir=store_dir, seed=seed,
                            log=log) as local_stores:
        table = Table({**none_stores, **local_stores})
        picked: list[tuple[str, Benchmarks, Benchmarks, L.Fitted, L.Fitted | None]] = []
        for name, train, test in splits(everything):
            print(f"choosing on {name}", file=log)
            first = choose(table, "mnemon-none", train, none_candidates(none_grid) if none_grid else [shipped])
            second = choose(table, "mnemon-local", restrict(train, vectors), vector_candidates(first)) if local \
                else None
            picked.append((name, train, test, first, second))
        return _levers_table(table, picked, vectors, kinds, shipped) + "\n" + _against_baselines(
            table, picked, vectors, base, local)


def _r(v: dict[str, Sums], bench: str, k: int) -> str:
    return f"{v[bench][1 + SUM_KS.index(k)]:.3f}" if bench in v else "-"


def _levers_table(table: Table, picked: Sequence[tuple[str, Benchmarks, Benchmarks, L.Fitted, L.Fitted | None]],
                  vectors: Benchmarks, kinds: Sequence[str], shipped: L.Fitted) -> str:
    head = ["split", "chosen (none)", "chosen share, vote (local)",
            *(f"{bench} {kind.split('-')[1]} R@1 / R@10: fitted (shipped)" for kind in kinds for bench in vectors)]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- | ---: |" + " ---: |" * (len(head) - 3)]
    for name, _, test, first, second in picked:
        share = f"{second.vectors[SIGNALS.index(SIMILARITY)]:g}, {second.vector_vote:g}" if second else "-"
        cells = [name, describe(first, False), share]
        for kind in kinds:
            got = second if kind == "mnemon-local" else first
            part = restrict(test, vectors) if kind == "mnemon-local" else test
            fitted = recall_by_benchmark(lambda c: table.get(c, kind, got), part)
            ship = recall_by_benchmark(lambda c: table.get(c, kind, shipped), part)
            for bench in vectors:
                cells.append(f"{_r(fitted, bench, 1)} / {_r(fitted, bench, 10)} ({_r(ship, bench, 1)} / "
                             f"{_r(ship, bench, 10)})" if bench in fitted else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _against_baselines(table: Table, picked: Sequence[tuple[str, Benchmarks, Benchmarks, L.Fitted, L.Fitted | None]],
                       vectors: Benchmarks, base: dict[tuple[str, str], Sums], local: bool) -> str:
    """Each split's test sets: mnemon (with the levers chosen without them) against the same questions' baselines."""
    head = ["split", "test set", "n", "FTS5 R@1 / R@5 / R@10", "mnemon-none R@1 / R@5 / R@10", "none − FTS5 R@10"]
    if local:
        head += ["n (vectors)", "best baseline R@10", "mnemon-local R@1 / R@5 / R@10", "local − best R@10",
                 "local − none R@10 (same questions)", "FTS5 R@1 (same questions)"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]

    def trio(v: dict[str, Sums], bench: str) -> str:
        return " / ".join(_r(v, bench, k) for k in (1, 5, 10))

    for name, _, test, first, second in picked:
        for bench, convs in test.items():
            part = {bench: convs}
            fts = recall_by_benchmark(lambda c: base[(c.sample_id, "fts5")], part)
            none = recall_by_benchmark(lambda c: table.get(c, "mnemon-none", first), part)
            r10 = 1 + SUM_KS.index(10)
            cells = [name, bench, str(int(fts[bench][0])), trio(fts, bench), trio(none, bench),
                     f"{none[bench][r10] - fts[bench][r10]:+.3f}"]
            if local and second is not None:
                vpart = restrict(part, vectors)
                plain = {r: recall_by_benchmark(lambda c, r=r: base[(c.sample_id, r)], vpart)[bench] for r in BASELINES}
                best = max(plain, key=lambda r: plain[r][r10])
                mine = recall_by_benchmark(lambda c: table.get(c, "mnemon-local", second), vpart)
                none_v = recall_by_benchmark(lambda c: table.get(c, "mnemon-none", first), vpart)
                cells += [str(int(mine[bench][0])), f"{plain[best][r10]:.3f} ({best})", trio(mine, bench),
                          f"{mine[bench][r10] - plain[best][r10]:+.3f}",
                          f"{mine[bench][r10] - none_v[bench][r10]:+.3f}", f"{plain['fts5'][1]:.3f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fit", description=__doc__.split("\n\n")[0])
    p.add_argument("--locomo", default=str(L.DEFAULT_DATA), help="LoCoMo JSON (default: %(default)s)")
    p.add_argument("--beam", default=str(B.DEFAULT_DATA), help="BEAM JSON (default: %(default)s)")
    p.add_argument("--longmemeval", default=str(lme.DEFAULT_DATA), help="LongMemEval JSON (default: %(default)s)")
    p.add_argument("--store-dir", default=None, help="build the mnemon stores here and keep them")
    p.add_argument("--seed", type=int, default=0, help="seed of the mnemon stores' insight ids (default 0)")
    p.add_argument("--kinds", default=",".join(KINDS), help="both stages, or mnemon-none for the first alone "
                   "(default: %(default)s)")
    p.add_argument("--lme-vectors", type=int, default=None, help="LongMemEval questions of the stratified sample "
                   "the vector rows run on, the first N in the file's order (default: all of it)")
    p.add_argument("--vectors-only", action="store_true", help="the first stage keeps the shipped set: the "
                   "second stage's grid alone")
    args = p.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not kinds or any(k not in KINDS for k in kinds) or "mnemon-none" not in kinds:
        p.error(f"--kinds takes {KINDS[1]}, with or without {KINDS[0]}")
    command = "python -m benchmarks.fit" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    everything, vectors = load(Path(args.locomo), Path(args.beam), Path(args.longmemeval), args.lme_vectors)
    table = cross_validate(everything, vectors, kinds=[k for k in KINDS if k in kinds],
                           store_dir=Path(args.store_dir) if args.store_dir else None, seed=args.seed,
                           none_grid={} if args.vectors_only else NONE_GRID)
    print(table + f"\nCommand:\n\n    {command}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
