"""OpenCode: `.opencode/` or (`--global`) `$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode/`; a plugin,
no config edit.

`plugins/mnemon.js` (auto-loaded) carries the phases: the guide joins the system prompt once per session
(`experimental.chat.system.transform`; with the commands naming this mnemon, which the `instructions` entry
of later originals could not), the reminder and the nudge about the previous exchange join the latest user
message (`experimental.chat.messages.transform`; the original only logged its nudge), and the compaction
prompt gets the compaction hint (`experimental.session.compacting`).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import plugins
from .base import MARKER, Phase, Target, home


def _global_dir() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or home() / ".config") / "opencode"


def _plugin(command: list[str], phases: list[str]) -> str:
    return plugins.script("opencode", "opencode.js", MARKER, command, phases)


TARGET = Target(
    name="opencode", display="OpenCode", binary="opencode", local_dir=".opencode", global_dir=_global_dir,
    phases=(Phase("prime", "experimental.chat.system.transform"),
            Phase("remind", "experimental.chat.messages.transform"),
            Phase("nudge", "experimental.chat.messages.transform"),
            Phase("compact", "experimental.session.compacting")),
    plugin={"plugins/mnemon.js": _plugin},
    note="Restart OpenCode to load the plugin and the skill.",
)
