"""`MnemonRetriever`: mnemon's smart recall as a LangChain `BaseRetriever`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field, PrivateAttr

from mnemon_core import AsyncMemory, Memory
from mnemon_core.faces.kit import hit_metadata, hit_text, open_memory, recall_hits
from mnemon_core.inputs import RecallInput

# Per-call overrides `invoke(query, k=3, intent="WHY", …)` accepts; anything else LangChain passes is ignored.
CALL_OPTIONS = ("k", "intent", "category", "source", "max_tokens")


class MnemonRetriever(BaseRetriever):
    """Recall from a mnemon memory: each hit becomes a `Document` whose `page_content` is the insight and whose
    metadata holds `id`, `category`, `importance`, `score`, `intent`, `via`, `signals`, `created_at` (then
    `tags`, `entities`, `source`). With `max_tokens` only the memories `recall --max-tokens` shows, a long one
    as its best-matching passage (`truncated: True` in its metadata).

    ```python
    retriever = MnemonRetriever(memory=Memory(), k=5)          # or MnemonRetriever(data_dir=..., store=...)
    docs = retriever.invoke("why did we choose Qdrant?", k=3)
    docs = await retriever.ainvoke("…")                          # runs on AsyncMemory, off the event loop
    ```
    """

    memory: Memory | AsyncMemory | None = Field(default=None, description="the memory to recall from")
    data_dir: str | Path | None = Field(default=None, description="data dir when no memory is given")
    store: str | None = Field(default=None, description="store name when no memory is given")
    embedder: str | None = Field(default=None, description="embedder when no memory is given (local, none, …)")
    k: int = Field(default=4, ge=1, description="how many memories to return")
    intent: str | None = Field(default=None, description="force WHY, WHEN, ENTITY or GENERAL instead of detecting")
    category: str | None = Field(default=None, description="only memories of this category")
    source: str | None = Field(default=None, description="only memories from this source")
    max_tokens: int | None = Field(default=None, description=RecallInput.model_fields["max_tokens"].description)

    _sync: Memory | None = PrivateAttr(default=None)
    _async: AsyncMemory | None = PrivateAttr(default=None)

    def _twins(self) -> tuple[Memory, AsyncMemory]:
        if self._sync is None or self._async is None:
            self._sync, self._async = open_memory(self.memory, self.data_dir, self.store, self.embedder)
        return self._sync, self._async

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        opts = {name: kwargs.get(name, getattr(self, name)) for name in CALL_OPTIONS}
        opts["limit"] = opts.pop("k")
        return opts

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        mem, _ = self._twins()
        return to_documents(recall_hits(mem.retrieve(query, **self._options(kwargs))))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        _, amem = self._twins()
        return to_documents(recall_hits(await amem.retrieve(query, **self._options(kwargs))))


def to_documents(hits: Sequence[dict[str, Any]]) -> list[Document]:
    out = []
    for hit in hits:
        meta = hit_metadata(hit)
        out.append(Document(id=meta["id"], page_content=hit_text(hit), metadata=meta))
    return out


def format_documents(docs: Sequence[Document]) -> str:
    """Memories as prompt text, one per line: `- [category] content`. The usual step after the retriever in
    an LCEL chain: `retriever | format_documents | prompt | model`."""
    lines = []
    for doc in docs:
        cat = doc.metadata.get("category")
        lines.append(f"- [{cat}] {doc.page_content}" if cat else f"- {doc.page_content}")
    return "\n".join(lines)
