"""One OpenAI-compatible chat model, asked for JSON that is checked before anyone uses it.

Any server that speaks `/v1/chat/completions` works: OpenAI, Ollama (`http://localhost:11434/v1`), vLLM,
LM Studio, llama.cpp's server. Settings come from arguments, then `MNEMON_LLM_BASE_URL`, `MNEMON_LLM_API_KEY`,
`MNEMON_LLM_MODEL`, `MNEMON_LLM_TIMEOUT`, then defaults.

Every call is bounded and repeatable: the caller sizes `max_tokens` to what it asks, sampling is
`temperature` 0 with a fixed `seed` unless told otherwise, and the answer is streamed, so the timeout bounds
the server's silence, not the length of a slow but working answer; the speed of each answer is measured as it
arrives. A server sends nothing while it reads the prompt, so each call's wait is sized to its prompt:
`MNEMON_LLM_TIMEOUT` plus the prompt's tokens at `PROMPT_TOKENS_PER_S` (the HTTP read timeout of the call: it
bounds the wait for the first token and, the same, any gap between two tokens).

Output modes, tried in this order and remembered once a server refuses one (HTTP 400/422):
`structured` (a strict JSON schema in `response_format`), `json` (`response_format={"type": "json_object"}`,
the schema in the prompt) and `text` (no response format; the JSON is cut out of the reply). Whatever the mode,
the reply is parsed and validated here, never trusted. At temperature 0 the request asks the server not to
reuse a cached prompt (`cache_prompt: false`, llama.cpp's: its cached state changes greedy answers). A server
that refuses `seed`, `stream_options` or `cache_prompt` gets the request again without it.

Failures: 429, 5xx and dropped connections are retried here (`max_retries`, honouring `Retry-After`); a
timeout is not (the same request would wait out the same timeout), and its error names MNEMON_LLM_TIMEOUT and
the speed seen. An answer cut off at `max_tokens` is returned as such (`Answer.cut_off`, its text as far as it
came in `Answer.text`), never asked for again: the caller asks for less, or keeps what the text holds in full.
A reply that fails validation gets exactly one more try, with the validation error quoted to the model; after
that the caller gets an `Answer` with `error` set. Every error text that leaves `ChatLLM.ask` is scrubbed of the
API key (a server may quote it back: see mnemon_core.redact).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from mnemon_core.config import MAX_CONSECUTIVE_TIMEOUTS, UNSET
from mnemon_core.errors import MissingExtraError, ValidationError
from mnemon_core.redact import redact

from .chunking import estimate_tokens
from .errors import LLMError

DEFAULT_MODEL = "gpt-4o-mini"
# Seconds the server may stay silent (MNEMON_LLM_TIMEOUT), beyond the time it needs to read the prompt. A streamed
# answer that keeps coming is never cut by it.
DEFAULT_TIMEOUT_S = 300.0
# The prompt-reading speed each call's wait allows for, in estimated prompt tokens/s (chunking.estimate_tokens): a
# slow CPU server sends nothing until it has read the prompt. Below the slowest measured: Qwen2.5-Coder 1.5B on 2
# shared cores at load 12-15 read the 20-turn chat's prompt (2,066 estimated, 2,624 real tokens) in ~288 s: 7.2/s.
PROMPT_TOKENS_PER_S = 5.0
DEFAULT_MAX_RETRIES = 2  # retries of 429, 5xx and dropped connections (never of a timeout)
DEFAULT_TEMPERATURE = 0.0  # the same input gives the same draft and the same links
DEFAULT_SEED = 0  # sent where the server takes one
MAX_TEMPERATURE = 2.0  # OpenAI's range
MAX_ANSWER_TOKENS = 4096  # the longest answer asked for (a common server cap; llama.cpp's --n-predict here)
RETRY_BACKOFF_S = (0.5, 8.0)  # first pause and longest pause between retries, unless Retry-After says otherwise
VALIDATION_ATTEMPTS = 2  # the first answer, and one retry that quotes the validation error
MODES = ("structured", "json", "text")
OPTIONAL_PARAMS = ("seed", "stream_options", "cache_prompt")  # dropped when a server refuses them by name
PROGRESS_EVERY_S = 0.5  # how often a streamed answer reports its progress
# A local server needs no key, but the openai client insists on one.
PLACEHOLDER_KEY = "not-needed"
_CONTEXT_WORDS = ("context length", "context_length", "maximum context", "too many tokens", "context window",
                  "exceeds the available context", "exceed_context")

T = TypeVar("T")

# (answer tokens so far, seconds since the first of them)
Progress = Callable[[int, float], None]


class AnswerError(ValueError):
    """A reply that cannot be used; the message is quoted back to the model on the retry."""


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0  # wall time of the calls that answered
    generation_seconds: float = 0.0  # from each answer's first token to its last

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def tokens_per_s(self) -> float | None:
        """Answer tokens per second of generation, or None before any."""
        if not self.completion_tokens or self.generation_seconds <= 0:
            return None
        return self.completion_tokens / self.generation_seconds

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        self.seconds += other.seconds
        self.generation_seconds += other.generation_seconds


@dataclass
class Answer(Generic[T]):
    """A validated value, or the error that stopped it; `attempts` counts model calls that returned.
    `cut_off`: the answer hit `max_tokens`; `too_long`: the prompt did not fit the model's context (either way
    the request asked for too much at once). `rejected`: why earlier answers of this ask were not used.
    `text`: a cut-off answer's text as far as it came (the caller may keep what it holds in full)."""

    value: T | None
    error: str | None = None
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)
    cut_off: bool = False
    too_long: bool = False
    rejected: list[str] = field(default_factory=list)
    text: str = ""


