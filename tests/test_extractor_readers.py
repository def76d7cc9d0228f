"""Export readers on small real-shaped files (tests/fixtures) and the token-budget chunker."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemon_extractor.chunking import chunk_conversations, estimate_tokens, split_text
from mnemon_extractor.errors import UnknownFormatError
from mnemon_extractor.readers import Conversation, Message, read_export, to_rfc3339

FIX = Path(__file__).parent / "fixtures"


def rows(path: Path) -> list[tuple[str, str | None, str]]:
    t = read_export(path)
    return [(m.role, m.timestamp, m.content) for c in t.conversations for m in c.messages]


def test_chatgpt_current_branch_only_without_hidden_and_tool_messages():
    t = read_export(FIX / "chatgpt_conversations.json")
    assert t.format == "chatgpt"
    assert [c.title for c in t.conversations] == ["Vector DB for the search service", "API response style"]
    assert [(m.role, m.timestamp, m.content) for m in t.conversations[0].messages] == [
        ("user", "2024-03-15T09:30:00Z", "We need a vector database for the search service. Qdrant or Milvus?"),
        ("assistant", "2024-03-15T09:31:00Z",
         "Both work. Qdrant has faster filtered search; Milvus scales further but is heavier to run."),
        # The edited branch ("Let's use Milvus then.") is not the current one; the image part is dropped.
        ("user", "2024-03-15T09:35:00Z",
         "Here is our filter benchmark. We chose Qdrant because filtered queries are 3x faster."),
        # The code-interpreter call (recipient python) and its tool output are left out.
        ("assistant", "2024-03-15T09:36:40Z",
         "Good call: with payload indexes Qdrant keeps p95 latency under 40 ms on filtered queries."),
    ]
    assert t.message_count == 6


def test_claude_text_blocks_and_attachments_and_empty_conversations_dropped():
    t = read_export(FIX / "claude_conversations.json")
    assert t.format == "claude"
    assert [c.title for c in t.conversations] == ["Deploy pipeline flakiness"]  # the empty one is dropped
    assert rows(FIX / "claude_conversations.json") == [
        ("user", "2024-04-02T14:05:11Z", "Our deploys fail about once a day because the migration step times out."),
        ("assistant", "2024-04-02T14:05:45Z",  # the thinking block is not part of the transcript
         "The timeout is likely lock contention: the migration waits for a lock on the users table while the "
         "app holds long transactions. Run migrations with lock_timeout = 5s and retry."),
        ("user", "2024-04-02T14:10:00Z",
         "Here is the failing log.\n\n[attachment deploy.log]\nERROR: canceling statement due to lock timeout"),
    ]


def test_markdown_transcript_roles_times_and_code_blocks():
    t = read_export(FIX / "transcript.md")
    assert t.format == "markdown"
    assert t.conversations[0].title == "Planning the caching layer"
    assert rows(FIX / "transcript.md") == [
        ("user", "2024-05-10T09:00:00Z", "We keep hitting the database for the same product pages."),
        ("assistant", "2024-05-10T09:01:00Z",
         "Put Redis in front of the product service with a 5 minute TTL.\nInvalidate on product updates."),
        ("user", "2024-05-10T09:05:00Z",
         "Fine. The config should look like this:\n\n```yaml\n# User: this line is inside a code block, not a "
         "new turn\nredis:\n  ttl_seconds: 300\n```"),
        ("assistant", "2024-05-10T09:06:00Z", "That works. Keep the TTL in config, not in code."),
    ]


def test_plain_text_without_roles_is_one_document():
    assert rows(FIX / "notes.txt") == [(
        "document", None,
        "Team decisions, March 2024\n\n- We chose Postgres 16 for the billing service because we need row-level "
        "security.\n- Releases are cut every second Tuesday.",
    )]


def test_plain_inline_roles(tmp_path: Path):
    p = tmp_path / "chat.txt"
    p.write_text("Human: hi, we use Go 1.22\nAI: noted\nSystem: Ubuntu\n", encoding="utf-8")
    assert rows(p) == [("user", None, "hi, we use Go 1.22"), ("assistant", None, "noted"), ("system", None, "Ubuntu")]
    notes = tmp_path / "notes.md"
    notes.write_text("System: Ubuntu 22.04\nDisk: 40 GB\n", encoding="utf-8")  # one stray role word: notes
    assert rows(notes) == [("document", None, "System: Ubuntu 22.04\nDisk: 40 GB")]


def test_jsonl_messages_with_mixed_timestamps_and_tool_messages_dropped():
    t = read_export(FIX / "messages.jsonl")
    assert t.format == "messages"
    assert rows(FIX / "messages.jsonl") == [
        ("system", None, "You are a helpful assistant."),
        ("user", "2024-06-01T08:00:00Z", "I prefer tabs over spaces in Go code."),  # +02:00 → UTC
        ("assistant", "2024-06-01T08:01:00Z", "gofmt uses tabs, so that matches the standard."),  # epoch s
        ("user", "2024-06-01T08:01:40Z", "Also: never use panic in library code."),  # epoch ms, content parts
    ]


def test_json_messages_object_with_title():
    t = read_export(FIX / "messages.json")
    assert (t.format, t.conversations[0].title) == ("messages", "Support bot session")
    assert rows(FIX / "messages.json") == [
        ("user", "2024-07-01T08:30:00Z", "Our SLA for paid customers is a reply within 4 hours."),
        ("assistant", None, "Noted: paid customers get a reply within 4 hours."),
    ]


def test_langchain_messages_to_dict_and_dumpd():
    t = read_export(FIX / "langchain_messages.json")
    assert t.format == "langchain"
    assert rows(FIX / "langchain_messages.json") == [
        ("system", None, "You are a coding assistant."),
        ("user", "2024-08-01T09:00:00Z", "We deploy on Fridays only before noon."),
        ("assistant", None, "Got it: Friday deploys before 12:00 only."),
    ]
    assert rows(FIX / "langchain_dumpd.json") == [
        ("user", None, "Our staging cluster runs on k3s."), ("assistant", None, "Noted, staging is k3s."),
    ]


@pytest.mark.parametrize("name, detail", [
    ("unknown.json", "JSON holding an object with keys rows, title"),
    ("unknown.csv", "a .csv file that is not JSON"),
])
def test_unknown_formats_name_the_formats_we_read(name: str, detail: str):
    with pytest.raises(UnknownFormatError) as e:
        read_export(FIX / name)
    assert str(e.value) == (
        f"{FIX / name}: unrecognised export format ({detail}); we read: Markdown / plain-text transcripts "
        "(.md, .txt); ChatGPT conversations.json; Claude conversations.json; JSON or JSONL lists of "
        "{role, content, timestamp?}; LangChain message lists (messages_to_dict or dumpd)"
    )


def test_unknown_formats_other_cases(tmp_path: Path):
    cases = {
        "empty.md": (b"  \n", "the file is empty"),
        "bin.txt": (b"\xff\xfe\x00\x01", "not UTF-8 text"),
        "bad.json": (b'{"messages": [', "invalid JSON"),
        "list.json": (b"[1, 2]", "a JSON list whose items are not messages, e.g. int"),
    }
    for name, (data, detail) in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(UnknownFormatError, match="we read: Markdown") as e:
            read_export(p)
        assert detail in str(e.value)


def test_timestamps():
    assert to_rfc3339(1710495000.5121) == "2024-03-15T09:30:00Z"
    assert to_rfc3339(1710495000512) == "2024-03-15T09:30:00Z"
    assert to_rfc3339("2024-03-15T11:30:00+02:00") == "2024-03-15T09:30:00Z"
    assert to_rfc3339("2024-03-15 09:30") == "2024-03-15T09:30:00Z"
    assert to_rfc3339("1710495000") == "2024-03-15T09:30:00Z"
    assert [to_rfc3339(v) for v in (None, "", "yesterday", True, 0)] == [None] * 5


# ---------------------------------------------------------------- chunking


def conv(n: int, words: int = 50) -> Conversation:
    return Conversation("c", [Message("user" if i % 2 == 0 else "assistant", f"m{i} " + "word " * words)
                              for i in range(n)])


def test_estimate_tokens():
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("向量数据库") == 5
    assert estimate_tokens("选用 Qdrant") == 2 + 2  # two Han characters, " Qdrant" is 7 chars → 2


def test_chunks_respect_budget_and_overlap():
    c = conv(20)  # each message: "[role]:\n" + ~254 chars ≈ 66-68 tokens
    chunks = chunk_conversations([c], max_tokens=300, overlap_tokens=80)
    assert all(ch.tokens <= 300 for ch in chunks)
    # Every message is in some chunk, in order; consecutive chunks share exactly the overlap message.
    spans = [(ch.first, ch.last) for ch in chunks]
    assert spans[0][0] == 1 and spans[-1][1] == 20
    for (f1, l1), (f2, l2) in zip(spans, spans[1:]):
        assert f2 == l1  # one message (≈67 tokens ≤ 80) repeated
        assert l2 > l1
    assert [ch.index for ch in chunks] == list(range(len(chunks)))


def test_chunks_without_overlap_partition_the_messages():
    chunks = chunk_conversations([conv(10)], max_tokens=300, overlap_tokens=0)
    numbers = [m.content.split()[0] for ch in chunks for m in ch.messages]
    assert numbers == [f"m{i}" for i in range(10)]


def test_chunks_never_cross_conversations():
    a, b = conv(2, 5), conv(2, 5)
    b.title = "other"
    chunks = chunk_conversations([a, b], max_tokens=6000)
    assert [(ch.conversation, len(ch.messages)) for ch in chunks] == [("c", 2), ("other", 2)]


def test_long_message_is_split_into_parts():
    long = Conversation("c", [Message("user", "\n\n".join(f"paragraph {i} " + "x" * 380 for i in range(6)))])
    chunks = chunk_conversations([long], max_tokens=250, overlap_tokens=0)
    # Each paragraph is ≈98 tokens: two (and the blank line between them) fit in one part.
    assert len(chunks) == 3
    assert all(ch.tokens <= 250 for ch in chunks)
    assert [ch.messages[0].content[:23] for ch in chunks] == [
        "(part 1/3) paragraph 0 ", "(part 2/3) paragraph 2 ", "(part 3/3) paragraph 4 "]
    assert "\n\nparagraph 1 " in chunks[0].messages[0].content
    assert [ch.span for ch in chunks] == ["1", "1", "1"]


def test_split_text_falls_back_to_characters():
    pieces = split_text("y" * 1000, 50, estimate_tokens)
    assert "".join(pieces) == "y" * 1000
    assert all(estimate_tokens(p) <= 50 for p in pieces)


def test_the_readers_table_is_the_one_list() -> None:
    """The formats errors list and the JSON dispatch come from one table of readers (name, what it is,
    detect, read); a list of LangChain messages that are also {role, content} items is LangChain's."""
    from mnemon_extractor import readers

    assert list(readers.FORMATS) == [r.name for r in readers.READERS] == [
        "markdown", "chatgpt", "claude", "messages", "langchain"]
    both = [{"role": "user", "content": "hi", "type": "human", "data": {"content": "hi"}}]
    assert readers.read_json_data(both, "t", "p")[0] == "langchain"
    assert readers.read_json_data({"messages": [{"role": "user", "content": "hi"}]}, "t", "p")[0] == "messages"
