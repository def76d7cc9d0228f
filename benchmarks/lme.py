"""LongMemEval-S retrieval quality: evidence recall@k of mnemon's recall next to FTS5, dense and RRF baselines, per
question type, and the session-level any@5 that peers publish.

LongMemEval (Wu et al., ICLR 2025): every question has a haystack of its own (about 48 chat sessions of a user
with an assistant, ~490 turns). Each question goes into its own fresh store through the LoCoMo harness's machinery
(`benchmarks/locomo.py`: the same rankers, metric, stores, ablations and report), one insight per turn:
- content `"<role>: <content>"`, cut to the insight limit (8,000 bytes, at whitespace: `faces.kit.chunks`), as
  `benchmarks/beam.py` does; `source` the role; `session` the haystack session's id;
- `created_at` the session's date (`haystack_dates`, e.g. `"2023/05/24 (Wed) 02:54"`, taken as UTC) plus one
  second per turn of the session, so a later turn of a session is newer; sessions are imported in date order (the
  haystack lists 43 of the 101 dev questions' sessions out of date order; an agent's memory receives them in
  time order);
- gold evidence: the turns marked `has_answer` (1-6 per question, 175 of 186 user turns); gold sessions (for
  session any@5): `answer_session_ids`. Abstentions (ids ending `_abs`: nothing to find) and questions with no
  marked turn are skipped: 98 of the dev file's 101 are scored.

Session any@5: the ranking's turns mapped to their sessions in rank order (first appearance), a hit when any gold
session is among the first five: the figure MemPalace and agentmemory publish on the full 500 (there from a
session ranking; here from the first 20 turns each ranker returns).

Embedding every turn of the dev file with the local model takes hours on two cores (49,855 turns, ~104k e5
tokens per question), so the rankers that need vectors run on a stratified sample: the first `SAMPLE_PER_TYPE`
question ids of each question type in sorted order (ids are content hashes: this picks at random, by a rule
anyone can repeat); the others run on every question.

    python -m benchmarks.lme                           # fts5, mnemon-none on all; every ranker on the sample
    python -m benchmarks.lme --rankers fts5,mnemon-none --questions 001be529,031748ae
    python -m benchmarks.lme --ablations --rankers mnemon-none   # mnemon variants (with vectors: on the sample)

`load_questions` is the loader other harnesses import: one `Conversation` per question (`sample_id` the question
id), its turns with `dia_id` (`"<haystack session index>:<turn index>"`), `session`, `speaker` (role),
`content`, `created_at`; its one question with `question`, `category` (the question type), `evidence` and
`sessions` (the gold session ids).

LongMemEval (xiaowu0162/LongMemEval, MIT) is used for evaluation only and never shipped in the package.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python benchmarks/lme.py` as well as `python -m benchmarks.lme`
    sys.path.insert(0, str(ROOT))

from benchmarks import beam as B
from benchmarks import locomo as L
from benchmarks.peers import protocols as P

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "longmemeval-s-dev.json"
DEFAULT_PLOT = ROOT / "benchmarks" / "results" / "lme_recall_at_k.png"

# The question types, in the table's order (name → column label).
QUESTION_TYPES = {
    "single-session-user": "ss-user",
    "single-session-assistant": "ss-assistant",
    "single-session-preference": "ss-preference",
    "multi-session": "multi-session",
    "knowledge-update": "update",
    "temporal-reasoning": "temporal",
}
HAYSTACK_DATE = "%Y/%m/%d %H:%M"  # "2023/05/24 (Wed) 02:54" with the weekday removed
TURN_STEP = timedelta(seconds=1)  # created_at advances this much per turn of a session
SAMPLE_PER_TYPE = 4  # questions of each type in the stratified sample the vector rankers run on
SESSION_TOP = 5  # session any@5
VECTOR_RANKERS = ("dense", "rrf", "rrf-dense0.5", "mnemon-local")
ASKED = "questions (abstentions and questions with no marked turn left out)"


@dataclass(frozen=True)
class Utterance(L.Turn):
    """A LongMemEval turn as a LoCoMo-harness turn: `speaker` the role, `session_id` its haystack session."""

    session_id: str = ""

    @property
    def content(self) -> str:
        return B.message_content(self.speaker, self.text)

    @property
    def session(self) -> str:
        return self.session_id


@dataclass(frozen=True)
class Ask(L.Question):
    """A LongMemEval question; `sessions` are its gold sessions (`answer_session_ids`)."""

    sessions: tuple[str, ...] = ()


def parse_date(text: str) -> datetime:
    """`"2023/05/24 (Wed) 02:54"` → 2023-05-24 02:54 UTC."""
    day, _, rest = text.strip().partition(" (")
    return datetime.strptime(f"{day} {rest.partition(') ')[2]}", HAYSTACK_DATE).replace(tzinfo=UTC)


def parse_question(sample: dict[str, Any]) -> L.Conversation | None:
    """One question → its haystack's turns (sessions in date order) and the question; None when it is not scored
    (an abstention, or no turn marked as the answer)."""
    qid = str(sample["question_id"])
    if qid.endswith("_abs"):
        return None
    sessions = list(zip(sample["haystack_session_ids"], sample["haystack_dates"], sample["haystack_sessions"]))
    order = sorted(range(len(sessions)), key=lambda i: parse_date(sessions[i][1]))  # stable: ties keep their order
    turns: list[Utterance] = []
    evidence: list[str] = []
    for i in order:
        session_id, date, session = sessions[i]
        start = parse_date(date)
        for j, t in enumerate(session):
            dia_id = f"{i}:{j}"
            created = (start + j * TURN_STEP).strftime("%Y-%m-%dT%H:%M:%SZ")
            turns.append(Utterance(dia_id, str(t["role"]), str(t["content"]).strip(), None, created, str(session_id)))
            if t.get("has_answer"):
                evidence.append(dia_id)
    if not evidence:
        return None
    ask = Ask(str(sample["question"]), str(sample["question_type"]), tuple(evidence), str(sample.get("answer", "")),
              asked_at=parse_date(str(sample["question_date"])),
              sessions=tuple(str(s) for s in sample.get("answer_session_ids") or ()))
    return L.Conversation(qid, tuple(turns), (ask,))


def load_questions(path: str | Path = DEFAULT_DATA, only: Sequence[str] | None = None) -> list[L.Conversation]:
    """The scored questions of a LongMemEval file (the official format), each as its own conversation, in file
    order; optionally only those ids."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    wanted = set(only) if only else None
    out = []
    for sample in data:
        if wanted is not None and str(sample["question_id"]) not in wanted:
            continue
        conv = parse_question(sample)
        if conv is not None:
            out.append(conv)
    return out


