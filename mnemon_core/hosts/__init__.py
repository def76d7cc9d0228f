"""Coding-agent hosts: `mnemon setup` installs a skill, the guide and hooks into Claude Code, Codex, Cursor
(and skill-only hosts); `mnemon hook` is what those hooks run. See docs/agents.md."""
