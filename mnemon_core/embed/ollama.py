"""`ollama`: an Ollama server's native API (reference §7).

Health: GET `<endpoint>/api/tags` answers 200 within 2 s. Embed: POST `<endpoint>/api/embed`
`{model, input, dimensions?}` → `{"embeddings": [[…], …]}`. 30 s per request (MNEMON_EMBED_TIMEOUT), 5 s to
connect; proxies from the environment are bypassed (the server is normally local). When the endpoint ends in
`/v1`, `get_embedder` picks the OpenAI-compatible protocol instead (see openai.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from ..config import DEFAULT_OLLAMA_MODEL
from ..errors import EmbedderError
from .base import (
    CONNECT_TIMEOUT_S,
    HEALTH_TIMEOUT_S,
    HTTP_TIMEOUT_S,
    IDENTITY,
    BaseEmbedder,
    Calibration,
    EmbedderTimeoutError,
)

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["OllamaEmbedder", "create"]


class OllamaEmbedder(BaseEmbedder):
    batch_size = 64

    def __init__(
        self,
        endpoint: str,
        model: str = DEFAULT_OLLAMA_MODEL,
        *,
        dimensions: int | None = None,
        name: str | None = None,
        calibration: Calibration = IDENTITY,  # the spec's thresholds were set on nomic-embed-text
        timeout: float = HTTP_TIMEOUT_S,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(name or f"ollama/{model}", dimensions=dimensions, calibration=calibration)
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.timeout = timeout
        self._requested_dimensions = dimensions
        self._owns_client = http_client is None
        # Per request as well, so the configured timeout holds on a client handed in too.
        self._timeouts = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout))
        self._http = http_client or httpx.Client(timeout=self._timeouts, trust_env=False)

    def available(self) -> bool:
        try:
            r = self._http.get(f"{self.endpoint}/api/tags", timeout=HEALTH_TIMEOUT_S)
            return r.status_code == 200
        except Exception:  # noqa: BLE001 - a health check never raises
            return False

    def _embed_batch(self, texts: list[str], *, query: bool) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self._requested_dimensions:
            body["dimensions"] = self._requested_dimensions
        url = f"{self.endpoint}/api/embed"
        try:
            r = self._http.post(url, json=body, timeout=self._timeouts)
        except httpx.TimeoutException:
            raise EmbedderTimeoutError(f"{self.name}: {url} did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise EmbedderError(f"{self.name}: cannot reach {url}: {type(exc).__name__}: {exc}") from None
        if r.status_code != 200:
            raise EmbedderError(f"{self.name}: {url} answered HTTP {r.status_code}: {self._error_text(r)}")
        try:
            embeddings = r.json()["embeddings"]
        except (ValueError, KeyError, TypeError):
            raise EmbedderError(f"{self.name}: {url} answered without an 'embeddings' list") from None
        if not isinstance(embeddings, list) or len(embeddings) != len(texts):
            got = len(embeddings) if isinstance(embeddings, list) else type(embeddings).__name__
            raise EmbedderError(f"{self.name}: asked for {len(texts)} embeddings, got {got}")
        return embeddings

    def _error_text(self, r: httpx.Response) -> str:
        try:
            data = r.json()
            if isinstance(data, dict) and isinstance(data.get("error"), str):
                return self._short(data["error"])
        except ValueError:
            pass
        return self._short(r.text) or "(empty body)"

    def close(self) -> None:
        if self._owns_client:
            self._http.close()


def create(settings: Settings, *, http_client: httpx.Client | None = None) -> OllamaEmbedder:
    return OllamaEmbedder(
        settings.embed_endpoint,
        settings.embed_model or DEFAULT_OLLAMA_MODEL,
        dimensions=settings.embed_dimensions,
        timeout=settings.embed_timeout_s,
        http_client=http_client,
    )
