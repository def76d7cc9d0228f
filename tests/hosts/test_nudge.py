"""How often the nudge hook asks the agent about memory (issue 37, item 9). Each nudge costs the user a model turn
(Claude Code's block, Cursor's follow-up) or the model a paragraph, so it comes when the exchange holds what the
guide says to keep (a decision, a preference, a correction, "remember"), or after MNEMON_NUDGE_EVERY replies in a
row that remembered nothing (5), never when the reply dealt with memory. Counted on a 20-turn session
(tests/fixtures/agent_session.json), replayed in every host's hook payloads through `mnemon hook`; the counts
are the ones docs/agents.md gives."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemon_core.faces import cli
from mnemon_core.hosts.hooks import CUES, NUDGE, NUDGE_NEXT

SESSION = json.loads((Path(__file__).parents[1] / "fixtures" / "agent_session.json").read_text(encoding="utf-8"))
TURNS = SESSION["turns"]
SID = SESSION["session_id"]
# The exchanges nudged by default: the five whose prompt holds a cue, and the fifth quiet reply in a row (15).
ON_CUES_AND_EVERY_FIFTH = [3, 7, 10, 15, 16, 19]


@pytest.fixture
def hook(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., str]:
    """`mnemon hook PHASE --host HOST` in this process with `payload` on stdin: what it prints."""

    def run(phase: str, host: str, payload: dict) -> str:
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload)))
        capsys.readouterr()
        code = cli.main(["hook", phase, "--host", host])
        out, err = capsys.readouterr()
        assert (code, err) == (0, ""), err
        return out

    return run


def after_the_reply(hook: Callable[..., str], host: str) -> list[int]:
    """Claude Code and Codex: the prompt goes to the remind hook, the reply to the Stop hook; a block is
    answered by the agent, whose next stop comes with `stop_hook_active`."""
    nudged = []
    for k, turn in enumerate(TURNS, 1):
        hook("remind", host, {"session_id": SID, "hook_event_name": "UserPromptSubmit", "prompt": turn["prompt"]})
        stop = {"session_id": SID, "hook_event_name": "Stop", "stop_hook_active": False,
                "last_assistant_message": turn["reply"]}
        if hook("nudge", host, stop):
            nudged.append(k)
            again = {**stop, "stop_hook_active": True, "last_assistant_message": turn["answer_to_nudge"]}
            assert hook("nudge", host, again) == ""
    return nudged


def cursor(hook: Callable[..., str]) -> list[int]:
    """Cursor's stop carries the reply but not the prompt (and it has no prompt hook): the fifth quiet reply."""
    nudged = []
    for k, turn in enumerate(TURNS, 1):
        stop = {"conversation_id": SID, "status": "completed", "loop_count": 0, "last_assistant_message": turn["reply"]}
        if hook("nudge", "cursor", stop):
            nudged.append(k)
            again = {**stop, "loop_count": 1, "last_assistant_message": turn["answer_to_nudge"]}
            assert hook("nudge", "cursor", again) == ""
    return nudged


def with_the_next_prompt(hook: Callable[..., str], host: str) -> list[int]:
    """Hermes, OpenClaw, Pi and OpenCode: the nudge about an exchange goes with the next prompt, which carries
    that exchange (Hermes's history; the plugins send its user message and reply, as `lastExchange` makes them)."""
    nudged, history = [], []
    for k, turn in enumerate(TURNS, 1):
        if host == "hermes":
            payload = {"hook_event_name": "pre_llm_call", "session_id": SID,
                       "extra": {"is_first_turn": k == 1, "user_message": turn["prompt"],
                                 "conversation_history": [*history, {"role": "user", "content": turn["prompt"]}]}}
        else:
            before = TURNS[k - 2] if k > 1 else None
            payload = {"prompt": turn["prompt"], "session" if host == "openclaw" else "session_id": SID,
                       "last_user_message": before and {"role": "user", "content": before["prompt"]},
                       "last_assistant_message": before and {"role": "assistant", "content": before["reply"]}}
            if host == "pi":
                payload.pop("session_id")  # Pi's events name no session
        if hook("nudge", host, payload):
            nudged.append(k - 1)  # about the previous exchange
        history += [{"role": "user", "content": turn["prompt"]}, {"role": "assistant", "content": turn["reply"]}]
    return nudged


