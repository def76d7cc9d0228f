"""The extractor end to end through the real openai client, against a local OpenAI-compatible server on
127.0.0.1 (`mnemon_extractor.testing.FakeOpenAIServer`) that serves canned replies: structured answers,
malformed JSON, drafts that break a limit, 429s, timeouts, servers without structured outputs."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemon_core.draft import ImportDraft
from mnemon_extractor import Extractor
from mnemon_extractor.chunking import chunk_conversations
from mnemon_extractor.errors import ExtractionError, LLMError
from mnemon_extractor.extract import ChunkFailure, Dropped, answer_tokens
from mnemon_extractor.readers import read_export
from mnemon_extractor.testing import FakeOpenAIServer, Reply

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}

QDRANT = {
    "content": "The search service uses Qdrant instead of Milvus because its filtered queries are 3x faster.",
    "category": "decision", "importance": 5, "tags": ["Vector DB", "search"], "entities": ["Qdrant", "Milvus"],
    "created_at": None,
}
LATENCY = {
    "content": "With payload indexes Qdrant keeps p95 latency under 40 ms on filtered queries.",
    "category": "fact", "importance": 3, "tags": ["performance"], "entities": ["Qdrant"],
    "created_at": "2024-03-15T09:36:40Z",
}
TERSE = {
    "content": "The user wants API responses to be short JSON without explanations around it.",
    "category": "preference", "importance": 4, "tags": ["api-design"], "entities": [], "created_at": None,
}
CHUNK1 = {"insights": [QDRANT, LATENCY],
          "edges": [{"source_index": 0, "target_index": 1, "edge_type": "causal", "weight": 0.7,
                     "reason": "the choice made the latency possible"}]}
CHUNK2 = {"insights": [TERSE], "edges": []}


def extractor(server: FakeOpenAIServer, **kw: Any) -> Extractor:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5)
    return Extractor(base_url=server.base_url, api_key="test-key", model="fake-model", **kw)


def part(req: dict[str, Any]) -> int:
    """Which chunk a request is about (the user message says "part N of M")."""
    text = req["messages"][1]["content"]
    return int(text.split(", part ")[1].split(" ")[0])


def by_part(*replies: list[Reply]) -> Any:
    """A responder serving each chunk its own list of replies, in order (the last one repeats)."""
    seen: dict[int, int] = {}

    def respond(req: dict[str, Any]) -> Reply:
        p = part(req)
        n = seen.get(p, 0)
        seen[p] = n + 1
        lst = replies[p - 1]
        return lst[min(n, len(lst) - 1)]

    return respond


def test_good_structured_answer_gives_the_exact_draft():
    with FakeOpenAIServer(by_part([Reply.json(CHUNK1, usage=USAGE)], [Reply.json(CHUNK2, usage=USAGE)])) as s:
        ex = extractor(s)
        draft = ex.extract(FIX / "chatgpt_conversations.json")
    assert isinstance(draft, ImportDraft)
    assert draft.model_dump(mode="json", exclude_none=True) == {
        "schema_version": "1",
        "source": "chat-export",
        "insights": [
            # created_at from the message that says most of it (the model gave none); session = the source
            # conversation, so import links the insights of one conversation and nothing across them
            {**QDRANT, "tags": ["vector-db", "search"], "created_at": "2024-03-15T09:35:00Z",
             "session": "Vector DB for the search service"},
            {**LATENCY, "session": "Vector DB for the search service"},
            {**TERSE, "created_at": "2024-03-16T09:06:40Z", "session": "API response style"},
        ],
        "edges": [{"source_index": 0, "target_index": 1, "edge_type": "causal", "weight": 0.7,
                   "reason": "the choice made the latency possible"}],
    }
    r = ex.last_report
    report = r.model_dump()
    calls = report.pop("calls")
    assert (report.pop("seconds") >= 0, report.pop("tokens_per_s") > 0) == (True, True)
    assert report == {
        "file": str(FIX / "chatgpt_conversations.json"), "format": "chatgpt", "model": "fake-model",
        "mode": "structured", "conversations": 2, "messages": 6, "chunks": 2, "chunks_failed": 0, "partial": 0,
        "insights": 3, "merged": 0, "edges": 1, "failures": [], "insights_dropped": 0, "edges_dropped": 0,
        "dropped_by_rule": {}, "dropped": [], "splits": 0,
        "tokens": {"prompt": 200, "completion": 40, "total": 240},
    }
    chunks = chunk_conversations(read_export(FIX / "chatgpt_conversations.json").conversations)
    assert [(c["chunk"], c["messages"], c["outcome"], c["max_tokens"], c["answer_tokens"], c["insights"])
            for c in calls] == [(0, "1-4", "ok", answer_tokens(chunks[0].tokens), 20, 2),
                                (1, "1-2", "ok", answer_tokens(chunks[1].tokens), 20, 1)]
    assert all(c["tokens_per_s"] > 0 for c in calls)
    first = s.requests[0]
    assert first["model"] == "fake-model"
    # Bounded and repeatable: the answer's limit sized to the chunk, greedy sampling with a fixed seed, streamed.
    assert (first["max_tokens"], first["temperature"], first["seed"], first["stream"]) == (
        512 + 3 * chunks[0].tokens, 0.0, 0, True)
    assert first["stream_options"] == {"include_usage": True}
    assert first["cache_prompt"] is False  # llama.cpp's prompt cache changes greedy answers
    fmt = first["response_format"]
    assert (fmt["type"], fmt["json_schema"]["name"], fmt["json_schema"]["strict"]) == (
        "json_schema", "ExtractionAnswer", True)
    assert fmt["json_schema"]["schema"]["required"] == ["insights", "edges"]
    system, user = first["messages"]
    assert system["role"] == "system" and "importance" in system["content"] and "vector-db" in system["content"]
    assert user["content"].startswith('Conversation "Vector DB for the search service", part 1 of 2 (messages 1-4).')
    assert "[2024-03-15T09:30:00Z] user:\nWe need a vector database" in user["content"]
    # The second chunk sees the first chunk's insights, newest as -1.
    second = s.requests[1]["messages"][1]["content"]
    assert f"-1: {json.dumps(LATENCY['content'])}\n-2: {json.dumps(QDRANT['content'])}" in second


def test_malformed_json_is_retried_with_the_error_quoted():
    replies = [Reply.text('{"insights": [', usage=USAGE), Reply.json(CHUNK2, usage=USAGE)]
    with FakeOpenAIServer(replies) as s:
        ex = extractor(s)
        draft = ex.extract(FIX / "messages.json")
    assert [i.content for i in draft.insights] == [TERSE["content"]]
    assert len(s.requests) == 2
    retry = s.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"insights": ['}
    assert retry[-1] == {"role": "user", "content": (
        "Your answer was rejected: the answer is not valid JSON: Expecting value: line 1 column 15 (char 14)\n"
        "Answer again with the complete, corrected JSON object only.")}
    assert ex.last_report.failures == [] and ex.last_report.tokens.total == 240


def test_a_chunk_that_stays_malformed_is_reported_and_the_rest_kept():
    bad = Reply.text("Sure! Here are the insights you asked for.")
    with FakeOpenAIServer(by_part([bad], [Reply.json(CHUNK2)])) as s:
        ex = extractor(s)
        draft = ex.extract(FIX / "chatgpt_conversations.json")
    assert [i.content for i in draft.insights] == [TERSE["content"]]
    assert ex.last_report.chunks_failed == 1
    assert ex.last_report.failures == [ChunkFailure(
        chunk=0, conversation="Vector DB for the search service", messages="1-4", attempts=2,
        error="invalid answer after 2 attempts: the answer holds no JSON object")]
    assert len(s.requests) == 3  # two for the bad chunk (answer + one retry), one for the good


def test_a_draft_that_breaks_a_limit_is_retried_then_reported():
    too_important = {"insights": [{**TERSE, "importance": 7}], "edges": []}
    with FakeOpenAIServer([Reply.json(too_important)]) as s:
        ex = extractor(s)
        run = ex.run(FIX / "messages.json")
        with pytest.raises(ExtractionError) as e:
            ex.extract(FIX / "messages.json")
    assert run.draft is None
    err = "insights[0].importance: importance must be 1-5, got 7"
    assert run.report.failures == [ChunkFailure(
        chunk=0, conversation="Support bot session", messages="1-2", attempts=2,
        error=f"invalid answer after 2 attempts: {err}")]
    assert s.requests[1]["messages"][-1]["content"].startswith(f"Your answer was rejected: {err}\n")
    assert str(e.value) == (f"no insights extracted from {FIX / 'messages.json'}: all 1 chunks failed "
                            f"(first error: invalid answer after 2 attempts: {err})")
    assert e.value.report.chunks_failed == 1


def test_a_limit_error_fixed_on_the_retry_is_accepted():
    tags = {"insights": [{**TERSE, "tags": [f"t{i}" for i in range(21)]}], "edges": []}
    with FakeOpenAIServer([Reply.json(tags), Reply.json(CHUNK2)]) as s:
        draft = extractor(s).extract(FIX / "messages.json")
    assert draft.insights[0].tags == ["api-design"]
    assert "insights[0].tags: too many tags (21, max 20)" in s.requests[1]["messages"][-1]["content"]


def test_bad_edges_are_dropped_alone_and_the_insights_kept():
    """A model that chains edges past its insights (0→1 … 3→4 over 3 insights) loses those edges, not the
    insights; there is no retry (it would repeat the same answer)."""
    reason = "Qdrant latency follows from the Qdrant choice"
    bad = {"insights": [QDRANT, LATENCY, TERSE], "edges": [
        {"source_index": 0, "target_index": 1, "edge_type": "causal", "weight": 0.7, "reason": reason},
        {"source_index": 1, "target_index": 1, "edge_type": "semantic", "weight": 0.5, "reason": reason},
        {"source_index": 2, "target_index": 3, "edge_type": "semantic", "weight": 0.5, "reason": reason},
        {"source_index": 0, "target_index": -1, "edge_type": "causal", "weight": 0.5, "reason": reason},
        {"source_index": 0, "target_index": 2, "edge_type": "entity", "weight": 1.5, "reason": reason},
        {"source_index": 0, "target_index": 2, "edge_type": "because", "weight": 0.5, "reason": reason}]}
    with FakeOpenAIServer([Reply.json(bad)]) as s:
        run = extractor(s).run(FIX / "messages.json")
    assert len(s.requests) == 1 and run.report.failures == []
    assert [i.content for i in run.draft.insights] == [QDRANT["content"], LATENCY["content"], TERSE["content"]]
    assert [(e.source_index, e.target_index) for e in run.draft.edges] == [(0, 1)]
    assert [(d.kind, d.rule, d.item, d.detail) for d in run.report.dropped] == [
        ("edge", "out-of-range", "edges[1]: 1 -> 1",
         "edges[1].target_index: must differ from source_index (1)"),
        ("edge", "out-of-range", "edges[2]: 2 -> 3",
         "edges[2].target_index: index 3 out of range (this answer has 3 insights)"),
        ("edge", "out-of-range", "edges[3]: 0 -> -1",
         "edges[3].target_index: index -1 out of range (this answer has 3 insights)"),
        ("edge", "invalid", "edges[4]", "edges[4].weight: weight must be between 0.0 and 1.0, got 1.50"),
        ("edge", "invalid", "edges[5]",
         "edges[5].edge_type: Input should be 'causal', 'semantic', 'temporal' or 'entity'"),
    ]
    assert (run.report.edges_dropped, run.report.dropped_by_rule) == (5, {"out-of-range": 3, "invalid": 2})


def test_a_bad_insight_is_dropped_alone_and_an_answer_with_none_usable_is_retried():
    too_important = {**LATENCY, "importance": 7}
    edge = {"source_index": 0, "target_index": 1, "edge_type": "causal", "weight": 0.6,
            "reason": "the Qdrant choice set the latency"}
    with FakeOpenAIServer([Reply.json({"insights": [QDRANT, too_important], "edges": [edge]})]) as s:
        run = extractor(s).run(FIX / "messages.json")
    assert len(s.requests) == 1
    assert [i.content for i in run.draft.insights] == [QDRANT["content"]] and run.draft.edges == []
    assert run.report.dropped == [
        Dropped(chunk=0, kind="insight", rule="invalid", item=LATENCY["content"],
                detail="insights[1].importance: importance must be 1-5, got 7"),
        Dropped(chunk=0, kind="edge", rule="end-dropped", item="edges[0]: 0 -> 1",
                detail="edges[0]: insight 1 was dropped"),
    ]


def test_an_empty_retry_after_a_rejected_answer_is_a_failure_not_nothing_to_remember():
    with FakeOpenAIServer([Reply.json({"insights": [{**TERSE, "importance": 9}], "edges": []}),
                           Reply.json({"insights": [], "edges": []})]) as s:
        run = extractor(s).run(FIX / "messages.json")
    assert run.draft is None and len(s.requests) == 2
    assert run.report.failures == [ChunkFailure(
        chunk=0, conversation="Support bot session", messages="1-2", attempts=2,
        error="the answer was rejected (insights[0].importance: importance must be 1-5, got 9), and the retry "
              "came back empty")]


def test_429_is_retried_by_the_client():
    with FakeOpenAIServer([Reply.rate_limited(retry_after_ms=10), Reply.json(CHUNK2)]) as s:
        ex = extractor(s, max_retries=2)
        draft = ex.extract(FIX / "messages.json")
    assert len(draft.insights) == 1 and len(s.requests) == 2
    assert ex.last_report.failures == []


def test_429_that_persists_fails_the_chunk_with_a_clear_error():
    with FakeOpenAIServer([Reply.rate_limited(retry_after_ms=10)]) as s:
        run = extractor(s, max_retries=1).run(FIX / "messages.json")
    assert len(s.requests) == 2
    assert run.report.failures[0].error == "rate limited (HTTP 429, 2 tries): Rate limit reached, retry shortly"
    assert run.report.failures[0].attempts == 0


@pytest.fixture
def fast_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that reads any prompt at once: a call's wait is MNEMON_LLM_TIMEOUT alone (these tests time out
    on the extraction prompt, whose reading allowance at the real PROMPT_TOKENS_PER_S is minutes)."""
    from mnemon_extractor import llm

    monkeypatch.setattr(llm, "PROMPT_TOKENS_PER_S", 1e9)


