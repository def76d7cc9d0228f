"""What a host target is, and installing into / ejecting from one config directory.

A target owns, under its config directory (`.claude/`, `~/.codex/`, `~/.hermes/`, ...):
  skills/mnemon/SKILL.md               the skill, its commands naming the mnemon the hooks run
  skills/mnemon/.mnemon-setup.json     what setup created there that was not there before (directories,
                                       the settings file), so eject removes those and nothing older
  <hooks>/mnemon/<phase>.sh            one script per hook: `exec <mnemon> hook <phase> --host <host>`
  entries in its settings file         whose command runs one of those scripts (settings.py, yamlhooks.py)
  or, for a host that loads plugins instead of running commands, the plugin's files (plugins.py), which
  call `mnemon hook <phase> --host <host>` the same way.
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
from .prompts import SKILL, name_executable
from .yamlhooks import Config as YamlConfig

MARKER = "written by mnemon setup"
MANIFEST = ".mnemon-setup.json"
# Optional phases and whether they are on unless the user says otherwise; prime is always installed.
OPTIONAL_DEFAULTS = {"remind": True, "nudge": True, "compact": False}
# A plugin file: its text, given the command the hooks run (the executable and its options) and the phases.
Render = Callable[[list[str], list[str]], str]


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
    layout: hooks_file.Layout | str = "grouped"  # "grouped" or "flat" JSON (settings.py), "yaml" (yamlhooks.py)
    phases: tuple[Phase, ...] = ()
    always: frozenset[str] = frozenset({"prime"})  # phases installed whatever the selection
    root_defaults: Mapping[str, Any] = field(default_factory=dict)  # top-level members the file needs
    project_prefix: str | None = None  # how a project install's command starts (else absolute paths)
    note: str = ""  # what to do after setup
    hooks_dir: str = "hooks"  # the scripts go to <config dir>/<hooks_dir>/mnemon/
    fixed: bool = False  # the host reads one directory only: it is used with or without --global
    plugin: Mapping[str, Render] = field(default_factory=dict)  # path under the config dir -> its text
    check: Mapping[str, Any] = field(default_factory=dict)  # the payload of setup's trial run of prime
    advice: Callable[[Path], list[str]] | None = None  # notes on the host's own config after an install

    def config_dir(self, is_global: bool) -> Path:
        return self.global_dir() if is_global or self.fixed else Path.cwd() / self.local_dir

    def detected(self) -> bool:
        return shutil.which(self.binary) is not None or self.global_dir().is_dir()

    def chosen_phases(self, selection: Mapping[str, bool]) -> list[Phase]:
        return [p for p in self.phases if p.name in self.always or selection.get(p.name, False)]

    def scripts_dir(self, cfg: Path) -> Path:
        return cfg / self.hooks_dir / "mnemon"


def home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def script_text(cli: list[str], phase: str, host: str, options: list[str]) -> str:
    line = " ".join(shlex.quote(p) for p in [*cli, "hook", phase, "--host", host, *options])
    return f"#!/bin/sh\nexec {line}  # {MARKER}\n"


def skill_text(command: list[str]) -> str:
    return name_executable(SKILL, command)


def is_ours(path: Path) -> bool:
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
    hooks: int = 0  # entries of ours in the settings file after the install

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


def skill_dir(cfg: Path) -> Path:
    return cfg / "skills" / "mnemon"


def _manifest(cfg: Path) -> list[str]:
    path = skill_dir(cfg) / MANIFEST
    try:
        created = json.loads(path.read_text(encoding="utf-8")).get("created", [])
    except (FileNotFoundError, json.JSONDecodeError, AttributeError):
        return []
    return [c for c in created if isinstance(c, str)]


def _refuse_foreign(path: Path) -> None:
    if path.exists() and not is_ours(path):
        raise ValidationError(f"{path} exists and was not {MARKER}; move it away and run setup again",
                              field="target")


def _read(path: Path) -> str:
    """The file's text as it is: bytes decoded, CRLF line ends kept (text mode would turn them into LF)."""
    return path.read_bytes().decode("utf-8") if path.exists() else ""


def _missing_dirs(cfg: Path, path: Path) -> set[str]:
    """The directories from `cfg` down to `path`'s that do not exist yet (relative to cfg; "." is cfg)."""
    out, d = set(), path.parent
    while True:
        if not d.exists():
            out.add(str(d.relative_to(cfg)) if d != cfg else ".")
        if d == cfg or cfg not in d.parents:
            return out
        d = d.parent


# ---------------------------------------------------------------- the settings file, JSON or YAML


def _install_entries(target: Target, text: str, name: str, entries: dict[str, list[dict[str, Any]]]) -> str:
    """The settings text with our old entries out and `entries` in."""
    if target.layout == "yaml":
        config = YamlConfig(text, name)
        config.strip()
        config.add(entries)
        return config.text
    doc = Document(text, name)
    hooks_file.strip(doc, target.layout)  # type: ignore[arg-type]
    hooks_file.add(doc, target.layout, entries, dict(target.root_defaults))  # type: ignore[arg-type]
    return doc.text


def _eject_entries(target: Target, text: str, name: str) -> tuple[str, int, bool]:
    """(the text without our entries, how many went, whether nothing else is left in it)."""
    if target.layout == "yaml":
        config = YamlConfig(text, name)
        n = config.strip()
        return config.text, n, not config.text.strip()
    doc = Document(text, name)
    n = hooks_file.strip(doc, target.layout)  # type: ignore[arg-type]
    return doc.text, n, hooks_file.is_empty(doc, dict(target.root_defaults))


