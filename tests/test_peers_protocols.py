"""The peers harness's shared scoring (benchmarks/peers/protocols.py) and its LoCoMo question set, on hand-made
rankings with known answers; the harness run end to end with the two systems that need no peer package and no
model (fts5, mnemon-none). The peers themselves are never installed in CI."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from benchmarks.peers import harness as H
from benchmarks.peers import protocols as P
from test_locomo_harness import SAMPLE  # a tiny conversation: categories 1-5, malformed and missing evidence

SESSIONS = {"D1:1": "session 1", "D1:2": "session 1", "D2:1": "session 2", "D2:2": "session 2", "D3:1": "session 3"}


def ranked(label: int, ranking: list[str], evidence: list[str], raw: list[str] | None = None) -> P.Ranked:
    return P.Ranked("c", label, "q", tuple(ranking), tuple(evidence), tuple(evidence if raw is None else raw), SESSIONS)


def test_fraction_and_any_hit() -> None:
    assert P.fraction_at(["a", "b", "c"], ["b", "z"], 2) == 0.5
    assert P.fraction_at(["a", "b", "c"], ["b", "b", "z"], 1) == 0.0  # gold is a set: duplicates count once
    assert P.any_at(["a", "b", "c"], ["c", "z"], 2) == 0.0
    assert P.any_at(["a", "b", "c"], ["c", "z"], 3) == 1.0
    assert P.fraction_at(["a"], [], 10, empty=1.0) == 1.0
    with pytest.raises(ValueError, match="without evidence"):
        P.fraction_at(["a"], [], 10)


def test_sessions_keep_first_occurrence_within_depth() -> None:
    order = ["D2:1", "D1:1", "D2:2", "D3:1", "X"]
    assert P.sessions_of(order, SESSIONS) == ["session 2", "session 1", "session 3", "X"]
    assert P.sessions_of(order, SESSIONS, depth=3) == ["session 2", "session 1"]


def protocol(name: str) -> P.Protocol:
    (found,) = [p for p in P.LOCOMO_PROTOCOLS if p.name == name]
    return found


def test_each_locomo_protocol_counts_and_scores_its_own_questions() -> None:
    rows = [
        ranked(1, ["D1:1", "D2:1"], ["D2:1", "D3:1"]),  # half its evidence in the top 2
        ranked(5, ["D3:1"], ["D3:1"]),  # adversarial: only the peers' protocols count it
        ranked(2, ["D1:1"], [], raw=[]),  # no evidence at all: 1.0 where empty counts, skipped elsewhere
        ranked(4, ["D1:2", "D1:1"], ["D1:1", "D1:2"], raw=["D1:1; D1:2"]),  # repaired for us, not for MemPalace
    ]
    ours, n = P.mean_over(rows, protocol("R@10 (ours)"))
    assert (ours, n) == ((0.5 + 1.0) / 2, 2)
    mp, n = P.mean_over(rows, protocol("MemPalace dialog R@10"))
    assert (mp, n) == ((0.5 + 1.0 + 1.0 + 0.0) / 4, 4)
    sess, n = P.mean_over(rows, protocol("session any@5"))
    assert (sess, n) == (1.0, 3)  # the empty-evidence question is not asked
    frac, n = P.mean_over(rows, protocol("session frac@10"))
    assert (frac, n) == ((0.5 + 1.0 + 1.0 + 1.0) / 4, 4)
    any20, n = P.mean_over(rows, protocol("turn any@20"))
    assert (any20, n) == (1.0, 2)


def test_session_any_hit_reads_only_the_top_ten_turns() -> None:
    deep = ranked(1, [f"D1:{i}" for i in range(10)] + ["D3:1"], ["D3:1"])
    session_of = {**SESSIONS, **{f"D1:{i}": "session 1" for i in range(10)}}
    deep = P.Ranked(deep.haystack, 1, "q", deep.ranked, deep.evidence, deep.evidence_raw, session_of)
    assert P.mean_over([deep], protocol("session any@5")) == (0.0, 1)  # session 3 is 11th: beyond engram's 10
    assert P.mean_over([deep], protocol("session frac@10")) == (1.0, 1)  # second distinct session


def test_curves_and_per_label() -> None:
    rows = [ranked(1, ["D1:1", "D2:1"], ["D2:1"]), ranked(2, ["D3:1"], ["D1:1"]), ranked(5, [], ["D1:1"])]
    assert P.recall_curve(rows, (1, 2), labels=P.LOCOMO_OURS_CATEGORIES) == {1: 0.0, 2: 0.5}
    assert P.recall_curve(rows, (2,), hit=P.any_at) == {2: 1 / 3}
    assert P.by_label(rows, k=2) == {1: (1.0, 1), 2: (0.0, 1), 5: (0.0, 1)}
    assert math.isnan(P.recall_curve([], (1,))[1])


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-peers.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    return path


def test_locomo_haystacks_keep_every_question_with_raw_and_repaired_evidence(data_file: Path) -> None:
    (hay,) = H.locomo_haystacks(data_file)
    assert [t.dia_id for t in hay.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert [(label, ev, raw) for _, label, ev, raw in hay.questions] == [
        (4, ("D1:1",), ("D1:1",)),
        (1, ("D2:1",), ("D2:1", "D2:1")),
        (3, ("D1:3", "D1:2"), ("D1:3; D1:2", "D9:9")),  # repaired, the id naming no turn dropped; raw as written
        (5, ("D1:1",), ("D1:1",)),  # category 5 is kept: the peers' protocols count it
        (2, (), ("D", "D:11:26")),
        (2, (), ()),
    ]
    assert hay.session_of()["D2:3"] == "session 2"
    assert H.locomo_haystacks(data_file, ["conv-x"]) == []


def test_run_scores_fts5_and_mnemon_without_any_peer_package(data_file: Path, monkeypatch) -> None:
    monkeypatch.setenv("MNEMON_DAEMON", "off")
    result = H.run(H.locomo_haystacks(data_file), ["fts5", "mnemon-none"], log=io.StringIO())
    fts = result.rows["fts5"]
    assert [r.ranked[:1] for r in fts[:2]] == [("D1:1",), ("D2:1",)]
    assert [r.label for r in fts] == [4, 1, 3, 5, 2, 2]
    assert result.rows["mnemon-none"][0].ranked[0] == "D1:1"
    table = H.locomo_markdown(result, "python -m benchmarks.peers")
    assert "R@k (ours): 3 questions; MemPalace dialog R@10: 6 questions" in table
    assert "session any@5: 5 questions" in table  # all but the question with no evidence key
    # Found: the first two; never found: the malformed raw strings, the adversarial turn (no term matches);
    # the question with no evidence scores 1.0: 3 / 6.
    assert P.mean_over(fts, protocol("MemPalace dialog R@10")) == (0.5, 6)


def test_runs_dumped_apart_merge_into_the_same_tables(data_file: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MNEMON_DAEMON", "off")
    haystacks = H.locomo_haystacks(data_file)
    fts = H.run(haystacks, ["fts5"], log=io.StringIO(), checkpoint=tmp_path / "a.json")  # dumped as it goes
    mnemon = H.run(haystacks, ["mnemon-none"], log=io.StringIO())
    H.dump(mnemon, tmp_path / "b.json")
    merged = H.load([tmp_path / "b.json", tmp_path / "a.json"], haystacks)
    assert list(merged.rows) == ["fts5", "mnemon-none"]  # SYSTEMS order, whatever the files' order
    assert merged.rows["fts5"] == fts.rows["fts5"]
    assert merged.seconds["mnemon-none"] == mnemon.seconds["mnemon-none"]
    assert merged.haystacks == ["conv-t"] and "Haystacks: conv-t." in H.locomo_markdown(merged, "cmd")
    other = H.locomo_haystacks(data_file)
    other[0] = H.Haystack(other[0].sample_id, other[0].turns, tuple(reversed(other[0].questions)))
    with pytest.raises(ValueError, match="question 0 of conv-t is not the data's"):
        H.load([tmp_path / "a.json"], other)


def test_unknown_system_is_named() -> None:
    with pytest.raises(ValueError, match="unknown system.*nope"):
        H.run([], ["nope"], log=io.StringIO())


def _two_haystacks_through_fts5(tmp_path: Path) -> Path:
    """A data file of two haystacks (conv-t, conv-q), with FTS5's run over both dumped to fts.json."""
    path = tmp_path / "two.json"
    path.write_text(json.dumps([SAMPLE, {**SAMPLE, "sample_id": "conv-q"}]), encoding="utf-8")
    H.run(H.locomo_haystacks(path), ["fts5"], log=io.StringIO(), checkpoint=tmp_path / "fts.json")
    return path


def test_merge_scores_only_the_haystacks_every_system_finished(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MNEMON_DAEMON", "off")
    both = H.locomo_haystacks(_two_haystacks_through_fts5(tmp_path))
    H.run(both[:1], ["mnemon-none"], log=io.StringIO(), checkpoint=tmp_path / "mnemon.json")  # stopped after one
    merged = H.load([tmp_path / "fts.json", tmp_path / "mnemon.json"], both)
    assert merged.haystacks == ["conv-t"]
    assert {r.haystack for r in merged.rows["fts5"]} == {"conv-t"} and len(merged.rows["fts5"]) == 6


def test_merge_scores_only_the_haystacks_asked_for(tmp_path: Path, monkeypatch) -> None:
    # `--merge` with `--haystacks`: dumps holding more haystacks than asked for are scored on those asked for.
    monkeypatch.setenv("MNEMON_DAEMON", "off")
    path = _two_haystacks_through_fts5(tmp_path)
    merged = H.load([tmp_path / "fts.json"], H.locomo_haystacks(path, ["conv-q"]))
    assert merged.haystacks == ["conv-q"] and {r.haystack for r in merged.rows["fts5"]} == {"conv-q"}
