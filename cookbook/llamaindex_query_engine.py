"""LlamaIndex: a RetrieverQueryEngine that answers from mnemon's recall.

    pip install "mnemon-core[llamaindex]" && python cookbook/llamaindex_query_engine.py

`MnemonRetriever` turns each recalled memory into a `TextNode` (text = the memory; metadata = id, category,
importance, score, intent, via, signals, created_at), so any LlamaIndex query engine, synthesizer or
postprocessor can use it. Offline, the LLM is `MockLLM`, which answers with the prompt it was given; to use a
real one, change the line marked LLM. Uses a throw-away data dir unless MNEMON_DATA_DIR is set.
"""

from __future__ import annotations

import os
import tempfile

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index_mnemon import MnemonRetriever
from mnemon_core import Memory


def main() -> None:
    data_dir = os.environ.get("MNEMON_DATA_DIR") or tempfile.mkdtemp(prefix="mnemon-llamaindex-")
    mem = Memory(data_dir=data_dir, store="cookbook-llamaindex")
    cause = mem.remember("Nightly imports kept timing out on the old Postgres box", category="context")
    fix = mem.remember("We moved the import job to a dedicated worker queue", category="decision", importance=5)
    mem.remember("The worker queue is drained by three consumers", category="fact")
    mem.link(cause.id, fix.id, type="causal", weight=0.9, metadata={"sub_type": "causes"})

    # LLM — for a real model: from llama_index.llms.openai import OpenAI; llm = OpenAI(model="gpt-4o-mini")
    llm = MockLLM()

    retriever = MnemonRetriever(mem, similarity_top_k=3)
    engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
    response = engine.query("Why did we move the import job to a worker queue?")

    for node in response.source_nodes:
        meta = node.node.metadata
        print(f"{node.score:.3f} [{meta['intent']}/{meta['via']}] ({meta['category']}) {node.node.text}")
    print("\nthe LLM was prompted with:" if isinstance(llm, MockLLM) else "\nanswer:")
    print(str(response))
    print(f"\ndata dir: {data_dir}")
    mem.close()


if __name__ == "__main__":
    main()
