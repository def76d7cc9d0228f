"""Coding-agent hosts: `mnemon setup` installs a skill, the guide and hooks (or a plugin) into Claude Code,
Codex, Cursor, Hermes, OpenClaw, Pi and OpenCode (and skill-only hosts); `mnemon hook` is what those hooks
run. See docs/agents.md."""

# The command line's choices (`mnemon hook PHASE --host HOST`), here so that building the parser imports nothing.
PHASES = ("prime", "remind", "nudge", "compact")
HOSTS = ("claude-code", "codex", "cursor", "hermes", "openclaw", "pi", "opencode")
