"""Extraction quality against a real model: six short chat transcripts (`data/extract_quality_chats.json`,
written for this benchmark, four to six labelled facts each: facts, decisions with their causes, preferences,
updates of an earlier value, and the causal relations between facts), each extracted alone with the defaults
(`mnemon_extractor.Extractor`: temperature 0, seed 0), then scored.

    python benchmarks/extract_quality.py --base-url http://127.0.0.1:8765/v1 --model qwen2.5-coder-1.5b
    python benchmarks/extract_quality.py ... --chats homelab,bakery --json out.json

Metrics, summed over the chats (micro-averaged):
- facts: an insight matches a labelled fact when its content holds every key group of the fact (any
  alternative of a group, case-insensitive). Precision: insights that match a fact / insights in the draft.
  Recall: labelled facts matched by some insight / labelled facts.
- decisions with cause: of the labelled decisions and updates that have a cause, those found with it: one
  insight holds the fact's keys and the cause's, or an edge joins the fact's insight to one of the cause fact.
- updates: labelled updates whose new value is in some insight; stale: insights that hold an update's old
  value but not its new one.
- edges: an edge is right when its ends match the two facts of a labelled relation (either direction).
  Precision: right edges / edges; recall: labelled relations with a right edge / labelled relations.
- dropped: insights and edges the extractor's worth rules and checks dropped before the draft.
- time per chat: wall time of `Extractor.run` (model calls included), mean and max; tokens/s of generation.

Prints one Markdown row per run (the table header with `--header`). Needs a model server; without one, the
harness is exercised by tests/test_extract_quality.py against the scripted server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "extractor")]

CHATS = Path(__file__).resolve().parent / "data" / "extract_quality_chats.json"
HEADER = ("| model | chats | facts P | facts R | decisions with cause R | updates R (stale) | edges P | edges R "
          "| dropped (insights/edges) | s per chat (mean/max) | tokens/s |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def load_chats(path: Path = CHATS, only: Sequence[str] | None = None) -> list[dict[str, Any]]:
    chats = json.loads(path.read_text(encoding="utf-8"))["chats"]
    if only:
        unknown = set(only) - {c["id"] for c in chats}
        if unknown:
            raise SystemExit(f"unknown chat ids: {', '.join(sorted(unknown))}")
        chats = [c for c in chats if c["id"] in only]
    return chats


def conversation(chat: dict[str, Any]) -> Any:
    from mnemon_extractor.readers import Conversation, Message

    return Conversation(chat["title"], [Message(m["role"], m["content"], m["timestamp"]) for m in chat["messages"]])


def holds(content: str, keys: Sequence[Sequence[str]]) -> bool:
    """Every key group has an alternative in `content` (case-insensitive)."""
    low = content.casefold()
    return bool(keys) and all(any(alt.casefold() in low for alt in group) for group in keys)


@dataclass
class Score:
    insights: int = 0
    insights_right: int = 0
    facts: int = 0
    facts_found: int = 0
    caused: int = 0
    caused_found: int = 0
    updates: int = 0
    updates_found: int = 0
    stale: int = 0
    edges: int = 0
    edges_right: int = 0
    relations: int = 0
    relations_found: int = 0
    dropped_insights: int = 0
    dropped_edges: int = 0
    seconds: list[float] = field(default_factory=list)
    completion_tokens: int = 0
    generation_seconds: float = 0.0
    missed: list[str] = field(default_factory=list)  # chat:fact ids not found
    wrong: list[str] = field(default_factory=list)  # insights that match no fact

    def add(self, other: Score) -> None:
        for name, value in vars(other).items():
            mine = getattr(self, name)
            setattr(self, name, mine + value)


def score(chat: dict[str, Any], contents: Sequence[str], edges: Sequence[tuple[int, int]]) -> Score:
    """The draft of one chat (insight contents, edges by index) against its labels."""
    facts = chat["facts"]
    by_id = {f["id"]: f for f in facts}
    matched = [{f["id"] for f in facts if holds(c, f["keys"])} for c in contents]
    s = Score(insights=len(contents), insights_right=sum(1 for m in matched if m), facts=len(facts),
              edges=len(edges), relations=len(chat["relations"]))
    s.wrong = [c for c, m in zip(contents, matched) if not m]
    found = set().union(*matched) if matched else set()
    s.facts_found = len(found)
    s.missed = [f"{chat['id']}:{f['id']}" for f in facts if f["id"] not in found]
    pairs = {frozenset((r["cause"], r["effect"])) for r in chat["relations"]}

    def joined(a: str, b: str) -> bool:
        return any((a in matched[x] and b in matched[y]) or (b in matched[x] and a in matched[y]) for x, y in edges)

    s.edges_right = sum(1 for x, y in edges if any(frozenset((a, b)) in pairs for a in matched[x] for b in matched[y]))
    s.relations_found = sum(1 for r in chat["relations"] if joined(r["cause"], r["effect"]))
    for f in facts:
        if f.get("cause"):
            s.caused += 1
            inline = any(holds(c, f["keys"]) and holds(c, f["cause"]) for c in contents)
            causes = [r["cause"] for r in chat["relations"] if r["effect"] == f["id"]]
            s.caused_found += inline or any(joined(f["id"], c) for c in causes)
        if f["kind"] == "update":
            s.updates += 1
            s.updates_found += f["id"] in found
            s.stale += sum(1 for c in contents if holds(c, f["old"]) and not holds(c, f["keys"]))
    assert all(r["cause"] in by_id and r["effect"] in by_id for r in chat["relations"]), chat["id"]
    return s


def run_chat(extractor: Any, chat: dict[str, Any]) -> tuple[Score, Any]:
    start = time.perf_counter()
    run = extractor.run_conversations([conversation(chat)], name=chat["id"])
    seconds = time.perf_counter() - start
    draft = run.draft
    contents = [i.content for i in draft.insights] if draft else []
    edges = [(e.source_index, e.target_index) for e in draft.edges] if draft else []
    s = score(chat, contents, edges)
    r = run.report
    s.dropped_insights, s.dropped_edges = r.insights_dropped, r.edges_dropped
    s.seconds = [seconds]
    s.completion_tokens = r.tokens.completion
    s.generation_seconds = sum(c.answer_tokens / c.tokens_per_s for c in r.calls if c.tokens_per_s)
    return s, run


def ratio(a: int, b: int) -> str:
    return f"{a / b:.2f} ({a}/{b})" if b else "-"


def row(model: str, chats: int, s: Score) -> str:
    speed = s.completion_tokens / s.generation_seconds if s.generation_seconds else 0.0
    secs = f"{statistics.mean(s.seconds):.0f} / {max(s.seconds):.0f}" if s.seconds else "-"
    return (f"| {model} | {chats} | {ratio(s.insights_right, s.insights)} | {ratio(s.facts_found, s.facts)} | "
            f"{ratio(s.caused_found, s.caused)} | {ratio(s.updates_found, s.updates)} ({s.stale}) | "
            f"{ratio(s.edges_right, s.edges)} | {ratio(s.relations_found, s.relations)} | "
            f"{s.dropped_insights}/{s.dropped_edges} | {secs} | {speed:.1f} |")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True, help="the OpenAI-compatible endpoint (…/v1)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--timeout", type=float, default=None, help="MNEMON_LLM_TIMEOUT for this run (default: its default)")
    ap.add_argument("--chats", default=None, help="comma-separated chat ids (default: all)")
    ap.add_argument("--json", default=None, help="write every chat's draft, report and score here")
    ap.add_argument("--header", action="store_true", help="print the table header first")
    a = ap.parse_args(argv)

    from mnemon_extractor import Extractor

    chats = load_chats(only=a.chats.split(",") if a.chats else None)
    extractor_args = {"base_url": a.base_url, "model": a.model, "api_key": a.api_key, "timeout": a.timeout}
    total = Score()
    dump = []
    for chat in chats:
        ex = Extractor(**{k: v for k, v in extractor_args.items() if v is not None})
        s, run = run_chat(ex, chat)
        total.add(s)
        print(f"{chat['id']}: {s.insights} insights ({s.insights_right} right), {s.facts_found}/{s.facts} facts, "
              f"{s.edges} edges, {s.seconds[0]:.0f} s; missed {s.missed}", file=sys.stderr)
        dump.append({"chat": chat["id"], "draft": run.draft.model_dump(mode="json") if run.draft else None,
                     "report": run.report.model_dump(mode="json"), "score": vars(s)})
        # After every chat: a run stopped early (a slow CPU server) keeps what it measured.
        print(f"so far: {row(a.model, len(dump), total)}", file=sys.stderr)
        if a.json:
            Path(a.json).write_text(json.dumps(dump, indent=1, ensure_ascii=False), encoding="utf-8")
    if a.header:
        print(HEADER)
    print(row(a.model, len(chats), total))


if __name__ == "__main__":
    main()
