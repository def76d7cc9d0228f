"""Does `confidence` mean what it says? LoCoMo's turns and questions, asked two ways.

- **Own questions** (each conversation's questions of categories 1-4 against its own store): every result of
  the top 10 with its label; a label is worth reading when `high` results are evidence turns more often than
  `medium` ones, and those more often than `low` ones. Shown: each label's share of the results and the share
  of them that are evidence; the label of the top result; how often every result is low (`no_match`), which
  for questions about the conversation should be rare.
- **Foreign questions** (every question of conversation i asked of the store of conversation i+1, whose people,
  places and events are others): questions about nothing stored. Shown: the label of the top result, and how
  often the recall says `no_match`.

Two rules, scored on the same recalls: `coverage` (the shipped hybrid rule, recall/evidence.py: how much of the
query's terms and entities a result holds) and `score+evidence` (the rule of main at f3c6a87, rebuilt here from
each hit's score and signals: low below a rounded 0.25 or without a keyword, entity or cosine ≥ 0.5 match, then
medium below 0.6, else high; its `no_match` was "every result low" too).

    python -m benchmarks.confidence                         # both stores (no embedder, local embedder)
    python -m benchmarks.confidence --kinds mnemon-none --conversations conv-26,conv-30

Stores are built as `benchmarks/locomo.py` builds them (one insight per turn, the session passed).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.locomo import DEFAULT_DATA, load_conversations, mnemon_stores  # noqa: E402

LIMIT = 10
LABELS = ("high", "medium", "low")
RULES = ("coverage", "score+evidence")


def old_label(hit: Any) -> str:
    """The label main gave at f3c6a87: the score's, except "low" for a hit with no word, entity or meaning."""
    from mnemon_core.recall.results import confidence, round_score

    s = hit.signals
    if not (s.keyword > 0 or s.entity > 0 or s.similarity >= 0.5):
        return "low"
    return confidence(round_score(hit.score))


def labels_of(found: Any) -> dict[str, list[str]]:
    """rule → the label of each hit, best first."""
    return {"coverage": [h.confidence for h in found.compact().results],
            "score+evidence": [old_label(h) for h in found.results]}


def measure(convs: Sequence[Any], kinds: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with mnemon_stores(convs, kinds) as stores:
        for kind in kinds:
            for rule in RULES:
                out[f"{kind} {rule}"] = {"own": Counter(), "evidence": Counter(), "top": Counter(), "own_n": 0,
                                         "own_no_match": 0, "foreign": Counter(), "no_match": 0, "foreign_n": 0}
            for i, conv in enumerate(convs):
                ranker = stores[(conv.sample_id, kind)]
                for q in conv.questions:
                    found = ranker.memory.retrieve(q.question, limit=LIMIT)
                    ev = set(q.evidence)
                    for rule, labels in labels_of(found).items():
                        row = out[f"{kind} {rule}"]
                        row["own_n"] += 1
                        row["top"][labels[0] if labels else "none"] += 1
                        row["own_no_match"] += bool(labels) and all(lab == "low" for lab in labels)
                        for h, lab in zip(found.results, labels):
                            row["own"][lab] += 1
                            row["evidence"][lab] += ranker.dia[h.insight.id] in ev
                other = stores[(convs[(i + 1) % len(convs)].sample_id, kind)]
                if other is ranker:
                    continue
                for q in conv.questions:
                    found = other.memory.retrieve(q.question, limit=LIMIT)
                    for rule, labels in labels_of(found).items():
                        row = out[f"{kind} {rule}"]
                        row["foreign_n"] += 1
                        row["foreign"][labels[0] if labels else "none"] += 1
                        row["no_match"] += bool(labels) and all(lab == "low" for lab in labels)
    return out


def markdown(result: dict[str, dict[str, Any]], command: str) -> str:
    lines = [
        "| store, rule | own: high (evidence) | own: medium (evidence) | own: low (evidence) "
        "| own top-1 high / medium / low | own no_match | foreign top-1 high / medium / low | foreign no_match |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in result.items():
        total = sum(row["own"].values()) or 1
        cells = []
        for lab in LABELS:
            n = row["own"][lab]
            cells.append(f"{n / total:.2f} ({row['evidence'][lab] / n:.2f})" if n else "0.00 (—)")
        on, fn = row["own_n"] or 1, row["foreign_n"] or 1
        top = " / ".join(f"{row['top'][lab] / on:.2f}" for lab in LABELS)
        foreign = " / ".join(f"{row['foreign'][lab] / fn:.2f}" for lab in LABELS)
        lines.append(f"| {name} | {' | '.join(cells)} | {top} | {row['own_no_match'] / on:.2f} | {foreign} "
                     f"| {row['no_match'] / fn:.2f} |")
    return "\n".join(lines) + f"\n\nCommand:\n\n    {command}\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.confidence", description=__doc__.split("\n\n")[0])
    p.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="LoCoMo JSON (default: %(default)s)")
    p.add_argument("--kinds", default="mnemon-none,mnemon-local", help="mnemon-none, mnemon-local or both")
    p.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    args = p.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    convs = load_conversations(args.data, [c.strip() for c in args.conversations.split(",") if c.strip()])
    if len(convs) < 2:
        p.error("need at least two conversations (foreign questions come from the next one)")
    command = "python -m benchmarks.confidence" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    print(markdown(measure(convs, kinds), command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
