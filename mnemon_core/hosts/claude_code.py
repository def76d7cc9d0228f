"""Claude Code: `.claude/` or (`--global`) `$CLAUDE_CONFIG_DIR`, else `~/.claude/`; hooks in `settings.json`.

Hook output (code.claude.com/docs/en/hooks): a SessionStart or UserPromptSubmit hook's stdout is added to
the context; a Stop hook's reaches the model only as the `reason` of `{"decision": "block"}`; PreCompact
output is shown to the user. A project install's commands start at `$CLAUDE_PROJECT_DIR`, so they run from
any directory of the project.
"""

from __future__ import annotations

import os
from pathlib import Path

from .base import Phase, Target, home


def _global_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or home() / ".claude")


TARGET = Target(
    name="claude-code", display="Claude Code", binary="claude", local_dir=".claude", global_dir=_global_dir,
    settings_file="settings.json", layout="grouped",
    phases=(Phase("prime", "SessionStart"), Phase("remind", "UserPromptSubmit"), Phase("nudge", "Stop"),
            Phase("compact", "PreCompact")),
    project_prefix='"$CLAUDE_PROJECT_DIR"/',
    note="Start a new Claude Code session to load the skill and the hooks.",
)
