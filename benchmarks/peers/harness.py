"""Peers side by side: every system ranks the same units for the same questions; one ranking, every protocol.

    nice .venv-peers/bin/python -m benchmarks.peers                        # LoCoMo dev, every system
    nice .venv-peers/bin/python -m benchmarks.peers --dataset beam         # BEAM dev (benchmarks/beam.py's loader)
    nice .venv-peers/bin/python -m benchmarks.peers --dataset lme          # LongMemEval's stratified sample
    nice .venv-peers/bin/python -m benchmarks.peers --systems fts5,engram --haystacks conv-26

Runs in its own venv (benchmarks/peers/README.md): the peers' packages are never dependencies of mnemon.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import locomo as L
from . import protocols as P
from .systems import Context, Engram, Haystack, MemPalace, MemPalaceSearch, Synapse, TaOSmd

# name → (embedder column, factory). Peers first, then the same-run baselines and mnemon.
Factory = Callable[[Haystack, Context], Any]
SYSTEMS: dict[str, tuple[str, Factory]] = {
    "mempalace-raw": ("MiniLM", lambda h, c: MemPalace(h, c, hybrid=False)),
    "mempalace-hybrid": ("MiniLM", lambda h, c: MemPalace(h, c, hybrid=True)),
    "mempalace-search": ("MiniLM", MemPalaceSearch),
    "taosmd": ("MiniLM", lambda h, c: TaOSmd(h, c, late=False)),
    "taosmd-maxsim": ("MiniLM tokens", lambda h, c: TaOSmd(h, c, late=True)),
    "engram": ("MiniLM", Engram),
    "synapse": ("own hashed", lambda h, c: Synapse(h, c, distilled=False)),
    "synapse-distilled": ("own, MiniLM-distilled", lambda h, c: Synapse(h, c, distilled=True)),
    "fts5": ("-", lambda h, c: L.FTS5Ranker(h)),  # type: ignore[arg-type]
    "dense-minilm": ("MiniLM", lambda h, c: L.DenseRanker(h, c.minilm)),  # type: ignore[arg-type]
    "dense-e5": ("e5-small", lambda h, c: L.DenseRanker(h, c.e5)),  # type: ignore[arg-type, arg-type]
    "mnemon-none": ("-", lambda h, c: L.MnemonRanker(h.conversation(), c.workdir / "none", None, c.seed)),  # type: ignore[arg-type]
    "mnemon-minilm": ("MiniLM", lambda h, c: L.MnemonRanker(h.conversation(), c.workdir / "minilm", c.minilm, c.seed)),  # type: ignore[arg-type]
    "mnemon-e5": ("e5-small", lambda h, c: L.MnemonRanker(h.conversation(), c.workdir / "e5", c.e5, c.seed)),  # type: ignore[arg-type]
}
NO_VECTORS = frozenset({"fts5", "mnemon-none", "synapse"})  # systems that need neither MiniLM nor e5


# ---------------------------------------------------------------------------------------------------- data


def locomo_haystacks(path: str | Path, only: Sequence[str] = ()) -> list[Haystack]:
    """Each conversation's turns as benchmarks/locomo.py makes them, and EVERY question (categories 1-5, with
    or without evidence): the peers' protocols count category 5 and empty evidence, ours does not."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = L.parse_conversation(sample)
        if only and conv.sample_id not in only:
            continue
        known = {t.dia_id for t in conv.turns}
        questions = tuple(
            (str(qa["question"]), int(qa.get("category", 0)),
             tuple(e for e in L.parse_evidence(qa.get("evidence") or []) if e in known),
             tuple(str(e) for e in qa.get("evidence") or []))
            for qa in sample.get("qa", [])
        )
        out.append(Haystack(conv.sample_id, conv.turns, questions))
    return out


def beam_haystacks(path: str | Path | None, only: Sequence[str] = ()) -> list[Haystack]:
    """benchmarks/beam.py's chats (its messages, its six scored abilities), as haystacks."""
    from .. import beam

    convs = beam.load_chats(path or beam.DEFAULT_DATA, list(only) or None)
    return [Haystack(c.sample_id, c.turns, tuple((q.question, q.category, q.evidence, q.evidence) for q in c.questions),
                     tuple(q.asked_at for q in c.questions)) for c in convs]


