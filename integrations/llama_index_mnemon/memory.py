"""`MnemonMemoryBlock`: a long-term block for LlamaIndex's agent `Memory`.

`Memory` keeps the recent chat in its FIFO queue; when the queue outgrows its token budget the oldest turns
are flushed into the memory blocks. This block remembers what is flushed and, whenever the memory is read,
recalls what is relevant to the current messages.
"""

from __future__ import annotations

import uuid

from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory.memory import BaseMemoryBlock
from pydantic import Field, PrivateAttr

from mnemon_core import AsyncMemory, Memory
from mnemon_core.faces.kit import chunks, hit_metadata, hit_text, open_memory, recall_hits
from mnemon_core.inputs import IMPORTANCE, IMPORTANCE_MAX, IMPORTANCE_MIN, RecallInput

# Roles whose flushed messages are remembered: what the user and the assistant said, not system prompts or
# tool traffic.
DEFAULT_ROLES = ("user", "assistant")
CHARS_PER_TOKEN = 4  # the estimate `atruncate` works with when it has no tokenizer to hand


class MnemonMemoryBlock(BaseMemoryBlock[str]):
    """Recall for the current messages; remember the messages the short-term memory flushes.

    ```python
    block = MnemonMemoryBlock(memory=Memory(), similarity_top_k=5)
    memory = Memory.from_defaults(session_id="u1", token_limit=40_000, memory_blocks=[block])
    ```
    Each flushed message becomes one insight (several when longer than mnemon's 8000-byte limit) whose
    source is the message's role. The block's text is one memory per line, `- [category] content`; with
    `max_tokens` only the memories `recall --max-tokens` shows, a long one as its best-matching passage.
    """

    name: str = Field(default="mnemon", description="the block's name in the memory template")
    description: str | None = Field(default="Long-term memories recalled from mnemon.")
    memory: Memory | AsyncMemory | None = Field(default=None, description="the memory to use")
    data_dir: str | Path | None = Field(default=None, description="data dir when no memory is given")
    store: str | None = Field(default=None, description="store name when no memory is given")
    embedder: str | None = Field(default=None, description="embedder when no memory is given")
    similarity_top_k: int = Field(default=5, ge=1, description="how many memories to recall")
    retrieval_context_window: int = Field(
        default=1, ge=1, description="how many of the latest messages make the recall query"
    )
    intent: str | None = Field(default=None, description="force a recall intent instead of detecting it")
    category: str | None = Field(default=None, description="only recall memories of this category")
    max_tokens: int | None = Field(default=None, description=RecallInput.model_fields["max_tokens"].description)
    roles: list[str] = Field(default_factory=lambda: list(DEFAULT_ROLES), description="roles to remember")
    save_category: str = Field(default="general", description="category of what the block remembers")
    importance: int = Field(
        default=IMPORTANCE, ge=IMPORTANCE_MIN, le=IMPORTANCE_MAX, description="importance of what the block remembers"
    )
    session: str = Field(
        default_factory=lambda: f"llamaindex-{uuid.uuid4().hex[:12]}",
        description="the conversation the block records: its messages are linked in order (default: one per block)",
    )

    _sync: Memory | None = PrivateAttr(default=None)
    _async: AsyncMemory | None = PrivateAttr(default=None)

    def _twins(self) -> tuple[Memory, AsyncMemory]:
        if self._sync is None or self._async is None:
            self._sync, self._async = open_memory(self.memory, self.data_dir, self.store, self.embedder)
        return self._sync, self._async

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        texts = [t for t in (message_text(m) for m in messages or []) if t.strip()]
        query = " ".join(texts[-self.retrieval_context_window:]).strip()
        if not query:
            return ""
        _, amem = self._twins()
        result = await amem.retrieve(query, limit=self.similarity_top_k, intent=self.intent, category=self.category,
                                     max_tokens=self.max_tokens)
        return format_hits(recall_hits(result))

    async def _aput(self, messages: list[ChatMessage]) -> None:
        _, amem = self._twins()
        for message in messages:
            role = getattr(message.role, "value", str(message.role))
            if role not in self.roles:
                continue
            for piece in chunks(message_text(message)):
                await amem.remember(piece, category=self.save_category, importance=self.importance, source=role,
                                    session=self.session)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the least relevant memories (the last lines) until about `tokens_to_truncate` are gone."""
        lines = content.splitlines()
        dropped = 0
        while lines and dropped < tokens_to_truncate:
            dropped += max(1, len(lines.pop()) // CHARS_PER_TOKEN)
        return "\n".join(lines) or None


def message_text(message: ChatMessage) -> str:
    return "".join(b.text for b in message.blocks if isinstance(b, TextBlock))


def format_hits(hits: list[dict[str, Any]]) -> str:
    lines = []
    for hit in hits:
        meta = hit_metadata(hit)
        content = hit_text(hit)
        lines.append(f"- [{meta['category']}] {content}" if meta["category"] else f"- {content}")
    return "\n".join(lines)
