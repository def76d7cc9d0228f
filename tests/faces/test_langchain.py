"""LangChain faces: MnemonRetriever (with langchain-tests' standard retriever suite), MnemonMemory, the
remember / recall / link tools (with the standard tool suites), an LCEL chain and a create_agent run with a
fake tool-calling model. All offline, on real temporary stores."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_classic.base_memory import BaseMemory as ClassicBaseMemory
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import BaseTool, tool
from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from pydantic import Field

from langchain_mnemon import MnemonMemory, MnemonRetriever, MnemonStore, create_mnemon_tools, format_documents
from mnemon_core import AsyncMemory, Memory

ROOT = Path(__file__).resolve().parents[2]

# Five memories; four name Qdrant, so a "Qdrant" query has at least three hits for the standard suite.
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


def seed(mem: Memory) -> dict[str, str]:
    """Remember SEED; returns content → id."""
    return {text: mem.remember(text, category=cat, importance=imp).id for text, cat, imp in SEED}


@pytest.fixture
def seeded(mem: Memory) -> Memory:
    seed(mem)
    return mem


@pytest.fixture
def frozen(seeded: Memory, data_dir: Path) -> Memory:
    """A read-only view of the seeded store: recall does not bump access counts, so two recalls see the
    same state and must give the same answer."""
    ro = Memory(data_dir=data_dir, readonly=True)
    yield ro
    ro.close()


class FakeToolCallingModel(GenericFakeChatModel):
    """A scripted chat model that accepts tools, as create_agent requires; it replays its messages."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolCallingModel:
        return self


class RecordingModel(GenericFakeChatModel):
    """A scripted chat model that keeps the prompts it was given."""

    seen: list[list[Any]] = Field(default_factory=list)

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def expected_metadata(hit: Any) -> dict[str, Any]:
    ins = hit.insight
    return {
        "id": ins.id, "category": ins.category.value, "importance": ins.importance, "score": hit.score,
        "intent": hit.intent.value, "via": hit.via or None, "signals": hit.signals.model_dump(),
        "created_at": ins.created_at, "tags": ins.tags, "entities": ins.entities, "source": ins.source,
    }


# ---------------------------------------------------------------------------------------------- retriever


class TestMnemonRetrieverStandard(RetrieversIntegrationTests):
    """langchain-tests' own retriever suite, on a real store in the test's data dir."""

    @pytest.fixture(autouse=True)
    def _seed(self, data_dir: Path) -> None:
        with Memory() as m:
            seed(m)

    @property
    def retriever_constructor(self) -> type[MnemonRetriever]:
        return MnemonRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"embedder": "none"}

    @property
    def retriever_query_example(self) -> str:
        return "Qdrant"


def test_documents_are_the_recall_hits_with_their_metadata(frozen: Memory) -> None:
    query = "Qdrant filtering fast"
    want = frozen.recall(query, limit=3, verbose=True).results
    docs = MnemonRetriever(memory=frozen, k=3).invoke(query)
    assert len(want) == 3
    assert [d.page_content for d in docs] == [h.insight.content for h in want]
    assert [d.id for d in docs] == [h.insight.id for h in want]
    assert [d.metadata for d in docs] == [expected_metadata(h) for h in want]
    assert list(docs[0].metadata)[:8] == ["id", "category", "importance", "score", "intent", "via", "signals",
                                          "created_at"]
    assert docs[0].page_content == "We chose Qdrant because its filtering is fast"
    assert docs[0].metadata["intent"] == "GENERAL"


def test_invoke_k_overrides_the_field(frozen: Memory) -> None:
    retriever = MnemonRetriever(memory=frozen, k=4)
    assert len(retriever.invoke("Qdrant")) == 4
    assert len(retriever.invoke("Qdrant", k=2)) == 2
    assert len(retriever.invoke("Qdrant", k=1)) == 1


