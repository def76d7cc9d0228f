"""A local OpenAI-compatible server for tests and offline examples: real HTTP on 127.0.0.1, canned replies.

    with FakeOpenAIServer([Reply.json({"insights": [...], "edges": []})]) as server:
        Extractor(base_url=server.base_url, model="fake").extract("chat.md")

Routes: POST `/v1/chat/completions`, and for embedders POST `/v1/embeddings` (OpenAI protocol, endpoint
`server.base_url`) and `/api/embed` (Ollama's, endpoint `server.url`); their health checks (GET `/v1/models`,
`/api/tags`) always answer 200. `replies` is a list served in order (the last one repeats), or a function
`(request_body) -> Reply` that can look at what was asked; a reply without a body gets a completion, or
deterministic embeddings of the request's `input`. Every POST body is kept in `server.requests`, every request
as (method, path, Authorization header) in `server.calls`. `{authorization}` (`AUTHORIZATION`) in a reply's
body is replaced by the request's Authorization header, as a server that quotes the key back would do.

A completion asked for with `stream: true` is streamed as server-sent events, one piece of about a token per
event (`Reply.token_delay` apart; `Reply.stall` seconds of silence halfway), with usage at the end when
`stream_options.include_usage` asks for it. As a real server does, a completion longer than the request's
`max_tokens` (estimated tokens) is cut there with `finish_reason: "length"`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .chunking import CHARS_PER_TOKEN, estimate_tokens

AUTHORIZATION = "{authorization}"
EMBED_DIMENSIONS = 8  # of the fake embeddings, unless the request asks for `dimensions`
CHAT_ROUTE = "/chat/completions"
EMBED_ROUTES = ("/embeddings", "/api/embed")  # OpenAI protocol, Ollama's
HEALTH_ROUTES = ("/models", "/api/tags")


@dataclass
class Reply:
    """One HTTP answer of the fake server."""

    status: int = 200
    body: Any = None  # a dict is sent as JSON; None builds a chat completion from `content`
    content: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a timeout, when longer than the client's)
    finish_reason: str = "stop"
    token_delay: float = 0.0  # seconds between two streamed pieces (a slow model)
    stall: float = 0.0  # seconds of silence halfway through a streamed answer (a server that hangs mid-answer)
    usage: dict[str, int] | None = None  # default: tokens estimated from the request and the content

    @classmethod
    def json(cls, value: Any, **kw: Any) -> Reply:
        """A completion whose message content is `value` as JSON text."""
        return cls(content=json.dumps(value, ensure_ascii=False), **kw)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def error(cls, status: int, message: str, **kw: Any) -> Reply:
        return cls(status=status, body={"error": {"message": message, "type": "fake_error", "code": None}}, **kw)

    @classmethod
    def rate_limited(cls, retry_after_ms: int = 10) -> Reply:
        return cls.error(429, "Rate limit reached, retry shortly", headers={"retry-after-ms": str(retry_after_ms)})


Responder = Callable[[dict[str, Any]], Reply]


def answered(request: dict[str, Any], reply: Reply) -> tuple[str | None, str]:
    """The content sent and its finish_reason: cut at the request's `max_tokens`, as a server does."""
    content, limit = reply.content, request.get("max_tokens")
    if content is not None and isinstance(limit, int) and estimate_tokens(content) > limit:
        return content[: limit * CHARS_PER_TOKEN], "length"
    return content, reply.finish_reason


def usage_of(request: dict[str, Any], reply: Reply, content: str | None) -> dict[str, int]:
    prompt = sum(estimate_tokens(str(m.get("content", ""))) for m in request.get("messages") or [])
    out = estimate_tokens(content or "")
    return reply.usage or {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}


def completion(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content, finish = answered(request, reply)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": None},
            "finish_reason": finish,
            "logprobs": None,
        }],
        "usage": usage_of(request, reply, content),
    }


