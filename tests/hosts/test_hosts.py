"""`mnemon setup` and `mnemon hook` against a temporary home and project: what each target installs, that a
second install changes nothing, that foreign settings survive byte for byte, that eject takes only what is
ours, each installed hook run the way its host runs it (a shell command, JSON on stdin), the skill's commands
run from a shell without mnemon on its PATH, and setup's check. The plugin hosts' own tests are in
test_hosts_plugins.py, Hermes's in test_hosts_hermes.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from hostenv import (DIRS, EVERY, HOOKED, SETTINGS, TARGETS, WHERE, both, cfg_of, command, commands, host,
                     inserted_only, mnemon, remember_two, run_as_host, tree)
from mnemon_core.errors import ValidationError
from mnemon_core.hosts import check, hooks, setup
from mnemon_core.hosts.base import plan_install, skill_text
from mnemon_core.hosts.jsonc import parse
from mnemon_core.hosts.prompts import GUIDE, SKILL, cli_command, name_executable

# The events each target registers by default (prime, remind, nudge; compact is off unless chosen).
EVENTS = {
    "claude-code": {"SessionStart": "prime.sh", "UserPromptSubmit": "user_prompt.sh", "Stop": "stop.sh"},
    "codex": {"SessionStart": "prime.sh", "UserPromptSubmit": "user_prompt.sh", "Stop": "stop.sh"},
    "cursor": {"sessionStart": "prime.sh", "stop": "stop.sh"},
}
# Settings a user wrote: comments, trailing commas, a hook of another tool on an event we use.
FOREIGN = {
    "claude-code": """// my Claude settings
{
  "permissions": {"allow": ["Bash(git status)"]}, /* keep me */
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}, // desktop ping
    ],
  },
}
""",
    "codex": """{
  // Codex hooks of another tool
  "hooks": {
    "SessionStart": [
      {"matcher": "startup", "hooks": [{"type": "command", "command": "/opt/audit/log.sh", "timeout": 5},],},
    ],
  },
}
""",
    "cursor": """{
  "version": 1,
  "hooks": {
    // format on save
    "afterFileEdit": [{"command": "./fmt.sh"}],
    "stop": [{"command": "./audit.sh", "timeout": 10},],
  },
}
""",
}


# ---------------------------------------------------------------- install


@pytest.mark.parametrize("target", TARGETS)
def test_install_writes_the_skill_the_prompts_and_the_hooks(host, target: str) -> None:
    r = mnemon(host, "setup", "--target", target)
    assert r.code == 0 and r.err == "", r.err
    cfg = host.project / DIRS[target]
    assert (cfg / "skills" / "mnemon" / "SKILL.md").read_text() == skill_text(command(host))
    assert (host.data / "prompt" / "guide.md").read_text() == GUIDE
    assert (host.data / "prompt" / "skill.md").read_text() == SKILL
    assert (host.data / "data" / "default" / "mnemon.db").is_file()  # the store the hooks read
    assert f"{cfg}/skills/mnemon/SKILL.md" in r.out and 'Store     "default" (created)' in r.out
    assert r.out.rstrip().endswith(f"Remove with: mnemon setup --eject --target {target}")
    assert f"Check     {setup.TARGETS[target].display}: ok: " in r.out
    if target == "nanobot":
        assert not (cfg / "hooks").exists()
        return
    registered = commands(cfg / SETTINGS[target], target)
    assert set(registered) == set(EVENTS[target])
    for event, script in EVENTS[target].items():
        path = cfg / "hooks" / "mnemon" / script
        if target == "claude-code":  # a project install: relative to the project, from any directory of it
            assert registered[event] == [f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/mnemon/{script}']
        else:
            assert registered[event] == [str(path)]
        lines = path.read_text().splitlines()
        assert lines[0] == "#!/bin/sh" and len(lines) == 2  # one line: the CLI by absolute path
        phase = {v: k for k, v in hooks_scripts().items()}[script]
        assert lines[1] == (f"exec {' '.join(cli_command())} hook {phase} --host {target} "
                            f"--data-dir {host.data}  # written by mnemon setup")
        assert os.access(path, os.X_OK)
    if target == "cursor":
        assert parse((cfg / "hooks.json").read_text()).plain()["version"] == 1
        stop = parse((cfg / "hooks.json").read_text()).plain()["hooks"]["stop"][0]
        assert stop == {"command": str(cfg / "hooks/mnemon/stop.sh"), "timeout": 30, "loop_limit": 1}


def hooks_scripts() -> dict[str, str]:
    from mnemon_core.hosts.settings import SCRIPTS

    return SCRIPTS


def test_install_twice_changes_nothing(host) -> None:
    """Every target at once (one setup run each time: each run tries every target with two processes)."""
    assert mnemon(host, "setup", "--target", *EVERY).code == 0
    first = both(host)
    for target in EVERY:
        assert any(k.startswith("{}/{}/".format(*WHERE[target])) for k in first), target
    r = mnemon(host, "setup", "--target", *EVERY)
    assert r.code == 0 and 'Store     "default"\n' in r.out and "guide.md kept" in r.out
    assert both(host) == first  # one set of entries, the same bytes


@pytest.mark.parametrize("target", HOOKED)
def test_foreign_settings_stay_byte_for_byte_and_eject_restores_them(host, target: str) -> None:
    cfg = host.project / DIRS[target]
    cfg.mkdir()
    path = cfg / SETTINGS[target]
    path.write_text(FOREIGN[target])
    assert mnemon(host, "setup", "--target", target).code == 0
    text = path.read_text()
    assert inserted_only(FOREIGN[target], text)  # their bytes all there, in order: setup only inserted
    registered = commands(path, target)
    ours = [c for cs in registered.values() for c in cs if "hooks/mnemon/" in c]
    assert len(ours) == len(EVENTS[target])
    assert mnemon(host, "setup", "--target", target).code == 0 and path.read_text() == text
    r = mnemon(host, "setup", "--eject", "--target", target)
    assert r.code == 0, r.err
    assert path.read_text() == FOREIGN[target]
    assert f"{len(EVENTS[target])} hook(s) removed" in r.out
    assert sorted(p.name for p in cfg.iterdir()) == [SETTINGS[target]]  # nothing else of ours is left


# Files of another tool beside where each target puts its own.
NEIGHBOURS = {"claude-code": "hooks/theirs.sh", "codex": "hooks/theirs.sh", "cursor": "hooks/theirs.sh",
              "nanobot": "AGENTS.md", "openclaw": "extensions/theirs/index.js", "pi": "extensions/custom.ts",
              "hermes": "agent-hooks/theirs.sh", "opencode": "plugins/theirs.js"}


def test_eject_removes_only_what_mnemon_wrote(host) -> None:
    theirs: dict[str, dict[str, bytes]] = {}
    for target in EVERY:
        cfg = cfg_of(host, target)
        for rel in ("skills/theirs/SKILL.md", NEIGHBOURS[target]):
            (cfg / rel).parent.mkdir(parents=True, exist_ok=True)
            (cfg / rel).write_text(f"their {rel}\n")
    assert mnemon(host, "setup", "--target", *EVERY).code == 0
    for target in EVERY:
        cfg = cfg_of(host, target)
        (cfg / "skills" / "mnemon" / "notes.md").write_text("my notes next to the skill\n")
        theirs[target] = {k: v for k, v in tree(cfg).items() if k.startswith("skills/theirs/") or k.endswith(
            ("notes.md", NEIGHBOURS[target]))}
    r = mnemon(host, "setup", "--eject", "--target", *EVERY)
    assert r.code == 0, r.err
    for target in EVERY:
        cfg = cfg_of(host, target)
        assert tree(cfg) == theirs[target], target  # their files, byte for byte; ours gone
        assert (cfg / "skills" / "mnemon").is_dir()  # it still holds their file
        # Every directory setup created is gone again: what is left holds their files.
        assert all(any(p.is_file() for p in d.rglob("*")) for d in cfg.rglob("*") if d.is_dir()), target
        assert not (cfg / SETTINGS.get(target, "-")).exists()  # a settings file setup created and emptied
    assert (host.data / "prompt" / "guide.md").is_file()  # shared by every host: stays
    again = mnemon(host, "setup", "--eject", "--target", *EVERY)
    assert again.code == 0 and again.out.count("nothing of mnemon's there") == len(EVERY)
    assert all(tree(cfg_of(host, t)) == theirs[t] for t in EVERY)


def test_setup_then_eject_leaves_no_trace_in_a_fresh_home(host) -> None:
    assert mnemon(host, "setup", "--target", *EVERY).code == 0
    assert mnemon(host, "setup", "--eject", "--target", *EVERY).code == 0
    assert list(host.home.iterdir()) == [] and list(host.project.iterdir()) == []


def test_eject_keeps_a_settings_file_it_did_not_create_even_when_empty(host) -> None:
    cfg = host.project / ".claude"
    cfg.mkdir()
    (cfg / "settings.json").write_text("{}")
    assert mnemon(host, "setup", "--target", "claude-code").code == 0
    assert mnemon(host, "setup", "--eject", "--target", "claude-code").code == 0
    assert (cfg / "settings.json").read_text() == "{}"
    assert sorted(p.name for p in cfg.iterdir()) == ["settings.json"]


def test_a_file_of_someone_else_at_our_path_stops_setup_before_anything_is_written(host) -> None:
    skill = host.project / ".claude" / "skills" / "mnemon" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("my own mnemon notes\n")
    before = tree(host.project)
    r = mnemon(host, "setup", "--target", "codex", "claude-code")
    assert (r.code, r.out) == (1, "")
    assert r.err == f"Error: {skill} exists and was not written by mnemon setup; move it away and run setup again\n"
    assert tree(host.project) == before and not (host.data / "prompt").exists()  # codex was not set up either
    r = mnemon(host, "setup", "--eject", "--target", "claude-code")
    assert r.code == 0 and f"kept      {skill} (not written by mnemon setup)" in r.out
    assert skill.read_text() == "my own mnemon notes\n"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"hooks": {"Stop": [}', "expected ',' or ']'"),  # the first element is missing: "unexpected '}'"
        ('{"hooks": []}', '"hooks" must be an object'),
    ],
)
def test_settings_that_cannot_be_read_are_left_alone(host, text: str, error: str) -> None:
    path = host.project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    before = tree(host.project)
    r = mnemon(host, "setup", "--target", "claude-code")
    assert r.code == 1 and r.out == ""
    assert r.err.startswith(f"Error: {path}: ") and r.err.count("\n") == 1
    assert tree(host.project) == before
    assert mnemon(host, "setup", "--eject", "--target", "claude-code").code == 1 and tree(host.project) == before


def test_bad_setup_flags(host) -> None:
    r = mnemon(host, "setup", "--target", "vim")
    assert (r.code, r.out, r.err) == (1, "", 'Error: invalid target "vim" (must be claude-code, codex, cursor, '
                                      'nanobot, openclaw, pi, hermes or opencode)\n')
    r = mnemon(host, "setup", "--readonly", "--target", "codex")
    assert (r.code, r.err) == (1, "Error: setup is unavailable with --readonly: database writes are disabled\n")
    assert tree(host.project) == {} and not host.data.exists()


# ---------------------------------------------------------------- detection and scope


def test_detection_without_target(host) -> None:
    r = mnemon(host, "setup")
    assert r.code == 0
    assert r.out == ("No supported host found (Claude Code, Codex, Cursor, Nanobot, OpenClaw, Pi, Hermes, OpenCode); "
                     "name one with --target.\n")
    assert tree(host.project) == {}
    (host.home / ".codex").mkdir()  # a user config dir: Codex is there
    (host.bin / "claude").write_text("#!/bin/sh\n")
    (host.bin / "claude").chmod(0o755)  # a binary on PATH: so is Claude Code
    r = mnemon(host, "setup")  # no terminal: every detected host, no questions
    assert r.code == 0, r.err
    assert sorted(p.name for p in host.project.iterdir()) == [".claude", ".codex"]
    r = mnemon(host, "setup", "--eject")  # eject without --target: where mnemon is installed
    assert r.code == 0 and sorted(p.name for p in host.project.iterdir()) == []


def test_the_other_hosts_are_detected_by_their_program_or_their_user_dir(host) -> None:
    others = [setup.TARGETS[t] for t in ("openclaw", "pi", "hermes", "opencode")]
    assert not any(t.detected() for t in others)
    (host.bin / "hermes").write_text("#!/bin/sh\n")
    (host.bin / "hermes").chmod(0o755)
    for rel in (".openclaw", ".pi/agent", ".config/opencode"):
        (host.home / rel).mkdir(parents=True)
    assert all(t.detected() for t in others)


def test_global_install_uses_the_user_config_with_absolute_commands(host, monkeypatch) -> None:
    custom = host.home / "claude-config"
    r = mnemon(host, "setup", "--global", "--target", "claude-code", "cursor",
               env={"CLAUDE_CONFIG_DIR": str(custom)})
    assert r.code == 0, r.err
    assert tree(host.project) == {}
    registered = commands(custom / "settings.json", "claude-code")
    assert registered["SessionStart"] == [str(custom / "hooks/mnemon/prime.sh")]
    assert commands(host.home / ".cursor/hooks.json", "cursor")["sessionStart"] == [
        str(host.home / ".cursor/hooks/mnemon/prime.sh")]
    assert r.out.rstrip().endswith("--target claude-code cursor --global")


def test_project_dir_that_is_the_user_config_gets_absolute_commands(host, monkeypatch) -> None:
    """Setup run from $HOME: ./.claude is ~/.claude, read in every session, so paths must be absolute."""
    r = run_cli("setup", "--target", "claude-code", cwd=host.home, input="")
    assert r.code == 0, r.err
    registered = commands(host.home / ".claude/settings.json", "claude-code")
    assert registered["Stop"] == [str(host.home / ".claude/hooks/mnemon/stop.sh")]


def test_interactive_choice_of_hosts_and_hooks(host) -> None:
    (host.home / ".claude").mkdir()
    (host.home / ".cursor").mkdir()
    asked: list[str] = []

    def ask(question: str, default: bool) -> bool:
        asked.append(question)
        return {"Cursor": False, "nudge": False, "compact": True}.get(
            next((k for k in ("Cursor", "nudge", "compact") if k in question), ""), default)

    lines = setup.run(None, is_global=False, eject=False, data_dir=host.data, options=[], ask=ask)
    assert asked == [f"Set up Claude Code ({host.project / '.claude'})?", f"Set up Cursor ({host.project / '.cursor'})?",
                     f"Hook remind: {setup.PHASE_HELP['remind']}?", f"Hook nudge: {setup.PHASE_HELP['nudge']}?",
                     f"Hook compact: {setup.PHASE_HELP['compact']}?"]
    assert not (host.project / ".cursor").exists()
    cfg = host.project / ".claude"
    assert set(commands(cfg / "settings.json", "claude-code")) == {"SessionStart", "UserPromptSubmit", "PreCompact"}
    assert sorted(p.name for p in (cfg / "hooks/mnemon").iterdir()) == ["compact.sh", "prime.sh", "user_prompt.sh"]
    assert f"  hooks     {cfg}/hooks/mnemon/ (prime, remind, compact)" in lines
    # Run again without a terminal: the default hooks, so compact's script and entry go, nudge's come.
    setup.run(["claude-code"], is_global=False, eject=False, data_dir=host.data, options=[], ask=None)
    assert set(commands(cfg / "settings.json", "claude-code")) == set(EVENTS["claude-code"])
    assert sorted(p.name for p in (cfg / "hooks/mnemon").iterdir()) == ["prime.sh", "stop.sh", "user_prompt.sh"]


def test_an_edited_guide_is_kept_and_primed(host) -> None:
    guide = host.data / "prompt" / "guide.md"
    guide.parent.mkdir(parents=True)
    guide.write_text("Recall before every answer.\n")
    r = mnemon(host, "setup", "--target", "claude-code")
    assert "guide.md kept, skill.md written" in r.out
    assert guide.read_text() == "Recall before every answer.\n"
    p = run_as_host(host, commands(host.project / ".claude/settings.json", "claude-code")["SessionStart"][0], {})
    assert p.stdout == "[mnemon] Memory active (0 insights, 0 edges).\nRecall before every answer.\n"


# ---------------------------------------------------------------- the hooks, run as each host runs them


def test_claude_code_hooks(host) -> None:
    assert mnemon(host, "setup", "--target", "claude-code").code == 0
    status = remember_two(host)
    cmd = {e: c[0] for e, c in commands(host.project / ".claude/settings.json", "claude-code").items()}
    p = run_as_host(host, cmd["SessionStart"], {"hook_event_name": "SessionStart", "source": "startup"})
    assert (p.returncode, p.stderr) == (0, "")
    line = f"[mnemon] Memory active ({status['total_insights']} insights, {status['edge_count']} edges).\n"
    assert status["total_insights"] == 2 and p.stdout == line + name_executable(GUIDE, command(host))
    p = run_as_host(host, cmd["UserPromptSubmit"], {"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert (p.returncode, p.stdout, p.stderr) == (0, hooks.REMIND + "\n", "")
    stop = {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "Refactored the parser."}
    p = run_as_host(host, cmd["Stop"], stop)
    assert p.returncode == 0 and json.loads(p.stdout) == {"decision": "block", "reason": hooks.NUDGE}
    for quiet in ({**stop, "stop_hook_active": True},  # the stop after our own block
                  {**stop, "last_assistant_message": "Stored it: ran mnemon remember in a sub-agent."},
                  {**stop, "last_assistant_message": "No memory is needed for this one."}):
        p = run_as_host(host, cmd["Stop"], quiet)
        assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_codex_hooks(host) -> None:
    assert mnemon(host, "setup", "--target", "codex").code == 0
    status = remember_two(host)
    cmd = {e: c[0] for e, c in commands(host.project / ".codex/hooks.json", "codex").items()}
    p = run_as_host(host, cmd["SessionStart"], {"hook_event_name": "SessionStart", "source": "startup"})
    line = f"[mnemon] Memory active (2 insights, {status['edge_count']} edges).\n"
    assert p.returncode == 0 and json.loads(p.stdout) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": line + name_executable(GUIDE, command(host))}}
    assert p.stdout.count("\n") == 1  # one JSON object on one line, nothing else
    p = run_as_host(host, cmd["UserPromptSubmit"], {"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert json.loads(p.stdout) == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                           "additionalContext": hooks.REMIND}}
    p = run_as_host(host, cmd["Stop"], {"hook_event_name": "Stop", "stop_hook_active": False,
                                        "last_assistant_message": "Done."})
    assert json.loads(p.stdout) == {"continue": True, "systemMessage": hooks.NUDGE}
    p = run_as_host(host, cmd["Stop"], {"hook_event_name": "Stop", "stop_hook_active": True})
    assert (p.returncode, p.stdout) == (0, "")


def test_cursor_hooks(host) -> None:
    assert mnemon(host, "setup", "--target", "cursor").code == 0
    cmd = {e: c[0] for e, c in commands(host.project / ".cursor/hooks.json", "cursor").items()}
    p = run_as_host(host, cmd["sessionStart"], {"hook_event_name": "sessionStart", "session_id": "s1"})
    assert p.returncode == 0 and json.loads(p.stdout) == {
        "additional_context": "[mnemon] Memory active (0 insights, 0 edges).\n" + name_executable(GUIDE, command(host))}
    p = run_as_host(host, cmd["stop"], {"hook_event_name": "stop", "status": "completed", "loop_count": 0})
    assert json.loads(p.stdout) == {"followup_message": hooks.NUDGE}
    p = run_as_host(host, cmd["stop"], {"hook_event_name": "stop", "status": "completed", "loop_count": 1})
    assert (p.returncode, p.stdout) == (0, "")
    p = run_as_host(host, f"{sys.executable} -m mnemon_core hook compact --host cursor", {})
    assert json.loads(p.stdout) == {"user_message": hooks.COMPACT}


def test_hooks_honour_the_store_of_setup_and_of_the_environment(host) -> None:
    assert mnemon(host, "store", "create", "work").code == 0
    remember_two(host, ("--store", "work"))
    assert mnemon(host, "setup", "--store", "work", "--target", "claude-code").code == 0
    prime = commands(host.project / ".claude/settings.json", "claude-code")["SessionStart"][0]
    assert "--store work" in (host.project / ".claude/hooks/mnemon/prime.sh").read_text()
    assert run_as_host(host, prime, {}).stdout.startswith("[mnemon] Memory active (2 insights,")
    # Without --store at setup the hook follows $MNEMON_STORE of the host's environment.
    assert mnemon(host, "setup", "--target", "claude-code").code == 0
    assert run_as_host(host, prime, {}).stdout.startswith("[mnemon] Memory active (0 insights, 0 edges).")
    p = run_as_host(host, prime, {}, env={"MNEMON_STORE": "work"})
    assert p.stdout.startswith("[mnemon] Memory active (2 insights,")
    p = run_as_host(host, prime, {}, env={"MNEMON_STORE": "nope"})
    assert (p.returncode, p.stdout) == (1, "")
    assert p.stderr == "Error: store \"nope\" does not exist (use 'mnemon store create nope' first)\n"


@pytest.mark.parametrize(
    ("args", "stdin", "error"),
    [
        (["hook", "nudge"], "not json", "Error: hook input is not JSON: Expecting value at line 1 column 1"),
        (["hook", "remind"], "[1]", "Error: hook input must be a JSON object, got list"),
        (["hook", "remind", "--host", "cursor"], "{}", "Error: cursor has no remind hook; its hooks: prime, nudge, compact"),
        (["hook", "compact", "--host", "codex"], "{}", "Error: codex has no compact hook; its hooks: prime, remind, nudge"),
    ],
)
def test_hook_errors(host, args: list[str], stdin: str, error: str) -> None:
    r = mnemon(host, *args, input=stdin)
    assert (r.code, r.out, r.err) == (1, "", error + "\n")


def test_hooks_that_need_no_store_do_not_load_the_engine() -> None:
    code = ("import io, sys; from mnemon_core.faces import cli; sys.stdin = io.StringIO('{}'); cli.main(['hook', 'nudge']);"
            "cli.main(['hook', 'remind']); print(sorted(m for m in ('pydantic', 'numpy', 'mnemon_core.memory') "
            "if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "[]"


# ---------------------------------------------------------------- the commands the agent is told to run

# Values for the skill's placeholders, so its example commands run as an agent would fill them in.
FILLED = {'"<fact>"': '"Alice prefers short answers"', "<category>": "preference", "<1-5>": "3",
          '"<query>"': '"Alice answers"'}


def skill_commands(skill: str) -> list[str]:
    """The runnable lines of the skill's command block, placeholders filled in (those naming an id, which
    depend on an earlier answer, and the `store` synopsis are left out)."""
    block = skill.split("```bash\n", 1)[1].split("```", 1)[0]
    out = []
    for line in block.splitlines():
        for placeholder, value in FILLED.items():
            line = line.replace(placeholder, value)
        if "<" not in line and "|" not in line:
            out.append(line)
    return out


def test_the_skills_commands_run_in_a_shell_without_mnemon_on_its_path(host) -> None:
    assert mnemon(host, "setup", "--target", *EVERY).code == 0
    skills = {(cfg_of(host, t) / "skills/mnemon/SKILL.md").read_text() for t in EVERY}
    assert len(skills) == 1  # one skill for every host
    lines = skill_commands(skills.pop())
    words = {line.split()[len(command(host))] for line in lines}
    assert words == {"remember", "recall", "search", "gc", "status", "log"}
    bare = {"PATH": os.defpath, "PYTHONPATH": ""}  # the agent's shell: no virtualenv, no source checkout
    for line in lines:
        p = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=120, cwd=host.project,
                           env={**os.environ, **bare})
        assert p.returncode == 0, (line, p.stderr)
        assert p.stderr == "" and p.stdout.strip()
    status = json.loads(subprocess.run(["sh", "-c", lines[-2]], capture_output=True, text=True, timeout=120,
                                       env={**os.environ, **bare}).stdout)
    assert status["total_insights"] == 1  # the remember above reached the store the hooks read


def test_the_guide_the_prime_hook_prints_names_the_executable(host) -> None:
    assert mnemon(host, "setup", "--target", "codex").code == 0
    prime = commands(host.project / ".codex/hooks.json", "codex")["SessionStart"][0]
    context = json.loads(run_as_host(host, prime, {}).stdout)["hookSpecificOutput"]["additionalContext"]
    line = next(x.strip() for x in context.splitlines() if x.strip().endswith('"<focused keywords>" --limit 5'))
    assert line == " ".join([*command(host), "recall", '"<focused keywords>"', "--limit", "5"])
    p = subprocess.run(["sh", "-c", line.replace("<focused keywords>", "anything")], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PATH": os.defpath, "PYTHONPATH": ""})
    assert p.returncode == 0 and json.loads(p.stdout)["results"] == []


def test_the_guide_names_this_executable_when_the_engine_serves_the_hook(host, cli_both_ways) -> None:
    """The resident engine runs the hook with its own argv: the executable is found beside the interpreter."""
    assert mnemon(host, "setup", "--target", "cursor").code == 0
    prime = commands(host.project / ".cursor/hooks.json", "cursor")["sessionStart"][0]
    first = run_as_host(host, prime, {}).stdout  # with the engine on, this call starts it
    if cli_both_ways == "engine":
        deadline = time.monotonic() + 60
        while not json.loads(mnemon(host, "daemon", "status").out)["running"] and time.monotonic() < deadline:
            time.sleep(0.2)
    served = run_as_host(host, prime, {}).stdout
    assert first == served
    assert json.loads(served)["additional_context"] == hooks.prime_text(0, 0, host.data, command(host))


def test_prose_about_mnemon_is_left_as_it_is() -> None:
    text = "Use the mnemon skill.\n# mnemon\n    mnemon recall x\n`mnemon show 1` and mnemon alone\n"
    assert name_executable(text, ["/v/bin/mnemon", "--store", "w"]) == (
        "Use the mnemon skill.\n# mnemon\n    /v/bin/mnemon --store w recall x\n`/v/bin/mnemon --store w show 1` and "
        "mnemon alone\n")
    assert name_executable("`mnemon recall q`", ["/a b/mnemon"]) == "`'/a b/mnemon' recall q`"


# ---------------------------------------------------------------- the check after setup, and PATH


def test_setup_checks_every_target_and_writes_no_secret_memory_or_foreign_path(host) -> None:
    secret = {"MNEMON_EMBED_API_KEY": "sk-do-not-write-me"}
    assert mnemon(host, "remember", "Alice's door code is 4711-secret", env=secret).code == 0
    r = mnemon(host, "setup", "--target", *EVERY, env=secret)
    assert r.code == 0, r.err
    checks = [line for line in r.out.splitlines() if line.startswith("Check ")]
    expected = {"claude-code": "wrote 4 file(s) and 3 hook(s) in settings.json; the prime hook ran",
                "codex": "wrote 4 file(s) and 3 hook(s) in hooks.json; the prime hook ran",
                "cursor": "wrote 3 file(s) and 2 hook(s) in hooks.json; the prime hook ran",
                "nanobot": "wrote 1 file(s)", "openclaw": "wrote 4 file(s); the prime hook ran",
                "pi": "wrote 2 file(s); the prime hook ran",
                "hermes": "wrote 4 file(s) and 3 hook(s) in config.yaml; the prime hook ran",
                "opencode": "wrote 2 file(s); the prime hook ran"}
    assert checks == [f"Check     {setup.TARGETS[t].display}: ok: {expected[t]}; mnemon status answered (1 insights)"
                      for t in EVERY]
    assert r.out.splitlines()[-2] == check.path_advice(cli_command())
    allowed = (str(host.home), str(host.project), str(host.data), os.path.dirname(cli_command()[0]), "/bin/sh")
    for name, data in both(host).items():
        text = re.sub(r'"?\$CLAUDE_PROJECT_DIR\\?"/', "", data.decode())  # relative to the project
        assert "sk-do-not-write-me" not in text and "4711" not in text, name
        for path in re.findall(r"(?<![\w.:/-])/[\w.+-]+(?:/[\w.+-]+)+", text):
            assert path.startswith(allowed), (name, path)


def test_a_check_that_fails_is_reported_and_fails_setup(host, monkeypatch) -> None:
    assert mnemon(host, "setup", "--target", "claude-code").code == 0
    script = host.project / ".claude/hooks/mnemon/prime.sh"
    script.write_text("#!/bin/sh\necho 'Error: store is locked' >&2\nexit 3  # written by mnemon setup\n")
    plan = plan_install(setup.TARGETS["claude-code"], host.project / ".claude", {}, cli_command(), [], False)
    [(ok, line)] = check.trials([plan], cli_command(), [])
    assert (ok, line) == (False, "wrote 2 file(s) and 1 hook(s) in settings.json; the prime hook failed (exit 3): "
                                 "Error: store is locked")
    # Through `mnemon setup`: the report on stdout, one error line, exit 1.
    monkeypatch.setattr(setup, "trials", lambda plans, cli, options: [(False, "the prime hook failed (exit 3): x")])
    import argparse
    import contextlib
    import io

    out = io.StringIO()
    a = argparse.Namespace(readonly=False, data_dir=None, store=None, database_url=None, yes=True,
                           target=["cursor"], is_global=False, eject=False)
    with contextlib.redirect_stdout(out), pytest.raises(ValidationError) as e:
        setup.main(a)
    assert str(e.value) == "the check after setup failed for cursor (see above)"
    assert "Check     Cursor: FAILED: the prime hook failed (exit 3): x\n" in out.getvalue()


def test_path_advice(host, tmp_path: Path) -> None:
    cli = cli_command()
    assert check.path_advice(cli) == (
        f"PATH      no mnemon on PATH: the skill and the guide name {cli[0]}, so the agent's commands work as "
        f"written; add {os.path.dirname(cli[0])} to PATH to type mnemon yourself")
    other = host.bin / "mnemon"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    assert check.path_advice(cli) == (
        f"PATH      mnemon on PATH is {other}, another installation: the skill and the guide name {cli[0]}, so "
        f"the agent's commands work as written; put {os.path.dirname(cli[0])} first in PATH to type this one")
    other.unlink()
    other.symlink_to(cli[0])
    assert check.path_advice(cli) == f"PATH      mnemon on PATH is this installation ({cli[0]})"
    python = [sys.executable, "-m", "mnemon_core"]  # no entry point: nothing to add to PATH
    assert check.path_advice(python).endswith("so the agent's commands work as written")


def test_the_host_registry_is_the_one_list() -> None:
    """Setup's targets, `mnemon hook --host`'s choices and the hook envelopes all come from `hosts.REGISTRY`:
    each row's module installs the host of that name, and a host offers exactly the hook phases it has an
    envelope for."""
    from mnemon_core.hosts import HOSTS, PHASES, REGISTRY, hooks

    assert list(setup.TARGETS) == list(REGISTRY) and all(t.name == n for n, t in setup.TARGETS.items())
    assert HOSTS == tuple(n for n, (_, envelopes) in REGISTRY.items() if envelopes) and "nanobot" not in HOSTS
    for name, (_, envelopes) in REGISTRY.items():
        assert set(envelopes) <= set(PHASES) and hooks.phases_of(name) == list(envelopes)
    with pytest.raises(ValidationError, match=r"^cursor has no remind hook; its hooks: prime, nudge, compact$"):
        hooks.run("remind", "cursor", None, lambda: (0, 0, Path()), Path, [], lambda: 5)