def lme_haystacks(path: str | Path | None, only: Sequence[str] = ()) -> list[Haystack]:
    """benchmarks/lme.py's questions, each its own haystack: the stratified sample (the named ones when given);
    a question's raw evidence is its gold sessions (`answer_session_ids`), which session any@5 scores."""
    from .. import lme

    questions = lme.load_questions(path or lme.DEFAULT_DATA, list(only) or None)
    convs = questions if only else lme.stratified_sample(questions)
    return [Haystack(c.sample_id, c.turns, tuple((q.question, q.category, q.evidence, q.sessions)  # type: ignore[attr-defined]
                                                 for q in c.questions), tuple(q.asked_at for q in c.questions))
            for c in convs]


# ---------------------------------------------------------------------------------------------------- run


@dataclasses.dataclass
class Run:
    rows: dict[str, list[P.Ranked]]
    seconds: dict[str, float]  # answering questions
    setup_seconds: dict[str, float]  # indexing, embedding, importing
    notes: dict[str, str]
    haystacks: list[str] = dataclasses.field(default_factory=list)  # scored, in order


def run(haystacks: Sequence[Haystack], systems: Sequence[str], *, seed: int = 0, log: Any = sys.stderr,
        checkpoint: Path | None = None) -> Run:
    """Each system built per haystack and asked its questions; with `checkpoint`, the rankings so far are dumped
    there after every haystack (a long run stopped half way keeps what it did)."""
    from .minilm import MiniLMEmbedder

    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {', '.join(unknown)}; valid: {', '.join(SYSTEMS)}")
    minilm = L.CachedLocalEmbedder(inner=MiniLMEmbedder()) if set(systems) - NO_VECTORS else None
    e5 = L.CachedLocalEmbedder() if any(s.endswith("-e5") for s in systems) else None
    out = Run({s: [] for s in systems}, dict.fromkeys(systems, 0.0), dict.fromkeys(systems, 0.0), {})
    with tempfile.TemporaryDirectory(prefix="mnemon-peers-") as tmp:
        ctx = Context(minilm, e5, Path(tmp), seed)
        try:
            for hay in haystacks:
                print(f"{hay.sample_id}: {len(hay.turns)} units, {len(hay.questions)} questions", file=log)
                out.haystacks.append(hay.sample_id)
                questions = [q for q, *_ in hay.questions]
                for emb in (minilm, e5):  # every vector once, in batches, before any system is timed
                    if emb is not None:
                        emb.embed_batch([t.content for t in hay.turns])
                        emb.embed_batch(questions, query=True)
                session_of = hay.session_of()
                for name in systems:
                    t0 = time.perf_counter()
                    system = SYSTEMS[name][1](hay, ctx)
                    t1 = time.perf_counter()
                    rankings = [system(q) for q in questions]
                    t2 = time.perf_counter()
                    if getattr(system, "distill", None):
                        out.notes[name] = f"distill: {system.distill}"
                    close = getattr(system, "close", None)
                    if close is not None:
                        close()
                    out.setup_seconds[name] += t1 - t0
                    out.seconds[name] += t2 - t1
                    out.rows[name].extend(
                        P.Ranked(hay.sample_id, label, q, tuple(r[: P.KS[-1]]), ev, raw, session_of)
                        for (q, label, ev, raw), r in zip(hay.questions, rankings))
                    print(f"  {name}: setup {t1 - t0:.1f} s, {1000 * (t2 - t1) / max(1, len(questions)):.1f} ms/q",
                          file=log)
                if checkpoint is not None:
                    dump(out, checkpoint)
        finally:
            for emb in (minilm, e5):
                if emb is not None:
                    emb.close()
    return out


# ---------------------------------------------------------------------------------------------------- report


def _ms(result: Run, name: str) -> str:
    n = len(result.rows[name])
    return f"{1000 * result.seconds[name] / max(1, n):.1f}"


