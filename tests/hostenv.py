"""The home, project and helpers the host tests share (test_hosts*.py): a temporary HOME and project, the CLI
run as a host would run it, and where each target installs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from mnemon_core.hosts.jsonc import parse
from mnemon_core.hosts.prompts import cli_command

TARGETS = ["claude-code", "codex", "cursor", "nanobot"]
EVERY = [*TARGETS, "openclaw", "pi", "hermes", "opencode"]
HOOKED = ["claude-code", "codex", "cursor"]
DIRS = {"claude-code": ".claude", "codex": ".codex", "cursor": ".cursor", "nanobot": ".nanobot"}
SETTINGS = {"claude-code": "settings.json", "codex": "hooks.json", "cursor": "hooks.json", "hermes": "config.yaml"}
# Where each target installs without --global: the project, or the one directory the host reads.
WHERE = {**{t: ("project", d) for t, d in DIRS.items()}, "openclaw": ("home", ".openclaw"), "pi": ("project", ".pi"),
         "hermes": ("home", ".hermes"), "opencode": ("project", ".opencode")}
HOST_VARIABLES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR", "PI_CODING_AGENT_DIR", "HERMES_HOME",
                  "XDG_CONFIG_HOME")


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path):
    """A home and a project of their own; PATH holds no host binary (tests put fakes in `bin`)."""
    home, project, bin_dir = tmp_path / "home", tmp_path / "project", tmp_path / "bin"
    for d in (home, project, bin_dir):
        d.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    # These tests are about where each phase's text goes; a nudge after every reply (how often it comes by
    # default, 5, and on which cues, is tests/test_nudge.py's).
    monkeypatch.setenv("MNEMON_NUDGE_EVERY", "1")
    for name in HOST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(project)

    class Host:
        pass

    h = Host()
    h.home, h.project, h.bin, h.data = home, project, bin_dir, data_dir
    return h


def mnemon(h, *args: str, input: str = "", env: dict[str, str] | None = None):
    return run_cli(*args, cwd=h.project, input=input, env=env)


def cfg_of(h, target: str) -> Path:
    base, name = WHERE[target]
    return getattr(h, base) / name


def command(h) -> list[str]:
    """How the hooks, the plugins and the skill run mnemon in these tests: this interpreter's `mnemon`, with the
    data dir (setup writes it into them because $MNEMON_DATA_DIR is set)."""
    return [*cli_command(), "--data-dir", str(h.data)]


def both(h) -> dict[str, bytes]:
    return {**{f"home/{k}": v for k, v in tree(h.home).items()}, **{f"project/{k}": v for k, v in tree(h.project).items()}}


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def commands(path: Path, target: str) -> dict[str, list[str]]:
    """event -> the commands registered for it."""
    value = parse(path.read_text()).plain()
    out: dict[str, list[str]] = {}
    for event, entries in value.get("hooks", {}).items():
        for e in entries:
            for hook in (e["hooks"] if target != "cursor" else [e]):
                out.setdefault(event, []).append(hook["command"])
    return out


def inserted_only(original: str, changed: str) -> bool:
    rest = iter(changed)
    return all(c in rest for c in original)  # `in` advances the iterator: a subsequence test


def run_as_host(h, command: str, payload: dict | str | None, env: dict[str, str] | None = None):
    """A host runs a hook as a shell command with its JSON on stdin (Claude Code sets CLAUDE_PROJECT_DIR)."""
    full = dict(os.environ, PYTHONPATH=str(ROOT), CLAUDE_PROJECT_DIR=str(h.project), **(env or {}))
    text = payload if isinstance(payload, str) else "" if payload is None else json.dumps(payload)
    sub = h.project / "src"
    sub.mkdir(exist_ok=True)
    return subprocess.run(["sh", "-c", command], input=text, capture_output=True, text=True, env=full,
                          cwd=sub, timeout=120)  # from a subdirectory: the command must not depend on cwd


def remember_two(h, store_args: tuple[str, ...] = ()) -> dict:
    for c in ("Alice chose Qdrant for the vector store", "Alice prefers short answers"):
        assert mnemon(h, *store_args, "remember", c, "--entities", "Alice").code == 0
    return mnemon(h, *store_args, "status").json()
