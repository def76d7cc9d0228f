"""Nanobot: the skill only, in `.nanobot/` or (`--global`) `~/.nanobot/workspace/`."""

from __future__ import annotations

from pathlib import Path

from .base import Target, home


def _global_dir() -> Path:
    return home() / ".nanobot" / "workspace"


TARGET = Target(
    name="nanobot", display="Nanobot", binary="nanobot", local_dir=".nanobot", global_dir=_global_dir,
    note="Restart Nanobot to load the mnemon skill.",
)