def stratified_sample(questions: Sequence[L.Conversation], per_type: int = SAMPLE_PER_TYPE) -> list[L.Conversation]:
    """The first `per_type` question ids of each question type in sorted order, in the input's order."""
    by_type: dict[Any, list[str]] = {}
    for conv in questions:
        by_type.setdefault(conv.questions[0].category, []).append(conv.sample_id)
    picked = {qid for ids in by_type.values() for qid in sorted(ids)[:per_type]}
    return [c for c in questions if c.sample_id in picked]


# ---------------------------------------------------------------------------------------------------- metric


def session_any(ranked: Sequence[str], session_of: dict[str, str], gold: Sequence[str], top: int = SESSION_TOP) -> float:
    """1.0 when a gold session is among the first `top` distinct sessions of the ranked turns, else 0.0."""
    return P.any_at(P.sessions_of(ranked, session_of), gold, top)


def session_scores(result: L.Run, questions: Sequence[L.Conversation]) -> dict[str, dict[Any, tuple[int, float]]]:
    """ranker → question type (None: all) → (questions, mean session any@5)."""
    by_id = {c.sample_id: c for c in questions}
    out: dict[str, dict[Any, tuple[int, float]]] = {}
    for name, rows in result.rankings.items():
        sums: dict[Any, list[float]] = {}
        for conv_id, category, _, ranked, _ in rows:
            conv = by_id[conv_id]
            session_of = {t.dia_id: t.session for t in conv.turns}
            gold = conv.questions[0].sessions  # type: ignore[attr-defined]
            hit = session_any(ranked, session_of, gold)
            for key in (None, category):
                sums.setdefault(key, []).append(hit)
        out[name] = {k: (len(v), sum(v) / len(v)) for k, v in sums.items()}
    return out


