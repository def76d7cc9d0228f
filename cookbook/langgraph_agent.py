"""LangGraph: a tool-calling agent that remembers and recalls with mnemon, on a mnemon-backed store.

    pip install "mnemon-core[langchain]" && python cookbook/langgraph_agent.py

`create_mnemon_tools(memory)` gives the agent `remember`, `recall` and `link`; `MnemonStore` is LangGraph's
long-term store over mnemon (one mnemon store per namespace), which the agent's own tools reach through
`runtime.store`. Offline, the model is a scripted fake that calls the tools a real model would; to use a real
one, change the line marked MODEL. Uses a throw-away data dir unless MNEMON_DATA_DIR is set.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langchain_mnemon import MnemonStore, create_mnemon_tools
from mnemon_core import Memory


class ScriptedToolModel(GenericFakeChatModel):
    """Offline stand-in for a tool-calling chat model: replays the messages it is given."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self


SCRIPT = [
    AIMessage("", tool_calls=[{"name": "remember", "id": "call-1", "args": {
        "content": "The user's cat is called Miso", "category": "fact", "importance": 4, "entities": ["Miso"]}}]),
    AIMessage("", tool_calls=[{"name": "save_profile", "id": "call-2", "args": {"name": "Ada"}}]),
    AIMessage("", tool_calls=[{"name": "recall", "id": "call-3", "args": {"query": "what is the cat called?"}}]),
    AIMessage("Your cat is called Miso, Ada."),
]


@tool
def save_profile(name: str, runtime: ToolRuntime) -> str:
    """Save the user's name in the long-term store."""
    runtime.store.put(("profiles",), "user", {"content": f"The user's name is {name}", "name": name})
    return "saved"


def main() -> None:
    data_dir = os.environ.get("MNEMON_DATA_DIR") or tempfile.mkdtemp(prefix="mnemon-langgraph-")
    mem = Memory(data_dir=data_dir, store="cookbook-agent")
    store = MnemonStore(data_dir)

    # MODEL — for a real model: from langchain_openai import ChatOpenAI; model = ChatOpenAI(model="gpt-4o-mini")
    model = ScriptedToolModel(messages=iter(SCRIPT))

    agent = create_agent(
        model,
        tools=[*create_mnemon_tools(mem), save_profile],
        store=store,
        system_prompt="Remember durable facts about the user with `remember`; `recall` before answering.",
    )
    out = agent.invoke({"messages": [HumanMessage("I'm Ada. My cat is Miso. What's her name again?")]})

    for msg in out["messages"]:
        if isinstance(msg, AIMessage) and msg.tool_calls:
            for call in msg.tool_calls:
                print(f"→ {call['name']}({json.dumps(call['args'], ensure_ascii=False)})")
        elif isinstance(msg, ToolMessage):
            data = json.loads(msg.content) if msg.content.startswith("{") else msg.content
            if msg.name == "remember":
                print(f"  remembered {data['content']!r} ({data['action']})")
            elif msg.name == "recall":
                for hit in data["results"]:
                    print(f"  recalled {hit['content']!r}")
            else:
                print(f"  {data}")
    print("answer:", out["messages"][-1].content)
    print("store:", store.get(("profiles",), "user").value)
    print(f"data dir: {data_dir}")
    store.close()
    mem.close()


if __name__ == "__main__":
    main()