HEAD = (r"the model server did not answer within {wait}s \(MNEMON_LLM_TIMEOUT={timeout}s of silence, plus {read}s to "
        r"read the [\d,]+-token prompt at 1e\+09 tokens/s\)")


def test_a_timed_out_request_is_not_sent_again_and_the_error_names_the_setting(fast_reader: None):
    with FakeOpenAIServer([Reply.json(CHUNK2, delay=3), Reply.json(CHUNK2)]) as s:
        run = extractor(s, timeout=0.5, max_retries=2).run(FIX / "messages.json")
    assert run.draft is None and len(s.requests) == 1  # the same request would wait out the same timeout
    error = run.report.failures[0].error
    assert re.fullmatch(HEAD.format(wait=r"0\.5", timeout=r"0\.5", read=r"[\d.e-]+") + re.escape(
        ": no token yet (a CPU server may take minutes to read a long prompt: raise MNEMON_LLM_TIMEOUT or lower "
        "--chunk-tokens)"), error), error


def test_a_timeout_names_the_speed_seen(fast_reader: None):
    """The timeout bounds silence, not length: a slow answer that keeps coming is read to the end; one that
    stops halfway fails with the speed it had; after an answer, a silent server is told by that speed."""
    slow = Reply.json(CHUNK2, token_delay=0.02)  # ~25 pieces, 0.5 s in all: longer than the timeout
    with FakeOpenAIServer(by_part([slow], [Reply.json(CHUNK2, stall=2)])) as s:
        ex = extractor(s, timeout=0.3)
        run = ex.run(FIX / "chatgpt_conversations.json")
    assert run.report.calls[0].outcome == "ok" and run.report.calls[0].seconds >= 0.4
    error = run.report.failures[0].error
    head = HEAD.format(wait=r"0\.3", timeout=r"0\.3", read=r"[\d.e-]+")
    assert re.fullmatch(head + r": it went silent after \d+ tokens of this answer at [\d.]+ tokens/s", error), error
    with FakeOpenAIServer(by_part([slow], [Reply.json(CHUNK2, delay=2)])) as s:
        run = extractor(s, timeout=0.3).run(FIX / "chatgpt_conversations.json")
    error = run.report.failures[0].error
    assert re.fullmatch(head + r": no token of this answer yet; its answers so far came at [\d.]+ tokens/s",
                        error), error


