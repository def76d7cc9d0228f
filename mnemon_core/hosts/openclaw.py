"""OpenClaw: one directory whatever the scope, the state dir `$OPENCLAW_STATE_DIR` or `~/.openclaw/` (OpenClaw
reads no project directory: the original's `./.openclaw/` was never loaded); a plugin, no config edit.

The plugin (`extensions/mnemon/`, loaded from the state dir's extensions without any config unless
`plugins.allow` is set) carries every phase through `before_prompt_build`, whose context fields reach the
model: the guide as system context (not the original's internal `agent:bootstrap` hook, whose extra file
OpenClaw may filter and which needs enabling), the reminder, the nudge about the previous exchange, and
after `after_compaction` the compaction notice (OpenClaw's compaction hooks only observe).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import plugins
from .base import MARKER, Phase, Target, home
from .jsonc import parse

PLUGIN = "extensions/mnemon"
DESCRIPTION = f"mnemon graph memory: recall before answering, remember what lasts ({MARKER})"


def _state_dir() -> Path:
    return Path(os.environ.get("OPENCLAW_STATE_DIR") or home() / ".openclaw")


def _index(command: list[str], phases: list[str]) -> str:
    return plugins.script("openclaw", "openclaw.js", MARKER, command, phases)


def _package(command: list[str], phases: list[str]) -> str:
    return plugins.json_file({"name": "mnemon-openclaw", "private": True, "type": "module",
                              "description": DESCRIPTION, "openclaw": {"extensions": ["./index.js"]}})


def _manifest(command: list[str], phases: list[str]) -> str:
    return plugins.json_file({"id": "mnemon", "name": "mnemon", "description": DESCRIPTION,
                              "activation": {"onCapabilities": ["hook"]},
                              "configSchema": {"type": "object", "additionalProperties": False, "properties": {}}})


def advice(cfg: Path) -> list[str]:
    """What in `openclaw.json` would keep the plugin from loading (it is JSON5: a file our JSONC reader cannot
    read is only mentioned)."""
    path = cfg / "openclaw.json"
    if not path.is_file():
        return []
    try:
        config = parse(path.read_text(encoding="utf-8"), str(path)).plain()
    except (ValueError, UnicodeDecodeError):
        return [f"  note      {path} is not plain JSON: if it sets plugins.allow, add \"mnemon\" to it"]
    plugins_config = config.get("plugins") if isinstance(config, dict) else None
    if not isinstance(plugins_config, dict):
        return []
    out = []
    allow = plugins_config.get("allow")
    if isinstance(allow, list) and "mnemon" not in allow:
        out.append(f'  note      {path} sets plugins.allow without "mnemon": add it, or the plugin stays off')
    entry = (plugins_config.get("entries") or {}).get("mnemon") if isinstance(plugins_config.get("entries"),
                                                                             dict) else None
    if isinstance(entry, dict) and entry.get("enabled") is False:
        out.append(f"  note      {path} disables the plugin (plugins.entries.mnemon.enabled is false)")
    return out


TARGET = Target(
    name="openclaw", display="OpenClaw", binary="openclaw", local_dir=".openclaw", global_dir=_state_dir,
    fixed=True,
    phases=(Phase("prime", "before_prompt_build"), Phase("remind", "before_prompt_build"),
            Phase("nudge", "before_prompt_build"), Phase("compact", "after_compaction")),
    plugin={f"{PLUGIN}/index.js": _index, f"{PLUGIN}/package.json": _package,
            f"{PLUGIN}/openclaw.plugin.json": _manifest},
    advice=advice,
    note="Restart the OpenClaw gateway to load the plugin and the skill.",
)
