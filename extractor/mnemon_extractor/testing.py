"""A local OpenAI-compatible server for tests and offline examples: real HTTP on 127.0.0.1, canned replies.

    with FakeOpenAIServer([Reply.json({"insights": [...], "edges": []})]) as server:
        Extractor(base_url=server.base_url, model="fake").extract("chat.md")

`replies` is a list served in order (the last one repeats), or a function `(request_body) -> Reply` that
can look at what was asked. Every request body is kept in `server.requests`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .chunking import estimate_tokens


@dataclass
class Reply:
    """One HTTP answer of the fake server."""

    status: int = 200
    body: Any = None  # a dict is sent as JSON; None builds a chat completion from `content`
    content: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a timeout, when longer than the client's)
    finish_reason: str = "stop"
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


def completion(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt = sum(estimate_tokens(str(m.get("content", ""))) for m in request.get("messages") or [])
    out = estimate_tokens(reply.content or "")
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": reply.content, "refusal": None},
            "finish_reason": reply.finish_reason,
            "logprobs": None,
        }],
        "usage": reply.usage or {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
    }


class FakeOpenAIServer:
    """`/v1/chat/completions` on 127.0.0.1 (a free port), in a daemon thread; use as a context manager."""

    def __init__(self, replies: Sequence[Reply] | Responder) -> None:
        self.requests: list[dict[str, Any]] = []
        self._replies = replies
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(Reply.error(404, f"no route {self.path}"), {})
                    return
                try:
                    req = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(Reply.error(400, "request body is not JSON"), {})
                    return
                reply = server._next(req)
                if reply.delay and server._stop.wait(reply.delay):
                    return
                self._send(reply, req)

            def _send(self, reply: Reply, req: dict[str, Any]) -> None:
                body = reply.body if reply.body is not None else completion(req, reply)
                if isinstance(body, bytes):
                    data = body
                elif isinstance(body, str):  # raw text: a server that answers with something not JSON
                    data = body.encode()
                else:
                    data = json.dumps(body).encode()
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
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

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