def test_the_wait_for_the_first_token_is_sized_to_the_prompt():
    """A server says nothing while it reads the prompt: each call waits MNEMON_LLM_TIMEOUT plus the prompt's
    tokens at PROMPT_TOKENS_PER_S, so a long prompt on a slow server is waited for and a short one is not."""
    from pydantic import BaseModel

    from mnemon_extractor.llm import DEFAULT_TIMEOUT_S, PROMPT_TOKENS_PER_S, ChatLLM, LLMConfig

    class Chunk(BaseModel):
        insights: list[dict[str, Any]]
        edges: list[dict[str, Any]]

    assert ChatLLM(LLMConfig.resolve(base_url="http://127.0.0.1:9/v1")).wait(2624) == DEFAULT_TIMEOUT_S + 2624 / 5
    assert PROMPT_TOKENS_PER_S == 5.0
    long = "Maya Okafor leads Tessera. " * 12  # 81 estimated tokens: ~16 s to read at 5 tokens/s
    with FakeOpenAIServer([Reply.json(CHUNK2, delay=1.0)]) as s:
        llm = ChatLLM(LLMConfig.resolve(base_url=s.base_url, api_key="k", model="m", timeout=0.3, max_retries=0))
        read = llm.ask([{"role": "user", "content": long}], Chunk, lambda d: d)
        short = llm.ask([{"role": "user", "content": "hi"}], Chunk, lambda d: d)
    assert read.error is None and read.value == CHUNK2
    assert short.error == ("the model server did not answer within 0.5s (MNEMON_LLM_TIMEOUT=0.3s of silence, plus "
                           "0.2s to read the 1-token prompt at 5 tokens/s): no token of this answer yet; its answers "
                           f"so far came at {llm.usage.tokens_per_s:.1f} tokens/s")


def test_a_server_that_keeps_timing_out_is_given_up_on():
    """After MAX_CONSECUTIVE_TIMEOUTS calls in a row timed out, later calls fail at once (each reported)
    instead of each waiting out the timeout; an answer in between starts the count again."""
    from pydantic import BaseModel

    from mnemon_core.config import MAX_CONSECUTIVE_TIMEOUTS
    from mnemon_extractor.llm import ChatLLM, LLMConfig

    class Chunk(BaseModel):
        insights: list[dict[str, Any]]
        edges: list[dict[str, Any]]

    with FakeOpenAIServer([Reply.json(CHUNK2, delay=3)]) as s:
        llm = ChatLLM(LLMConfig.resolve(base_url=s.base_url, api_key="k", model="m", timeout=0.3, max_retries=0))
        answers = [llm.ask([{"role": "user", "content": "hi"}], Chunk, lambda d: d) for _ in range(4)]
        sent = len(s.requests)
    assert MAX_CONSECUTIVE_TIMEOUTS == 2 and sent == 2
    assert [a.error.split(":")[0] for a in answers[:2]] == [
        "the model server did not answer within 0.5s (MNEMON_LLM_TIMEOUT=0.3s of silence, plus 0.2s to read the "
        "1-token prompt at 5 tokens/s)"] * 2
    assert answers[3].error == answers[2].error == (
        "not sent: the model server did not answer 2 calls in a row within their wait (MNEMON_LLM_TIMEOUT=0.3s of "
        "silence, plus the time to read each prompt)")
    with FakeOpenAIServer([Reply.json(CHUNK2, delay=3), Reply.json(CHUNK2), Reply.json(CHUNK2, delay=3),
                           Reply.json(CHUNK2)]) as s:
        llm = ChatLLM(LLMConfig.resolve(base_url=s.base_url, api_key="k", model="m", timeout=0.3, max_retries=0))
        answers = [llm.ask([{"role": "user", "content": "hi"}], Chunk, lambda d: d) for _ in range(4)]
    assert [a.error is None for a in answers] == [False, True, False, True]


def test_server_without_structured_outputs_falls_back_to_json_mode():
    def respond(req: dict[str, Any]) -> Reply:
        if req.get("response_format", {}).get("type") == "json_schema":
            return Reply.error(400, "response_format type json_schema is not supported")
        return Reply.text("```json\n" + json.dumps(CHUNK1 if part(req) == 1 else CHUNK2) + "\n```")

    with FakeOpenAIServer(respond) as s:
        ex = extractor(s)
        draft = ex.extract(FIX / "chatgpt_conversations.json")
    assert len(draft.insights) == 3 and ex.last_report.mode == "json"
    assert [r.get("response_format", {}).get("type") for r in s.requests] == [
        "json_schema", "json_object", "json_object"]
    # Without a schema in the request, the schema travels in the system prompt.
    assert '"ExtractedInsight"' in s.requests[1]["messages"][0]["content"]


