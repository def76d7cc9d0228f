"""Hermes: its `config.yaml` edited by splicing lines (yamlhooks.py), every foreign byte kept, and the shell
hooks run as Hermes runs them: the command split with shlex, no shell, the event's JSON on stdin."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hostenv import command, host, mnemon, remember_two, tree  # noqa: F401  (host: the fixture)
from mnemon_core.hosts import hooks, setup
from mnemon_core.hosts.hooks import COMPACTED, NUDGE_NEXT, REMIND
from mnemon_core.hosts.yamlhooks import Config

# A config as Hermes writes it (PyYAML, `hooks: {}`), with the user's comments.
HERMES_CONFIG = """# Hermes config: my model
model: anthropic/claude-sonnet-4.6  # the default
max_turns: 24
hooks: {}
hooks_auto_accept: false
toolsets:
- terminal
- web
"""
# Another tool's hook on the event mnemon uses, written by hand in the indented style.
THEIRS = """model: local
hooks:
    pre_llm_call:
        # today's date for the model
        - command: "~/.hermes/agent-hooks/date.sh"
          timeout: 5
    post_tool_call:
        - matcher: "write_file"
          command: "~/.hermes/agent-hooks/fmt.sh"
"""


def hermes_dir(h):
    return h.home / ".hermes"


def registered(h) -> dict[str, list[str]]:
    config = yaml.safe_load((hermes_dir(h) / "config.yaml").read_text())
    return {event: [e["command"] for e in entries] for event, entries in config["hooks"].items()}


def run_as_hermes(h, command_line: str, event: str, extra: dict, session: str = "s1") -> str:
    """Hermes splits the command with shlex and runs it without a shell, the event on stdin."""
    payload = {"hook_event_name": event, "tool_name": None, "tool_input": None, "session_id": session,
               "cwd": str(h.project), "profile": "default", "extra": extra}
    p = subprocess.run(shlex.split(command_line), input=json.dumps(payload), capture_output=True, text=True,
                       timeout=120, cwd=h.project, env={**os.environ, "PATH": os.defpath})
    assert (p.returncode, p.stderr) == (0, "")
    return p.stdout


def test_install_writes_the_skill_the_scripts_and_the_hooks(host) -> None:
    r = mnemon(host, "setup", "--target", "hermes")
    assert r.code == 0, r.err
    cfg = hermes_dir(host)
    assert tree(host.project) == {}  # Hermes reads its home only
    assert sorted(tree(cfg)) == ["agent-hooks/mnemon/prime.sh", "agent-hooks/mnemon/stop.sh",
                                 "agent-hooks/mnemon/user_prompt.sh", "config.yaml",
                                 "skills/mnemon/.mnemon-setup.json", "skills/mnemon/SKILL.md"]
    scripts = cfg / "agent-hooks/mnemon"
    assert yaml.safe_load((cfg / "config.yaml").read_text()) == {"hooks": {"pre_llm_call": [
        {"command": str(scripts / "prime.sh"), "timeout": 30},
        {"command": str(scripts / "user_prompt.sh"), "timeout": 10},
        {"command": str(scripts / "stop.sh"), "timeout": 10}]}}
    assert "  Start Hermes and approve the mnemon hooks when it asks" in r.out


def test_compact_is_noted_at_the_compression_call_and_said_at_the_next_turn(host) -> None:
    setup.run(["hermes"], is_global=False, eject=False, data_dir=host.data, options=["--data-dir", str(host.data)],
              ask=lambda question, default: True)
    hooks_ = registered(host)
    compact = str(hermes_dir(host) / "agent-hooks/mnemon/compact.sh")
    assert hooks_["pre_auxiliary_call"] == [compact] and hooks_["pre_llm_call"][1] == compact
    assert run_as_hermes(host, compact, "pre_llm_call", {"is_first_turn": False}) == ""
    assert run_as_hermes(host, compact, "pre_auxiliary_call", {"aux_task": "title_generation"}) == ""
    assert run_as_hermes(host, compact, "pre_llm_call", {}) == ""  # a title is not a compression
    assert run_as_hermes(host, compact, "pre_auxiliary_call", {"aux_task": "compression"}) == ""
    assert run_as_hermes(host, compact, "pre_llm_call", {}, session="s2") == ""  # another session's
    assert json.loads(run_as_hermes(host, compact, "pre_llm_call", {})) == {"context": COMPACTED}
    assert run_as_hermes(host, compact, "pre_llm_call", {}) == ""  # said once
    assert not any((host.data / "hooks" / "hermes").iterdir())


def test_the_hooks_run_as_hermes_runs_them(host) -> None:
    assert mnemon(host, "setup", "--target", "hermes").code == 0
    status = remember_two(host)
    prime, remind, nudge = registered(host)["pre_llm_call"]
    out = run_as_hermes(host, prime, "pre_llm_call", {"user_message": "hi", "is_first_turn": True,
                                                      "conversation_history": []})
    assert json.loads(out) == {"context": hooks.prime_text(2, status["edge_count"], host.data, command(host))}
    assert out.count("\n") == 1
    later = {"user_message": "and then?", "is_first_turn": False}
    assert run_as_hermes(host, prime, "pre_llm_call", later) == ""  # the guide went with the first turn
    assert json.loads(run_as_hermes(host, remind, "pre_llm_call", later)) == {"context": REMIND}
    history = [{"role": "user", "content": "fix the parser"},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
               {"role": "tool", "content": "ok"},
               {"role": "assistant", "content": "Refactored the parser."}]
    assert json.loads(run_as_hermes(host, nudge, "pre_llm_call", {**later, "conversation_history": history})) == {
        "context": NUDGE_NEXT}
    dealt = [*history, {"role": "user", "content": "thanks"},
             {"role": "assistant", "content": [{"type": "text", "text": "Stored it with mnemon remember."}]}]
    assert run_as_hermes(host, nudge, "pre_llm_call", {**later, "conversation_history": dealt}) == ""
    first = {"user_message": "hi", "is_first_turn": True, "conversation_history": []}
    assert run_as_hermes(host, nudge, "pre_llm_call", first) == ""  # no exchange before the first turn


def test_hermes_home_is_where_it_installs(host) -> None:
    profile = host.home / "profiles" / "work"
    r = mnemon(host, "setup", "--target", "hermes", env={"HERMES_HOME": str(profile)})
    assert r.code == 0 and (profile / "config.yaml").is_file() and not hermes_dir(host).exists()


@pytest.mark.parametrize("original", [HERMES_CONFIG, THEIRS, "", "hooks:\n", "model: x\r\nhooks: {}  # none yet\r\n"])
def test_foreign_config_stays_byte_for_byte_and_eject_restores_it(host, original: str) -> None:
    path = hermes_dir(host) / "config.yaml"
    path.parent.mkdir()
    path.write_text(original, newline="")
    path.chmod(0o600)  # it holds API keys
    assert mnemon(host, "setup", "--target", "hermes").code == 0
    text = path.read_bytes().decode()
    before = yaml.safe_load(original) or {}
    after = yaml.safe_load(text)
    theirs = (before.get("hooks") or {}).get("pre_llm_call", [])
    assert after["hooks"]["pre_llm_call"][:len(theirs)] == theirs and len(after["hooks"]["pre_llm_call"]) == len(
        theirs) + 3
    assert {k: v for k, v in after.items() if k != "hooks"} == {k: v for k, v in before.items() if k != "hooks"}
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert mnemon(host, "setup", "--target", "hermes").code == 0 and path.read_bytes().decode() == text
    r = mnemon(host, "setup", "--eject", "--target", "hermes")
    assert r.code == 0 and "3 hook(s) removed" in r.out
    assert path.read_bytes().decode() == original


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("hooks: {pre_llm_call: []}\n", '"hooks" is not a block mapping at line 1'),
        ("hooks:\n  pre_llm_call: []\n", '"pre_llm_call" is not a block list at line 2'),
        ("hooks:\n  pre_llm_call:\n  command: x\n", '"command" is not a block list at line 3'),
        ("hooks:\n  pre_llm_call:\n    - command: x\n   timeout: 3\n", "unexpected indentation at line 4"),
        ("hooks:\n  pre_llm_call:\n    command: x\n", 'expected a "- " item of "pre_llm_call" at line 3'),
        ("hooks:\n  a: 1\nhooks:\n  b: 2\n", '"hooks" appears twice at line 3'),
    ],
)
def test_config_mnemon_cannot_edit_is_left_alone(host, text: str, error: str) -> None:
    path = hermes_dir(host) / "config.yaml"
    path.parent.mkdir()
    path.write_text(text)
    r = mnemon(host, "setup", "--target", "hermes")
    assert (r.code, r.out) == (1, "")
    assert r.err == (f"Error: {path}: {error}; mnemon edits only a block-style \"hooks:\" mapping of event "
                     "lists\n")
    assert tree(hermes_dir(host)) == {"config.yaml": text.encode()}


# ---------------------------------------------------------------- the splice, for any config

_names = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True).filter(lambda k: k != "hooks")
_scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.text("abc: #'\"-", max_size=8), st.none())
_entry = st.fixed_dictionaries({"command": st.text("abcxyz/._ -", min_size=1, max_size=12)},
                               optional={"timeout": st.integers(1, 300), "matcher": st.sampled_from(["x", "w.*"])})
_configs = st.fixed_dictionaries({}, optional={
    "hooks": st.one_of(st.just({}), st.dictionaries(st.sampled_from(["pre_llm_call", "post_tool_call",
                                                                     "on_session_start"]),
                                                    st.lists(_entry, min_size=1, max_size=3), max_size=3)),
}).flatmap(lambda hooks_: st.dictionaries(_names, _scalars, max_size=4).map(lambda rest: {**rest, **hooks_}))
OURS = {"pre_llm_call": [{"command": "/h/.hermes/agent-hooks/mnemon/prime.sh", "timeout": 30},
                         {"command": "/h/.hermes/agent-hooks/mnemon/user_prompt.sh", "timeout": 10}],
        "pre_auxiliary_call": [{"command": "/h/.hermes/agent-hooks/mnemon/compact.sh", "timeout": 10}]}


@settings(max_examples=150, deadline=None)
@given(config=_configs, indent=st.sampled_from([None, 2, 4]), sort=st.booleans())
def test_adding_then_stripping_ours_gives_back_any_config(config: dict, indent: int | None, sort: bool) -> None:
    original = yaml.safe_dump(config, sort_keys=sort, indent=indent) if config else ""
    doc = Config(original, "config.yaml")
    doc.add(OURS)
    added = yaml.safe_load(doc.text)
    hooks_ = dict(config.get("hooks") or {})
    for event, entries in OURS.items():
        hooks_[event] = [*hooks_.get(event, []), *entries]
    assert added == {**config, "hooks": hooks_}
    again = Config(doc.text, "config.yaml")
    assert again.ours() == 3 and again.strip() == 3
    assert again.text == original
