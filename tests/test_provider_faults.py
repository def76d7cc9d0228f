"""A failing model or embedding server, through the CLI, against `mnemon_extractor.testing.FakeOpenAIServer` on
127.0.0.1: the API key a server quotes back never shows anywhere (issue 13, item 2); a command that achieved
nothing exits 1 with the reason, a partial success exits 0 and reports each item (item 4); an endpoint that
keeps timing out is given up on after a bounded number of requests (item 5)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mnemon_core import Memory
from mnemon_extractor.testing import AUTHORIZATION, FakeOpenAIServer, Reply

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
SECRET = "sk-mnemon-test-SECRET-0123456789abcdef"
MASKED = "Bearer ***"
SLOW = "Milvus filtering was too slow for the search service"
SWITCH = "The search service moved to Qdrant"
CHUNK = {"insights": [{"content": SWITCH, "category": "decision", "importance": 4, "tags": ["search"], "entities": [],
                       "created_at": None}], "edges": []}  # an extraction whose insight has SLOW as a candidate


def echo(status: int) -> Reply:
    """An error that quotes the Authorization header back, as some providers do with a rejected key. A retried
    status (500) asks for a 1 ms pause, so the openai client's own retries stay quick."""
    return Reply.error(status, f"Incorrect API key provided: {AUTHORIZATION}", headers={"retry-after-ms": "1"})


def is_judge(req: dict[str, Any]) -> bool:
    return req["messages"][0]["content"].startswith("You judge links")


def llm_env(s: FakeOpenAIServer) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "extractor")]), "MNEMON_LLM_BASE_URL": s.base_url,
            "MNEMON_LLM_API_KEY": SECRET, "MNEMON_LLM_MODEL": "fake-model"}


def embed_env(s: FakeOpenAIServer, kind: str = "openai") -> dict[str, str]:
    """`openai`; `ollama-v1` (an Ollama embedder at a /v1 endpoint: OpenAI protocol, key sent); `ollama` (the
    native API, which never sends the key)."""
    embedder, endpoint = {"openai": ("openai", s.base_url), "ollama-v1": ("ollama", s.base_url),
                          "ollama": ("ollama", s.url)}[kind]
    return {"MNEMON_EMBEDDER": embedder, "MNEMON_EMBED_ENDPOINT": endpoint, "MNEMON_EMBED_MODEL": "fake-embed",
            "MNEMON_EMBED_API_KEY": SECRET}


def fill(texts: list[str]) -> list[str]:
    with Memory() as m:  # embedder none (conftest): no server involved
        return [m.remember(t, category="fact").id for t in texts]


def db_bytes(data_dir: Path) -> str:
    """A digest of every row of the store: what was written, whether or not a checkpoint has moved the WAL's
    pages into the file yet (the file's bytes alone change with that timing on a loaded machine)."""
    db = sqlite3.connect(data_dir / "data" / "default" / "mnemon.db")
    try:
        return hashlib.sha256("\n".join(db.iterdump()).encode()).hexdigest()
    finally:
        db.close()


def one_error_line(r: Any) -> bool:
    return r.code == 1 and r.err.startswith("Error: ") and r.err.count("\n") == 1


# ---------------------------------------------------------------- item 2: the key never shows

# Each case runs its commands against a server whose model / embedding routes answer with the echo of `status`,
# and returns the results with the exit status each must have.
Case = Callable[[Any, FakeOpenAIServer, Path, int], list[tuple[Any, int]]]


def case_extract(cli: Any, s: FakeOpenAIServer, tmp: Path, status: int) -> list[tuple[Any, int]]:
    return [(cli("extract", str(FIX / "messages.json"), "-o", str(tmp / "d.json"), env=llm_env(s)), 1)]


def case_extract_import_judge(cli: Any, s: FakeOpenAIServer, tmp: Path, status: int) -> list[tuple[Any, int]]:
    fill([SLOW])  # a candidate for the judge
    r = cli("extract", str(FIX / "messages.json"), "-o", str(tmp / "d.json"), "--import", "--judge",
            env=llm_env(s))
    return [(r, 0 if status == 500 else 1)]  # 500: the judge's failures are reported per insight


def case_judge(cli: Any, s: FakeOpenAIServer, tmp: Path, status: int) -> list[tuple[Any, int]]:
    fill([SLOW, SWITCH])  # judge ID takes the same path (see the item 4 tests below)
    return [(cli("judge", "--recent", "2", env=llm_env(s)), 1)]


