"""Cursor: `.cursor/` or (`--global`) `~/.cursor/`; hooks in `hooks.json` (`{"version": 1, "hooks": {...}}`).

Cursor reads hook stdout as JSON: `additional_context` at session start, a `followup_message` after a reply
(submitted once: `loop_limit: 1`), a `user_message` before compaction. It has no per-prompt context hook.
"""

from __future__ import annotations

from pathlib import Path

from .base import Phase, Target, home


def _global_dir() -> Path:
    return home() / ".cursor"


TARGET = Target(
    name="cursor", display="Cursor", binary="cursor", local_dir=".cursor", global_dir=_global_dir,
    settings_file="hooks.json", layout="flat",
    phases=(
        Phase("prime", "sessionStart", {"timeout": 30}),
        Phase("nudge", "stop", {"timeout": 30, "loop_limit": 1}),
        Phase("compact", "preCompact", {"timeout": 30}),
    ),
    root_defaults={"version": 1},
    note="Restart Cursor to load the skill and the hooks.",
)
