"""How often is an automatic causal edge right? The causal builder (mnemon_core/write/causal.py: a causal
keyword in either text and a token overlap ≥ 0.15 with one of the source's 10 latest memories) run over real
conversations, and each edge it builds judged against a label a person gave it.

Conversations, one insight per message or turn (source = the speaker, session = the conversation's), imported
as `mnemon import` does (the builder runs per insight, as it does for `remember`):
- `tessera`: `../shared/data/chat-export-tessera.json` (ours), 20 messages of a team planning a release, with
  decisions and their causes;
- `locomo/<id>`: the six LoCoMo dev conversations, as `benchmarks/locomo.py` builds them;
- `beam/<id>`: BEAM dev chats 100K-1 and 100K-2 (a user and an assistant on one project), the plan marker
  stripped, cut to the insight limit.

Labels (`benchmarks/causal_labels.json`, by message id only: LoCoMo and BEAM are for evaluation and are not
copied here): `causal` when the edge's source states a reason for what its target says (a cause, or what made
it possible or stopped it), `reversed` when they are cause and effect the other way round, `unrelated` when
neither explains the other (sharing a topic is not enough). Every edge of tessera and LoCoMo is labelled; of
BEAM's, a seeded sample per overlap band. Precision = causal / labelled, per overlap band, since the overlap is
the one number the builder keeps with the edge (`metadata.overlap`) and so the one a reader can gate on.

    python -m benchmarks.causal_precision                 # the table
    python -m benchmarks.causal_precision --unlabelled    # edges without a label, both texts shown, to label
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data"
LABELS = ROOT / "benchmarks" / "causal_labels.json"
BANDS = (0.15, 0.2, 0.3, 0.5)  # lower bounds of the overlap bands; the builder's floor is 0.15
BEAM_CHATS = ("100K-1", "100K-2")
BEAM_SAMPLE = 12  # BEAM edges labelled per overlap band (all of a band with fewer)
PLAN_MARKER = re.compile(r"\s*->->\s*\d+,\d+$")
MAX_CONTENT = 8000  # bytes: the insight limit


@dataclasses.dataclass(frozen=True)
class Message:
    key: str  # the message's id in its data set
    content: str
    source: str
    created_at: str | None = None


@dataclasses.dataclass(frozen=True)
class Edge:
    set: str
    cause: str
    effect: str
    overlap: float


def _cut(text: str) -> str:
    data = text.encode()
    return text if len(data) <= MAX_CONTENT else data[:MAX_CONTENT].decode(errors="ignore")


def tessera(path: Path = DATA / "chat-export-tessera.json") -> Iterator[tuple[str, list[Message]]]:
    from datetime import UTC, datetime

    for conv in json.loads(path.read_text(encoding="utf-8")):
        msgs = sorted((n["message"] for n in conv["mapping"].values() if n.get("message")),
                      key=lambda m: m["create_time"])
        yield "tessera", [
            Message(m["id"], "\n".join(m["content"]["parts"]), m["author"]["role"],
                    datetime.fromtimestamp(m["create_time"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            for m in msgs
        ]


def locomo(path: Path = DATA / "locomo-dev.json") -> Iterator[tuple[str, list[Message]]]:
    from benchmarks.locomo import load_conversations

    for conv in load_conversations(path):
        yield f"locomo/{conv.sample_id}", [Message(t.dia_id, t.content, t.speaker, t.created_at) for t in conv.turns]


def beam(path: Path = DATA / "beam-dev.json") -> Iterator[tuple[str, list[Message]]]:
    for chat in json.loads(path.read_text(encoding="utf-8")):
        if chat["id"] not in BEAM_CHATS:
            continue
        msgs = [Message(str(m["id"]), _cut(PLAN_MARKER.sub("", m["content"])) or "(empty)", m["role"])
                for batch in chat["chat"] for turn in batch["turns"] for m in turn]
        yield f"beam/{chat['id']}", msgs


def build(name: str, msgs: Sequence[Message]) -> list[Edge]:
    """The automatic causal edges the import of `msgs` builds, by message key."""
    from mnemon_core import Memory
    from mnemon_core.config import Settings

    with tempfile.TemporaryDirectory(prefix="mnemon-causal-") as tmp:
        settings = dataclasses.replace(Settings.resolve(data_dir=tmp, store="x", embedder="none"), max_insights=0)
        draft = {"schema_version": "1", "insights": [
            {"content": m.content, "source": m.source, "session": name,
             **({"created_at": m.created_at} if m.created_at else {})} for m in msgs]}
        with Memory(settings=settings) as mem:
            result = mem.import_draft(draft, no_diff=True, vectors="now")
            key = {item.id: msgs[item.index].key for item in result.results}
            edges = [e for e in mem.store.iter_edges() if e.edge_type == "causal" and "overlap" in e.metadata]
    return sorted((Edge(name, key[e.source_id], key[e.target_id], float(e.metadata["overlap"])) for e in edges),
                  key=lambda e: (e.overlap, e.cause, e.effect))


def band(overlap: float) -> str:
    lo = max(b for b in BANDS if b <= overlap)
    hi = next((b for b in BANDS if b > lo), None)
    return f"[{lo:.2f}, {hi:.2f})" if hi is not None else f"≥ {lo:.2f}"


def wanted(edges: Sequence[Edge]) -> list[Edge]:
    """The edges the labels cover: all, except BEAM's, which are sampled per band (seeded)."""
    out = [e for e in edges if not e.set.startswith("beam/")]
    rng = random.Random(0)
    by_band: dict[str, list[Edge]] = {}
    for e in edges:
        if e.set.startswith("beam/"):
            by_band.setdefault(band(e.overlap), []).append(e)
    for b in sorted(by_band):
        group = by_band[b]
        out += group if len(group) <= BEAM_SAMPLE else rng.sample(group, BEAM_SAMPLE)
    return out