def type_markdown(result: L.Run, questions: Sequence[L.Conversation]) -> str:
    """R@1/5/10/20 and session any@5 per ranker, over all questions and per question type."""
    sessions = session_scores(result, questions)
    head = ["ranker", "question type", "n", *(f"R@{k}" for k in L.KS), f"session any@{SESSION_TOP}"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- | ---: |" + " ---: |" * (len(L.KS) + 1)]
    for name, s in result.scores().items():
        for key in (None, *QUESTION_TYPES):
            if key is not None and key not in s.n_by_category:
                continue
            n = s.n if key is None else s.n_by_category[key]
            cells = [name, "all" if key is None else QUESTION_TYPES[key], str(n),
                     *(f"{s.at(k, key):.3f}" for k in L.KS), f"{sessions[name][key][1]:.3f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def report(result: L.Run, questions: Sequence[L.Conversation], command: str, title: str) -> str:
    """The LoCoMo harness's table (overall R@k, R@10 per type, ms/query), then R@k and session any@5 per type."""
    return (f"{title}\n\n" + L.markdown(result, command, QUESTION_TYPES, ASKED) + "\n"
            + type_markdown(result, questions))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.lme", description=__doc__.split("\n\n")[0])
    p.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="LongMemEval JSON (default: %(default)s)")
    rankers = [r for r in L.RANKERS if r != "go-v0.1.15" or L.GO_BINARY.exists()]
    p.add_argument("--rankers", default=",".join(rankers), help="comma-separated subset of: " + ", ".join(L.RANKERS)
                   + f" ({', '.join(VECTOR_RANKERS)} on the sample only, unless --questions names some)")
    p.add_argument("--questions", default="", help="comma-separated question ids (default: all)")
    p.add_argument("--sample", action="store_true", help=f"only the stratified sample ({SAMPLE_PER_TYPE} per type)")
    p.add_argument("--plot", nargs="?", const=str(DEFAULT_PLOT), default=None, help="write the recall@k plot (PNG)")
    p.add_argument("--json", default=None, help="write every question's ranking to this file (the sample run's: "
                   "PATH with .sample before the suffix)")
    p.add_argument("--store-dir", default=None, help="build the mnemon stores here and keep them")
    p.add_argument("--seed", type=int, default=0, help="seed of the mnemon stores' insight ids (default 0)")
    p.add_argument("--ablations", action="store_true", help="mnemon only: recall variants")
    args = p.parse_args(argv)
    asked = [r.strip() for r in args.rankers.split(",") if r.strip()]
    unknown = [r for r in asked if r not in L.RANKERS]
    if unknown:
        p.error(f"unknown ranker(s) {', '.join(unknown)}; valid: {', '.join(L.RANKERS)}")
    only = [q.strip() for q in args.questions.split(",") if q.strip()]
    questions = load_questions(args.data, only)
    if not questions:
        p.error("no question selected")
    if args.sample and not only:
        questions = stratified_sample(questions)
    sample = questions if only or args.sample else stratified_sample(questions)
    store_dir = Path(args.store_dir) if args.store_dir else None
    command = "python -m benchmarks.lme" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    if args.ablations:  # on every question without vectors, on the sample with them
        kinds = [r for r in asked if r.startswith("mnemon")] or ["mnemon-none", "mnemon-local"]
        convs = sample if "mnemon-local" in kinds else questions
        print(L.ablation_markdown(L.ablate(convs, kinds, store_dir=store_dir, seed=args.seed), command,
                                  QUESTION_TYPES))
        return 0
    # Every ranker without vectors on every question; the whole set (those with vectors too) on the sample.
    plain = [r for r in asked if r not in VECTOR_RANKERS]
    runs: list[tuple[str, list[L.Conversation], list[str]]] = []
    if sample is not questions and plain:
        runs.append((f"All {len(questions)} questions:", questions, plain))
    if sample is questions or len(plain) < len(asked):
        named = ", ".join(c.sample_id for c in sample)
        title = (f"The stratified sample ({len(sample)} questions: {named}):" if sample is not questions
                 else f"{len(sample)} questions:")
        runs.append((title, sample, asked))
    for i, (title, convs, names) in enumerate(runs):
        sub = None if store_dir is None else store_dir / f"run{i}"
        result = L.run(convs, names, store_dir=sub, seed=args.seed)
        print(report(result, convs, command, title))
        if args.plot and i == len(runs) - 1:
            path = L.plot(result.scores(), Path(args.plot), "LongMemEval-S evidence recall@k")
            print(f"plot: {path}", file=sys.stderr)
        if args.json:
            path = Path(args.json)
            L.dump(result, path if i == 0 else path.with_suffix(".sample" + path.suffix))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