def embedder_commands(kind: str) -> Case:
    def case(cli: Any, s: FakeOpenAIServer, tmp: Path, status: int) -> list[tuple[Any, int]]:
        env = embed_env(s, kind)
        # remember and recall degrade to keyword and graph signals, with one warning that quotes the server.
        runs = [(cli("remember", SLOW, env=env), 0), (cli("recall", "Milvus", env=env), 0)]
        if kind == "openai":
            (id_,) = fill([SWITCH])
            runs += [(cli("embed", "--all", env=env), 1), (cli("embed", id_, env=env), 1)]
        return runs

    return case


CASES: dict[str, Case] = {
    "extract": case_extract,
    "extract --import --judge": case_extract_import_judge,
    "judge": case_judge,
    "openai embedder": embedder_commands("openai"),
    "ollama embedder at /v1": embedder_commands("ollama-v1"),
    "ollama embedder": embedder_commands("ollama"),
}
# Each status takes its own path through the LLM client (401 the key refused, 400 every output mode refused,
# 500 retried, then reported per item) and is quoted by the embedders. An Ollama embedder at /v1 runs the
# openai embedder's code, and the native API never sends the key: one status each is enough.
RUNS = [(name, status) for name in CASES for status in (401, 400, 500) if not name.startswith("ollama")]
RUNS += [("ollama embedder at /v1", 401), ("ollama embedder", 401)]


@pytest.mark.parametrize("name, status", RUNS)
def test_the_api_key_a_server_echoes_never_appears(cli: Any, data_dir: Path, tmp_path: Path, name: str,
                                                   status: int) -> None:
    def respond(req: dict[str, Any]) -> Reply:
        if name == "extract --import --judge" and not is_judge(req):
            return Reply.json(CHUNK)  # the extraction works; the judge's calls get the echo
        return echo(status)

    with FakeOpenAIServer(respond) as s:
        runs = CASES[name](cli, s, tmp_path, status)
    sent = [auth for _, _, auth in s.calls if auth]
    for r, code in runs:
        assert r.code == code, (r.out, r.err)
        assert SECRET not in r.out and SECRET not in r.err
        if code == 1:
            assert one_error_line(r), r.err
    if name == "ollama embedder":
        assert sent == []  # the native Ollama API never gets the key
    else:
        assert f"Bearer {SECRET}" in sent  # the server had the key, and quoted it back …
        assert all(MASKED in r.out + r.err for r, _ in runs)  # … and the quote reached the output, masked
    if name != "extract":  # the others wrote to the store
        with Memory() as m:
            oplog = m.log(limit=10_000)
        assert oplog and not [e for e in oplog if SECRET in e.model_dump_json()]
    written = [p for p in [*data_dir.rglob("*"), *tmp_path.glob("*.json")] if p.is_file()]
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]


# ---------------------------------------------------------------- item 4: nothing succeeded → exit 1


@pytest.mark.parametrize("status", [401, 500])
def test_embed_all_that_embeds_nothing_exits_1_with_the_reason(cli: Any, data_dir: Path, status: int) -> None:
    fill([f"note number {i}" for i in range(12)])
    before = db_bytes(data_dir)
    with FakeOpenAIServer([echo(status)]) as s:
        r = cli("embed", "--all", env=embed_env(s))
    assert (r.code, r.out) == (1, "")
    assert r.err == (f"Error: embed --all: nothing embedded (12 failed): gave up after 4 failed requests "
                     f"(openai/fake-embed: {s.base_url}/embeddings answered HTTP {status}: Incorrect API key "
                     f"provided: {MASKED})\n")
    assert len(s.requests) == 4  # the batch and three texts alone, not one request per insight
    assert db_bytes(data_dir) == before


def test_embed_all_with_some_texts_refused_exits_0_and_counts_them(cli: Any, data_dir: Path) -> None:
    fill(["fine one", "poison pill", "fine two", "fine three"])

    def respond(req: dict[str, Any]) -> Reply:
        return Reply.error(400, "refused") if any("poison" in t for t in req["input"]) else Reply()

    with FakeOpenAIServer(respond) as s:
        r = cli("embed", "--all", env=embed_env(s))
    assert (r.code, r.err) == (0, "")
    assert r.json() == {"failed": 1, "model": "openai/fake-embed", "status": "backfill_complete", "succeeded": 3}
    with Memory() as m:
        assert m.store.vector_counts() == {"openai/fake-embed:8": 3}


