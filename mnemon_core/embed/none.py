"""`none`: no embedder. Recall and the write pipeline run on tokens and the graph only (reference §7: the
rerank weights switch to the no-vector set, semantic candidates fall back to token overlap)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

    from ..config import Settings

__all__ = ["create"]


def create(settings: Settings, *, http_client: httpx.Client | None = None) -> None:
    return None