def test_edges_to_earlier_chunks_are_remapped_and_repeats_merged():
    again = {**QDRANT, "content": QDRANT["content"].replace("3x faster", "3x faster than on Milvus"),
             "importance": 4, "tags": ["qdrant"], "entities": ["qdrant", "Payload index"]}
    chunk2 = {"insights": [again, TERSE], "edges": [
        {"source_index": 1, "target_index": -1, "edge_type": "semantic", "weight": 0.4,
         "reason": "short API responses keep latency low"},
        {"source_index": 0, "target_index": 1, "edge_type": "causal", "weight": 0.6,
         "reason": "the Qdrant API shapes the responses"}]}
    with FakeOpenAIServer(by_part([Reply.json(CHUNK1)], [Reply.json(chunk2)])) as s:
        ex = extractor(s)
        draft = ex.extract(FIX / "chatgpt_conversations.json")
    d = draft.model_dump(mode="json", exclude_none=True)
    assert [i["content"] for i in d["insights"]] == [again["content"], LATENCY["content"], TERSE["content"]]
    merged = d["insights"][0]
    assert (merged["importance"], merged["tags"], merged["entities"], merged["created_at"]) == (
        5, ["vector-db", "search", "qdrant"], ["Qdrant", "Milvus", "Payload index"], "2024-03-15T09:35:00Z")
    assert d["edges"] == [
        {"source_index": 0, "target_index": 1, "edge_type": "causal", "weight": 0.7,
         "reason": "the choice made the latency possible"},
        {"source_index": 2, "target_index": 1, "edge_type": "semantic", "weight": 0.4,
         "reason": "short API responses keep latency low"},
        {"source_index": 0, "target_index": 2, "edge_type": "causal", "weight": 0.6,
         "reason": "the Qdrant API shapes the responses"},
    ]
    assert (ex.last_report.insights, ex.last_report.merged, ex.last_report.edges) == (3, 1, 3)


def test_created_at_outside_the_chunk_or_copied_from_the_prompt_is_not_trusted():
    wrong_year = {**TERSE, "created_at": "2019-01-01T00:00:00Z"}
    with FakeOpenAIServer([Reply.json({"insights": [wrong_year], "edges": []})]) as s:
        d = extractor(s).extract(FIX / "messages.jsonl")
    assert d.insights[0].created_at == "2024-06-01T08:00:00Z"  # the first timestamped message (no overlap)
    example = {**TERSE, "created_at": "2024-01-15T09:30:00Z"}
    with FakeOpenAIServer([Reply.json({"insights": [example], "edges": []})]) as s:
        d = extractor(s).extract(FIX / "langchain_dumpd.json")  # no timestamps at all
    assert d.insights[0].created_at is None


def span(req: dict[str, Any]) -> str:
    """Which messages a request is about (the user message says "(messages 1-4)")."""
    return req["messages"][1]["content"].split("(messages ")[1].split(")")[0]


