"""What a host target is, and installing into / ejecting from one config directory.

A target owns, under its config directory (`.claude/`, `~/.codex/`, ...):
  skills/mnemon/SKILL.md               the skill
  skills/mnemon/.mnemon-setup.json     what setup created there that was not there before (directories,
                                       the settings file), so eject removes those and nothing older
  hooks/mnemon/<phase>.sh              one script per hook: `exec <mnemon> hook <phase> --host <host>`
  entries in its settings file         whose command runs one of those scripts (settings.py)
Each file setup writes carries MARKER; a file without it at one of those paths is someone else's and is
never overwritten or deleted. Every change is planned (and every error raised) before anything is written.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from . import settings as hooks_file
from .jsonc import Document, write_atomic
from .prompts import SKILL

MARKER = "written by mnemon setup"
MANIFEST = ".mnemon-setup.json"
# Optional phases and whether they are on unless the user says otherwise; prime is always installed.
OPTIONAL_DEFAULTS = {"remind": True, "nudge": True, "compact": False}


@dataclass(frozen=True)
class Phase:
    name: str  # prime | remind | nudge | compact
    event: str  # the host's name for the moment it runs
    fields: Mapping[str, Any] = field(default_factory=dict)  # host-specific fields of the entry


@dataclass(frozen=True)
class Target:
    name: str
    display: str
    binary: str  # detected when on PATH
    local_dir: str  # relative to the project (cwd)
    global_dir: Callable[[], Path]
    settings_file: str | None = None
    layout: hooks_file.Layout = "grouped"
    phases: tuple[Phase, ...] = ()
    always: frozenset[str] = frozenset({"prime"})  # phases installed whatever the selection
    root_defaults: Mapping[str, Any] = field(default_factory=dict)  # top-level members the file needs
    project_prefix: str | None = None  # how a project install's command starts (else absolute paths)
    note: str = ""  # what to do after setup

    def config_dir(self, is_global: bool) -> Path:
        return self.global_dir() if is_global else Path.cwd() / self.local_dir

    def detected(self) -> bool:
        return shutil.which(self.binary) is not None or self.global_dir().is_dir()

    def chosen_phases(self, selection: Mapping[str, bool]) -> list[Phase]:
        return [p for p in self.phases if p.name in self.always or selection.get(p.name, False)]


def home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def cli_command() -> list[str]:
    """The mnemon that runs now, by absolute path: the hooks run it whatever PATH the host has."""
    import sys

    exe = sys.argv[0] if sys.argv else ""
    if exe and os.path.basename(exe) != "__main__.py" and os.path.isfile(exe) and os.access(exe, os.X_OK):
        return [os.path.abspath(exe)]
    found = shutil.which("mnemon")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "mnemon_core"]  # `python -m mnemon_core` with no entry point installed


def script_text(cli: list[str], phase: str, host: str, options: list[str]) -> str:
    line = " ".join(shlex.quote(p) for p in [*cli, "hook", phase, "--host", host, *options])
    return f"#!/bin/sh\nexec {line}  # {MARKER}\n"


def _is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, IsADirectoryError):
        return False


@dataclass
class Plan:
    """Everything one install or eject will do, computed before anything is written."""

    target: Target
    cfg: Path
    write: list[tuple[Path, str, int]] = field(default_factory=list)  # (path, text, mode)
    delete: list[Path] = field(default_factory=list)
    settings: tuple[Path, str | None] | None = None  # new text, or None: delete the file
    rmdirs: list[Path] = field(default_factory=list)  # removed when empty, in this order
    report: list[str] = field(default_factory=list)

    def apply(self) -> None:
        for path, text, mode in self.write:
            write_atomic(path, text)
            os.chmod(path, mode)
        if self.settings is not None:
            path, text = self.settings
            if text is None:
                path.unlink()
            else:
                write_atomic(path, text)
        for path in self.delete:
            path.unlink(missing_ok=True)
        for d in self.rmdirs:
            try:
                d.rmdir()
            except OSError:  # not empty (or gone): someone else's files are in it
                pass


def _skill_dir(cfg: Path) -> Path:
    return cfg / "skills" / "mnemon"


def _hooks_dir(cfg: Path) -> Path:
    return cfg / "hooks" / "mnemon"


def _manifest(cfg: Path) -> list[str]:
    path = _skill_dir(cfg) / MANIFEST
    try:
        created = json.loads(path.read_text(encoding="utf-8")).get("created", [])
    except (FileNotFoundError, json.JSONDecodeError, AttributeError):
        return []
    return [c for c in created if isinstance(c, str)]


def _refuse_foreign(path: Path) -> None:
    if path.exists() and not _is_ours(path):
        raise ValidationError(f"{path} exists and was not {MARKER}; move it away and run setup again",
                              field="target")


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def plan_install(target: Target, cfg: Path, selection: Mapping[str, bool], cli: list[str],
                 options: list[str], is_global: bool) -> Plan:
    plan = Plan(target, cfg)
    skill = _skill_dir(cfg) / "SKILL.md"
    _refuse_foreign(skill)
    created = set(_manifest(cfg))
    for rel in (".", "skills", "hooks") if target.phases else (".", "skills"):
        if not (cfg / rel).exists():
            created.add(rel)
    phases = target.chosen_phases(selection)
    entries: dict[str, list[dict[str, Any]]] = {}
    for phase in target.phases:
        script = _hooks_dir(cfg) / hooks_file.SCRIPTS[phase.name]
        _refuse_foreign(script)
        if phase not in phases:
            if script.exists():
                plan.delete.append(script)  # a phase turned off since the last install
            continue
        plan.write.append((script, script_text(cli, phase.name, target.name, options), 0o755))
        entries.setdefault(phase.event, []).append(_entry(target, cfg, phase, script, is_global))
    if target.settings_file:
        path = cfg / target.settings_file
        doc = Document(_read(path), str(path))
        hooks_file.strip(doc, target.layout)
        hooks_file.add(doc, target.layout, entries, dict(target.root_defaults))
        if not path.exists():
            created.add(target.settings_file)
        plan.settings = (path, doc.text)
        plan.report.append(f"  settings  {path}")
    plan.write.insert(0, (skill, SKILL, 0o644))
    manifest = json.dumps({"created": sorted(created)}, indent=2) + "\n"
    plan.write.append((_skill_dir(cfg) / MANIFEST, manifest, 0o644))
    plan.report[:0] = [f"  skill     {skill}"]
    if phases:
        names = ", ".join(p.name for p in phases)
        plan.report.insert(1, f"  hooks     {_hooks_dir(cfg)}/ ({names})")
    return plan


def _entry(target: Target, cfg: Path, phase: Phase, script: Path, is_global: bool) -> dict[str, Any]:
    """The settings entry that runs `script`: `$CLAUDE_PROJECT_DIR/...` for a project install where the host
    offers it (the command then works from any directory of the project), else the absolute path."""
    project = target.project_prefix is not None and not is_global and not _same(cfg, target.global_dir())
    if project:
        command = f"{target.project_prefix}{shlex.quote(str(script.relative_to(Path.cwd())))}"
    else:
        command = shlex.quote(str(script.absolute()))
    if target.layout == "flat":
        return {"command": command, **phase.fields}
    hook = {"type": "command", "command": command}
    fields = dict(phase.fields)
    matcher = fields.pop("matcher", None)
    hook.update(fields)
    return ({"matcher": matcher} if matcher is not None else {}) | {"hooks": [hook]}


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def installed(target: Target, cfg: Path) -> bool:
    """Whether anything of ours is there: the skill, a hook script, or an entry in the settings file."""
    paths = [_skill_dir(cfg) / "SKILL.md", *(_hooks_dir(cfg) / s for s in hooks_file.SCRIPTS.values())]
    if any(p.is_file() and _is_ours(p) for p in paths):
        return True
    if target.settings_file and (cfg / target.settings_file).is_file():
        doc = Document(_read(cfg / target.settings_file), str(cfg / target.settings_file))
        return hooks_file.ours_in(doc, target.layout) > 0
    return False


def plan_eject(target: Target, cfg: Path) -> Plan:
    plan = Plan(target, cfg)
    created = set(_manifest(cfg))
    if target.settings_file and (path := cfg / target.settings_file).is_file():
        doc = Document(_read(path), str(path))
        if n := hooks_file.strip(doc, target.layout):
            empty = hooks_file.is_empty(doc, dict(target.root_defaults))
            gone = target.settings_file in created and empty
            plan.settings = (path, None if gone else doc.text)
            plan.report.append(f"  settings  {path}: {n} hook(s) removed" + (", file removed" if gone else ""))
    ours = [_skill_dir(cfg) / "SKILL.md", *(_hooks_dir(cfg) / s for s in hooks_file.SCRIPTS.values())]
    for path in ours:
        if not path.exists():
            continue
        if _is_ours(path):
            plan.delete.append(path)
            plan.report.append(f"  removed   {path}")
        else:
            plan.report.append(f"  kept      {path} (not {MARKER})")
    if (manifest := _skill_dir(cfg) / MANIFEST).exists():
        plan.delete.append(manifest)
    plan.rmdirs = [_skill_dir(cfg), _hooks_dir(cfg)]
    plan.rmdirs += [cfg / rel for rel in ("skills", "hooks") if rel in created]
    if "." in created:
        plan.rmdirs.append(cfg)
    return plan
