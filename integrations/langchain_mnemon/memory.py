"""`MnemonMemory`: the memory a LangChain chain or agent loads before a turn and saves after it.

It subclasses `langchain_classic`'s `BaseMemory` when that package is installed (langchain-core 1.0 dropped
`BaseMemory`), and otherwise stands alone as a pydantic model with the same methods.
"""

from __future__ import annotations

import uuid

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from mnemon_core import AsyncMemory, Memory, NotFoundError

from mnemon_core.faces.kit import chunks, open_memory, recall_hits
from mnemon_core.inputs import IMPORTANCE, IMPORTANCE_MAX, IMPORTANCE_MIN
from .retrievers import format_documents, to_documents

try:
    from langchain_classic.base_memory import BaseMemory as _Base
except ImportError:  # langchain-classic is optional: stand alone with the same interface
    from pydantic import BaseModel, ConfigDict

    class _Base(BaseModel):  # type: ignore[no-redef]
        model_config = ConfigDict(arbitrary_types_allowed=True)


# An extractor gets the chain's inputs and outputs and returns what to remember: texts, or dicts of
# `Memory.remember` arguments (`{"content": …, "category": …, "importance": …, "tags": …, "entities": …}`).
Extractor = Callable[[dict[str, Any], dict[str, Any]], Iterable[str | Mapping[str, Any]]]
IGNORED_INPUTS = ("stop",)