def four_messages(tmp_path: Path) -> Path:
    """One conversation of four messages, about 60 tokens each."""
    path = tmp_path / "four.jsonl"
    lines = [json.dumps({"role": "user" if i % 2 == 0 else "assistant",
                         "content": f"Message {i} about the search service. " + "detail " * 45}) for i in range(4)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


LONG = {"insights": [TERSE] * 60, "edges": []}  # longer than any limit a small chunk gets


def test_a_cut_off_answer_splits_the_chunk_instead_of_asking_again(tmp_path: Path):
    half = {"1-2": {"insights": [QDRANT], "edges": []}, "3-4": {"insights": [TERSE], "edges": []}}
    with FakeOpenAIServer(lambda req: Reply.json(half.get(span(req), LONG))) as s:
        ex = extractor(s)
        draft = ex.extract(four_messages(tmp_path))
    r = ex.last_report
    assert [span(q) for q in s.requests] == ["1-4", "1-2", "3-4"]  # never the cut-off request again
    limits = [q["max_tokens"] for q in s.requests]
    assert limits[0] > limits[1] and limits[0] > limits[2]
    assert [c.outcome for c in r.calls] == ["split", "ok", "ok"] and r.calls[0].answer_tokens == limits[0]
    assert (r.splits, r.chunks, r.chunks_failed, r.failures) == (1, 1, 0, [])
    assert [i.content for i in draft.insights] == [QDRANT["content"], TERSE["content"]]


def test_halves_that_come_back_empty_after_a_cut_off_fail_the_chunk(tmp_path: Path):
    empty = Reply.json({"insights": [], "edges": []})
    with FakeOpenAIServer(lambda req: Reply.json(LONG) if span(req) == "1-4" else empty) as s:
        ex = extractor(s)
        with pytest.raises(ExtractionError) as e:
            ex.extract(four_messages(tmp_path))
    limit = s.requests[0]["max_tokens"]
    assert ex.last_report.failures == [ChunkFailure(
        chunk=0, conversation="four", messages="1-4", attempts=1,
        error=f"the answer was cut off at the output limit ({limit} tokens), and its two halves came back empty")]
    assert "all 1 chunks failed" in str(e.value)


# An answer that never writes one insight in full: the content of its first insight goes on past any limit.
ENDLESS = '{"insights": [{"content": "The search service ' + "really " * 5000


def test_a_chunk_that_is_always_cut_off_is_split_twice_at_most(tmp_path: Path):
    with FakeOpenAIServer([Reply.text(ENDLESS)]) as s:
        run = extractor(s).run(four_messages(tmp_path))
    assert [span(q) for q in s.requests] == ["1-4", "1-2", "1", "2", "3-4", "3", "4"]
    assert [(f.messages, f.error.split(" (")[0]) for f in run.report.failures] == [
        (m, "the answer was cut off at the output limit") for m in ("1", "2", "3", "4")]
    assert (run.report.chunks_failed, run.report.splits, run.draft) == (1, 3, None)


def test_a_cut_off_answer_at_the_last_depth_keeps_its_complete_insights(tmp_path: Path):
    """Where the chunk cannot be split again, the insights a cut-off answer wrote in full are kept (through the
    same checks as a whole answer), the call is `partial`, and the insight it stopped in is reported dropped."""
    long = {"insights": [QDRANT, LATENCY, *[TERSE] * 60], "edges": []}
    with FakeOpenAIServer([Reply.json(long)]) as s:
        ex = extractor(s)
        run = ex.run(four_messages(tmp_path))
    r = run.report
    assert [span(q) for q in s.requests] == ["1-4", "1-2", "1", "2", "3-4", "3", "4"]
    assert [c.outcome for c in r.calls] == ["split", "split", "partial", "partial", "split", "partial", "partial"]
    assert (r.partial, r.chunks_failed, r.failures) == (4, 0, [])
    assert all(c.insights > 2 and c.answer_tokens == s.requests[n]["max_tokens"]  # repeats merge in the draft
               for n, c in enumerate(r.calls) if c.outcome == "partial")
    assert [i.content for i in run.draft.insights] == [QDRANT["content"], LATENCY["content"], TERSE["content"]]
    cut = [d for d in r.dropped if d.rule == "cut-off"]
    assert len(cut) == 4 and all(d.kind == "insight" and d.item.startswith('{"content": "The user wants')
                                 and "at its limit of" in d.detail for d in cut)
    assert r.dropped_by_rule == {"cut-off": 4}


def test_a_cut_off_answer_of_a_chunk_that_cannot_be_halved_is_partial():
    """A chunk too small to halve (one short message pair) gets no split: its cut-off answer is kept in part
    at once, with its complete edges; an edge it stopped in is dropped, as is a complete one out of range."""
    reason = "Qdrant latency follows from the Qdrant choice"
    head = json.dumps({"insights": [QDRANT, LATENCY], "edges": [
        {"source_index": 0, "target_index": 1, "edge_type": "causal", "weight": 0.7, "reason": reason},
        {"source_index": 0, "target_index": 5, "edge_type": "causal", "weight": 0.7, "reason": reason}]})
    text = head[:-2] + ', {"source_index": 1, "target_index": 0, "edge_type": "semantic", "weight": 0.5, ' \
        '"reason": "' + "Qdrant " * 4000
    with FakeOpenAIServer([Reply.text(text)]) as s:
        run = extractor(s).run(FIX / "messages.json")
    r = run.report
    assert len(s.requests) == 1 and [c.outcome for c in r.calls] == ["partial"] and r.partial == 1
    assert [i.content for i in run.draft.insights] == [QDRANT["content"], LATENCY["content"]]
    assert [(e.source_index, e.target_index, e.edge_type.value) for e in run.draft.edges] == [(0, 1, "causal")]
    assert [(d.kind, d.rule) for d in r.dropped] == [("edge", "out-of-range"), ("edge", "cut-off")]
    assert r.dropped[1].item.startswith('{"source_index": 1, "target_index": 0')


def test_a_cut_off_answers_insights_are_kept_but_not_listed_to_later_chunks():
    """A whole answer's insights are listed to the chunks after it; a cut-off answer's (a model that did not
    finish, often one repeating itself) go to the draft without being listed."""
    from mnemon_extractor.readers import Conversation, Message

    cut = json.dumps({"insights": [QDRANT]})[:-2] + ', {"content": "' + "Qdrant " * 4000
    replies = {"Search": Reply.text(cut), "Latency": Reply.json({"insights": [LATENCY], "edges": []}),
               "Style": Reply.json(CHUNK2)}
    chats = [Conversation(title, [Message("user", f"{title}: a short note about the search service.")])
             for title in replies]
    with FakeOpenAIServer(lambda req: replies[req["messages"][1]["content"].split('"')[1]]) as s:
        ex = extractor(s)
        run = ex.run_conversations(chats)
    assert [c.outcome for c in run.report.calls] == ["partial", "ok", "ok"]
    assert [i.content for i in run.draft.insights] == [QDRANT["content"], LATENCY["content"], TERSE["content"]]
    prompts = [q["messages"][1]["content"] for q in s.requests]
    assert QDRANT["content"] not in prompts[1] + prompts[2]
    assert LATENCY["content"] not in prompts[1] and LATENCY["content"] in prompts[2]


@pytest.mark.parametrize(("text", "held"), [
    (ENDLESS, "no complete insight"),
    (json.dumps({"insights": [{**TERSE, "content": "Morning"}, {**TERSE, "content": "Thanks!"}]})[:-2]
     + ', {"content": "' + "and " * 5000, "2 complete insights, none worth keeping"),
])
def test_a_cut_off_answer_with_nothing_kept_still_fails(text: str, held: str):
    """A cut-off answer with no complete insight worth keeping fails the chunk: never "nothing worth
    remembering"."""
    with FakeOpenAIServer([Reply.text(text)]) as s:
        ex = extractor(s)
        with pytest.raises(ExtractionError) as e:
            ex.extract(FIX / "messages.json")
    r = ex.last_report
    limit = s.requests[0]["max_tokens"]
    assert [c.outcome for c in r.calls] == ["failed"] and (r.partial, r.chunks_failed) == (0, 1)
    assert r.failures[0].error == f"the answer was cut off at the output limit ({limit} tokens), and it holds {held}"
    assert "all 1 chunks failed" in str(e.value) and "nothing worth remembering" not in str(e.value)
    assert r.dropped[-1].rule == "cut-off"


def test_fact_free_insights_and_edges_that_say_nothing_are_dropped_and_counted(cli, tmp_path: Path):
    chatter = ["Morning", "Good luck with the launch", "because of the Typst port", "Thanks so much, talk soon!",
               "Can Dana Reyes get a cron entry for the restic backup?"]
    answer = {"insights": [QDRANT, *[{**TERSE, "content": c} for c in chatter], LATENCY], "edges": [
        *[{"source_index": 1, "target_index": t, "edge_type": "causal", "weight": 0.9, "reason": "Morning"}
          for t in (0, 6)],
        {"source_index": 0, "target_index": 6, "edge_type": "semantic", "weight": 0.6,
         "reason": "both matter for the launch"},
        {"source_index": 0, "target_index": 6, "edge_type": "causal", "weight": 0.7,
         "reason": "Qdrant filtered queries set the latency"}]}
    out = tmp_path / "draft.json"
    with FakeOpenAIServer([Reply.json(answer)]) as s:
        r = cli("extract", str(FIX / "messages.json"), "-o", str(out), env=cli_env(s))
    assert r.code == 0, r.err
    summary = r.json()
    assert [i["content"] for i in json.loads(out.read_text())["insights"]] == [QDRANT["content"], LATENCY["content"]]
    assert (summary["insights"], summary["edges"], summary["insights_dropped"], summary["edges_dropped"]) == (2, 1, 5, 3)
    assert summary["dropped_by_rule"] == {"no-fact": 3, "end-dropped": 2, "fragment": 1, "question": 1,
                                          "unnamed": 1}
    assert [(d["rule"], d["item"], d["detail"]) for d in summary["dropped"] if d["kind"] == "insight"] == [
        ("no-fact", "Morning", "no fact: 0 content words (at least 3)"),
        ("no-fact", "Good luck with the launch", "no fact: 1 content word (at least 3)"),
        ("fragment", "because of the Typst port", 'a fragment: starts with "because" and has 5 words'),
        ("no-fact", "Thanks so much, talk soon!", "no fact: 1 content word (at least 3)"),
        ("question", "Can Dana Reyes get a cron entry for the restic backup?", "a question, not a fact"),
    ]
    assert [d["detail"] for d in summary["dropped"] if d["rule"] == "unnamed"] == [
        "edges[2]: the reason names neither end: both matter for the launch"]


def test_edges_of_an_insight_linked_to_everything_are_dropped():
    facts = [{**TERSE, "content": f"The {name} service runs on Kubernetes in the Frankfurt region"}
             for name in ("billing", "search", "mailer", "export", "auth", "audit")]
    star = [{"source_index": 0, "target_index": t, "edge_type": "semantic", "weight": 0.6,
             "reason": "both run on Kubernetes in Frankfurt"} for t in range(1, 6)]
    pair = {"source_index": 1, "target_index": 2, "edge_type": "semantic", "weight": 0.6,
            "reason": "search and mailer share the Frankfurt cluster"}
    with FakeOpenAIServer([Reply.json({"insights": facts, "edges": [*star, pair]})]) as s:
        run = extractor(s).run(FIX / "messages.json")
    assert [(e.source_index, e.target_index) for e in run.draft.edges] == [(1, 2)]
    assert run.report.dropped_by_rule == {"hub": 5}
    assert {d.detail for d in run.report.dropped} == {"insight 0 is linked to 5 others"}


def test_edges_that_link_each_insight_to_the_next_and_copies_of_the_example_are_dropped():
    from mnemon_extractor.prompts import EXAMPLE_ANSWER

    facts = [{**TERSE, "content": f"The {name} service runs on Kubernetes in the Frankfurt region"}
             for name in ("billing", "search", "mailer", "export", "auth")]
    chained = [{"source_index": n, "target_index": n + 1, "edge_type": "causal", "weight": 0.7,
                "reason": "the Kubernetes cluster in Frankfurt"} for n in range(4)]
    apart = {"source_index": 0, "target_index": 3, "edge_type": "semantic", "weight": 0.6,
             "reason": "billing and export share the Frankfurt cluster"}
    copy = EXAMPLE_ANSWER["insights"][0]
    with FakeOpenAIServer([Reply.json({"insights": [*facts, copy], "edges": [*chained, apart]})]) as s:
        run = extractor(s).run(FIX / "messages.json")
    assert [(e.source_index, e.target_index) for e in run.draft.edges] == [(0, 3)]
    assert len(run.draft.insights) == 5
    assert run.report.dropped_by_rule == {"chain": 4, "example": 1}
    # Two or three "next" edges among others are no chain; a chain that runs past the last insight is one.
    few = {"insights": facts, "edges": [*chained[:3], apart]}
    with FakeOpenAIServer([Reply.json(few)]) as s:
        assert len(extractor(s).run(FIX / "messages.json").draft.edges) == 4
    past = {"insights": facts[:4], "edges": [*chained, apart]}  # 3 -> 4 is out of range
    with FakeOpenAIServer([Reply.json(past)]) as s:
        run = extractor(s).run(FIX / "messages.json")
    assert [(e.source_index, e.target_index) for e in run.draft.edges] == [(0, 3)]
    assert run.report.dropped_by_rule == {"chain": 3, "out-of-range": 1}
    # Every second insight is a chain too (the 1.5B model's 0 -> 2, 1 -> 3, ... past its insights, one reason).
    skips = {"insights": facts, "edges": [{**e, "target_index": e["source_index"] + 2} for e in chained]}
    with FakeOpenAIServer([Reply.json(skips)]) as s:
        run = extractor(s).run(FIX / "messages.json")
    assert run.draft.edges == [] and run.report.dropped_by_rule == {"chain": 3, "out-of-range": 1}


def test_a_server_that_ignores_stream_is_read_as_a_plain_completion():
    body = {"choices": [{"message": {"role": "assistant", "content": json.dumps(CHUNK2)}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80}}
    with FakeOpenAIServer([Reply(body=body)]) as s:
        ex = extractor(s)
        draft = ex.extract(FIX / "messages.json")
    assert [i.content for i in draft.insights] == [TERSE["content"]]
    assert (ex.last_report.tokens.prompt, ex.last_report.tokens.completion) == (50, 30)


def refusing(param: str) -> Callable[[dict[str, Any]], Reply]:
    """A server that refuses `param` by name, as OpenAI refuses a field it does not know, and else answers."""
    def respond(req: dict[str, Any]) -> Reply:
        if param in req:
            return Reply.error(400, f"Unrecognized request argument supplied: {param}")
        return Reply.json(CHUNK1 if part(req) == 1 else CHUNK2)

    return respond


def test_temperature_and_seed_flags_and_a_server_without_seed(cli, tmp_path: Path):
    with FakeOpenAIServer(refusing("seed")) as s:
        r = cli("extract", str(FIX / "chatgpt_conversations.json"), "-o", str(tmp_path / "d.json"),
                "--temperature", "0.7", "--seed", "3", env=cli_env(s))
    assert r.code == 0, r.err
    # Refused once, then sent without it for the rest of the run.
    assert [(q.get("temperature"), q.get("seed")) for q in s.requests] == [(0.7, 3), (0.7, None), (0.7, None)]
    assert not any("cache_prompt" in q for q in s.requests)  # asked only where answers are to repeat
    for flags, error in ((["--temperature", "5"], "temperature must be between 0 and 2, got 5.0"),
                         (["--seed", "-1"], "seed must be a whole number of 0 or more, got -1")):
        r = cli("extract", str(FIX / "messages.json"), *flags, env=cli_env(s))
        assert (r.code, r.err) == (1, f"Error: {error}\n")


def test_a_server_that_refuses_cache_prompt_gets_the_request_without_it(cli, tmp_path: Path):
    with FakeOpenAIServer(refusing("cache_prompt")) as s:
        r = cli("extract", str(FIX / "chatgpt_conversations.json"), "-o", str(tmp_path / "d.json"), env=cli_env(s))
    assert r.code == 0, r.err
    assert ["cache_prompt" in q for q in s.requests] == [True, False, False]


def test_the_progress_bar_shows_each_answers_tokens_per_second(monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("rich")

    class TTY(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with FakeOpenAIServer([Reply.json(CHUNK2, token_delay=0.03)]) as s:
        extractor(s, progress=True).extract(FIX / "messages.json")
    assert re.search(r"chunk 1/1: \d+ tokens, [\d.]+ tokens/s", tty.getvalue()), tty.getvalue()


def test_nothing_worth_remembering_raises():
    with FakeOpenAIServer([Reply.json({"insights": [], "edges": []})]) as s:
        with pytest.raises(ExtractionError, match="the model found nothing worth remembering"):
            extractor(s).extract(FIX / "messages.json")


def test_fatal_server_errors_stop_the_run():
    with FakeOpenAIServer([Reply.error(401, "Incorrect API key provided")]) as s:
        with pytest.raises(LLMError, match="refused the API key: Incorrect API key provided"):
            extractor(s).extract(FIX / "messages.json")
    with FakeOpenAIServer([Reply.error(404, "model 'fake-model' not found")]) as s:
        with pytest.raises(LLMError, match='model "fake-model" or its endpoint not found'):
            extractor(s).extract(FIX / "messages.json")
    with FakeOpenAIServer([]) as s:
        url = s.base_url
    with pytest.raises(LLMError, match=f"cannot reach the model server at {url}"):
        Extractor(base_url=url, model="m", max_retries=0, timeout=2).extract(FIX / "messages.json")


def test_settings_come_from_mnemon_llm_variables(monkeypatch: pytest.MonkeyPatch):
    with FakeOpenAIServer([Reply.json(CHUNK2)]) as s:
        monkeypatch.setenv("MNEMON_LLM_BASE_URL", s.base_url)
        monkeypatch.setenv("MNEMON_LLM_MODEL", "env-model")
        monkeypatch.setenv("MNEMON_LLM_API_KEY", "env-key")
        Extractor(max_retries=0).extract(FIX / "messages.json")
        Extractor(model="arg-model", max_retries=0).extract(FIX / "messages.json")
    assert [r["model"] for r in s.requests] == ["env-model", "arg-model"]


# ---------------------------------------------------------------- CLI


def cli_env(server: FakeOpenAIServer) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "extractor")]),
            "MNEMON_LLM_BASE_URL": server.base_url, "MNEMON_LLM_MODEL": "fake-model"}


