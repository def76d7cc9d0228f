"""A recorded `mnemon judge` run replayed offline through the judge as it is now: what its guards make of the
answers a real model gave, without the model.

    python -m benchmarks.judge_replay DRAFT RUN [RUN ...]
    python -m benchmarks.judge_replay benchmarks/data/judge-runs/tessera-qwen2.5-coder-1.5b/draft.json benchmarks/data/judge-runs/tessera-qwen2.5-coder-1.5b/run1 benchmarks/data/judge-runs/tessera-qwen2.5-coder-1.5b/run2

DRAFT is the draft the run imported; RUN a folder with `import.json` (the output of `mnemon import DRAFT`) and
`judge.json` (of `mnemon judge --recent N`). The draft is imported again into a fresh store without an embedder
(as the runs in RESULTS.md were made: another embedder offers other candidates) and the judge asked about the
same N insights, dry run, through the scripted server (`mnemon_extractor.testing`), which answers each call with
the decisions recorded for its pairs, found by the two memories' contents:
- a link as it was linked;
- a link a guard declined (the weight floor, "names neither memory", "supersedes needs the same subject", a
  hub) as the link decision it was: the reason is the one recorded after the guard's words, the type the one
  the guard names, else `causal`/`causes` at 0.9 (every link of the recorded 1.5B runs); the old guards come
  first and still decline these, so only the reuse count and the hubs see them;
- a pair the model declined (`link: false`) with its reason; a pair left out ("not linked by the model") is
  left out again.
Printed: each recorded link, each reason guard's verdict on it alone (`names_a_memory`, `restates` an end or
another memory of its call, `ends_named`, `reused_reasons`) and what the judge does with it now; then per run
the totals, whether the replay offered the recorded pairs, and what it gives with the guards of issue 27 off
(`unrelating`, `reused_reasons`): the recorded links and declines, if the replay is faithful.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "extractor"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from mnemon_core import Memory  # noqa: E402
from mnemon_extractor import LinkJudge  # noqa: E402
from mnemon_extractor import judge as judge_module  # noqa: E402
from mnemon_extractor.judge import (  # noqa: E402
    BOTH_ENDS_TYPES,
    names_a_memory,
    reason_key,
    reused_reasons,
    subject_words,
)
from mnemon_extractor.testing import FakeOpenAIServer, Reply  # noqa: E402
from mnemon_extractor.worth import ends_named, restates  # noqa: E402

# How a guard's decline began in the recorded run, and the link decision it declined.
GUARDS = (("weight ", "causal"), ("the reason names neither memory: ", "causal"),
          ("supersedes needs the same subject", "supersedes"), (" is an end of ", None))
RULES = ("names_a_memory", "restates an end", "restates another", "ends_named", "reused")


def recorded(run: Path) -> tuple[dict[tuple[str, str], dict[str, Any]], list[tuple[str, str, dict[str, Any]]], int]:
    """(new content, candidate content) → the decision recorded for the pair; the recorded links as (new,
    candidate, link); how many insights were judged."""
    content = {r["id"]: r["content"] for r in json.loads((run / "import.json").read_text())["results"]}
    results = json.loads((run / "judge.json").read_text())
    decisions: dict[tuple[str, str], dict[str, Any]] = {}
    links = []
    for r in results:
        new = content[r["id"]]
        for lk in r["linked"]:
            pair = (new, content[lk["candidate_id"]])
            links.append((*pair, lk))
            decisions[pair] = {"link": True, "edge_type": lk["edge_type"], "sub_type": lk["sub_type"],
                               "weight": lk["weight"], "reason": lk["reason"],
                               "direction": "new_to_candidate" if lk["source_id"] == r["id"] else "candidate_to_new"}
        for d in r["declined"]:
            if d["reason"] != "not linked by the model":
                decisions[new, content[d["candidate_id"]]] = declined(d["reason"])
    return decisions, links, len(results)


def declined(text: str) -> dict[str, Any]:
    """The decision behind a recorded decline: a guard's (a link decision) or the model's own."""
    for start, kind in GUARDS:
        if start in text:
            head, reason = text.split(": ", 1)
            if kind is None:  # "<id> is an end of N causal links in one answer (at most 3)"
                kind = head.split(" is an end of ", 1)[1].split()[1]
            weight = float(head.split()[1]) if start == "weight " else 0.9
            return {"link": True, "edge_type": kind, "sub_type": "causes" if kind == "causal" else None,
                    "weight": weight, "reason": reason, "direction": "new_to_candidate"}
    return {"link": False, "edge_type": "semantic", "sub_type": None, "weight": 0.0, "reason": text,
            "direction": "new_to_candidate"}


def replay(draft: Path, run: Path, guards: bool = True) -> dict[str, Any]:
    """The run's answers through the judge; with `guards` False, without the reason guards of issue 27."""
    decisions, links, n = recorded(run)
    calls: list[tuple[dict[str, str], list[dict[str, Any]]]] = []  # (ref → content, decisions) per call
    asked: set[tuple[str, str]] = set()

    def respond(req: dict[str, Any]) -> Reply:
        text = req["messages"][1]["content"]
        data = json.loads(text.split("```json\n", 1)[1].split("\n```", 1)[0])
        content = {m["ref"]: m["content"] for m in data["memories"]}
        out = []
        for p in data["pairs"]:
            pair = (content[p["new"]], content[p["candidate"]])
            asked.add(pair)
            if pair in decisions:
                out.append({"ref": p["ref"], **decisions[pair]})
        calls.append((content, out))
        return Reply.json({"decisions": out})

    with ExitStack() as stack:
        if not guards:
            stack.enter_context(mock.patch.object(judge_module, "unrelating", lambda *a: None))
            stack.enter_context(mock.patch.object(judge_module, "reused_reasons", lambda d, offered: {}))
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        mem = stack.enter_context(Memory(data_dir=folder, embedder="none"))
        server = stack.enter_context(FakeOpenAIServer(respond))
        mem.import_draft(json.loads(draft.read_text()))
        judge = LinkJudge(mem, base_url=server.base_url, api_key="replay", model="replay", max_retries=0, timeout=30)
        results = judge.judge_recent(n, dry_run=True)
        content = {i.id: i.content for i in mem.recent(n)}
    now = {(content[r.id], content[lk.candidate_id]): "linked" for r in results for lk in r.linked}
    now.update({(content[r.id], content[d.candidate_id]): d.reason for r in results for d in r.declined})
    rows = []
    for new, cand, lk in links:
        refs, said = next(((c, out) for c, out in calls if new in c.values() and cand in c.values()
                           and any(x["reason"] == lk["reason"] for x in out)), ({}, []))
        others = [c for c in refs.values() if c not in (new, cand)]
        verdict = {
            "names_a_memory": not names_a_memory(lk["reason"], new, cand),
            "restates an end": any(restates(lk["reason"], c, subject_words) for c in (new, cand)),
            "restates another": any(restates(lk["reason"], c, subject_words) for c in others),
            "ends_named": lk["edge_type"] in BOTH_ENDS_TYPES and not all(ends_named(lk["reason"], new, cand,
                                                                                   subject_words)),
            "reused": reason_key(lk["reason"]) in reused_reasons(said, lambda ref: ref),  # every ref was offered
        }
        rows.append((new, cand, lk, verdict, now.get((new, cand), "not asked")))
    return {"rows": rows, "calls": len(calls), "recorded_pairs": len(decisions),
            "offered": len(set(decisions) & asked), "linked": sum(len(r.linked) for r in results),
            "declined": sum(len(r.declined) for r in results)}


