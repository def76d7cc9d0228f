"""One OpenAI-compatible chat model, asked for JSON that is checked before anyone uses it.

Any server that speaks `/v1/chat/completions` works: OpenAI, Ollama (`http://localhost:11434/v1`), vLLM,
LM Studio. Settings come from arguments, then `MNEMON_LLM_BASE_URL`, `MNEMON_LLM_API_KEY`,
`MNEMON_LLM_MODEL`, `MNEMON_LLM_TIMEOUT`, then defaults.

Output modes, tried in this order and remembered once a server refuses one (HTTP 400/422):
`structured` (`chat.completions.parse` with a pydantic model: a strict JSON schema), `json`
(`response_format={"type": "json_object"}`, the schema in the prompt) and `text` (no response format; the JSON
is cut out of the reply). Whatever the mode, the reply is parsed and validated here, never trusted.

Transport failures (429, 5xx, timeouts, dropped connections) are retried by the openai client itself
(`max_retries`, honouring `Retry-After`). A reply that fails validation gets exactly one more try, with the
validation error quoted to the model; after that the caller gets an `Answer` with `error` set. Every error
text that leaves `ChatLLM.ask` is scrubbed of the API key (a server may quote it back: see mnemon_core.redact).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from mnemon_core.config import MAX_CONSECUTIVE_TIMEOUTS, UNSET
from mnemon_core.errors import MissingExtraError, ValidationError
from mnemon_core.redact import redact

from .errors import LLMError

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 2  # transport retries inside the openai client (429, 5xx, timeouts)
VALIDATION_ATTEMPTS = 2  # the first answer, and one retry that quotes the validation error
MODES = ("structured", "json", "text")
# A local server needs no key, but the openai client insists on one.
PLACEHOLDER_KEY = "not-needed"
_CONTEXT_WORDS = ("context length", "context_length", "maximum context", "too many tokens", "context window")

T = TypeVar("T")


class AnswerError(ValueError):
    """A reply that cannot be used; the message is quoted back to the model on the retry."""


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, body: dict[str, Any]) -> None:
        self.calls += 1
        u = body.get("usage") or {}
        self.prompt_tokens += int(u.get("prompt_tokens") or 0)
        self.completion_tokens += int(u.get("completion_tokens") or 0)


@dataclass
class Answer(Generic[T]):
    """A validated value, or the error that stopped it; `attempts` counts model calls that returned."""

    value: T | None
    error: str | None = None
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)


def _env(name: str) -> str | None:
    v = os.environ.get(name)
    return v if v not in (None, "") else None


@dataclass
class LLMConfig:
    """Where the model is and how to talk to it, resolved once: arguments > `MNEMON_LLM_*` > defaults."""

    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    temperature: float | None = None
    mode: str = "structured"

    @classmethod
    def resolve(
        cls,
        *,
        model: str | None = UNSET,
        base_url: str | None = UNSET,
        api_key: str | None = UNSET,
        timeout: float | None = UNSET,
        max_retries: int | None = UNSET,
        temperature: float | None = None,
        mode: str | None = None,
    ) -> LLMConfig:
        def pick(value: Any, env: str) -> Any:
            return value if value not in (UNSET, None, "") else _env(env)

        t = pick(timeout, "MNEMON_LLM_TIMEOUT")
        try:
            t = float(t) if t is not None else DEFAULT_TIMEOUT_S
        except ValueError:
            raise ValidationError(f'invalid MNEMON_LLM_TIMEOUT "{t}"; use seconds, e.g. 120', field="timeout") from None
        m = mode or "structured"
        if m not in MODES:
            raise ValidationError(f'invalid output mode "{m}"; valid: {", ".join(MODES)}', field="mode")
        return cls(
            model=pick(model, "MNEMON_LLM_MODEL") or DEFAULT_MODEL,
            base_url=pick(base_url, "MNEMON_LLM_BASE_URL"),
            api_key=pick(api_key, "MNEMON_LLM_API_KEY"),
            timeout=t,
            max_retries=DEFAULT_MAX_RETRIES if max_retries in (UNSET, None) else int(max_retries),
            temperature=temperature,
            mode=m,
        )

    def key(self) -> str:
        """The key to send: ours, `OPENAI_API_KEY`, or a placeholder for a server at `base_url`; LLMError if none."""
        key = self.api_key or _env("OPENAI_API_KEY") or (PLACEHOLDER_KEY if self.base_url else None)
        if key is None:
            raise LLMError(
                "no API key: set MNEMON_LLM_API_KEY (or OPENAI_API_KEY), or point MNEMON_LLM_BASE_URL at a "
                "local OpenAI-compatible server"
            )
        return key

    def client(self) -> Any:
        key = self.key()
        try:
            import openai
        except ImportError:
            raise MissingExtraError("openai", "openai") from None
        return openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=self.max_retries)


def extract_json(content: str) -> Any:
    """The JSON value in a reply: bare, fenced in ```json, or after a `<think>` block of a reasoning model."""
    text = re.sub(r"<think>.*?</think>", "", content or "", flags=re.DOTALL).strip()
    fence = re.search(r"```(?:json|JSON)?\s*\n(.*?)```", text, flags=re.DOTALL)
    if fence and not text.startswith("{"):
        text = fence.group(1).strip()
    if not text.startswith(("{", "[")):
        start = text.find("{")
        end = text.rfind("}")
        if start < 0 or end <= start:
            raise AnswerError("the answer holds no JSON object")
        text = text[start : end + 1]
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise AnswerError(f"the answer is not valid JSON: {e}") from None


def describe(err: Exception) -> str:
    """A one-line reason for a rejected answer (pydantic's list, mnemon's message, or ours)."""
    from pydantic import ValidationError as PydanticError

    if isinstance(err, PydanticError):
        parts = []
        for e in err.errors(include_url=False)[:8]:
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip(".")
            parts.append(f"{loc}: {e['msg']}" if loc else e["msg"])
        return "; ".join(parts)
    return str(err)


class ChatLLM:
    """Asks one model for JSON, validates it, retries once on a bad answer; counts tokens."""

    def __init__(self, config: LLMConfig | None = None, *, client: Any = None) -> None:
        self.config = config or LLMConfig.resolve()
        if client is None:
            self.config.key()  # a missing key fails now, before any file is read or openai (slow) imported
        self._client = client
        self.mode = self.config.mode
        self.usage = Usage()
        self.succeeded = 0  # calls that got an HTTP answer; before the first, a dead server is fatal
        self.timeouts = 0  # of the latest calls, how many timed out in a row (MAX_CONSECUTIVE_TIMEOUTS: give up)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self.config.client()
        return self._client

    @property
    def model(self) -> str:
        return self.config.model

    def ask(
        self,
        messages: list[dict[str, str]],
        schema: type,
        validate: Callable[[Any], T],
    ) -> Answer[T]:
        """Send `messages`, parse the reply as JSON and pass it to `validate` (which raises on a bad answer).
        One retry quotes the error. Transport errors that outlive the client's own retries end the attempt
        with `error` set; errors no retry can fix (auth, unknown model, unsupported request) raise `LLMError`.
        Either way the error text is redacted: it quotes what the server said."""
        try:
            answer = self._ask(messages, schema, validate)
        except LLMError as e:
            raise LLMError(self.redact(str(e))) from None
        if answer.error:
            answer.error = self.redact(answer.error)
        return answer

    def redact(self, text: str) -> str:
        """`text` without the API key this model is called with, or any other credential."""
        return redact(text, self.config.api_key, _env("OPENAI_API_KEY"), getattr(self._client, "api_key", None))

    def _ask(self, messages: list[dict[str, str]], schema: type, validate: Callable[[Any], T]) -> Answer[T]:
        usage = Usage()
        convo = list(messages)
        error = None
        attempts = 0
        for _ in range(VALIDATION_ATTEMPTS):
            try:
                body = self._call(convo, schema)
            except _TransportFailure as e:
                return Answer(None, error=str(e), attempts=attempts, usage=usage)
            attempts += 1
            usage.add(body)
            self.usage.add(body)
            content = ""
            try:
                content = self._content(body)
                return Answer(validate(extract_json(content)), attempts=attempts, usage=usage)
            except (AnswerError, ValidationError, ValueError, TypeError, KeyError) as e:
                error = describe(e)
            convo = [
                *messages,
                {"role": "assistant", "content": content or "(empty answer)"},
                {"role": "user", "content": (
                    f"Your answer was rejected: {error}\n"
                    "Answer again with the complete, corrected JSON object only."
                )},
            ]
        return Answer(None, error=f"invalid answer after {attempts} attempts: {error}", attempts=attempts,
                      usage=usage)

    # ------------------------------------------------------------------ transport

    @staticmethod
    def _content(body: dict[str, Any]) -> str:
        choices = body.get("choices") or []
        if not choices:
            raise AnswerError("the answer has no choices")
        choice = choices[0] or {}
        msg = choice.get("message") or {}
        if msg.get("refusal"):
            raise AnswerError(f"the model refused: {msg['refusal']}")
        content = msg.get("content")
        if choice.get("finish_reason") == "length":
            raise AnswerError("the answer was cut off at the output token limit; give fewer, shorter items")
        if not isinstance(content, str) or not content.strip():
            raise AnswerError("the answer is empty")
        return content

    def _call(self, messages: list[dict[str, str]], schema: type) -> dict[str, Any]:
        try:
            import openai
        except ImportError:
            raise MissingExtraError("openai", "openai") from None

        if self.timeouts >= MAX_CONSECUTIVE_TIMEOUTS:
            raise _TransportFailure(
                f"not sent: the model server did not answer {self.timeouts} calls in a row within "
                f"{self.config.timeout:g}s (MNEMON_LLM_TIMEOUT sets the limit)"
            )
        while True:
            try:
                raw = self._request(messages, schema)
                self.succeeded += 1
                self.timeouts = 0
            except openai.APITimeoutError:
                self.timeouts += 1
                raise _TransportFailure(
                    f"the model server did not answer within {self.config.timeout:g}s ({self._tries()})"
                ) from None
            except openai.APIConnectionError as e:
                if not self.succeeded:
                    raise LLMError(f"cannot reach the model server at {self._where()}: {e}") from None
                raise _TransportFailure(f"connection failed: {e}") from None
            except openai.RateLimitError as e:
                raise _TransportFailure(f"rate limited (HTTP 429, {self._tries()}): {_message(e)}") from None
            except openai.InternalServerError as e:
                raise _TransportFailure(f"server error (HTTP {e.status_code}): {_message(e)}") from None
            except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
                raise LLMError(f"the model server at {self._where()} refused the API key: {_message(e)}") from None
            except openai.NotFoundError as e:
                raise LLMError(
                    f'model "{self.model}" or its endpoint not found at {self._where()}: {_message(e)} '
                    "(set --model / MNEMON_LLM_MODEL, --base-url / MNEMON_LLM_BASE_URL)"
                ) from None
            except (openai.BadRequestError, openai.UnprocessableEntityError) as e:
                text = _message(e)
                if any(w in text.lower() for w in _CONTEXT_WORDS):
                    raise _TransportFailure(f"too long for the model's context (lower the chunk size): {text}") from None
                nxt = MODES.index(self.mode) + 1
                if nxt >= len(MODES):
                    raise LLMError(f"the model server rejected the request (HTTP {e.status_code}): {text}") from None
                self.mode = MODES[nxt]  # e.g. no structured outputs here: ask for plain JSON from now on
                continue
            except openai.APIStatusError as e:
                raise _TransportFailure(f"HTTP {e.status_code}: {_message(e)}") from None
            try:
                body = json.loads(raw.text)
            except json.JSONDecodeError:
                raise _TransportFailure("the server's reply is not JSON") from None
            if not isinstance(body, dict):
                raise _TransportFailure("the server's reply is not a JSON object")
            return body

    def _request(self, messages: list[dict[str, str]], schema: type) -> Any:
        """The raw HTTP response, so usage is counted and the reply checked here even when it is malformed."""
        extra: dict[str, Any] = {}
        if self.config.temperature is not None:
            extra["temperature"] = self.config.temperature
        completions = self.client.chat.completions
        if self.mode == "structured":
            if hasattr(completions, "parse"):
                parse = completions.with_raw_response.parse
            else:  # openai < 1.92 keeps it under beta
                parse = self.client.beta.chat.completions.with_raw_response.parse
            return parse(model=self.model, messages=messages, response_format=schema, **extra)
        if self.mode == "json":
            extra["response_format"] = {"type": "json_object"}
        # Without structured outputs the schema travels in the prompt.
        shape = json.dumps(schema.model_json_schema(), ensure_ascii=False)  # type: ignore[attr-defined]
        hint = f"Reply with one JSON object that follows this JSON schema:\n{shape}"
        msgs = list(messages)
        if msgs and msgs[0]["role"] == "system":  # some chat templates allow only one, leading system message
            msgs[0] = {"role": "system", "content": msgs[0]["content"] + "\n\n" + hint}
        else:
            msgs.insert(0, {"role": "system", "content": hint})
        return completions.with_raw_response.create(model=self.model, messages=msgs, **extra)

    def _tries(self) -> str:
        n = self.config.max_retries + 1
        return "1 try" if n == 1 else f"{n} tries"

    def _where(self) -> str:
        return self.config.base_url or "the OpenAI API"


class _TransportFailure(Exception):
    """This call could not get an answer (after the client's retries); the caller reports it and goes on."""


def _message(err: Any) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(err, "message", err))