def _ours_in(target: Target, text: str, name: str) -> int:
    if target.layout == "yaml":
        return YamlConfig(text, name).ours()
    return hooks_file.ours_in(Document(text, name), target.layout)  # type: ignore[arg-type]


# ---------------------------------------------------------------- install and eject


def plan_install(target: Target, cfg: Path, selection: Mapping[str, bool], cli: list[str],
                 options: list[str], is_global: bool) -> Plan:
    plan = Plan(target, cfg)
    command = [*cli, *options]
    skill = skill_dir(cfg) / "SKILL.md"
    _refuse_foreign(skill)
    plan.write.append((skill, skill_text(command), 0o644))
    phases = target.chosen_phases(selection)
    entries: dict[str, list[dict[str, Any]]] = {}
    for phase in target.phases if not target.plugin else ():
        script = target.scripts_dir(cfg) / hooks_file.SCRIPTS[phase.name]
        _refuse_foreign(script)
        if phase not in phases:
            if script.exists() and script not in plan.delete:
                plan.delete.append(script)  # a phase turned off since the last install
            continue
        if all(script != p for p, _, _ in plan.write):
            plan.write.append((script, script_text(cli, phase.name, target.name, options), 0o755))
        entries.setdefault(phase.event, []).append(_entry(target, cfg, phase, script, is_global))
    names = [p.name for p in phases]
    for rel, render in target.plugin.items():
        _refuse_foreign(cfg / rel)
        plan.write.append((cfg / rel, render(command, list(dict.fromkeys(names))), 0o644))
    created = set(_manifest(cfg))
    for path, _, _ in plan.write:
        created |= _missing_dirs(cfg, path)
    if target.settings_file:
        path = cfg / target.settings_file
        text = _install_entries(target, _read(path), str(path), entries)
        if not path.exists():
            created.add(target.settings_file)
            created |= _missing_dirs(cfg, path)
        plan.settings = (path, text)
        plan.hooks = _ours_in(target, text, str(path))
    manifest = json.dumps({"created": sorted(created)}, indent=2) + "\n"
    plan.write.append((skill_dir(cfg) / MANIFEST, manifest, 0o644))
    plan.report.append(f"  skill     {skill}")
    if target.plugin:
        shown = ", ".join(dict.fromkeys(names))
        plan.report += [f"  plugin    {cfg / rel}" + (f" ({shown})" if i == 0 else "")
                        for i, rel in enumerate(target.plugin)]
    elif phases:
        plan.report.append(f"  hooks     {target.scripts_dir(cfg)}/ ({', '.join(dict.fromkeys(names))})")
    if plan.settings:
        plan.report.append(f"  settings  {plan.settings[0]}")
    return plan


def _entry(target: Target, cfg: Path, phase: Phase, script: Path, is_global: bool) -> dict[str, Any]:
    """The settings entry that runs `script`: `$CLAUDE_PROJECT_DIR/...` for a project install where the host
    offers it (the command then works from any directory of the project), else the absolute path."""
    project = target.project_prefix is not None and not is_global and not _same(cfg, target.global_dir())
    if project:
        command = f"{target.project_prefix}{shlex.quote(str(script.relative_to(Path.cwd())))}"
    else:
        command = shlex.quote(str(script.absolute()))
    if target.layout in ("flat", "yaml"):
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


def _our_files(target: Target, cfg: Path) -> list[Path]:
    scripts = [target.scripts_dir(cfg) / s for s in dict.fromkeys(hooks_file.SCRIPTS.values())]
    return [skill_dir(cfg) / "SKILL.md", *(cfg / rel for rel in target.plugin), *scripts]


def installed(target: Target, cfg: Path) -> bool:
    """Whether anything of ours is there: the skill, a hook script or plugin file, or an entry in the
    settings file."""
    if any(p.is_file() and is_ours(p) for p in _our_files(target, cfg)):
        return True
    if target.settings_file and (cfg / target.settings_file).is_file():
        path = cfg / target.settings_file
        return _ours_in(target, _read(path), str(path)) > 0
    return False


def plan_eject(target: Target, cfg: Path) -> Plan:
    plan = Plan(target, cfg)
    created = set(_manifest(cfg))
    if target.settings_file and (path := cfg / target.settings_file).is_file():
        text, n, empty = _eject_entries(target, _read(path), str(path))
        if n:
            gone = target.settings_file in created and empty
            plan.settings = (path, None if gone else text)
            plan.report.append(f"  settings  {path}: {n} hook(s) removed" + (", file removed" if gone else ""))
    for path in _our_files(target, cfg):
        if not path.exists():
            continue
        if is_ours(path):
            plan.delete.append(path)
            plan.report.append(f"  removed   {path}")
        else:
            plan.report.append(f"  kept      {path} (not {MARKER})")
    if (manifest := skill_dir(cfg) / MANIFEST).exists():
        plan.delete.append(manifest)
    # mnemon's own directories (named so) go once empty; another directory only when setup created it.
    ours = {skill_dir(cfg), target.scripts_dir(cfg)}
    ours |= {d for rel in target.plugin if (d := (cfg / rel).parent).name == "mnemon"}
    made = {cfg / rel for rel in created if rel != "." and rel != target.settings_file}
    # Deepest first, so a directory is empty by the time its parent is tried; cfg itself last.
    plan.rmdirs = sorted((ours | made) - {cfg}, key=lambda d: (-len(d.parts), str(d)))
    if "." in created:
        plan.rmdirs.append(cfg)
    return plan