def short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("draft", type=Path)
    ap.add_argument("runs", type=Path, nargs="+")
    args = ap.parse_args(argv)
    for run in args.runs:
        r = replay(args.draft, run)
        print(f"\n## {run}: {len(r['rows'])} recorded links; replayed in {r['calls']} calls, "
              f"{r['offered']} of {r['recorded_pairs']} recorded decisions' pairs offered again\n")
        print("| new → candidate | type | reason | " + " | ".join(RULES) + " | now |")
        print("| --- | --- | --- | " + " | ".join("---" for _ in RULES) + " | --- |")
        for new, cand, lk, verdict, now in r["rows"]:
            print(f"| {short(new, 40)} → {short(cand, 40)} | {lk['edge_type']}/{lk['sub_type']} {lk['weight']:g} "
                  f"| {short(lk['reason'], 60)} | " + " | ".join("declines" if verdict[k] else "" for k in RULES)
                  + f" | {short(now.split(': ', 1)[0], 60)} |")
        total = {k: sum(v[k] for *_, v, _ in r["rows"]) for k in RULES}
        left = sum(now == "linked" for *_, now in r["rows"])
        print(f"\nDeclined alone, of {len(r['rows'])}: " + ", ".join(f"{k} {v}" for k, v in total.items())
              + f"; linked now: {left} (all links of the replay: {r['linked']}, declined {r['declined']})")
        was = json.loads((run / "judge.json").read_text())
        off = replay(args.draft, run, guards=False)
        print(f"Without the guards of issue 27: linked {off['linked']}, declined {off['declined']}; the recorded run: "
              f"linked {sum(len(x['linked']) for x in was)}, declined {sum(len(x['declined']) for x in was)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