@pytest.mark.parametrize("host", ["claude-code", "codex", "cursor", "hermes", "openclaw", "pi", "opencode"])
def test_the_recorded_session_is_nudged_on_cues_and_quiet_streaks(hook, host: str) -> None:
    if host in ("claude-code", "codex"):
        nudged = after_the_reply(hook, host)
    elif host == "cursor":
        nudged = cursor(hook)
    else:
        nudged = with_the_next_prompt(hook, host)
    # 6 of 20 replies (before: 19, every reply that did not mention memory); Cursor, which sends no prompt, 3.
    assert nudged == ([10, 15, 20] if host == "cursor" else ON_CUES_AND_EVERY_FIFTH)


@pytest.mark.parametrize(("every", "nudged"), [
    ("0", [3, 7, 10, 16, 19]),  # cues only
    ("1", [k for k in range(1, 21) if k != 5]),  # every reply that did not deal with memory, as before
    ("3", [3, 7, 10, 13, 16, 19]),
])
def test_nudge_every(hook, monkeypatch: pytest.MonkeyPatch, every: str, nudged: list[int]) -> None:
    monkeypatch.setenv("MNEMON_NUDGE_EVERY", every)
    assert after_the_reply(hook, "claude-code") == nudged


def test_a_bad_nudge_every_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MNEMON_NUDGE_EVERY", "-1")
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"last_assistant_message": "Done."})))
    assert cli.main(["hook", "nudge", "--host", "claude-code"]) == 1
    assert capsys.readouterr().err == "Error: MNEMON_NUDGE_EVERY must be 0 or more, got -1\n"


def test_sessions_are_counted_apart(hook) -> None:
    stop = {"stop_hook_active": False, "last_assistant_message": "Done."}
    for _ in range(4):
        assert hook("nudge", "claude-code", {**stop, "session_id": "a"}) == ""
        assert hook("nudge", "claude-code", {**stop, "session_id": "b"}) == ""
    assert json.loads(hook("nudge", "claude-code", {**stop, "session_id": "a"})) == {"decision": "block",
                                                                                      "reason": NUDGE}
    assert hook("nudge", "opencode", {"last_user_message": "I prefer tabs", "last_assistant_message": "ok"}) == (
        json.dumps({"part": {"type": "text", "text": NUDGE_NEXT, "synthetic": True}}) + "\n")


@pytest.mark.parametrize("text", [
    "Remember that the staging DB is read-only", "From now on use pnpm", "We decided on gRPC",
    "Let's go with option B", "I prefer tabs over spaces", "I'd rather not use mocks here", "I never use ORMs",
    "No, the other file", "Actually, use the v2 API", "That's wrong: the port is 8443", "I meant the staging copy",
    "记住：周五不部署", "我们决定用 SQLite", "不对，是另一个文件",
])
def test_cues(text: str) -> None:
    assert CUES.search(text)


@pytest.mark.parametrize("text", [
    "Can you look at why the test suite is slow?", "What's wrong with this function?", "Now update the changelog.",
    "Thanks, that's all for today.", "Is there another way?", "Run the tests again", "Show me the diff",
])
def test_no_cues(text: str) -> None:
    assert not CUES.search(text)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.sampled_from(["session_id", "prompt", "last_assistant_message", "last_user_message",
                                        "stop_hook_active", "loop_count", "extra"]),
                       st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c,
                                                                                       max_size=3), max_leaves=8)),
       st.sampled_from(["claude-code", "codex", "cursor", "hermes", "openclaw", "pi", "opencode"]),
       st.sampled_from(["remind", "nudge"]))
def test_any_payload_is_answered_or_refused_in_one_line(payload: dict, host: str, phase: str) -> None:
    """Whatever a host sends, the hook prints its envelope or nothing (exit 0), or names the phase it lacks
    (the test's data dir, from the autouse fixture, holds the sessions' counts)."""
    stdin, out, err = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(json.dumps(payload)), io.StringIO(), io.StringIO()
    try:
        code = cli.main(["hook", phase, "--host", host])
        printed, said = sys.stdout.getvalue(), sys.stderr.getvalue()
    finally:
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
    if host == "cursor" and phase == "remind":
        assert (code, said) == (1, "Error: cursor has no remind hook; its hooks: prime, nudge, compact\n")
    else:
        assert (code, said) == (0, "") and printed.count("\n") <= 1
