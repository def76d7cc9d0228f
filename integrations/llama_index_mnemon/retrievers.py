"""`MnemonRetriever`: mnemon's smart recall as a LlamaIndex retriever (works in `RetrieverQueryEngine`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from mnemon_core import AsyncMemory, Memory
from mnemon_core.faces.kit import hit_metadata, hit_text, open_memory, recall_hits

# What an LLM sees of a node besides its text: when and what kind; the rest is for code.
LLM_METADATA_KEYS = ("category", "created_at")


class MnemonRetriever(BaseRetriever):
    """Recall from a mnemon memory: each hit becomes a `NodeWithScore` holding a `TextNode` whose text is the
    insight, whose id is the insight's id and whose metadata holds `id`, `category`, `importance`, `score`,
    `intent`, `via`, `signals`, `created_at` (then `tags`, `entities`, `source`). An LLM sees the text with
    its category and date; the other keys are for code. With `max_tokens` only the memories
    `recall --max-tokens` shows, a long one as its best-matching passage (`truncated: True` in its metadata).

    ```python
    retriever = MnemonRetriever(Memory(), similarity_top_k=5)
    engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
    ```
    """

    def __init__(
        self,
        memory: Memory | AsyncMemory | None = None,
        *,
        data_dir: str | Path | None = None,
        store: str | None = None,
        embedder: str | None = None,
        similarity_top_k: int = 4,
        intent: str | None = None,
        category: str | None = None,
        source: str | None = None,
        max_tokens: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be at least 1, got {similarity_top_k}")
        self._sync, self._async = open_memory(memory, data_dir, store, embedder)
        self.similarity_top_k = similarity_top_k
        self.intent = intent
        self.category = category
        self.source = source
        self.max_tokens = max_tokens
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def memory(self) -> Memory:
        return self._sync

    def _recall_args(self) -> dict[str, Any]:
        return {"limit": self.similarity_top_k, "intent": self.intent, "category": self.category,
                "source": self.source, "max_tokens": self.max_tokens}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(recall_hits(self._sync.retrieve(query_bundle.query_str, **self._recall_args())))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(recall_hits(await self._async.retrieve(query_bundle.query_str, **self._recall_args())))


def to_nodes(hits: Sequence[dict[str, Any]]) -> list[NodeWithScore]:
    out = []
    for hit in hits:
        meta = hit_metadata(hit)
        node = TextNode(
            id_=meta["id"], text=hit_text(hit), metadata=meta,
            excluded_llm_metadata_keys=[k for k in meta if k not in LLM_METADATA_KEYS],
            excluded_embed_metadata_keys=list(meta),
        )
        out.append(NodeWithScore(node=node, score=meta["score"]))
    return out
