"""LlamaIndex: long-term memory for a chat, with MnemonMemoryBlock inside the agent `Memory`.

    pip install "mnemon-core[llamaindex]" && python cookbook/llamaindex_memory.py

LlamaIndex's `Memory` keeps recent turns in a short-term queue; when the queue outgrows its token budget the
oldest turns are flushed into its memory blocks. `MnemonMemoryBlock` remembers what is flushed (one insight a
message, its role as the source) and, on every read, recalls what matters for the latest message into the
system prompt, across sessions. Offline, the LLM is `MockLLM`, which answers with the prompt it was given; to
use a real one, change the line marked LLM. Uses a throw-away data dir unless MNEMON_DATA_DIR is set.
"""

from __future__ import annotations

import os
import tempfile

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import Memory as ChatMemory

from llama_index_mnemon import MnemonMemoryBlock
from mnemon_core import Memory

# Monday's conversation, as any chat engine or agent would have put it into its memory.
MONDAY = [
    ("user", "My cat is called Miso and she hates the vacuum cleaner."),
    ("assistant", "Noted: Miso, no vacuuming near her."),
    ("user", "I work on the billing service, mostly in Go."),
    ("assistant", "Got it: billing, Go."),
    ("user", "Our deploys go out on Tuesdays after the standup."),
    ("assistant", "Tuesday deploys, after standup."),
]


def chat_memory(mem: Memory, session: str) -> ChatMemory:
    # A small token budget so this demo flushes after a few turns; real chats keep the defaults.
    block = MnemonMemoryBlock(memory=mem, similarity_top_k=2)
    return ChatMemory.from_defaults(session_id=session, token_limit=80, chat_history_token_ratio=0.5,
                                    token_flush_size=20, memory_blocks=[block])


def main() -> None:
    data_dir = os.environ.get("MNEMON_DATA_DIR") or tempfile.mkdtemp(prefix="mnemon-llamaindex-memory-")
    mem = Memory(data_dir=data_dir, store="cookbook-chat")

    monday = chat_memory(mem, "monday")
    monday.put_messages([ChatMessage(role=role, content=text) for role, text in MONDAY])
    print("flushed from Monday's short-term memory into mnemon:")
    for ins in sorted(mem.recent(limit=20), key=lambda i: i.content):
        print(f"  ({ins.source}) {ins.content}")

    # LLM — for a real model: from llama_index.llms.openai import OpenAI; llm = OpenAI(model="gpt-4o-mini")
    llm = MockLLM()

    # Tuesday: a new session with an empty queue; the block recalls what matters for the question.
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory(mem, "tuesday"))
    reply = chat.chat("What is my cat called?")
    print("\nthe LLM was prompted with:" if isinstance(llm, MockLLM) else "\nanswer:")
    print(str(reply))
    print(f"\ndata dir: {data_dir}")
    mem.close()


if __name__ == "__main__":
    main()