def _env(name: str) -> str | None:
    v = os.environ.get(name)
    return v if v not in (None, "") else None


@dataclass
class LLMConfig:
    """Where the model is and how to talk to it, resolved once: arguments > `MNEMON_LLM_*` > defaults.
    `temperature` and `seed` None: not sent (the server's own sampling)."""

    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    temperature: float | None = DEFAULT_TEMPERATURE
    seed: int | None = DEFAULT_SEED
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
        temperature: float | None = UNSET,
        seed: int | None = UNSET,
        mode: str | None = None,
    ) -> LLMConfig:
        def pick(value: Any, env: str) -> Any:
            return value if value not in (UNSET, None, "") else _env(env)

        t = pick(timeout, "MNEMON_LLM_TIMEOUT")
        try:
            t = float(t) if t is not None else DEFAULT_TIMEOUT_S
        except ValueError:
            raise ValidationError(f'invalid MNEMON_LLM_TIMEOUT "{t}"; use seconds, e.g. 300', field="timeout") from None
        if not (math.isfinite(t) and t > 0):
            raise ValidationError(f"MNEMON_LLM_TIMEOUT must be a positive number of seconds, got {t:g}",
                                  field="timeout")
        m = mode or "structured"
        if m not in MODES:
            raise ValidationError(f'invalid output mode "{m}"; valid: {", ".join(MODES)}', field="mode")
        temp = DEFAULT_TEMPERATURE if temperature is UNSET else temperature
        if temp is not None and (isinstance(temp, bool) or not isinstance(temp, (int, float))
                                 or not 0.0 <= temp <= MAX_TEMPERATURE):
            raise ValidationError(f"temperature must be between 0 and {MAX_TEMPERATURE:g}, got {temp}",
                                  field="temperature")
        s = DEFAULT_SEED if seed is UNSET else seed
        if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 0):
            raise ValidationError(f"seed must be a whole number of 0 or more, got {s}", field="seed")
        return cls(
            model=pick(model, "MNEMON_LLM_MODEL") or DEFAULT_MODEL,
            base_url=pick(base_url, "MNEMON_LLM_BASE_URL"),
            api_key=pick(api_key, "MNEMON_LLM_API_KEY"),
            timeout=t,
            max_retries=DEFAULT_MAX_RETRIES if max_retries in (UNSET, None) else int(max_retries),
            temperature=None if temp is None else float(temp),
            seed=s,
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
        # Retries are ours (ChatLLM._call): the client's own would repeat a timed-out request.
        return openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=0)


def strict_schema(model: type) -> dict[str, Any]:
    """The pydantic model's JSON schema as structured outputs want it: every object closed
    (`additionalProperties: false`) with every property required."""
    schema = model.model_json_schema()  # type: ignore[attr-defined]

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            for v in node.values():
                close(v)
        elif isinstance(node, list):
            for v in node:
                close(v)

    close(schema)
    return schema


def without_thinking(content: str | None) -> str:
    """A reply without the `<think>` blocks of a reasoning model."""
    return re.sub(r"<think>.*?</think>", "", content or "", flags=re.DOTALL)


def extract_json(content: str) -> Any:
    """The JSON value in a reply: bare, fenced in ```json, or after a `<think>` block of a reasoning model."""
    text = without_thinking(content).strip()
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


@dataclass
class Reply:
    """One answer as it arrived: its text, why it ended, and what it cost."""

    content: str
    finish_reason: str | None
    refusal: str
    usage: Usage


