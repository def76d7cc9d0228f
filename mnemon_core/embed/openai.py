"""`openai`: any OpenAI-compatible embeddings endpoint (OpenAI, vLLM, SiliconFlow, Voyage, oMLX, Ollama's /v1 …).

Embeddings go through the official `openai` client (the `mnemon-core[openai]` extra, imported on first use) with
`base_url = <endpoint>` → POST `<endpoint>/embeddings`, `dimensions` passed through when configured, floats
requested explicitly (some compatible servers reject base64). Health (reference §7): GET `<endpoint>/models`
answers 2xx within 2 s; a server without that route (404/405/501) gets one real embedding probe instead.
The API key travels only in the Authorization header: `repr`, `str` and every error message are scrubbed.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import TYPE_CHECKING, Any

import httpx

from ..config import DEFAULT_EMBED_ENDPOINT, DEFAULT_OLLAMA_MODEL
from ..errors import EmbedderError, MissingExtraError
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

__all__ = ["DEFAULT_OPENAI_ENDPOINT", "DEFAULT_OPENAI_MODEL", "OpenAIEmbedder", "OpenAIMissingError", "create"]

DEFAULT_OPENAI_ENDPOINT = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
# `/models` answers that mean "this server has no such route", not "this server is down".
NO_MODELS_ROUTE = (404, 405, 501)
# Compatible servers without authentication still need a non-empty key for the official client.
NO_KEY = "no-key"
PROBE_TEXT = "ping"


class OpenAIMissingError(MissingExtraError, EmbedderError):
    """The `openai` package is missing: a MissingExtraError that names the extra, and an EmbedderError so
    the engine degrades to `embedded: false` with one warning instead of failing the write."""

    def __init__(self) -> None:
        super().__init__("openai", "openai")


class OpenAIEmbedder(BaseEmbedder):
    batch_size = 64

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        api_key: str | None = None,
        dimensions: int | None = None,
        name: str | None = None,
        calibration: Calibration = IDENTITY,
        timeout: float = HTTP_TIMEOUT_S,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(name or f"openai/{model}", dimensions=dimensions, calibration=calibration, secret=api_key)
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.timeout = timeout
        self._requested_dimensions = dimensions
        # Kept in a closure rather than an attribute, so no repr/vars() dump of this object can show it.
        self._auth_headers = (lambda: {"Authorization": f"Bearer {api_key}"}) if api_key else dict
        self._api_key = lambda: api_key or NO_KEY
        self._owns_client = http_client is None
        # Given to the openai client too, so the configured timeout holds on a client handed in.
        self._timeouts = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout))
        self._http = http_client or httpx.Client(timeout=self._timeouts)
        self._client: Any = None
        self._client_lock = threading.Lock()

    def _openai(self) -> Any:
        """The official client, built on first use over our httpx client (its timeouts; no retries, as upstream)."""
        with self._client_lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise OpenAIMissingError() from None
                self._client = openai.OpenAI(
                    api_key=self._api_key(),
                    base_url=self.endpoint,
                    max_retries=0,
                    timeout=self._timeouts,
                    http_client=self._http,  # type: ignore[arg-type]  # openai 2+ takes httpx2 or httpx clients
                )
            return self._client

    def available(self) -> bool:
        try:
            if self._client is None and importlib.util.find_spec("openai") is None:
                return False
            r = self._http.get(f"{self.endpoint}/models", headers=self._auth_headers(), timeout=HEALTH_TIMEOUT_S)
            if r.is_success:
                return True
            if r.status_code in NO_MODELS_ROUTE:
                self.embed(PROBE_TEXT)  # one real embedding (cached, so it is not wasted)
                return True
            return False
        except Exception:  # noqa: BLE001 - a health check never raises
            return False

    def _embed_batch(self, texts: list[str], *, query: bool) -> list[list[float]]:
        client = self._openai()
        import openai

        extra: dict[str, Any] = {}
        if self._requested_dimensions:
            extra["dimensions"] = self._requested_dimensions
        url = f"{self.endpoint}/embeddings"
        try:
            resp = client.embeddings.create(model=self.model, input=texts, encoding_format="float", **extra)
        except openai.APIStatusError as exc:
            raise EmbedderError(
                f"{self.name}: {url} answered HTTP {exc.status_code}: {self._short(_status_text(exc))}"
            ) from None
        except openai.APITimeoutError:  # before its base class, APIConnectionError
            raise EmbedderTimeoutError(f"{self.name}: {url} did not answer within {self.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            raise EmbedderError(f"{self.name}: cannot reach {url}: {type(exc).__name__}: {exc}") from None
        data = sorted(resp.data or [], key=lambda d: d.index)
        if len(data) != len(texts):
            raise EmbedderError(f"{self.name}: asked for {len(texts)} embeddings, got {len(data)}")
        return [d.embedding for d in data]

    def close(self) -> None:
        if self._owns_client:
            self._http.close()


def _status_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
    try:
        return exc.response.text or "(empty body)"
    except Exception:  # noqa: BLE001 - best effort, for a message
        return str(exc)


def create(settings: Settings, *, http_client: httpx.Client | None = None) -> OpenAIEmbedder:
    """OpenAI protocol for `MNEMON_EMBEDDER=openai`, or for `ollama` with a `/v1` endpoint or protocol=openai.

    The vector's name follows the embedder the user chose (`ollama/…` or `openai/…`): the same Ollama model
    reached through either protocol gives the same vectors.
    """
    endpoint = settings.embed_endpoint
    if settings.embedder == "openai":
        if endpoint.rstrip("/") == DEFAULT_EMBED_ENDPOINT:  # no endpoint given: OpenAI itself
            endpoint = DEFAULT_OPENAI_ENDPOINT
        model = settings.embed_model or DEFAULT_OPENAI_MODEL
    else:
        model = settings.embed_model or DEFAULT_OLLAMA_MODEL
    return OpenAIEmbedder(
        endpoint,
        model,
        api_key=settings.embed_api_key,
        dimensions=settings.embed_dimensions,
        timeout=settings.embed_timeout_s,
        name=f"{settings.embedder}/{model}",
        http_client=http_client,
    )
