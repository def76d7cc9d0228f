"""remember → link judge → recall along the new causal edge.

    pip install -e '.[openai]' && python cookbook/judge_causal.py

`remember` returns candidates (semantic and causal) for the host LLM to judge; `LinkJudge` is that LLM step:
the candidates of several new insights per call, every decision validated, links made with created_by "judge". Neither memory below
says "because", so the engine itself draws no causal edge between them — the judge does, and a WHY recall
then follows it.

By default the judge talks to a local OpenAI-compatible server on 127.0.0.1 that links the candidate about
Milvus causally; to ask a real model, change the one line marked below, e.g. `LLM = {"model": "gpt-4o-mini"}`
(key in MNEMON_LLM_API_KEY or OPENAI_API_KEY) or `LLM = {"base_url": "http://localhost:11434/v1",
"model": "qwen2.5:7b"}`.

Uses a throw-away data dir unless MNEMON_DATA_DIR is set.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from typing import Any

from mnemon_core import Memory
from mnemon_extractor import LinkJudge
from mnemon_extractor.testing import FakeOpenAIServer, Reply

LLM: dict[str, Any] | None = None  # ← the one line: None = local fake server; a dict = a real model


def stand_in(request: dict[str, Any]) -> Reply:
    """Plays the judge: links a candidate about Milvus as the cause of the new memory; leaving the other pairs
    out declines them."""
    block = json.loads(request["messages"][-1]["content"].split("```json\n", 1)[1].split("\n```", 1)[0])
    content = {m["ref"]: m["content"] for m in block["memories"]}
    decisions = [{"ref": p["ref"], "reason": "the slow filtered queries on Milvus led to the move", "link": True,
                  "edge_type": "causal", "sub_type": "causes", "direction": "candidate_to_new", "weight": 0.85}
                 for p in block["pairs"] if "Milvus" in content[p["candidate"]]]
    return Reply.json({"decisions": decisions})


def main() -> None:
    data_dir = os.environ.get("MNEMON_DATA_DIR") or tempfile.mkdtemp(prefix="mnemon-judge-")
    mem = Memory(data_dir=data_dir, store="judge-demo")
    mem.remember("Filtered vector queries on Milvus took 900 ms at p95 in the March benchmark",
                        category="fact", importance=4, entities=["Milvus"])
    moved = mem.remember("The search service moved from Milvus to Qdrant in April", category="decision",
                         importance=5, entities=["Milvus", "Qdrant"])
    print(f"remember → {len(moved.semantic_candidates)} semantic and {len(moved.causal_candidates)} causal "
          f"candidates; engine causal edges: {moved.edges_created.causal}")

    with contextlib.ExitStack() as stack:
        llm = LLM
        if llm is None:
            server = stack.enter_context(FakeOpenAIServer(stand_in))
            llm = {"base_url": server.base_url, "api_key": "fake", "model": "fake-model"}
        result = LinkJudge(mem, **llm).judge(moved)

    for link in result.linked:
        print(f"judge linked: {link.source_id[:8]} -{link.edge_type.value}/{link.sub_type}-> {link.target_id[:8]} "
              f"({link.weight}): {link.reason}")
    for d in result.declined:
        print(f"judge declined {d.candidate_id[:8]}: {d.reason}")
    for r in result.refused:
        print(f"judge refused {r.ref}: {r.error}")

    causes = [h.content for h in mem.related(moved.id, edge_type="causal", depth=1)]
    print(f"\ncausal neighbours of the decision: {causes}")
    print("\nrecall 'why did the search service move to Qdrant?'")
    for hit in mem.recall("why did the search service move to Qdrant?", limit=3).results:
        print(f"  {hit.score:.3f} [{hit.intent}/{hit.matched_via}] {hit.content}")
    mem.close()


if __name__ == "__main__":
    main()