def llm_stand_in(req: dict[str, Any]) -> Reply:
    """Answers extraction requests per chunk and judge requests by linking p1 causally, a reason naming both
    its ends."""
    if req["messages"][0]["content"].startswith("You judge links"):
        data = json.loads(req["messages"][1]["content"].split("```json\n", 1)[1].split("\n```", 1)[0])
        content = {m["ref"]: m["content"] for m in data["memories"]}
        p1 = data["pairs"][0]
        reason = f"{content[p1['new']]}, and so {content[p1['candidate']]}"
        return Reply.json({"decisions": [{"ref": "p1", "link": True, "edge_type": "causal", "sub_type": "enables",
                                          "direction": "new_to_candidate", "weight": 0.8, "reason": reason}]})
    return Reply.json(CHUNK1 if part(req) == 1 else CHUNK2)


def test_cli_extract_import_judge(cli, tmp_path: Path):
    out = tmp_path / "memory_draft.json"
    with FakeOpenAIServer(llm_stand_in) as s:
        r = cli("extract", str(FIX / "chatgpt_conversations.json"), "-o", str(out), "--import", "--judge",
                "--store", "alpha", env=cli_env(s))
    assert r.code == 0, r.err
    summary = r.json()
    assert {k: summary[k] for k in ("format", "chunks", "chunks_failed", "insights", "edges", "output")} == {
        "format": "chatgpt", "chunks": 2, "chunks_failed": 0, "insights": 3, "edges": 1, "output": str(out)}
    written = json.loads(out.read_text(encoding="utf-8"))
    assert [i["content"] for i in written["insights"]] == [QDRANT["content"], LATENCY["content"], TERSE["content"]]
    assert summary["import"]["imported"] == 3 and summary["import"]["edges_inserted"] == 1
    judged = summary["judge"]
    assert [j["id"] for j in judged] == [x["id"] for x in summary["import"]["results"]]
    assert all(j["error"] is None for j in judged)
    linked = [lk for j in judged for lk in j["linked"]]
    assert linked and all(lk["edge_type"] == "causal" and lk["sub_type"] == "enables" for lk in linked)
    status = cli("status", "--store", "alpha").json()
    assert status["total_insights"] == 3


