"""The BEAM harness (benchmarks/beam.py) on a tiny hand-made chat with known evidence: the loader (plan markers,
the insight limit, time anchors, batches as sessions, evidence in every shape the data uses, which abilities are
scored), the draft, and a run with FTS5 and mnemon. The full benchmark runs stay out of CI."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from benchmarks import beam as B
from benchmarks import locomo as L

LONG = "word " * 2500  # 12,500 bytes: past the 8,000-byte insight limit


def _msg(id_: int, role: str, content: str, anchor: str | None = None) -> dict[str, object]:
    m: dict[str, object] = {"role": role, "id": id_, "content": content, "index": "1,1"}
    if anchor:
        m["time_anchor"] = anchor
    return m


SAMPLE = {
    "id": "100K-t",
    "split": "100K",
    "chat": [
        {"batch_number": 1, "time_anchor": None, "turns": [
            [_msg(0, "user", "My Flask budget tracker uses SQLite for storage. ->-> 1,1", "March-15-2024"),
             _msg(1, "assistant", "SQLite is a fine start for a budget tracker.")],
            [_msg(2, "user", "The first sprint ends on March 29 ->->  1,2"),
             _msg(3, "assistant", LONG)],
        ]},
        {"batch_number": 2, "time_anchor": None, "turns": [
            [_msg(4, "user", "We moved storage from SQLite to PostgreSQL last week.", "April-05-2024"),
             _msg(5, "assistant", "PostgreSQL handles concurrent writes better. ->-> 2,1")],
        ]},
    ],
    "questions": {
        "information_extraction": [{"question": "When does my first sprint end?", "source_chat_ids": [2]}],
        "knowledge_update": [{"question": "Which database stores my budget data?",
                              "source_chat_ids": {"original_info": [0], "updated_info": [4]}}],
        # nested lists, a repeat and an id naming no message (dropped, counted)
        "multi_session_reasoning": [{"question": "Which storage did I mention?",
                                     "source_chat_ids": [0, [4, 0], 99]}],
        "preference_following": [{"question": "No evidence left", "source_chat_ids": []}],
        # not retrieval-shaped: never asked
        "summarization": [{"question": "Summarise everything", "source_chat_ids": [0, 1, 2]}],
        "event_ordering": [{"question": "In which order?", "source_chat_ids": [0, 4]}],
        "instruction_following": [{"question": "Show code", "source_chat_ids": [2]}],
        "abstention": [{"question": "What about Redis?", "source_chat_ids": None}],
    },
}


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "beam-tiny.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    return path


@pytest.fixture
def chat(data_file: Path) -> L.Conversation:
    (c,) = B.load_chats(data_file)
    return c


def test_messages_become_turns(chat: L.Conversation) -> None:
    assert chat.sample_id == "100K-t"
    assert [t.dia_id for t in chat.turns] == ["0", "1", "2", "3", "4", "5"]
    assert [t.speaker for t in chat.turns] == ["user", "assistant"] * 3
    assert [t.session for t in chat.turns] == ["batch 1"] * 4 + ["batch 2"] * 2
    # The plan marker is stripped, whatever the spaces around it.
    assert chat.turns[0].content == "user: My Flask budget tracker uses SQLite for storage."
    assert chat.turns[2].content == "user: The first sprint ends on March 29"
    assert chat.turns[5].content == "assistant: PostgreSQL handles concurrent writes better."
    # A message past the insight limit is cut at whitespace to at most 8,000 bytes.
    long = chat.turns[3].content
    assert long.startswith("assistant: word word") and len(long.encode()) <= 8000 and len(long) > 7990
    assert long.endswith("word")
    # The batch's time anchor, one minute more per message of the chat.
    assert [t.created_at for t in chat.turns] == [
        "2024-03-15T00:00:00Z", "2024-03-15T00:01:00Z", "2024-03-15T00:02:00Z", "2024-03-15T00:03:00Z",
        "2024-04-05T00:04:00Z", "2024-04-05T00:05:00Z",
    ]


def test_questions_of_the_six_abilities_with_evidence(chat: L.Conversation) -> None:
    assert [(q.category, q.evidence) for q in chat.questions] == [
        ("information_extraction", ("2",)),
        ("knowledge_update", ("0", "4")),
        ("multi_session_reasoning", ("0", "4")),
    ]
    assert chat.dropped_evidence == 1
    assert list(B.flatten_ids({"a": [1, [2, 3]], "b": [4]})) == [1, 2, 3, 4]
    assert list(B.flatten_ids(None)) == []


def test_only_selects_chats(data_file: Path) -> None:
    assert B.load_chats(data_file, ["nope"]) == []
    assert [c.sample_id for c in B.load_chats(data_file, ["100K-t"])] == ["100K-t"]


def test_a_message_before_any_time_anchor_is_refused(tmp_path: Path) -> None:
    sample = json.loads(json.dumps(SAMPLE))
    del sample["chat"][0]["turns"][0][0]["time_anchor"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    with pytest.raises(ValueError, match="message 0 comes before any time anchor"):
        B.load_chats(path)


def test_draft_has_one_insight_per_message(chat: L.Conversation) -> None:
    draft = L.build_draft(chat)
    assert len(draft["insights"]) == 6
    assert draft["insights"][4] == {
        "content": "user: We moved storage from SQLite to PostgreSQL last week.", "source": "user",
        "created_at": "2024-04-05T00:04:00Z", "session": "batch 2",
    }


def test_run_with_fts5_and_mnemon(data_file: Path, tmp_path: Path) -> None:
    chats = B.load_chats(data_file)
    result = L.run(chats, ["fts5", "mnemon-none"], store_dir=tmp_path / "stores", log=io.StringIO())
    assert result.n_turns == 6 and result.dropped_evidence == 1
    assert [r[3] for r in result.rankings["fts5"]] == [["2"], ["0", "1"], ["0", "4"]]
    for _, _, _, ranked, _ in result.rankings["mnemon-none"]:  # six messages: every one comes back
        assert sorted(ranked) == ["0", "1", "2", "3", "4", "5"]
    md = L.markdown(result, "python -m benchmarks.beam tiny.json", B.ABILITIES, B.ASKED)
    assert md.splitlines()[0] == (
        "| ranker | R@1 | R@5 | R@10 | R@20 | ≤1,000 tok | ≤4,000 tok | R@10 extraction (1) | R@10 update (1) "
        "| R@10 multi-session (1) | ms/query |"
    )
    assert ("| ranker | budget | evidence | extraction | update | multi-session | memories shown | found as passage "
            "| evidence shown whole | answer terms shown | ms/query |") in md
    assert "3 questions (six retrieval-shaped abilities, with evidence) over 6 turns" in md
    table = B.ability_markdown(result).splitlines()
    assert table[0] == "| ranker | ability | n | R@1 | R@5 | R@10 | R@20 |"
    assert table[2] == "| fts5 | extraction | 1 | 1.000 | 1.000 | 1.000 | 1.000 |"
    assert len(table) == 2 + 2 * 3