def stream_events(request: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    """The chunks of a streamed completion: the role, one piece of content each, the finish, the usage."""
    content, finish = answered(request, reply)
    text = content or ""
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": request.get("model", "fake")}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text[i : i + CHARS_PER_TOKEN]}) for i in range(0, len(text), CHARS_PER_TOKEN)]
    events.append(chunk({}, finish))
    if (request.get("stream_options") or {}).get("include_usage"):
        events.append({**base, "choices": [], "usage": usage_of(request, reply, content)})
    return events


def embeddings(request: dict[str, Any], route: str) -> dict[str, Any]:
    """Deterministic vectors of the request's `input`, in the shape of the route's protocol."""
    texts = request.get("input")
    texts = texts if isinstance(texts, list) else [texts]
    dims = request.get("dimensions") or EMBED_DIMENSIONS
    vectors = []
    for text in texts:
        digest = hashlib.sha256(str(text).encode()).digest()
        vectors.append([float(digest[i % len(digest)] % 13 + 1) for i in range(dims)])
    if route == "/api/embed":
        return {"model": request.get("model"), "embeddings": vectors}
    return {"object": "list", "model": request.get("model"), "usage": {"prompt_tokens": 1, "total_tokens": 1},
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]}


class FakeOpenAIServer:
    """Chat completions and embeddings on 127.0.0.1 (a free port), in a daemon thread; a context manager."""

    def __init__(self, replies: Sequence[Reply] | Responder) -> None:
        self.requests: list[dict[str, Any]] = []
        self.calls: list[tuple[str, str, str | None]] = []
        self._replies = replies
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                self._record()
                route = self._route(HEALTH_ROUTES)
                body = {"object": "list", "data": [], "models": []}
                self._send(Reply(body=body) if route else Reply.error(404, f"no route {self.path}"), {}, route)

            def do_POST(self) -> None:
                self._record()
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                route = self._route((CHAT_ROUTE, *EMBED_ROUTES))
                if route is None:
                    self._send(Reply.error(404, f"no route {self.path}"), {}, route)
                    return
                try:
                    req = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(Reply.error(400, "request body is not JSON"), {}, route)
                    return
                reply = server._next(req)
                if reply.delay and server._stop.wait(reply.delay):
                    return
                if route == CHAT_ROUTE and req.get("stream") and reply.body is None and reply.status == 200:
                    self._stream(reply, req)
                    return
                self._send(reply, req, route)

            def _stream(self, reply: Reply, req: dict[str, Any]) -> None:
                events = stream_events(req, reply)
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    for n, event in enumerate(events):
                        if n == len(events) // 2 and reply.stall and server._stop.wait(reply.stall):
                            return
                        if n and reply.token_delay and server._stop.wait(reply.token_delay):
                            return
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):  # the client gave up
                    pass

            def _record(self) -> None:
                with server._lock:
                    server.calls.append((self.command, self.path, self.headers.get("authorization")))

            def _route(self, routes: Sequence[str]) -> str | None:
                path = self.path.split("?")[0].rstrip("/")
                return next((r for r in routes if path.endswith(r)), None)

            def _send(self, reply: Reply, req: dict[str, Any], route: str | None) -> None:
                body = reply.body
                if body is None:
                    body = embeddings(req, route) if route in EMBED_ROUTES else completion(req, reply)
                if isinstance(body, bytes):
                    data = body
                elif isinstance(body, str):  # raw text: a server that answers with something not JSON
                    data = body.encode()
                else:
                    data = json.dumps(body).encode()
                data = data.replace(AUTHORIZATION.encode(), (self.headers.get("authorization") or "").encode())
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _next(self, req: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(req)
            n = len(self.requests)
        if callable(self._replies):
            return self._replies(req)
        replies = list(self._replies)
        return replies[min(n, len(replies)) - 1]

    @property
    def url(self) -> str:
        """The server's root: the endpoint of an Ollama embedder."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint (…/v1), for the extractor, the judge and an `openai` embedder."""
        return f"{self.url}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