def test_cli_extract_import_reports_the_import_when_the_judge_is_refused(cli, tmp_path: Path):
    def refuse_the_judge(req: dict[str, Any]) -> Reply:
        if req["messages"][0]["content"].startswith("You judge links"):
            return Reply.error(401, "Incorrect API key provided: sk-abcdef123456")
        return llm_stand_in(req)

    out = tmp_path / "memory_draft.json"
    with FakeOpenAIServer(refuse_the_judge) as s:
        r = cli("extract", str(FIX / "chatgpt_conversations.json"), "-o", str(out), "--import", "--judge",
                "--store", "alpha", env={**cli_env(s), "MNEMON_LLM_API_KEY": "sk-abcdef123456"})
    assert r.code == 1
    assert r.err.startswith("Error: ") and r.err.count("\n") == 1 and "refused the API key" in r.err
    summary = r.json()
    assert summary["import"]["imported"] == 3 and "refused the API key" in summary["judge_error"]
    assert "sk-abcdef123456" not in r.out + r.err
    assert cli("status", "--store", "alpha").json()["total_insights"] == 3


def test_cli_extract_reports_failures_and_exits_1_without_a_draft(cli, tmp_path: Path):
    out = tmp_path / "d.json"
    with FakeOpenAIServer([Reply.text("no json here")]) as s:
        r = cli("extract", str(FIX / "messages.json"), "-o", str(out), env=cli_env(s))
    assert r.code == 1
    assert r.err == "Error: no draft written: all 1 chunks failed\n"
    assert r.json()["failures"][0]["error"] == "invalid answer after 2 attempts: the answer holds no JSON object"
    assert not out.exists()


def test_cli_extract_warns_of_answers_kept_in_part(cli, tmp_path: Path):
    """A cut-off answer kept in part is said on stderr, beside the summary's count, not only in "calls"."""
    long = {"insights": [QDRANT, LATENCY, *[TERSE] * 60], "edges": []}
    out = tmp_path / "draft.json"
    with FakeOpenAIServer([Reply.json(long)]) as s:
        r = cli("extract", str(four_messages(tmp_path)), "-o", str(out), env=cli_env(s))
    assert r.code == 0, r.err
    assert r.json()["partial"] == 4
    assert r.err.strip().splitlines()[-1] == ("mnemon: warning: 4 answer(s) cut off at their token limit were kept "
                                              'in part (the insights written in full); see "calls"')


def test_cli_extract_unknown_format(cli):
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "extractor")]),
           "MNEMON_LLM_BASE_URL": "http://127.0.0.1:9/v1"}  # a configured model (never called): the file is read
    r = cli("extract", str(FIX / "unknown.csv"), env=env)
    assert r.code == 1 and "unrecognised export format" in r.err and "we read: Markdown" in r.err


def test_cli_without_openai_names_the_extra(tmp_path: Path):
    code = ("import sys; sys.modules['openai'] = None\n"
            "from mnemon_core.faces.cli import main\n"
            f"sys.exit(main(['extract', {str(FIX / 'messages.json')!r}]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "extractor")])}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1
    assert p.stderr == "Error: openai is not installed: pip install 'mnemon-core[openai]'\n"


def test_cli_without_a_key_fails_before_reading_the_file_or_importing_openai(tmp_path: Path):
    code = ("import sys\n"
            "from mnemon_core.faces.cli import main\n"
            "code = main(sys.argv[1:])\n"
            "print('openai' in sys.modules)\n"
            "sys.exit(code)")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "extractor")])
    no_key = ("Error: no API key: set MNEMON_LLM_API_KEY (or OPENAI_API_KEY), or point MNEMON_LLM_BASE_URL at a "
              "local OpenAI-compatible server\n")
    for argv in (["extract", str(tmp_path / "missing.json")], ["judge", "--recent", "1"]):
        p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=60)
        assert (p.returncode, p.stdout, p.stderr) == (1, "False\n", no_key), argv


def test_cli_start_up_does_not_import_the_extractor():
    code = "import sys, mnemon_core.faces.cli as c; c.build_parser(); print(sorted(m for m in sys.modules if m.split('.')[0] in ('mnemon_extractor', 'openai')))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "extractor")])}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.stdout.strip() == "[]", p.stderr


def test_a_long_conversation_is_chunked_with_overlap_and_repeats_merge(tmp_path: Path):
    convo = tmp_path / "long.jsonl"
    # Each message is about 71 tokens with its header: two fit in 200, and one in an overlap of 80.
    lines = [json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "w " * 120,
                         "timestamp": 1717228800 + 60 * i}) for i in range(8)]
    convo.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with FakeOpenAIServer([Reply.json(CHUNK2)]) as s:  # every chunk "finds" the same preference again
        ex = extractor(s, chunk_tokens=200, overlap_tokens=80)
        draft = ex.extract(convo)
    r = ex.last_report
    assert (r.messages, r.chunks, r.chunks_failed, r.insights, r.merged) == (8, 7, 0, 1, 6)
    assert len(draft.insights) == 1 and len(s.requests) == 7
    spans = [req["messages"][1]["content"].split("(messages ")[1].split(")")[0] for req in s.requests]
    assert spans == ["1-2", "2-3", "3-4", "4-5", "5-6", "6-7", "7-8"]  # each chunk repeats the last message


# ---------------------------------------------------------------- any answer at all


TEXTS = st.sampled_from([QDRANT["content"], LATENCY["content"], TERSE["content"], "Morning", "Thanks!",
                         "because of the port", "", "x" * 9000])
RAW_INSIGHT = st.one_of(
    st.fixed_dictionaries({"content": TEXTS}, optional={
        "category": st.sampled_from(["fact", "decision", "general", "nonsense", 3]),
        "importance": st.one_of(st.integers(-1, 8), st.just("high"), st.none()),
        "tags": st.lists(st.text(max_size=5), max_size=22),
        "entities": st.one_of(st.lists(st.sampled_from(["Qdrant", "Milvus", ""]), max_size=3), st.just("Qdrant")),
        "created_at": st.sampled_from([None, "2024-03-15T09:30:00Z", "yesterday", "2024-13-40T00:00:00Z"]),
    }),
    st.integers(), st.text(max_size=5), st.none())