class ChatLLM:
    """Asks one model for JSON, validates it, retries once on a bad answer; counts tokens and speed."""

    def __init__(self, config: LLMConfig | None = None, *, client: Any = None) -> None:
        self.config = config or LLMConfig.resolve()
        if client is None:
            self.config.key()  # a missing key fails now, before any file is read or openai (slow) imported
        self._client = client
        self.mode = self.config.mode
        self.usage = Usage()
        self.succeeded = 0  # calls that got an HTTP answer; before the first, a dead server is fatal
        self.timeouts = 0  # of the latest calls, how many timed out in a row (MAX_CONSECUTIVE_TIMEOUTS: give up)
        self._dropped: set[str] = set()  # optional parameters this server refused

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
        *,
        max_tokens: int | None = None,
        progress: Progress | None = None,
    ) -> Answer[T]:
        """Send `messages` (answer at most `max_tokens` long), parse the reply as JSON and pass it to
        `validate` (which raises on a bad answer). One retry quotes the error. Transport errors that outlive the
        retries end the attempt with `error` set; errors no retry can fix (auth, unknown model, unsupported
        request) raise `LLMError`. Either way the error text is redacted: it quotes what the server said."""
        try:
            answer = self._ask(messages, schema, validate, max_tokens, progress)
        except LLMError as e:
            raise LLMError(self.redact(str(e))) from None
        if answer.error:
            answer.error = self.redact(answer.error)
        answer.rejected = [self.redact(r) for r in answer.rejected]
        if answer.text:
            answer.text = self.redact(answer.text)
        return answer

    def redact(self, text: str) -> str:
        """`text` without the API key this model is called with, or any other credential."""
        return redact(text, self.config.api_key, _env("OPENAI_API_KEY"), getattr(self._client, "api_key", None))

    def _ask(self, messages: list[dict[str, str]], schema: type, validate: Callable[[Any], T],
             max_tokens: int | None, progress: Progress | None) -> Answer[T]:
        answer: Answer[T] = Answer(None)
        convo = list(messages)
        for _ in range(VALIDATION_ATTEMPTS):
            try:
                reply = self._call(convo, schema, max_tokens, progress)
            except _TransportFailure as e:
                answer.error, answer.too_long = str(e), e.too_long
                return answer
            answer.attempts += 1
            answer.usage.add(reply.usage)
            self.usage.add(reply.usage)
            if reply.finish_reason == "length":
                answer.cut_off, answer.text = True, reply.content
                answer.error = f"the answer was cut off at the output limit ({max_tokens} tokens)"
                return answer
            try:
                if reply.refusal:
                    raise AnswerError(f"the model refused: {reply.refusal}")
                if not reply.content.strip():
                    raise AnswerError("the answer is empty")
                answer.value = validate(extract_json(reply.content))
                return answer
            except (AnswerError, ValidationError, ValueError, TypeError, KeyError) as e:
                answer.rejected.append(describe(e))
            convo = [
                *messages,
                {"role": "assistant", "content": reply.content or "(empty answer)"},
                {"role": "user", "content": (
                    f"Your answer was rejected: {answer.rejected[-1]}\n"
                    "Answer again with the complete, corrected JSON object only."
                )},
            ]
        answer.error = f"invalid answer after {answer.attempts} attempts: {answer.rejected[-1]}"
        return answer

    # ------------------------------------------------------------------ transport

    def _call(self, messages: list[dict[str, str]], schema: type, max_tokens: int | None,
              progress: Progress | None) -> Reply:
        try:
            import openai
        except ImportError:
            raise MissingExtraError("openai", "openai") from None

        if self.timeouts >= MAX_CONSECUTIVE_TIMEOUTS:
            raise _TransportFailure(
                f"not sent: the model server did not answer {self.timeouts} calls in a row within their wait "
                f"(MNEMON_LLM_TIMEOUT={self.config.timeout:g}s of silence, plus the time to read each prompt)"
            )
        retries = 0
        while True:
            request = self._request(messages, schema, max_tokens)
            stream = _Stream(progress)
            failure: str | None = None
            wait: float | None = None
            try:
                reply = stream.read(request)
                self.succeeded += 1
                self.timeouts = 0
                return reply
            except openai.APITimeoutError:
                self.timeouts += 1
                raise _TransportFailure(self._timed_out(stream, request)) from None
            except openai.APIConnectionError as e:
                if not self.succeeded:
                    raise LLMError(f"cannot reach the model server at {self._where()}: {e}") from None
                failure = f"connection failed: {e}"
            except AnswerError as e:  # the reply itself was broken
                raise _TransportFailure(str(e)) from None
            except openai.RateLimitError as e:
                failure = f"rate limited (HTTP 429, {self._tries()}): {_message(e)}"
                wait = _retry_after(e)
            except openai.InternalServerError as e:
                failure = f"server error (HTTP {e.status_code}): {_message(e)}"
                wait = _retry_after(e)
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
                    raise _TransportFailure(f"too long for the model's context: {text}", too_long=True) from None
                refused = [p for p in OPTIONAL_PARAMS if p not in self._dropped and p in text]
                if refused:  # e.g. no `seed` here: send the request without it from now on
                    self._dropped.update(refused)
                    continue
                nxt = MODES.index(self.mode) + 1
                if nxt >= len(MODES):
                    raise LLMError(f"the model server rejected the request (HTTP {e.status_code}): {text}") from None
                self.mode = MODES[nxt]  # e.g. no structured outputs here: ask for plain JSON from now on
                continue
            except openai.APIStatusError as e:
                raise _TransportFailure(f"HTTP {e.status_code}: {_message(e)}") from None
            except Exception as e:  # raised while the stream is read: the HTTP library's own, unwrapped
                kind = _http_failure(e)
                if kind is None:
                    raise
                if kind == "timeout":
                    self.timeouts += 1
                    raise _TransportFailure(self._timed_out(stream, request)) from None
                failure = f"connection failed: {e}"
            if retries >= self.config.max_retries:
                raise _TransportFailure(failure)
            low, high = RETRY_BACKOFF_S
            time.sleep(wait if wait is not None else min(high, low * 2**retries))
            retries += 1

    def _request(self, messages: list[dict[str, str]], schema: type, max_tokens: int | None) -> Any:
        """A context manager around the streamed HTTP response (or a plain one, from a server that ignores
        `stream`), so the reply is read and checked here, whatever shape it has."""
        params: dict[str, Any] = {"model": self.model, "stream": True, "stream_options": {"include_usage": True}}
        if self.config.temperature is not None:
            params["temperature"] = self.config.temperature
        if self.config.seed is not None:
            params["seed"] = self.config.seed
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if self.config.temperature == 0 and "cache_prompt" not in self._dropped:
            # llama.cpp's server reuses the cached state of a prompt it has seen, and that state gives other
            # logits than the same prompt read afresh ("can cause nondeterministic results"): a second run of
            # one export at temperature 0 drafted other insights. Greedy answers must not depend on the cache.
            params["extra_body"] = {"cache_prompt": False}
        for p in self._dropped:
            params.pop(p, None)
        msgs = list(messages)
        if self.mode == "structured":
            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": schema.__name__, "schema": strict_schema(schema), "strict": True}}
        else:
            if self.mode == "json":
                params["response_format"] = {"type": "json_object"}
            # Without structured outputs the schema travels in the prompt.
            shape = json.dumps(schema.model_json_schema(), ensure_ascii=False)  # type: ignore[attr-defined]
            hint = f"Reply with one JSON object that follows this JSON schema:\n{shape}"
            if msgs and msgs[0]["role"] == "system":  # some chat templates allow only one, leading system message
                msgs[0] = {"role": "system", "content": msgs[0]["content"] + "\n\n" + hint}
            else:
                msgs.insert(0, {"role": "system", "content": hint})
        client = self.client
        if getattr(client, "max_retries", 0):  # a client handed in: its retries would repeat a timed-out request
            client = client.with_options(max_retries=0)
        estimate = sum(estimate_tokens(m["content"]) for m in msgs)
        wait = self.wait(estimate)
        response = client.chat.completions.with_streaming_response.create(messages=msgs, timeout=wait, **params)
        return _Request(response, estimate, wait)

    def wait(self, prompt_tokens: int) -> float:
        """Seconds a call with a prompt this long waits for a token: the server's reading time, plus the
        silence allowed (MNEMON_LLM_TIMEOUT)."""
        return self.config.timeout + prompt_tokens / PROMPT_TOKENS_PER_S

    def _timed_out(self, stream: _Stream, request: _Request) -> str:
        reading = request.wait - self.config.timeout
        head = (f"the model server did not answer within {_seconds(request.wait)}s (MNEMON_LLM_TIMEOUT="
                f"{self.config.timeout:g}s of silence, plus {_seconds(reading)}s to read the "
                f"{request.prompt_estimate:,}-token prompt at {PROMPT_TOKENS_PER_S:g} tokens/s)")
        if stream.tokens:
            rate = stream.tokens / max(stream.generating(), 1e-9)
            n = f"{stream.tokens} token" + ("s" if stream.tokens != 1 else "")
            return f"{head}: it went silent after {n} of this answer at {rate:.1f} tokens/s"
        speed = self.usage.tokens_per_s
        if speed:
            return f"{head}: no token of this answer yet; its answers so far came at {speed:.1f} tokens/s"
        return (f"{head}: no token yet (a CPU server may take minutes to read a long prompt: raise "
                "MNEMON_LLM_TIMEOUT or lower --chunk-tokens)")

    def _tries(self) -> str:
        n = self.config.max_retries + 1
        return "1 try" if n == 1 else f"{n} tries"

    def _where(self) -> str:
        return self.config.base_url or "the OpenAI API"