@pytest.mark.parametrize("reply, reason", [
    (Reply.error(500, "boom", headers={"retry-after-ms": "1"}), "server error (HTTP 500): boom"),
    (Reply(body="<html>garbage</html>"), "the server's reply is not JSON"),
])
def test_judge_that_gets_no_decision_for_any_insight_exits_1(cli: Any, data_dir: Path, reply: Reply,
                                                             reason: str) -> None:
    slow, new = fill([SLOW, SWITCH])
    before = db_bytes(data_dir)
    with FakeOpenAIServer([reply]) as s:
        one = cli("judge", new, env=llm_env(s))
        recent = cli("judge", "--recent", "2", env=llm_env(s))
    assert (one.code, one.err) == (1, f"Error: judge: no decision for the insight: {reason}\n")
    assert one.json()["error"] == reason
    assert (recent.code, recent.err) == (1, f"Error: judge: no decision for any of the 2 insights: {reason}\n")
    assert [(j["id"], j["error"], j["linked"]) for j in recent.json()] == [(new, reason, []), (slow, reason, [])]
    assert db_bytes(data_dir) == before


def test_judge_that_decides_for_some_insights_exits_0_and_reports_the_others(cli: Any, data_dir: Path) -> None:
    slow, new = fill([SLOW, SWITCH])

    def respond(req: dict[str, Any]) -> Reply:
        quoted = json.loads(req["messages"][1]["content"].split("```json\n", 1)[1].split("\n```", 1)[0])
        content = {m["ref"]: m["content"] for m in quoted["memories"]}
        if content[quoted["pairs"][0]["new"]] == SWITCH:  # SWITCH's pairs fail: then SLOW's side is asked
            return Reply.error(500, "boom", headers={"retry-after-ms": "1"})
        return Reply.json({"decisions": [{"ref": "p1", "link": True, "edge_type": "semantic", "sub_type": None,
                                          "direction": "new_to_candidate", "weight": 0.6,
                                          "reason": "slow Milvus filtering moved the search service to Qdrant"}]})

    with FakeOpenAIServer(respond) as s:
        r = cli("judge", "--recent", "2", env=llm_env(s))
    assert (r.code, r.err) == (0, "")
    out = r.json()
    assert [(j["id"], j["error"]) for j in out] == [(new, "server error (HTTP 500): boom"), (slow, None)]
    assert [lk["target_id"] for lk in out[1]["linked"]] == [new]


def test_extract_import_judge_warns_when_the_judge_decided_nothing(cli: Any, data_dir: Path, tmp_path: Path) -> None:
    fill([SLOW])

    def respond(req: dict[str, Any]) -> Reply:
        return Reply(body="garbage") if is_judge(req) else Reply.json(CHUNK)

    with FakeOpenAIServer(respond) as s:
        r = cli("extract", str(FIX / "messages.json"), "-o", str(tmp_path / "d.json"), "--import", "--judge",
                env=llm_env(s))
    assert r.code == 0  # the draft is written and imported: that stands
    judged = [j for j in r.json()["judge"] if j["candidates"]]
    assert judged and all(j["error"] == "the server's reply is not JSON" for j in judged)
    assert r.err == (f"mnemon: warning: judge: no decision for the insight: the server's reply is not JSON\n"
                     if len(judged) == 1 else
                     f"mnemon: warning: judge: no decision for any of the {len(judged)} insights: the server's "
                     "reply is not JSON\n")


# ---------------------------------------------------------------- item 5: a slow endpoint is given up on


@pytest.mark.parametrize("kind, route", [("openai", "/v1/embeddings"), ("ollama", "/api/embed")])
def test_embed_all_gives_up_on_an_endpoint_that_keeps_timing_out(cli: Any, data_dir: Path, kind: str,
                                                                 route: str) -> None:
    fill([f"note number {i}" for i in range(12)])
    before = db_bytes(data_dir)
    with FakeOpenAIServer([Reply(delay=30)]) as s:  # answers long after the client's 0.5 s
        r = cli("embed", "--all", env={**embed_env(s, kind), "MNEMON_EMBED_TIMEOUT": "0.5"})
    name = f"{'openai' if kind == 'openai' else 'ollama'}/fake-embed"
    assert (r.code, r.out) == (1, "")
    assert r.err == (f"Error: embed --all: nothing embedded (12 failed): gave up after 2 timeouts in a row ({name}: "
                     f"{s.url}{route} did not answer within 0.5 s)\n")
    assert len(s.requests) == 2  # the batch and one text alone; before: 1 + 12 requests of 30 s each
    assert db_bytes(data_dir) == before