RAW_EDGE = st.one_of(
    st.fixed_dictionaries({"source_index": st.integers(-4, 7), "target_index": st.integers(-4, 7)}, optional={
        "edge_type": st.sampled_from(["causal", "semantic", "temporal", "entity", "supersedes", "because", None]),
        "weight": st.one_of(st.floats(-1, 2, allow_nan=False), st.just("strong")),
        "reason": st.one_of(TEXTS, st.just("Qdrant latency"), st.none()),
    }),
    st.integers(), st.none())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(insights=st.lists(RAW_INSIGHT, max_size=7), edges=st.lists(RAW_EDGE, max_size=8),
       k=st.integers(0, 3), shape=st.sampled_from(["ok", "no-edges", "not-a-list", "not-an-object"]))
def test_any_answer_is_kept_in_part_or_rejected_whole(insights: list[Any], edges: list[Any], k: int, shape: str):
    """Whatever the model answers: either AnswerError (asked again), or what is kept forms a valid draft with
    the earlier insights, every input insight is kept or reported dropped, and none kept carries no fact."""
    from mnemon_core.draft import load_draft
    from mnemon_extractor.extract import check_answer
    from mnemon_extractor.llm import AnswerError
    from mnemon_extractor.worth import fact_free

    earlier = [{"content": f"Earlier decision {n}: the Qdrant cluster runs in Frankfurt", "category": "fact"}
               for n in range(k)]
    data: Any = {"insights": insights, "edges": edges}
    if shape == "no-edges":
        data = {"insights": insights}
    elif shape == "not-a-list":
        data = {"insights": "all of them", "edges": edges}
    elif shape == "not-an-object":
        data = insights
    try:
        ans = check_answer(data, earlier)
    except AnswerError:
        assert shape in ("not-a-list", "not-an-object") or insights
        return
    assert shape in ("ok", "no-edges")
    dropped_insights = [d for d in ans.dropped if d[0] == "insight"]
    assert len(ans.insights) + len(dropped_insights) == len(insights)
    assert not [i for i in ans.insights if fact_free(i["content"])]
    n = len(ans.insights)
    draft = load_draft({"schema_version": "1", "insights": [*earlier, *[
        {key: v for key, v in i.items() if v is not None} for i in ans.insights]] or [{"content": "stand-in"}],
        "edges": [{**e.model_dump(mode="json"), "source_index": k + s, "target_index": k + t}
                  for s, t, e in ans.edges]})
    assert all(-k <= s < n and -k <= t < n and s != t for s, t, _ in ans.edges)
    assert len(draft.edges) == len(ans.edges)


def test_a_star_is_a_hub_even_when_some_of_its_edges_were_dropped_for_another_reason():
    facts = [{**TERSE, "content": f"The {name} service runs on Kubernetes in the Frankfurt region"}
             for name in ("billing", "search", "mailer", "export", "auth", "audit", "ledger")]
    star = [{"source_index": 0, "target_index": t, "edge_type": "causal", "weight": 0.9,
             "reason": "the billing fees caused it" if t < 4 else "the fees caused the decision"} for t in range(1, 7)]
    with FakeOpenAIServer([Reply.json({"insights": facts, "edges": star})]) as s:
        run = extractor(s).run(FIX / "messages.json")
    assert run.draft.edges == []
    assert run.report.dropped_by_rule == {"hub": 3, "unnamed": 3}
    assert {d.detail for d in run.report.dropped if d.rule == "hub"} == {"insight 0 is linked to 6 others"}


@pytest.mark.parametrize("content, rule", [
    ("Thanks so much, talk soon!", "no-fact"),
    ("Lena Fischer thanks for the information.", "no-fact"),
    ("Can Dana Reyes get a cron entry for the restic backup?", "question"),
    ("Is Postgres 16 faster than 15 for our workload??", "question"),
    ("A sub-3:30 marathon needs about 4:58 per km. How is training going?", None),  # a fact, then a question
    ("Maya will see the dentist soon.", None),
    ("Priya asked whether the launch can move? No: it stays on April 15.", None),
])
def test_sign_offs_and_lone_questions_carry_no_fact(content: str, rule: str | None):
    from mnemon_extractor.worth import fact_free

    assert (fact_free(content) or (None,))[0] == rule


# ---------------------------------------------------------------- any cut of an answer

ANY_INSIGHT = st.fixed_dictionaries({
    "content": st.one_of(TEXTS, st.text(max_size=40)), "category": st.sampled_from(["fact", "decision"]),
    "importance": st.integers(1, 5), "tags": st.lists(st.text(max_size=6), max_size=3),
    "entities": st.lists(st.sampled_from(["Qdrant", "Milvus", 'a "quoted" name', "}]"]), max_size=2),
    "created_at": st.sampled_from([None, "2024-03-15T09:30:00Z"])})
ANY_EDGE = st.fixed_dictionaries({
    "source_index": st.integers(-2, 6), "target_index": st.integers(-2, 6),
    "edge_type": st.sampled_from(["causal", "semantic"]), "weight": st.floats(0, 1),
    "reason": st.one_of(TEXTS, st.just("Qdrant latency"))})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(insights=st.lists(ANY_INSIGHT, max_size=6), edges=st.lists(ANY_EDGE, max_size=5),
       sep=st.sampled_from([", ", ",", ",\n    "]), ascii_only=st.booleans(), data=st.data())
def test_any_cut_of_an_answer_keeps_only_what_was_complete(insights: list[Any], edges: list[Any], sep: str,
                                                            ascii_only: bool, data: Any):
    """Cut a valid answer anywhere: `salvage` never raises and keeps exactly the items written in full before
    the cut (no more: nothing half-written; no fewer); what the checks keep of that is among them."""
    from mnemon_extractor.extract import check_answer, salvage
    from mnemon_extractor.llm import AnswerError

    text, ends = '{"insights": [', {"insights": [], "edges": []}
    for key, items in (("insights", insights), ("edges", edges)):
        if key == "edges":
            text += '],' + sep.lstrip(",") + '"edges": ['
        for n, item in enumerate(items):
            text += (sep if n else "") + json.dumps(item, ensure_ascii=ascii_only)
            ends[key].append(len(text))
    closed = len(text) + 1  # the insights array closes before the edges start; this is the edges' "]"
    closed_insights = text.index('"edges": [')
    text += "]}"
    assert json.loads(text) == {"insights": insights, "edges": edges}
    cut = data.draw(st.integers(0, len(text)))
    part = salvage(text[:cut])
    whole = [n for n, end in enumerate(ends["insights"]) if end <= cut]
    assert part.data.get("insights", []) == insights[: len(whole)]
    if cut >= closed_insights:
        assert part.data.get("edges", []) == edges[: len([e for e in ends["edges"] if e <= cut])]
    else:
        assert "edges" not in part.data
    assert cut < closed or part.data == {"insights": insights, "edges": edges}
    try:
        kept = check_answer(part.data, []).insights
    except AnswerError:
        return
    complete = {c for i in insights[: len(whole)] for c in (i["content"], i["content"].strip())}
    assert all(i["content"] in complete for i in kept)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from('{}[]",: 0123456789.-truefalsn\\x'), max_size=60) | st.text(max_size=60))
def test_salvage_of_any_text_never_raises(text: str):
    from mnemon_extractor.extract import salvage

    part = salvage(text)
    assert isinstance(part.data, dict)
