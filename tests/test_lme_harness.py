"""The LongMemEval harness (benchmarks/lme.py) on two tiny hand-made questions with known evidence: the loader
(dates, sessions in date order, gold turns and sessions, abstentions and unmarked questions skipped, the insight
limit), the stratified sample, session any@5, and a run with FTS5 and mnemon. The full benchmark stays out of CI."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks import lme
from benchmarks import locomo as L

LONG = "word " * 2500  # 12,500 bytes: past the 8,000-byte insight limit


def _question(qid: str, qtype: str = "single-session-user", marked: bool = True) -> dict[str, object]:
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": "Which city did I move to?",
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "Lisbon",
        # The haystack lists the later session first: it is imported second.
        "haystack_session_ids": ["s-late", "answer_s1"],
        "haystack_dates": ["2023/05/24 (Wed) 02:54", "2023/05/20 (Sat) 21:44"],
        "haystack_sessions": [
            [{"role": "user", "content": "Any tips for a long flight?"},
             {"role": "assistant", "content": LONG}],
            [{"role": "user", "content": "  I moved to Lisbon last month for work. ", "has_answer": marked},
             {"role": "assistant", "content": "Lisbon is a lovely city to move to."}],
        ],
        "answer_session_ids": ["answer_s1"],
    }


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "lme-tiny.json"
    data = [_question("q1"), _question("q2", "multi-session"), _question("q3_abs"), _question("q4", marked=False)]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_turns_of_a_question(data_file: Path) -> None:
    (conv, _) = lme.load_questions(data_file)
    assert conv.sample_id == "q1"
    # Sessions in date order; a turn's id is its haystack position (session index, turn index).
    assert [t.dia_id for t in conv.turns] == ["1:0", "1:1", "0:0", "0:1"]
    assert [t.session for t in conv.turns] == ["answer_s1", "answer_s1", "s-late", "s-late"]
    assert [t.speaker for t in conv.turns] == ["user", "assistant"] * 2
    assert conv.turns[0].content == "user: I moved to Lisbon last month for work."
    # The session's date (UTC), one second more per turn of the session.
    assert [t.created_at for t in conv.turns] == [
        "2023-05-20T21:44:00Z", "2023-05-20T21:44:01Z", "2023-05-24T02:54:00Z", "2023-05-24T02:54:01Z"]
    # A turn past the insight limit is cut at whitespace to at most 8,000 bytes.
    long = conv.turns[3].content
    assert long.startswith("assistant: word word") and len(long.encode()) <= 8000 and long.endswith("word")
    (q,) = conv.questions
    assert (q.question, q.category, q.evidence, q.sessions) == (
        "Which city did I move to?", "single-session-user", ("1:0",), ("answer_s1",))
    assert q.asked_at == datetime(2023, 6, 1, 10, 0, tzinfo=UTC)  # what "last month" is read against


def test_the_peers_harness_asks_mnemon_at_the_questions_date(data_file: Path) -> None:
    from benchmarks.peers.harness import lme_haystacks

    (hay, _) = lme_haystacks(data_file, ["q1", "q2"])
    (q,) = hay.conversation().questions
    assert (q.question, q.evidence, q.asked_at) == (
        "Which city did I move to?", ("1:0",), datetime(2023, 6, 1, 10, 0, tzinfo=UTC))


def test_abstentions_and_unmarked_questions_are_skipped(data_file: Path) -> None:
    assert [c.sample_id for c in lme.load_questions(data_file)] == ["q1", "q2"]
    assert [c.sample_id for c in lme.load_questions(data_file, ["q2", "q3_abs"])] == ["q2"]


def test_draft_has_one_insight_per_turn(data_file: Path) -> None:
    (conv, _) = lme.load_questions(data_file)
    assert L.build_draft(conv)["insights"][0] == {
        "content": "user: I moved to Lisbon last month for work.", "source": "user",
        "created_at": "2023-05-20T21:44:00Z", "session": "answer_s1"}


def test_stratified_sample_takes_the_first_ids_of_each_type() -> None:
    def conv(qid: str, qtype: str) -> L.Conversation:
        return L.Conversation(qid, (), (lme.Ask("?", qtype, ("0:0",)),))

    convs = [conv("c", "a"), conv("b", "a"), conv("z", "b"), conv("a", "a"), conv("y", "b")]
    assert [c.sample_id for c in lme.stratified_sample(convs, 2)] == ["b", "z", "a", "y"]


def test_session_any_counts_distinct_sessions_in_rank_order() -> None:
    session_of = {f"t{i}": s for i, s in enumerate("aabcdefg")}
    ranked = ["t0", "t1", "t2", "t3", "t4", "t5", "t6"]  # sessions a, a, b, c, d, e, f
    assert lme.session_any(ranked, session_of, ["e"]) == 1.0  # the fifth distinct session
    assert lme.session_any(ranked, session_of, ["f"]) == 0.0  # the sixth
    assert lme.session_any([], session_of, ["a"]) == 0.0


def test_run_with_fts5_and_mnemon(data_file: Path, tmp_path: Path) -> None:
    questions = lme.load_questions(data_file)
    result = L.run(questions, ["fts5", "mnemon-none"], store_dir=tmp_path / "stores", log=io.StringIO())
    assert result.n_turns == 8
    # The reply holds both "city" and "move" (stemmed), the user's statement only "move": BM25 puts it first.
    assert [r[3] for r in result.rankings["fts5"]] == [["1:1", "1:0"]] * 2
    for _, _, _, ranked, _ in result.rankings["mnemon-none"]:  # four turns: every one comes back
        assert sorted(ranked) == ["0:0", "0:1", "1:0", "1:1"]
    md = lme.report(result, questions, "python -m benchmarks.lme tiny.json", "Two questions:")
    lines = md.splitlines()
    assert lines[0] == "Two questions:"
    # (the shared report orders the types by name)
    assert lines[2] == ("| ranker | R@1 | R@5 | R@10 | R@20 | ≤1,000 tok | ≤4,000 tok | R@10 multi-session (1) "
                        "| R@10 ss-user (1) | ms/query |")
    table = lme.type_markdown(result, questions).splitlines()
    assert table[0] == "| ranker | question type | n | R@1 | R@5 | R@10 | R@20 | session any@5 |"
    assert table[2:5] == [
        "| fts5 | all | 2 | 0.000 | 1.000 | 1.000 | 1.000 | 1.000 |",
        "| fts5 | ss-user | 1 | 0.000 | 1.000 | 1.000 | 1.000 | 1.000 |",
        "| fts5 | multi-session | 1 | 0.000 | 1.000 | 1.000 | 1.000 | 1.000 |",
    ]
    assert len(table) == 2 + 2 * 3


def test_peers_harness_runs_the_questions_as_haystacks(data_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.peers import harness as H

    monkeypatch.setenv("MNEMON_DAEMON", "off")
    haystacks = H.lme_haystacks(data_file, ["q1", "q2"])
    assert [h.sample_id for h in haystacks] == ["q1", "q2"]
    assert haystacks[0].questions == (("Which city did I move to?", "single-session-user", ("1:0",), ("answer_s1",)),)
    assert [h.sample_id for h in H.lme_haystacks(data_file)] == ["q1", "q2"]  # the sample: both (one per type)
    result = H.run(haystacks, ["fts5", "mnemon-none"], log=io.StringIO())
    table = H.lme_markdown(result, "python -m benchmarks.peers --dataset lme").splitlines()
    assert table[0] == ("| system | embedder | R@1 | R@5 | R@10 | R@20 | session any@5 | ss-user | ss-assistant | "
                        "ss-preference | multi-session | update | temporal | ms/q |")
    assert table[2].startswith("| fts5 | - | 0.000 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | - | - | 1.000 | - | - |")
    assert "2 questions, each its own haystack." in "\n".join(table)