class MnemonMemory(_Base):
    """Recall before a turn, remember after it.

    `load_memory_variables(inputs)` recalls for the latest input and returns the memories as text under
    `memory_key`. `save_context(inputs, outputs)` remembers the exchange: `keep="input"` (the user's message,
    the default), `"both"` (the user's message and the reply, as two insights with sources `user` and
    `assistant`), or a callable extractor. `clear()` forgets only the insights this object wrote.

    ```python
    memory = MnemonMemory(memory=Memory(), memory_key="history", keep="both")
    memory.load_memory_variables({"input": "what database do we use?"})  # {"history": "- [decision] …"}
    memory.save_context({"input": "we use Postgres"}, {"output": "Noted."})
    ```
    """

    memory: Memory | AsyncMemory | None = Field(default=None, description="the memory to use")
    data_dir: str | Path | None = Field(default=None, description="data dir when no memory is given")
    store: str | None = Field(default=None, description="store name when no memory is given")
    embedder: str | None = Field(default=None, description="embedder when no memory is given")
    memory_key: str = Field(default="history", description="the variable the memories are returned under")
    input_key: str | None = Field(default=None, description="the input holding the user's message")
    output_key: str | None = Field(default=None, description="the output holding the reply")
    k: int = Field(default=5, ge=1, description="how many memories to load")
    intent: str | None = Field(default=None, description="force a recall intent instead of detecting it")
    category: str | None = Field(default=None, description="only load memories of this category")
    keep: Literal["input", "both"] | Extractor = Field(default="input", description="what save_context keeps")
    save_category: str = Field(default="general", description="category of what save_context remembers")
    importance: int = Field(
        default=IMPORTANCE, ge=IMPORTANCE_MIN, le=IMPORTANCE_MAX,
        description="importance of what save_context remembers",
    )
    session: str = Field(
        default_factory=lambda: f"langchain-{uuid.uuid4().hex[:12]}",
        description="the conversation save_context records: its turns are linked in order (default: one per object)",
    )

    _sync: Memory | None = PrivateAttr(default=None)
    _async: AsyncMemory | None = PrivateAttr(default=None)
    _written: list[str] = PrivateAttr(default_factory=list)

    # ------------------------------------------------------------------ plumbing

    def _twins(self) -> tuple[Memory, AsyncMemory]:
        if self._sync is None or self._async is None:
            self._sync, self._async = open_memory(self.memory, self.data_dir, self.store, self.embedder)
        return self._sync, self._async

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    @property
    def written_ids(self) -> list[str]:
        """Ids of the insights this object has remembered (and not yet cleared)."""
        return list(self._written)

    def _recall_args(self) -> dict[str, Any]:
        return {"limit": self.k, "intent": self.intent, "category": self.category}

    # ------------------------------------------------------------------ load

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        query = self._latest_input(inputs).strip()
        if not query:
            return {self.memory_key: ""}
        mem, _ = self._twins()
        hits = recall_hits(mem.retrieve(query, **self._recall_args()))
        return {self.memory_key: format_documents(to_documents(hits))}

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        query = self._latest_input(inputs).strip()
        if not query:
            return {self.memory_key: ""}
        _, amem = self._twins()
        hits = recall_hits(await amem.retrieve(query, **self._recall_args()))
        return {self.memory_key: format_documents(to_documents(hits))}

    # ------------------------------------------------------------------ save

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        mem, _ = self._twins()
        for args in self._to_remember(inputs, outputs):
            self._note(mem.remember(**args))

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        _, amem = self._twins()
        for args in self._to_remember(inputs, outputs):
            self._note(await amem.remember(**args))

    def _note(self, result: Any) -> None:
        # An exact duplicate is skipped by mnemon and belongs to whoever wrote it first: not ours to clear.
        if result.action != "skipped":
            self._written.append(result.id)

    def _to_remember(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[dict[str, Any]]:
        base = {"category": self.save_category, "importance": self.importance, "session": self.session}
        if callable(self.keep):
            out: list[dict[str, Any]] = []
            for item in self.keep(inputs, outputs):
                args = {"content": item} if isinstance(item, str) else dict(item)
                out.extend({**base, "source": "user", **args, "content": c} for c in chunks(args["content"]))
            return out
        said = [("user", self._latest_input(inputs))]
        if self.keep == "both":
            said.append(("assistant", self._output(outputs)))
        return [{**base, "content": c, "source": who} for who, text in said for c in chunks(text or "")]

    # ------------------------------------------------------------------ clear

    def clear(self) -> None:
        mem, _ = self._twins()
        while self._written:
            _forget(mem, self._written.pop())

    async def aclear(self) -> None:
        _, amem = self._twins()
        while self._written:
            try:
                await amem.forget(self._written.pop())
            except NotFoundError:  # already forgotten elsewhere (CLI, gc): nothing left to clear
                pass

    # ------------------------------------------------------------------ reading chain inputs

    def _latest_input(self, inputs: dict[str, Any]) -> str:
        key = self.input_key
        if key is None:
            keys = [k for k in inputs if k != self.memory_key and k not in IGNORED_INPUTS]
            if len(keys) != 1:
                raise ValueError(f"MnemonMemory: one input key expected, got {sorted(keys)}; set input_key")
            key = keys[0]
        return message_text(inputs.get(key), latest_from="human")

    def _output(self, outputs: dict[str, Any]) -> str:
        key = self.output_key
        if key is None:
            if len(outputs) != 1:
                raise ValueError(f"MnemonMemory: one output key expected, got {sorted(outputs)}; set output_key")
            key = next(iter(outputs))
        return message_text(outputs.get(key), latest_from="ai")


def _forget(mem: Memory, id: str) -> None:
    try:
        mem.forget(id)
    except NotFoundError:  # already forgotten elsewhere (CLI, gc): nothing left to clear
        pass


def message_text(value: Any, *, latest_from: str) -> str:
    """The text of a chain input or output: a string, a message, or a list of messages (the latest one of
    type `latest_from`, else the last one)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        msgs = list(value)
        if not msgs:
            return ""
        typed = [m for m in msgs if getattr(m, "type", None) == latest_from]
        return message_text((typed or msgs)[-1], latest_from=latest_from)
    text = getattr(value, "text", None)  # BaseMessage.text: the text blocks of its content
    if isinstance(text, str):
        return text
    if callable(text):
        return str(text())
    return str(getattr(value, "content", value))
