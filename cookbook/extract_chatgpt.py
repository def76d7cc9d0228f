"""ChatGPT export → memory draft → import → recall.

    pip install -e '.[openai]' && python cookbook/extract_chatgpt.py [conversations.json]

By default the "LLM" is a local OpenAI-compatible server on 127.0.0.1 with canned answers for the sample
export (tests/fixtures/chatgpt_conversations.json), so this runs offline. To use a real model, change the one
line marked below, e.g. `LLM = {"model": "gpt-4o-mini"}` (key in MNEMON_LLM_API_KEY or OPENAI_API_KEY) or
`LLM = {"base_url": "http://localhost:11434/v1", "model": "qwen2.5:7b"}` for Ollama — and pass your own
`conversations.json` from ChatGPT's "Export data".

Uses a throw-away data dir unless MNEMON_DATA_DIR is set.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from mnemon_core import Memory
from mnemon_extractor import Extractor, write_draft
from mnemon_extractor.testing import FakeOpenAIServer, Reply

LLM: dict[str, Any] | None = None  # ← the one line: None = local fake server; a dict = a real model

SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "chatgpt_conversations.json"

# What a model answers for the two conversations of the sample export (one chunk each).
CANNED = {
    "Vector DB for the search service": {
        "insights": [
            {"content": "Qdrant was chosen over Milvus as the vector database of the search service because "
                        "its filtered queries were 3x faster in our benchmark.",
             "category": "decision", "importance": 5, "tags": ["vector-db", "search"],
             "entities": ["Qdrant", "Milvus"], "created_at": None},
            {"content": "With payload indexes, Qdrant keeps p95 latency of filtered queries under 40 ms.",
             "category": "fact", "importance": 3, "tags": ["vector-db", "performance"],
             "entities": ["Qdrant"], "created_at": None},
        ],
        "edges": [{"source_index": 0, "target_index": 1, "edge_type": "causal", "weight": 0.6,
                   "reason": "choosing Qdrant brought the low filtered-query latency"}],
    },
    "API response style": {
        "insights": [
            {"content": "The user wants API responses to be terse JSON, without explanations around it.",
             "category": "preference", "importance": 4, "tags": ["api-design"], "entities": [],
             "created_at": None},
        ],
        "edges": [],
    },
}


def canned(request: dict[str, Any]) -> Reply:
    text = request["messages"][-1]["content"]
    title = text.split('Conversation "', 1)[1].split('"', 1)[0]
    return Reply.json(CANNED.get(title, {"insights": [], "edges": []}))


def main() -> None:
    export = Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE
    data_dir = os.environ.get("MNEMON_DATA_DIR") or tempfile.mkdtemp(prefix="mnemon-extract-")
    with contextlib.ExitStack() as stack:
        llm = LLM
        if llm is None:
            server = stack.enter_context(FakeOpenAIServer(canned))
            llm = {"base_url": server.base_url, "api_key": "fake", "model": "fake-model"}

        # 1. Extract: chunks → LLM → validated draft (failed chunks are reported, never dropped).
        extractor = Extractor(**llm, progress=True)
        run = extractor.run(export)
        r = run.report
        print(f"extract: {r.format} export, {r.conversations} conversations, {r.chunks} chunks → "
              f"{r.insights} insights, {r.edges} edges, {r.chunks_failed} failed, {r.tokens.total} tokens")
        for f in r.failures:
            print(f"  chunk {f.chunk} ({f.conversation}, messages {f.messages}) failed: {f.error}")
        if run.draft is None:
            sys.exit("nothing extracted")
        draft_path = Path(data_dir) / "memory_draft.json"
        write_draft(run.draft, draft_path)
        print(f"draft: {draft_path}")

    # 2. Import: dedupe, graph edges, lifecycle scores.
    mem = Memory(data_dir=data_dir, store="extract-demo")
    result = mem.import_draft(draft_path)
    print(f"import: {result.imported} imported, {result.skipped} skipped, {result.edges_inserted} edges")

    # 3. Recall.
    for query in ("why did we pick Qdrant?", "how should API responses look?"):
        hits = mem.recall(query, limit=3).results
        print(f"\nrecall {query!r}")
        for hit in hits:
            print(f"  {hit.score:.3f} [{hit.intent}] {hit.content}")
    mem.close()


if __name__ == "__main__":
    main()