@dataclass
class _Request:
    response: Any  # openai's streaming-response context manager
    prompt_estimate: int  # prompt tokens, when the server does not count them
    wait: float  # the call's read timeout, in seconds


def _seconds(s: float) -> str:
    return f"{s:.0f}" if s >= 10 else f"{s:.2g}"


class _Stream:
    """Reads one answer: server-sent events (`data: {chunk}` … `data: [DONE]`) or a plain completion, timing
    the first and the last token and reporting progress as it goes."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.start = time.monotonic()
        self.first: float | None = None  # monotonic time of the first answer token
        self.tokens = 0  # answer pieces so far (one token each on the servers we know)
        self._reported = 0.0

    def generating(self) -> float:
        return time.monotonic() - self.first if self.first is not None else 0.0

    def read(self, request: _Request) -> Reply:
        parts: list[str] = []
        refusal: list[str] = []
        finish: str | None = None
        usage: dict[str, Any] = {}
        with request.response as response:
            kind = response.headers.get("content-type", "")
            if "text/event-stream" not in kind:
                body = _json_object(response.read())
                finish, content, ref = _plain(body)
                parts.append(content)
                refusal.append(ref)
                usage = body.get("usage") or {}
                self.first = self.start
            else:
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    chunk = _json_object(data.encode())
                    if chunk.get("error"):
                        raise AnswerError(f"the server stopped the answer: {_message(chunk)}")
                    usage = chunk.get("usage") or usage
                    for choice in chunk.get("choices") or []:
                        delta = (choice or {}).get("delta") or {}
                        if delta.get("content"):
                            parts.append(str(delta["content"]))
                            self._token()
                        if delta.get("refusal"):
                            refusal.append(str(delta["refusal"]))
                        finish = choice.get("finish_reason") or finish
        end = time.monotonic()
        content = "".join(parts)
        completion = int(usage.get("completion_tokens") or 0) or (self.tokens if self.tokens > 1
                                                                  else estimate_tokens(content))
        cost = Usage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0) or request.prompt_estimate,
            completion_tokens=completion, calls=1, seconds=end - self.start,
            generation_seconds=end - self.first if self.first is not None else 0.0,
        )
        return Reply(content=content, finish_reason=finish, refusal="".join(refusal), usage=cost)

    def _token(self) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = now
        self.tokens += 1
        if self.progress and now - self._reported >= PROGRESS_EVERY_S:
            self._reported = now
            self.progress(self.tokens, now - self.first)


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise AnswerError("the server's reply is not JSON") from None
    if not isinstance(body, dict):
        raise AnswerError("the server's reply is not a JSON object")
    return body


def _plain(body: dict[str, Any]) -> tuple[str | None, str, str]:
    """finish_reason, content and refusal of a completion that was not streamed."""
    choices = body.get("choices") or []
    if not choices:
        raise AnswerError("the server's reply has no choices")
    choice = choices[0] or {}
    msg = choice.get("message") or {}
    content = msg.get("content")
    return choice.get("finish_reason"), content if isinstance(content, str) else "", msg.get("refusal") or ""


class _TransportFailure(Exception):
    """This call could not get an answer (after the retries); the caller reports it and goes on."""

    def __init__(self, message: str, *, too_long: bool = False) -> None:
        super().__init__(message)
        self.too_long = too_long


def _http_failure(err: BaseException) -> str | None:
    """"timeout" or "transport" for an error of the HTTP library under the openai client (httpx, or the
    httpx2 of newer releases: matched by name, so either works), else None."""
    for cls in type(err).__mro__:
        if cls.__module__.split(".")[0] in ("httpx", "httpx2"):
            if cls.__name__ == "TimeoutException":
                return "timeout"
            if cls.__name__ == "TransportError":
                return "transport"
    return None


def _retry_after(err: Any) -> float | None:
    """The pause a 429/5xx asks for (`retry-after-ms`, `retry-after` in seconds), within reason."""
    headers = getattr(getattr(err, "response", None), "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            v = float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue
        if 0 <= v <= 60:
            return v
    return None


def _message(err: Any) -> str:
    body = err if isinstance(err, dict) else getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(err, "message", err))
