"""Pi: `.pi/` or (`--global`) `$PI_CODING_AGENT_DIR`, else `~/.pi/agent/`; an extension, no settings edit.

`extensions/mnemon.ts` (auto-discovered, loaded by jiti) carries the phases: the guide, the reminder and the
nudge about the previous exchange go into the turn's system prompt (`before_agent_start`), which Pi rebuilds
every turn, so none of them piles up the way the original's persistent guide message did on every prompt;
the nudge is asked for at `agent_end` (the original's toast never reached the model); after `session_compact`
the next model call gets the compaction notice (`session_before_compact` takes no instructions, so the
original's `customInstructions` result was ignored).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import plugins
from .base import MARKER, Phase, Target, home


def _agent_dir() -> Path:
    return Path(os.path.expanduser(os.environ.get("PI_CODING_AGENT_DIR") or str(home() / ".pi" / "agent")))


def _extension(command: list[str], phases: list[str]) -> str:
    return plugins.script("pi", "pi.ts", MARKER, command, phases)


TARGET = Target(
    name="pi", display="Pi", binary="pi", local_dir=".pi", global_dir=_agent_dir,
    phases=(Phase("prime", "before_agent_start"), Phase("remind", "before_agent_start"),
            Phase("nudge", "agent_end"), Phase("compact", "session_compact")),
    plugin={"extensions/mnemon.ts": _extension},
    note="Start a new Pi session or run /reload to load the extension and the skill.",
)