def locomo_markdown(result: Run, command: str) -> str:
    head = ["system", "embedder", *(f"R@{k}" for k in P.KS), *(p.name for p in P.LOCOMO_PROTOCOLS[1:]), "ms/q"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
    counts: dict[str, int] = {}
    for name, rows in result.rows.items():
        curve = P.recall_curve(rows, labels=P.LOCOMO_OURS_CATEGORIES)
        cells = [name, SYSTEMS[name][0], *(f"{curve[k]:.3f}" for k in P.KS)]
        for p in P.LOCOMO_PROTOCOLS[1:]:
            value, counts[p.name] = P.mean_over(rows, p)
            cells.append(f"{value:.3f}")
        cells.append(_ms(result, name))
        lines.append("| " + " | ".join(cells) + " |")
    rows = next(iter(result.rows.values()))
    _, n_ours = P.mean_over(rows, P.LOCOMO_PROTOCOLS[0])
    cats = ["| system | " + " | ".join(f"R@10 {L.CATEGORIES[c]}" for c in L.CATEGORIES) + " |",
            "| --- |" + " ---: |" * len(L.CATEGORIES)]
    for name, rs in result.rows.items():
        per = P.by_label([r for r in rs if r.label in P.LOCOMO_OURS_CATEGORIES])
        cats.append(f"| {name} | " + " | ".join(f"{per[c][0]:.3f}" for c in L.CATEGORIES if c in per) + " |")
    foot = (f"\nR@k (ours): {n_ours} questions; "
            + "; ".join(f"{p.name}: {counts[p.name]} questions ({p.what})" for p in P.LOCOMO_PROTOCOLS[1:])
            + ".\n")
    return "\n".join(lines) + "\n" + foot + "\n" + "\n".join(cats) + _footer(result, command)


def beam_markdown(result: Run, command: str) -> str:
    from .. import beam

    head = ["system", "embedder", *(f"R@{k}" for k in P.KS), "any@10", *beam.ABILITIES.values(), "ms/q"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
    for name, rows in result.rows.items():
        curve = P.recall_curve(rows)
        hit10 = P.recall_curve(rows, (10,), hit=P.any_at)[10]
        per = P.by_label(rows)
        cells = [name, SYSTEMS[name][0], *(f"{curve[k]:.3f}" for k in P.KS), f"{hit10:.3f}",
                 *(f"{per[a][0]:.3f}" if a in per else "-" for a in beam.ABILITIES), _ms(result, name)]
        lines.append("| " + " | ".join(cells) + " |")
    n = len([r for r in next(iter(result.rows.values())) if r.evidence])
    return "\n".join(lines) + f"\n\n{n} questions with evidence.\n" + _footer(result, command)


def lme_markdown(result: Run, command: str) -> str:
    from .. import lme

    head = ["system", "embedder", *(f"R@{k}" for k in P.KS), f"session any@{lme.SESSION_TOP}",
            *lme.QUESTION_TYPES.values(), "ms/q"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
    for name, rows in result.rows.items():
        curve = P.recall_curve(rows)
        hits = [lme.session_any(r.ranked, r.session_of, r.evidence_raw) for r in rows]
        per = P.by_label(rows)
        cells = [name, SYSTEMS[name][0], *(f"{curve[k]:.3f}" for k in P.KS), f"{sum(hits) / max(1, len(hits)):.3f}",
                 *(f"{per[t][0]:.3f}" if t in per else "-" for t in lme.QUESTION_TYPES), _ms(result, name)]
        lines.append("| " + " | ".join(cells) + " |")
    n = len(next(iter(result.rows.values())))
    return "\n".join(lines) + f"\n\n{n} questions, each its own haystack.\n" + _footer(result, command)


def _footer(result: Run, command: str) -> str:
    setup = ", ".join(f"{n} {s:.0f} s" for n, s in result.setup_seconds.items())
    notes = "".join(f"\n{n}: {v}" for n, v in result.notes.items())
    return (f"\n\nHaystacks: {', '.join(result.haystacks)}. Setup (index, import; vectors cached): {setup}.{notes}"
            f"\n\nCommand:\n\n    {command}\n")


def dump(result: Run, path: Path) -> None:
    """Every question's ranking and each system's times, for analysis and for `--merge`."""
    data = {name: {"seconds": result.seconds[name], "setup_seconds": result.setup_seconds[name],
                   "note": result.notes.get(name),
                   "rows": [{"haystack": r.haystack, "label": r.label, "question": r.question,
                             "ranked": list(r.ranked)} for r in rows]}
            for name, rows in result.rows.items()}
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def load(paths: Sequence[Path], haystacks: Sequence[Haystack]) -> Run:
    """Runs dumped by `dump` (each a subset of the systems, e.g. run side by side to share the machine's cores)
    as one Run, their rankings put back beside the questions and evidence of `haystacks`, in SYSTEMS order.
    Only the haystacks every system finished, of those given, are scored (a run stopped half way has dumped
    fewer)."""
    by_id = {h.sample_id: h for h in haystacks}
    sessions = {h.sample_id: h.session_of() for h in haystacks}
    found: dict[str, dict[str, Any]] = {}
    for path in paths:
        found.update(json.loads(Path(path).read_text(encoding="utf-8")))
    done = [{r["haystack"] for r in entry["rows"]} for entry in found.values()]
    common = set.intersection(*done) & set(by_id) if done else set()  # `--haystacks` may ask for fewer
    out = Run({}, {}, {}, {}, [h.sample_id for h in haystacks if h.sample_id in common])
    for name in [n for n in SYSTEMS if n in found]:
        entry = found[name]
        out.rows[name] = []
        seen: dict[str, int] = {}  # rows are dumped in each haystack's question order
        for row in (r for r in entry["rows"] if r["haystack"] in common):
            hay = by_id[row["haystack"]]
            i = seen[hay.sample_id] = seen.get(hay.sample_id, -1) + 1
            question, label, ev, raw = hay.questions[i]
            if question != row["question"]:
                raise ValueError(f"{name}: question {i} of {hay.sample_id} is not the data's (another data file?)")
            out.rows[name].append(P.Ranked(hay.sample_id, label, question, tuple(row["ranked"]), ev, raw,
                                           sessions[hay.sample_id]))
        share = len(out.rows[name]) / max(1, len(entry["rows"]))  # times of the haystacks kept, pro rata
        out.seconds[name], out.setup_seconds[name] = entry["seconds"] * share, entry["setup_seconds"] * share
        if entry.get("note"):
            out.notes[name] = entry["note"]
    return out


# Offline and quiet: no hub look-ups (every model is local), no Chroma telemetry, no bm25s progress bars.
RUN_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False", "TQDM_DISABLE": "1",
           "MNEMON_DAEMON": "off"}


def main(argv: Sequence[str] | None = None) -> int:
    for key, value in RUN_ENV.items():
        os.environ.setdefault(key, value)
    p = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=("locomo", "beam", "lme"), default="locomo",
                   help="lme: LongMemEval's stratified sample (benchmarks/lme.py) unless --haystacks names questions")
    p.add_argument("--data", default=None, help="data file (default: the dataset's dev file in ../shared/data)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of: " + ", ".join(SYSTEMS))
    p.add_argument("--haystacks", default="", help="comma-separated conversation / chat ids (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the mnemon stores' insight ids (default 0)")
    p.add_argument("--json", default=None, help="write every question's ranking to this file (after each haystack)")
    p.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                   help="no run: the tables of runs written with --json (each a subset of the systems)")
    args = p.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    only = [h.strip() for h in args.haystacks.split(",") if h.strip()]
    loaders = {"locomo": lambda: locomo_haystacks(args.data or L.DEFAULT_DATA, only),
               "beam": lambda: beam_haystacks(args.data, only), "lme": lambda: lme_haystacks(args.data, only)}
    haystacks = loaders[args.dataset]()
    if not haystacks:
        p.error("no haystack selected")
    command = "python -m benchmarks.peers" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    if args.merge:
        result = load([Path(j) for j in args.merge], haystacks)
    else:
        result = run(haystacks, systems, seed=args.seed, checkpoint=Path(args.json) if args.json else None)
    markdown = {"locomo": locomo_markdown, "beam": beam_markdown, "lme": lme_markdown}[args.dataset]
    print(markdown(result, command))
    if args.json:
        dump(result, Path(args.json))
    return 0