def test_filters_and_intent_reach_recall(frozen: Memory) -> None:
    by_field = MnemonRetriever(memory=frozen, k=5, category="preference").invoke("Qdrant")
    assert [d.page_content for d in by_field] == ["Alice prefers Qdrant dashboards over Grafana"]
    by_call = MnemonRetriever(memory=frozen, k=5).invoke("Qdrant", category="fact")
    assert [d.page_content for d in by_call] == ["Qdrant runs on the staging cluster since March"]
    assert MnemonRetriever(memory=frozen, k=5, source="nobody").invoke("Qdrant") == []
    forced = MnemonRetriever(memory=frozen, k=2, intent="WHEN").invoke("Qdrant")
    assert [d.metadata["intent"] for d in forced] == ["WHEN", "WHEN"]


def test_opens_its_own_memory_from_data_dir_and_store(data_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    with Memory(data_dir=other, store="team") as m:
        m.remember("The team standup is at nine", category="fact")
    docs = MnemonRetriever(data_dir=str(other), store="team", embedder="none").invoke("standup")
    assert [d.page_content for d in docs] == ["The team standup is at nine"]
    assert MnemonRetriever(embedder="none").invoke("standup") == []  # the default data dir is another memory


async def test_ainvoke_matches_invoke(frozen: Memory) -> None:
    retriever = MnemonRetriever(memory=frozen, k=3)
    sync_docs = retriever.invoke("Qdrant staging")
    async_docs = await retriever.ainvoke("Qdrant staging")
    assert async_docs == sync_docs
    assert await retriever.ainvoke("Qdrant staging", k=1) == sync_docs[:1]


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
    retriever = MnemonRetriever(memory=AsyncMemory(memory=gated), k=2)
    task = asyncio.create_task(retriever.ainvoke("Qdrant"))
    await asyncio.sleep(0.05)
    assert not task.done()  # waiting on the gate, in a worker thread
    gated.gate.set()
    docs = await asyncio.wait_for(task, timeout=5)
    assert len(docs) == 2
    gated.close()


def test_lcel_chain_retriever_format_fake_model(frozen: Memory) -> None:
    retriever = MnemonRetriever(memory=frozen, k=2, category="decision")
    prompt = ChatPromptTemplate.from_messages([
        ("system", "Answer from these memories:\n{context}"),
        ("human", "{question}"),
    ])
    model = RecordingModel(messages=iter(["Because its filtering is fast."]))
    chain = {"context": retriever | format_documents, "question": lambda q: q} | prompt | model
    answer = chain.invoke("why Qdrant?")
    assert answer.content == "Because its filtering is fast."
    (messages,) = model.seen
    assert messages[0].content == "Answer from these memories:\n- [decision] We chose Qdrant because its filtering is fast"
    assert messages[1].content == "why Qdrant?"


def test_format_documents() -> None:
    docs = [Document(page_content="a", metadata={"category": "fact"}), Document(page_content="b")]
    assert format_documents(docs) == "- [fact] a\n- b"
    assert format_documents([]) == ""


# ---------------------------------------------------------------------------------------------- memory


def test_memory_is_a_langchain_classic_memory(mem: Memory) -> None:
    memory = MnemonMemory(memory=mem, memory_key="memories")
    assert isinstance(memory, ClassicBaseMemory)
    assert memory.memory_variables == ["memories"]


def test_load_recalls_for_the_latest_input(frozen: Memory) -> None:
    memory = MnemonMemory(memory=frozen, k=1)
    assert memory.load_memory_variables({"input": "Grafana"}) == {
        "history": "- [preference] Alice prefers Qdrant dashboards over Grafana"
    }
    chat = {"messages": [HumanMessage("Lunch?"), AIMessage("noon"), HumanMessage("Grafana")]}
    assert memory.load_memory_variables(chat)["history"] == "- [preference] Alice prefers Qdrant dashboards over Grafana"
    assert memory.load_memory_variables({"input": "   "}) == {"history": ""}
    keyed = MnemonMemory(memory=frozen, k=1, input_key="question", memory_key="ctx")
    assert keyed.load_memory_variables({"question": "Fridays", "lang": "en"}) == {
        "ctx": "- [general] Lunch is at noon on Fridays"
    }
    with pytest.raises(ValueError, match="one input key expected"):
        memory.load_memory_variables({"question": "a", "lang": "en"})


def test_load_formats_like_the_retriever(frozen: Memory) -> None:
    docs = MnemonRetriever(memory=frozen, k=3).invoke("Qdrant cluster")
    loaded = MnemonMemory(memory=frozen, k=3).load_memory_variables({"input": "Qdrant cluster"})
    assert loaded == {"history": format_documents(docs)}
    assert len(loaded["history"].splitlines()) == 3


def test_save_keeps_the_users_message_by_default(mem: Memory) -> None:
    memory = MnemonMemory(memory=mem)
    memory.save_context({"input": "I moved to Lisbon"}, {"output": "Nice, noted."})
    (id_,) = memory.written_ids
    ins = mem.show(id_)
    assert (ins.content, ins.source, ins.category.value, ins.importance) == ("I moved to Lisbon", "user", "general", 3)
    assert mem.status().total_insights == 1


def test_save_both_sides(mem: Memory) -> None:
    memory = MnemonMemory(memory=mem, keep="both", save_category="context", importance=2)
    memory.save_context({"input": [HumanMessage("Which port?")]}, {"output": AIMessage("Port 6333.")})
    rows = [mem.show(i) for i in memory.written_ids]
    assert [(r.content, r.source, r.category.value, r.importance) for r in rows] == [
        ("Which port?", "user", "context", 2), ("Port 6333.", "assistant", "context", 2),
    ]


def test_save_with_an_extractor(mem: Memory) -> None:
    def extract(inputs: dict[str, Any], outputs: dict[str, Any]) -> list[Any]:
        return [f"User said: {inputs['input']}", {"content": "Prefers tea", "category": "preference", "importance": 4}]

    memory = MnemonMemory(memory=mem, keep=extract)
    memory.save_context({"input": "tea please"}, {"output": "ok"})
    rows = [mem.show(i) for i in memory.written_ids]
    assert [(r.content, r.category.value, r.importance) for r in rows] == [
        ("User said: tea please", "general", 3), ("Prefers tea", "preference", 4),
    ]


def test_long_messages_are_saved_in_pieces(mem: Memory) -> None:
    text = " ".join(f"word{i % 300:03d}" for i in range(1900))  # 15 199 bytes
    memory = MnemonMemory(memory=mem)
    memory.save_context({"input": text}, {"output": "ok"})
    parts = [mem.show(i).content for i in memory.written_ids]
    assert len(parts) == 2
    assert all(len(p.encode()) <= 8000 for p in parts)
    assert " ".join(parts) == text


def test_clear_forgets_only_what_it_wrote(seeded: Memory) -> None:
    memory = MnemonMemory(memory=seeded, keep="both")
    memory.save_context({"input": "My editor is Helix"}, {"output": "Noted: Helix."})
    memory.save_context({"input": "Lunch is at noon on Fridays"}, {"output": "Noted: Helix."})  # both duplicates
    assert len(memory.written_ids) == 2  # exact duplicates are skipped by mnemon and are not ours
    seeded.forget(memory.written_ids[1])  # forgotten elsewhere first: clear copes
    memory.clear()
    assert memory.written_ids == []
    status = seeded.status()
    assert (status.total_insights, status.deleted_insights) == (len(SEED), 2)


async def test_memory_async_twins(seeded: Memory) -> None:
    memory = MnemonMemory(memory=seeded, k=1, keep="both")
    assert await memory.aload_memory_variables({"input": "Grafana"}) == memory.load_memory_variables(
        {"input": "Grafana"}
    )
    await memory.asave_context({"input": "Deploys happen on Tuesdays"}, {"output": "Got it."})
    assert [seeded.show(i).content for i in memory.written_ids] == ["Deploys happen on Tuesdays", "Got it."]
    await memory.aclear()
    assert seeded.status().total_insights == len(SEED)


def test_memory_stands_alone_without_langchain_classic(data_dir: Path) -> None:
    code = """
import sys
sys.modules["langchain_classic"] = None  # as if it were not installed
from pydantic import BaseModel
from langchain_mnemon import MnemonMemory
from mnemon_core import Memory
assert MnemonMemory.__mro__[1].__module__ == "langchain_mnemon.memory" and issubclass(MnemonMemory, BaseModel)
m = MnemonMemory(memory=Memory(), keep="both", k=1)
m.save_context({"input": "Standalone works"}, {"output": "Yes"})
print(m.load_memory_variables({"input": "standalone"})["history"])
m.clear()
print(Memory().status().total_insights)
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["- [general] Standalone works", "0"]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "integrations"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


# ---------------------------------------------------------------------------------------------- tools


class _ToolSuite:
    """The standard tool suites for one of the three tools, over a seeded store."""

    index = 0

    @pytest.fixture(autouse=True)
    def _tools(self, mem: Memory) -> None:
        self.ids = seed(mem)
        self.tools = create_mnemon_tools(mem)

    @property
    def tool_constructor(self) -> BaseTool:
        return self.tools[self.index]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        ids = list(self.ids.values())
        return [
            {"content": "Bob deploys with Helm", "category": "fact", "importance": 4, "tags": ["ops"]},
            {"query": "Qdrant", "limit": 2},
            {"source_id": ids[0], "target_id": ids[1], "type": "causal", "weight": 0.8,
             "metadata": {"sub_type": "causes"}},
        ][self.index]


class TestRememberToolUnit(_ToolSuite, ToolsUnitTests):
    index = 0


class TestRememberToolIntegration(_ToolSuite, ToolsIntegrationTests):
    index = 0


class TestRecallToolUnit(_ToolSuite, ToolsUnitTests):
    index = 1


class TestRecallToolIntegration(_ToolSuite, ToolsIntegrationTests):
    index = 1


class TestLinkToolUnit(_ToolSuite, ToolsUnitTests):
    index = 2


class TestLinkToolIntegration(_ToolSuite, ToolsIntegrationTests):
    index = 2


def test_tools_have_typed_schemas(mem: Memory) -> None:
    remember, recall, link = create_mnemon_tools(mem)
    assert [t.name for t in (remember, recall, link)] == ["remember", "recall", "link"]
    assert list(remember.args) == ["content", "category", "importance", "tags", "entities"]
    assert list(recall.args) == ["query", "limit", "intent", "category", "max_tokens"]
    assert recall.args["max_tokens"]["anyOf"][0] == {"maximum": 100_000, "minimum": 150, "type": "integer"}
    assert list(link.args) == ["source_id", "target_id", "type", "weight", "metadata"]
    assert remember.args["category"]["enum"] == ["preference", "decision", "fact", "insight", "context", "general"]
    assert (remember.args["importance"]["minimum"], remember.args["importance"]["maximum"]) == (1, 5)
    assert link.args["type"]["enum"] == ["temporal", "semantic", "causal", "entity", "supersedes"]
    with pytest.raises(Exception, match="importance"):
        remember.invoke({"content": "x", "importance": 9})


def test_tools_speak_the_clis_json(mem: Memory) -> None:
    remember, recall, link = create_mnemon_tools(mem, source="planner")
    a = json.loads(remember.invoke({"content": "Qdrant needs 4 GB of RAM", "category": "fact"}))
    b = json.loads(remember.invoke({"content": "We sized the Qdrant node at 8 GB", "category": "decision"}))
    assert (a["action"], a["content"], a["category"]) == ("added", "Qdrant needs 4 GB of RAM", "fact")
    assert mem.show(a["id"]).source == "planner"
    found = json.loads(recall.invoke({"query": "Qdrant RAM", "limit": 1}))
    assert set(found) <= {"results", "hint"}  # the compact recall JSON, as `mnemon recall` prints it
    assert {"id", "content", "intent", "confidence", "score"} <= set(found["results"][0])
    assert [r["id"] for r in found["results"]] == [a["id"]]
    linked = json.loads(link.invoke({"source_id": a["id"], "target_id": b["id"], "type": "causal",
                                     "metadata": {"sub_type": "causes"}}))
    assert (linked["status"], linked["edge_type"], linked["weight"]) == ("linked", "causal", 0.5)
    assert {(r.id, r.via_edge_type.value) for r in mem.related(a["id"], edge_type="causal")} == {(b["id"], "causal")}


def test_tool_errors_go_back_to_the_model(mem: Memory) -> None:
    _, _, link = create_mnemon_tools(mem)
    msg = link.invoke({"type": "tool_call", "id": "1", "name": "link",
                       "args": {"source_id": "nope", "target_id": "nada"}})
    assert isinstance(msg, ToolMessage)
    assert msg.content == "source insight nope not found"


async def test_tools_async(mem: Memory) -> None:
    remember, recall, _ = create_mnemon_tools(AsyncMemory(memory=mem))
    out = json.loads(await remember.ainvoke({"content": "Async remember works"}))
    found = json.loads(await recall.ainvoke({"query": "async remember"}))
    assert [r["id"] for r in found["results"]] == [out["id"]]


# ---------------------------------------------------------------------------------------------- agent


def test_agent_remembers_then_recalls(mem: Memory, data_dir: Path) -> None:
    model = FakeToolCallingModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "remember", "id": "c1",
                                   "args": {"content": "The user's cat is named Miso", "category": "fact"}}]),
        AIMessage("", tool_calls=[{"name": "recall", "id": "c2", "args": {"query": "cat name"}}]),
        AIMessage("Your cat is called Miso."),
    ]))
    agent = create_agent(model, tools=create_mnemon_tools(mem), store=MnemonStore(data_dir))
    out = agent.invoke({"messages": [HumanMessage("Remember my cat Miso, then tell me her name.")]})
    tool_msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_msgs] == ["remember", "recall"]
    saved = json.loads(tool_msgs[0].content)
    assert (saved["action"], saved["category"]) == ("added", "fact")
    recalled = json.loads(tool_msgs[1].content)["results"]
    assert [(r["id"], r["content"]) for r in recalled] == [(saved["id"], "The user's cat is named Miso")]
    assert out["messages"][-1].content == "Your cat is called Miso."
    assert mem.show(saved["id"]).source == "agent"


def test_agent_tools_use_the_mnemon_store(data_dir: Path) -> None:
    @tool
    def save_preference(text: str, runtime: ToolRuntime) -> str:
        """Save a user preference to long-term memory."""
        runtime.store.put(("prefs", "u1"), "editor", {"content": text})
        return "saved"

    @tool
    def read_preference(runtime: ToolRuntime) -> str:
        """Read the user's editor preference."""
        item = runtime.store.get(("prefs", "u1"), "editor")
        return item.value["content"] if item else "none"

    model = FakeToolCallingModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "save_preference", "id": "s", "args": {"text": "Uses Helix"}}]),
        AIMessage("", tool_calls=[{"name": "read_preference", "id": "r", "args": {}}]),
        AIMessage("done"),
    ]))
    store = MnemonStore(data_dir)
    agent = create_agent(model, tools=[save_preference, read_preference], store=store)
    out = agent.invoke({"messages": [HumanMessage("I use Helix")]})
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["saved", "Uses Helix"]
    assert MnemonStore(data_dir).get(("prefs", "u1"), "editor").value == {"content": "Uses Helix"}