def load_labels(path: Path = LABELS) -> dict[tuple[str, str, str], str]:
    if not path.exists():
        return {}
    rows = json.loads(path.read_text(encoding="utf-8"))["labels"]
    return {(r["set"], r["cause"], r["effect"]): r["label"] for r in rows}


def table(edges: Sequence[Edge], labels: dict[tuple[str, str, str], str]) -> str:
    rows: dict[str, dict[str, int]] = {}
    for e in edges:
        lab = labels.get((e.set, e.cause, e.effect))
        for key in (band(e.overlap), "all"):
            row = rows.setdefault(key, {"built": 0, "labelled": 0, "causal": 0, "reversed": 0})
            row["built"] += 1
            if lab is not None:
                row["labelled"] += 1
                row[lab] = row.get(lab, 0) + 1
    lines = ["| overlap | edges built | labelled | causal | reversed | unrelated | precision (causal / labelled) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for key in [*sorted(k for k in rows if k != "all"), "all"]:
        r = rows[key]
        n = r["labelled"]
        prec = f"{r['causal'] / n:.2f}" if n else "—"
        lines.append(f"| {key} | {r['built']} | {n} | {r['causal']} | {r['reversed']} | {r.get('unrelated', 0)} "
                     f"| {prec} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.causal_precision", description=__doc__.split("\n\n")[0])
    p.add_argument("--unlabelled", action="store_true", help="print the wanted edges that have no label yet")
    args = p.parse_args(argv)
    sets = [*tessera(), *locomo(), *beam()]
    texts: dict[tuple[str, str], str] = {}
    edges: list[Edge] = []
    for name, msgs in sets:
        texts.update({(name, m.key): f"{m.source}: {m.content}" for m in msgs})
        edges += build(name, msgs)
    labels = load_labels()
    if args.unlabelled:
        for e in wanted(edges):
            if (e.set, e.cause, e.effect) not in labels:
                print(json.dumps({"set": e.set, "cause": e.cause, "effect": e.effect, "overlap": round(e.overlap, 4),
                                  "cause_text": texts[(e.set, e.cause)][:1500],
                                  "effect_text": texts[(e.set, e.effect)][:1500]}, ensure_ascii=False))
        return 0
    by_set: dict[str, list[Edge]] = {}
    for e in wanted(edges):
        by_set.setdefault(e.set.split("/")[0], []).append(e)
    built = {s: sum(e.set.split("/")[0] == s for e in edges) for s in by_set}
    print(table(edges, labels))
    print()
    for s, group in by_set.items():
        n = sum((e.set, e.cause, e.effect) in labels for e in group)
        ok = sum(labels.get((e.set, e.cause, e.effect)) == "causal" for e in group)
        print(f"- {s}: {built[s]} edges built, {n} labelled, precision {ok / n:.2f}" if n else f"- {s}: no labels")
    command = "python -m benchmarks.causal_precision" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    print(f"\nCommand:\n\n    {command}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
