"""The LoCoMo harness (benchmarks/locomo.py) on a tiny hand-made conversation with known evidence: data
parsing, the draft, the metric, the FTS5 baseline and the mnemon ranker's id → dia_id mapping. The full
benchmark runs stay out of CI."""

from __future__ import annotations

import io
import json
import math
import uuid
from pathlib import Path

import pytest

from benchmarks import locomo as L

SAMPLE = {
    "sample_id": "conv-t",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        # Sessions out of order on purpose (2 before 1), and numbered past 9 is what _sessions sorts.
        "session_2_date_time": "10:04 am on 19 December, 2023",
        "session_2": [
            {"speaker": "Ann", "dia_id": "D2:1", "text": "I adopted a puppy named Biscuit last week."},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "Thanks!"},
            {"speaker": "Ann", "dia_id": "D2:3", "text": "Thanks!"},
        ],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo! I started pottery classes on Monday."},
            {
                "speaker": "Bo", "dia_id": "D1:2", "text": "Look at this.",
                "blip_caption": "a photo of a red bicycle", "img_url": ["http://example.invalid/x.jpg"],
            },
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Nice bike. I went hiking in Oregon with my sister."},
        ],
    },
    "qa": [
        {"question": "What did Ann start on Monday?", "answer": "pottery", "evidence": ["D1:1"], "category": 4},
        {"question": "What is the name of Ann's puppy?", "evidence": ["D2:1", "D2:1"], "category": 1},
        # A malformed evidence string that names two turns, plus an id that names no turn.
        {"question": "Where did Ann hike and what did Bo show?", "evidence": ["D1:3; D1:2", "D9:9"], "category": 3},
        {"question": "Adversarial, left out", "evidence": ["D1:1"], "category": 5},
        {"question": "No usable evidence", "evidence": ["D", "D:11:26"], "category": 2},
        {"question": "No evidence key at all", "category": 2},
    ],
}


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-tiny.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    return path


@pytest.fixture
def conv(data_file: Path) -> L.Conversation:
    (c,) = L.load_conversations(data_file)
    return c


def test_parse_evidence_repairs_malformed_strings() -> None:
    assert L.parse_evidence(["D8:6; D9:17", "D", "D:11:26", "D1:3", "D1:3", " D2:4\tD10:12 "]) == (
        "D8:6", "D9:17", "D1:3", "D2:4", "D10:12",
    )
    assert L.parse_evidence([]) == ()


