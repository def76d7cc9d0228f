"""What the framework faces (LangChain, LlamaIndex) share: opening the memory, reading a verbose recall,
cutting long text. No engine logic lives here and no framework is imported: it only adapts shapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..async_memory import AsyncMemory
from ..memory import Memory

# The write pipeline's content ceiling (reference §3.1); longer messages are saved in several insights.
from ..write.constants import MAX_CONTENT_BYTES

__all__ = ["METADATA_KEYS", "chunks", "hit_metadata", "hit_text", "open_memory", "recall_hits"]

# Keys every recalled memory carries in its metadata, in this order.
METADATA_KEYS = ("id", "category", "importance", "score", "intent", "via", "signals", "created_at")


def open_memory(
    memory: Memory | AsyncMemory | None,
    data_dir: str | Path | None = None,
    store: str | None = None,
    embedder: str | None = None,
) -> tuple[Memory, AsyncMemory]:
    """The sync and async twins of one memory: the one given, or one opened on `data_dir` / `store`."""
    if isinstance(memory, AsyncMemory):
        return memory.sync, memory
    if memory is None:
        kwargs: dict[str, Any] = {"data_dir": data_dir, "store": store}
        if embedder is not None:  # Memory reads None as "no embedder"; unset means MNEMON_EMBEDDER
            kwargs["embedder"] = embedder
        memory = Memory(**kwargs)
    if not isinstance(memory, Memory):
        raise TypeError(f"memory must be a mnemon Memory or AsyncMemory, got {type(memory).__name__}")
    return memory, AsyncMemory(memory=memory)


def recall_hits(result: Any) -> list[dict[str, Any]]:
    """The hits of `Memory.retrieve` (the `--verbose` JSON) as plain dicts: `{insight{…}, score, intent, via?,
    signals{…}}`."""
    data = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
    return list(data.get("results") or []) if isinstance(data, dict) else list(data or [])


def hit_metadata(hit: dict[str, Any]) -> dict[str, Any]:
    """Metadata of one recalled memory: the keys in METADATA_KEYS, then tags, entities and source."""
    ins = hit.get("insight") or {}
    meta: dict[str, Any] = {
        "id": ins.get("id"),
        "category": ins.get("category"),
        "importance": ins.get("importance"),
        "score": hit.get("score"),
        "intent": hit.get("intent"),
        "via": hit.get("via"),
        "signals": dict(hit.get("signals") or {}),
        "created_at": ins.get("created_at"),
        "tags": list(ins.get("tags") or []),
        "entities": list(ins.get("entities") or []),
        "source": ins.get("source"),
    }
    if hit.get("superseded"):
        meta["superseded"] = True
    if hit.get("passage"):  # within a token budget: the text is a passage, `show <id>` gives the whole
        meta["truncated"] = True
    return meta


def hit_text(hit: dict[str, Any]) -> str:
    """What a face shows of a recalled memory: its passage within a token budget, else its content."""
    return hit.get("passage") or (hit.get("insight") or {}).get("content", "")


def chunks(text: str, limit: int = MAX_CONTENT_BYTES) -> Iterator[str]:
    """`text` in pieces of at most `limit` UTF-8 bytes, cut at whitespace where possible."""
    text = text.strip()
    while text:
        raw = text.encode("utf-8")
        if len(raw) <= limit:
            yield text
            return
        head = raw[:limit].decode("utf-8", errors="ignore")
        cut = max(head.rfind(" "), head.rfind("\n"))
        piece = head[:cut] if cut > limit // 2 else head
        yield piece.strip()
        text = text[len(piece):].strip()
