"""Codex: `.codex/` or (`--global`) `$CODEX_HOME`, else `~/.codex/`; hooks in `hooks.json`.

Codex reads hook stdout as JSON (developers.openai.com/codex/hooks): the context goes out as
`hookSpecificOutput.additionalContext`, the nudge as a non-blocking `systemMessage`, as the original did.
Codex runs a new hook only once it is reviewed and trusted.
"""

from __future__ import annotations

import os
from pathlib import Path

from .base import Phase, Target, home


def _global_dir() -> Path:
    return Path(os.environ.get("CODEX_HOME") or home() / ".codex")


TARGET = Target(
    name="codex", display="Codex", binary="codex", local_dir=".codex", global_dir=_global_dir,
    settings_file="hooks.json", layout="grouped",
    phases=(
        Phase("prime", "SessionStart", {"matcher": "startup|resume|clear", "timeout": 30,
                                        "statusMessage": "Loading mnemon memory"}),
        Phase("remind", "UserPromptSubmit", {"timeout": 30, "statusMessage": "mnemon: recall reminder"}),
        Phase("nudge", "Stop", {"timeout": 30, "statusMessage": "mnemon: remember reminder"}),
    ),
    note="Start a new Codex session and trust the mnemon hooks when Codex asks.",
)
