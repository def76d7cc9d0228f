"""LlamaIndex faces: MnemonRetriever (alone and inside a RetrieverQueryEngine with MockLLM) and
MnemonMemoryBlock (alone and inside the agent Memory). All offline, on real temporary stores."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import Memory as AgentMemory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from llama_index_mnemon import MnemonMemoryBlock, MnemonRetriever
from mnemon_core import AsyncMemory, Memory

SEED = [
    ("We chose Qdrant because its filtering is fast", "decision", 5),
    ("Qdrant runs on the staging cluster since March", "fact", 3),
    ("Alice prefers Qdrant dashboards over Grafana", "preference", 2),
    ("The Qdrant snapshot job runs nightly", "context", 3),
    ("Lunch is at noon on Fridays", "general", 1),
]


@pytest.fixture
def mem(data_dir: Path) -> Memory:
    """The faces run on SQLite here; the store backends have their own suites under mnemon_core's tests."""
    m = Memory()
    yield m
    m.close()


@pytest.fixture
def seeded(mem: Memory) -> Memory:
    for text, cat, imp in SEED:
        mem.remember(text, category=cat, importance=imp)
    return mem


@pytest.fixture
def frozen(seeded: Memory, data_dir: Path) -> Memory:
    """Read-only: recall does not bump access counts, so two recalls see the same state."""
    ro = Memory(data_dir=data_dir, readonly=True)
    yield ro
    ro.close()


# ---------------------------------------------------------------------------------------------- retriever


def test_nodes_are_the_recall_hits_with_their_metadata(frozen: Memory) -> None:
    want = frozen.recall("Qdrant filtering fast", limit=3, verbose=True).results
    got = MnemonRetriever(frozen, similarity_top_k=3).retrieve("Qdrant filtering fast")
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in got)
    assert [(n.node.node_id, n.node.text, n.score) for n in got] == [
        (h.insight.id, h.insight.content, h.score) for h in want
    ]
    assert [n.node.metadata for n in got] == [
        {"id": h.insight.id, "category": h.insight.category.value, "importance": h.insight.importance,
         "score": h.score, "intent": h.intent.value, "via": h.via or None, "signals": h.signals.model_dump(),
         "created_at": h.insight.created_at, "tags": h.insight.tags, "entities": h.insight.entities,
         "source": h.insight.source}
        for h in want
    ]
    top = got[0].node
    assert top.text == "We chose Qdrant because its filtering is fast"
    # The LLM sees the memory with its category and date; ids, scores and signals stay out of the prompt.
    assert top.get_content(metadata_mode=MetadataMode.LLM) == (
        f"category: decision\ncreated_at: {top.metadata['created_at']}\n\n{top.text}"
    )
    assert top.get_content(metadata_mode=MetadataMode.EMBED) == top.text


def test_top_k_filters_and_intent(frozen: Memory) -> None:
    assert len(MnemonRetriever(frozen, similarity_top_k=2).retrieve("Qdrant")) == 2
    prefs = MnemonRetriever(frozen, similarity_top_k=5, category="preference").retrieve("Qdrant")
    assert [n.node.text for n in prefs] == ["Alice prefers Qdrant dashboards over Grafana"]
    assert MnemonRetriever(frozen, source="nobody").retrieve("Qdrant") == []
    forced = MnemonRetriever(frozen, similarity_top_k=2, intent="WHY").retrieve("Qdrant")
    assert [n.node.metadata["intent"] for n in forced] == ["WHY", "WHY"]
    with pytest.raises(ValueError, match="similarity_top_k"):
        MnemonRetriever(frozen, similarity_top_k=0)


def test_opens_its_own_memory(seeded: Memory, data_dir: Path) -> None:
    retriever = MnemonRetriever(data_dir=data_dir, embedder="none", similarity_top_k=1)
    assert [n.node.text for n in retriever.retrieve("Grafana")] == ["Alice prefers Qdrant dashboards over Grafana"]
    assert MnemonRetriever(data_dir=data_dir, store="empty", embedder="none").retrieve("Grafana") == []


async def test_aretrieve_matches_retrieve(frozen: Memory) -> None:
    retriever = MnemonRetriever(frozen, similarity_top_k=3)
    sync_nodes = retriever.retrieve("Qdrant staging")
    async_nodes = await retriever.aretrieve("Qdrant staging")
    assert [(n.node.node_id, n.node.metadata, n.score) for n in async_nodes] == [
        (n.node.node_id, n.node.metadata, n.score) for n in sync_nodes
    ]


class GatedMemory(Memory):
    """Retrieval waits until the event loop's thread opens the gate: it can finish only if it runs elsewhere."""

    gate: threading.Event

    def retrieve(self, *args: Any, **kwargs: Any) -> Any:
        if not self.gate.wait(timeout=5):
            raise AssertionError("recall ran on the event loop's thread and blocked it")
        return super().retrieve(*args, **kwargs)


async def test_async_path_runs_off_the_event_loop(seeded: Memory, data_dir: Path) -> None:
    gated = GatedMemory(data_dir=data_dir, embedder="none")
    gated.gate = threading.Event()
    retriever = MnemonRetriever(AsyncMemory(memory=gated), similarity_top_k=2)
    task = asyncio.create_task(retriever.aretrieve("Qdrant"))
    await asyncio.sleep(0.05)
    assert not task.done()
    gated.gate.set()
    assert len(await asyncio.wait_for(task, timeout=5)) == 2
    gated.close()