def test_session_time_and_turn_content() -> None:
    assert L.parse_session_time("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00Z"
    assert L.parse_session_time("12:09 am on 13 September, 2023") == "2023-09-13T00:09:00Z"
    assert L.turn_content("Bo", " Look at this. ", "a photo of a red bicycle") == (
        "Bo: Look at this. [image: a photo of a red bicycle]"
    )
    assert L.turn_content("Ann", "Thanks!", None) == "Ann: Thanks!"


def test_conversation_turns_and_questions(conv: L.Conversation) -> None:
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert {t.created_at for t in conv.turns[:3]} == {"2023-05-08T13:56:00Z"}
    assert {t.created_at for t in conv.turns[3:]} == {"2023-12-19T10:04:00Z"}
    # Categories 1-4 with evidence only; duplicates merged; an id naming no turn dropped and counted.
    assert [(q.category, q.evidence) for q in conv.questions] == [
        (4, ("D1:1",)), (1, ("D2:1",)), (3, ("D1:3", "D1:2")),
    ]
    assert conv.dropped_evidence == 1


def test_draft_has_one_insight_per_turn(conv: L.Conversation) -> None:
    draft = L.build_draft(conv)
    assert draft["schema_version"] == "1"
    assert draft["insights"][1] == {
        "content": "Bo: Look at this. [image: a photo of a red bicycle]", "source": "Bo",
        "created_at": "2023-05-08T13:56:00Z", "session": "session 1",
    }
    assert len(draft["insights"]) == 6


def test_recall_at_k() -> None:
    ranked = ["D1", "D2", "D3", "D4", "D5", "D6"]
    assert L.recall_at_k(ranked, ["D3"], 1) == 0.0
    assert L.recall_at_k(ranked, ["D3"], 3) == 1.0
    assert L.recall_at_k(ranked, ["D1", "D5"], 1) == 0.5
    assert L.recall_at_k(ranked, ["D1", "D5"], 4) == 0.5
    assert L.recall_at_k(ranked, ["D1", "D5"], 5) == 1.0
    assert L.recall_at_k(ranked, ["D1", "D9"], 20) == 0.5  # never found: counts against the ranker
    assert L.recall_at_k(ranked, ["D1", "D1"], 1) == 1.0  # a repeated id is one evidence turn
    assert L.recall_at_k([], ["D1"], 5) == 0.0
    with pytest.raises(ValueError):
        L.recall_at_k(ranked, [], 5)


def test_score_averages_per_question_overall_and_per_category() -> None:
    rows = [
        (1, ["a", "b", "c"], ["b", "z"]),  # 0 at k=1, 0.5 from k=2
        (1, ["a", "b", "c"], ["a"]),  # 1 from k=1
        (4, ["x", "y", "z"], ["z"]),  # 0 until k=3
    ]
    s = L.score(rows, max_k=3)
    assert s.n == 3 and s.n_by_category == {1: 2, 4: 1}
    assert s.by_category[1] == pytest.approx([0.5, 0.75, 0.75])
    assert s.by_category[4] == pytest.approx([0.0, 0.0, 1.0])
    assert s.overall == pytest.approx([1 / 3, 1.5 / 3, 2.5 / 3])  # mean over questions, not over categories
    assert s.at(3) == pytest.approx(2.5 / 3) and s.at(2, 1) == pytest.approx(0.75)
    assert math.isnan(s.at(1, 2))


def test_fts5_query_and_ranking(conv: L.Conversation) -> None:
    assert L.fts5_query("What is the name of Ann's puppy?") == '"name" OR "ann" OR "s" OR "puppy"'
    assert L.fts5_query("what is the") == ""
    fts = L.FTS5Ranker(conv)
    assert fts("What did Ann start on Monday?")[0] == "D1:1"
    assert fts("puppies")[0] == "D2:1"  # porter stemming: puppies → puppi ← puppy
    assert fts("bicycle") == ["D1:2"]  # the caption is part of the turn's text
    assert fts("the of") == []


def test_rrf_fuse() -> None:
    # c: 1/63 + 1/61 = 0.0322664 beats b: 1/62 + 1/62 = 0.0322581; a: 1/61 alone.
    assert L.rrf_fuse([["a", "b", "c"], ["c", "b"]]) == ["c", "b", "a"]
    assert L.rrf_fuse([["a", "b"], ["b", "a"]], [1.0, 0.5]) == ["a", "b"]


def test_run_with_fts5_and_mnemon(data_file: Path, tmp_path: Path) -> None:
    convs = L.load_conversations(data_file)
    result = L.run(convs, ["fts5", "mnemon-none"], store_dir=tmp_path / "stores", log=io.StringIO())
    scores = result.scores()
    assert result.n_turns == 6 and result.dropped_evidence == 1
    # BM25: "start"/"monday" → D1:1; "puppy" → D2:1; "hike" → D1:3, but nothing in D1:2 ("Bo: Look at this.
    # [image: …]") matches the third question's "show", so only "bo" finds it, last.
    assert [r[3] for r in result.rankings["fts5"]] == [
        ["D1:1", "D2:3", "D2:1", "D1:3"],
        ["D2:1", "D2:3", "D1:1", "D1:3"],
        ["D1:3", "D1:1", "D2:2", "D2:3", "D2:1", "D1:2"],
    ]
    assert scores["fts5"].overall[:6] == pytest.approx([2.5 / 3] * 5 + [1.0])
    # mnemon: six turns, so limit 20 returns every turn (the recency signal anchors all of them); every
    # insight id maps back to its own dia_id, the "Thanks!" repeats included (imported without diff).
    for _, _, _, ranked, _ in result.rankings["mnemon-none"]:
        assert sorted(ranked) == sorted(t.dia_id for t in convs[0].turns)
    assert scores["mnemon-none"].at(20) == 1.0
    # Within 1,000 tokens of output every ranker shows every turn it ranks: six short turns fit.
    within = result.within()
    assert within["fts5"][1000].at(1) == within["mnemon-none"][4000].at(1) == 1.0
    md = L.markdown(result, "python -m benchmarks.locomo tiny.json")
    assert md.splitlines()[0] == (
        "| ranker | R@1 | R@5 | R@10 | R@20 | ≤1,000 tok | ≤4,000 tok | R@10 multi-hop (1) | R@10 open-domain (1) "
        "| R@10 single-hop (1) | ms/query |"
    )
    assert "| fts5 | 0.833 | 0.833 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 |" in md
    assert "| mnemon-none | 1,000 | 1.000 | 1.000 | 1.000 | 1.000 | 6.0 | 0.000 | 1.000 |" in md
    assert set(result.within_seconds) == {"fts5", "mnemon-none"}
    assert "    python -m benchmarks.locomo tiny.json" in md


def test_evidence_within_a_budget_counts_what_the_output_shows(conv: L.Conversation) -> None:
    from mnemon_core.models import printed
    from mnemon_core.recall.budget import count_tokens

    whole = L.WholeTurns(conv)
    ranked = [t.dia_id for t in conv.turns]
    every = whole(ranked, 1000)
    assert every == [(d, False, whole.text[d]) for d in ranked]  # in rank order, whole
    doc = lambda n: printed({"results": [{"id": whole.id[d], "content": whole.text[d]} for d in ranked[:n]]})
    cost = count_tokens(doc(3))
    assert [d for d, _, _ in whole(ranked, cost)] == ranked[:3]  # exactly as many as fit
    assert [d for d, _, _ in whole(ranked, cost - 1)] == ranked[:2]
    rows = [(1, {1000: [("a", False, ""), ("b", True, "")], 4000: [("a", False, ""), ("b", True, ""), ("c", False, "")]},
             ("b", "c"), frozenset()),
            (4, {1000: [], 4000: [("z", False, "")]}, ("z",), frozenset())]
    got = L.within_budget(rows)
    assert got[1000].at(1) == pytest.approx(0.25) and got[4000].at(1) == 1.0  # a passage counts as shown
    assert got[1000].at(1, 1) == 0.5 and got[1000].at(1, 4) == 0.0 and got[1000].n_by_category == {1: 1, 4: 1}


def test_the_answers_own_terms_an_output_shows(conv: L.Conversation) -> None:
    q = conv.questions[0]  # "What did Ann start on Monday?" → "pottery"
    assert (q.answer, L.answer_keys(q)) == ("pottery", frozenset({"potteri"}))
    assert L.answer_shown(L.answer_keys(q), [("D1:1", False, "Ann: Hi Bo! I started pottery classes on Monday.")]) == 1.0
    assert L.answer_shown(frozenset({"potteri", "class"}), [("D1:1", True, "…pottery…")]) == 0.5


def test_unknown_ranker_is_refused(conv: L.Conversation) -> None:
    with pytest.raises(ValueError, match="unknown ranker"):
        L.run([conv], ["bm42"])


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    s = L.score([(1, ["a", "b"], ["b"])], max_k=2)
    path = L.plot({"fts5": s, "mnemon-local": s}, tmp_path / "curves.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ablation_first_variant_is_memory_recall(
    conv: L.Conversation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranker = L.MnemonRanker(conv, tmp_path / "stores", None)
    try:
        spec = L.VARIANTS[0]
        for q in conv.questions:
            assert [ranker.dia[i] for i in L.recall_variant(ranker.memory, q.question, spec)] == ranker(q.question)
        spec_recipe = next(v for v in L.VARIANTS if v.name.startswith("spec (="))
        for q in conv.questions:
            assert [ranker.dia[i] for i in L.recall_variant(ranker.memory, q.question, spec_recipe)] == [
                ranker.dia[h.id] for h in ranker.memory.recall(q.question, limit=L.RECALL_LIMIT, recipe="spec").results]
        # Without the recency signal the store's latest_ids() is never asked, and is back afterwards.
        store = ranker.memory.store
        asked: list[int] = []
        own = type(store).latest_ids
        monkeypatch.setattr(type(store), "latest_ids", lambda self, **kw: asked.append(1) or own(self, **kw))
        L.recall_variant(ranker.memory, conv.questions[0].question, L.Variant("x", spec.change, recency=False))
        assert asked == [] and "latest_ids" not in vars(store)
        L.recall_variant(ranker.memory, conv.questions[0].question, spec)
        assert asked == [1]
    finally:
        ranker.close()
    with pytest.raises(RuntimeError, match="exists"):  # a kept store is never imported into twice
        L.MnemonRanker(conv, tmp_path / "stores", None)


def test_seeded_ids_make_store_builds_reproducible(conv: L.Conversation, tmp_path: Path) -> None:
    ids = []
    for n, seed in enumerate((0, 0, 1)):
        ranker = L.MnemonRanker(conv, tmp_path / str(n), None, seed)
        ids.append(sorted(ranker.dia))
        ranker.close()
    assert ids[0] == ids[1] != ids[2]
    assert len(set(ids[0])) == 6
    with L.seeded_ids("x"):
        a = uuid.uuid4()
    assert a.version == 4 and uuid.uuid4() != a  # the real generator is back
