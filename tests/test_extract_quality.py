"""The extraction-quality harness (benchmarks/extract_quality.py) against the scripted server: the labels are
consistent (each chat's reference statements score 1.0 through the real extractor, a junk answer 0), and the
metric counts what it says. The real-model runs are the benchmark, and `pytest -m llm` (test_llm_live.py)."""

from __future__ import annotations

import json
from typing import Any

from benchmarks import extract_quality as Q
from mnemon_extractor import Extractor
from mnemon_extractor.testing import FakeOpenAIServer, Reply

CATEGORY = {"fact": "fact", "decision": "decision", "preference": "preference", "update": "decision"}


def reference_answer(chat: dict[str, Any]) -> dict[str, Any]:
    """What a perfect model answers for a chat: each fact's statement, each relation as a causal edge."""
    index = {f["id"]: n for n, f in enumerate(chat["facts"])}
    return {
        "insights": [{"content": f["statement"], "category": CATEGORY[f["kind"]], "importance": 4, "tags": [],
                      "entities": [], "created_at": None} for f in chat["facts"]],
        "edges": [{"source_index": index[r["cause"]], "target_index": index[r["effect"]], "edge_type": "causal",
                   "weight": 0.8, "reason": chat["facts"][index[r["cause"]]]["statement"]}
                  for r in chat["relations"]],
    }


def by_title(answers: dict[str, dict[str, Any]]) -> Any:
    def respond(req: dict[str, Any]) -> Reply:
        title = req["messages"][1]["content"].split('Conversation "', 1)[1].split('"', 1)[0]
        return Reply.json(answers[title])

    return respond


def test_the_reference_statements_score_one():
    chats = Q.load_chats()
    assert len(chats) == 6 and all(4 <= len(c["facts"]) <= 6 for c in chats)
    total = Q.Score()
    with FakeOpenAIServer(by_title({c["title"]: reference_answer(c) for c in chats})) as s:
        for chat in chats:
            ex = Extractor(base_url=s.base_url, api_key="k", model="fake", max_retries=0, timeout=10)
            score, run = Q.run_chat(ex, chat)
            assert run.report.dropped == [], chat["id"]
            total.add(score)
    assert (total.insights_right, total.insights) == (total.facts, total.facts) == (35, 35)
    assert (total.facts_found, total.caused_found, total.updates_found, total.stale) == (35, total.caused, 6, 0)
    assert (total.edges_right, total.edges, total.relations_found, total.relations) == (6, 6, 6, 6)
    assert total.missed == [] and total.wrong == []
    assert Q.row("fake", 6, total).startswith("| fake | 6 | 1.00 (35/35) | 1.00 (35/35) | 1.00 (")


def test_the_score_counts_misses_stale_values_and_wrong_edges():
    chat = next(c for c in Q.load_chats() if c["id"] == "helpdesk")
    contents = [
        "Orbitly moves support from Zendesk to Freshdesk.",  # the decision, without its cause
        "The Freshdesk cutover is on May 1.",  # the old value only: stale
        "Zendesk raised the price by 40% at renewal.",  # the cause, as a fact of its own
        "Nadia likes tea.",  # matches nothing
    ]
    s = Q.score(chat, contents, [(2, 0), (3, 0)])  # cause → decision (right), tea → decision (wrong)
    assert (s.insights_right, s.insights, s.facts_found, s.facts) == (3, 4, 2, 5)
    assert (s.caused_found, s.caused, s.updates_found, s.updates, s.stale) == (1, 2, 0, 1, 1)
    assert (s.edges_right, s.edges, s.relations_found, s.relations) == (1, 2, 1, 1)
    assert s.missed == ["helpdesk:team", "helpdesk:cutover", "helpdesk:sla"] and s.wrong == ["Nadia likes tea."]
    assert Q.score(chat, [], []).facts_found == 0


def test_the_harness_keeps_each_chat_as_it_goes(tmp_path, capsys):
    """A run on a slow server may be stopped before its last chat: the dump and the running row are there
    after each one."""
    chats = [c for c in Q.load_chats() if c["id"] in ("homelab", "bakery")]
    out = tmp_path / "dump.json"
    with FakeOpenAIServer(by_title({c["title"]: reference_answer(c) for c in chats})) as s:
        Q.main(["--base-url", s.base_url, "--model", "fake", "--api-key", "k", "--chats", "homelab,bakery",
                "--json", str(out)])
    err = capsys.readouterr().err.splitlines()
    so_far = [line for line in err if line.startswith("so far: ")]
    assert [line.split(" | ")[2] for line in so_far] == ["1", "2"]
    assert so_far[0].startswith("so far: | fake | 1 | 1.00 (6/6) | 1.00 (6/6) |")
    assert [d["chat"] for d in json.loads(out.read_text())] == ["homelab", "bakery"]