def test_query_engine_with_mock_llm(frozen: Memory) -> None:
    retriever = MnemonRetriever(frozen, similarity_top_k=2, category="decision")
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query("why Qdrant?")
    (source,) = response.source_nodes
    assert source.node.text == "We chose Qdrant because its filtering is fast"
    # MockLLM answers with the prompt it was given: the memory reached the LLM, with its category.
    assert "category: decision" in str(response)
    assert "We chose Qdrant because its filtering is fast" in str(response)


async def test_query_engine_async(frozen: Memory) -> None:
    engine = RetrieverQueryEngine.from_args(MnemonRetriever(frozen, similarity_top_k=1), llm=MockLLM())
    response = await engine.aquery("Grafana")
    assert [n.node.text for n in response.source_nodes] == ["Alice prefers Qdrant dashboards over Grafana"]
    assert "Alice prefers Qdrant dashboards over Grafana" in str(response)


# ---------------------------------------------------------------------------------------------- memory block


async def test_block_remembers_what_it_is_given(mem: Memory) -> None:
    block = MnemonMemoryBlock(memory=mem, save_category="context", importance=2)
    await block.aput([
        ChatMessage(role="system", content="You are helpful."),
        ChatMessage(role="user", content="My cat is called Miso"),
        ChatMessage(role="assistant", content="What a lovely name."),
        ChatMessage(role="tool", content="{}"),
        ChatMessage(role="user", content="   "),
    ])
    rows = sorted((i.created_at, i.content, i.source, i.category.value, i.importance) for i in mem.recent(limit=10))
    assert [r[1:] for r in rows] == [
        ("My cat is called Miso", "user", "context", 2), ("What a lovely name.", "assistant", "context", 2),
    ]


async def test_block_roles_are_configurable(mem: Memory) -> None:
    block = MnemonMemoryBlock(memory=mem, roles=["user"])
    await block.aput([ChatMessage(role="user", content="Only me"), ChatMessage(role="assistant", content="Not me")])
    assert [i.content for i in mem.recent(limit=10)] == ["Only me"]


async def test_block_saves_long_messages_in_pieces(mem: Memory) -> None:
    text = " ".join(f"word{i % 300:03d}" for i in range(1900))
    await MnemonMemoryBlock(memory=mem).aput([ChatMessage(role="user", content=text)])
    a, b = (p.content for p in mem.recent(limit=10))
    assert len(a.encode()) <= 8000 and len(b.encode()) <= 8000
    assert text in {f"{a} {b}", f"{b} {a}"}  # cut at a space, nothing lost


async def test_block_recalls_for_the_latest_messages(frozen: Memory) -> None:
    block = MnemonMemoryBlock(memory=frozen, similarity_top_k=1)
    history = [ChatMessage(role="user", content="Lunch plans?"), ChatMessage(role="user", content="Grafana")]
    assert await block.aget(history) == "- [preference] Alice prefers Qdrant dashboards over Grafana"
    wide = MnemonMemoryBlock(memory=frozen, similarity_top_k=1, retrieval_context_window=2)
    want = frozen.recall("Lunch plans? Grafana", limit=1, verbose=True).results[0].insight
    assert await wide.aget(history) == f"- [{want.category.value}] {want.content}"
    assert await block.aget([]) == ""
    assert await block.aget(None) == ""
    assert await block.aget([ChatMessage(role="user", content="  ")]) == ""


async def test_block_truncates_from_the_least_relevant_end() -> None:
    block = MnemonMemoryBlock(memory=Memory(embedder="none"))
    content = "- [fact] first memory here\n- [fact] second memory\n- [fact] third"
    assert await block.atruncate(content, 1) == "- [fact] first memory here\n- [fact] second memory"
    assert await block.atruncate(content, 6) == "- [fact] first memory here"
    assert await block.atruncate(content, 1000) is None


async def test_block_inside_the_agent_memory(mem: Memory) -> None:
    mem.remember("The user's cat is called Miso", category="fact")
    block = MnemonMemoryBlock(memory=mem, similarity_top_k=1)
    memory = AgentMemory.from_defaults(
        session_id="s1", token_limit=60, chat_history_token_ratio=0.5, token_flush_size=10, memory_blocks=[block]
    )
    said = []
    for i in range(4):
        for role, text in [("user", f"Tell me fact number {i} about teal colours"), ("assistant", f"Fact {i}: teal.")]:
            said.append(text)
            await memory.aput(ChatMessage(role=role, content=text))
    await memory.aput(ChatMessage(role="user", content="What is my cat called?"))
    messages = await memory.aget()
    # The system message carries the block: the recalled memory for the latest message.
    assert messages[0].role.value == "system"
    assert messages[0].content == "<memory>\n<mnemon>\n- [fact] The user's cat is called Miso\n</mnemon>\n</memory>"
    # Whatever left the short-term queue is now in mnemon, with its role as the source, and nothing else is.
    kept = {m.content for m in messages[1:]}
    flushed = [t for t in said if t not in kept]
    assert flushed, "the small token limit should have flushed the oldest turns"
    remembered = {(i.content, i.source) for i in mem.recent(limit=50)} - {("The user's cat is called Miso", "user")}
    assert remembered == {(t, "user" if t.startswith("Tell") else "assistant") for t in flushed}
