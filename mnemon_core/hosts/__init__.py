"""Coding-agent hosts: `mnemon setup` installs a skill, the guide and hooks (or a plugin) into Claude Code,
Codex, Cursor, Hermes, OpenClaw, Pi and OpenCode (and skill-only hosts); `mnemon hook` is what those hooks
run. See docs/agents.md.

`REGISTRY` is the one list of hosts, in `mnemon setup`'s order: each host's name, its module here (whose
`TARGET` is what setup installs) and, per hook phase, how the hook's text goes out on stdout (a host with none
is skill-only). `HOSTS`, setup's targets and the hook envelopes derive from it. The standard library only, and
not even `typing`: building the parser and running a hook import this on every agent turn."""

# The command line's choices (`mnemon hook PHASE --host HOST`), here so that building the parser imports nothing.
PHASES = ("prime", "remind", "nudge", "compact")


def _part(t: str) -> dict:
    return {"type": "text", "text": t, "synthetic": True}


# host → (module, {phase: envelope}); a phase not listed is one the host has no hook for.
REGISTRY = {
    "claude-code": ("claude_code", {
        "prime": lambda t: t,
        "remind": lambda t: t,
        "nudge": lambda t: {"decision": "block", "reason": t},
        "compact": lambda t: t,
    }),
    "codex": ("codex", {
        "prime": lambda t: {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": t}},
        "remind": lambda t: {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": t}},
        "nudge": lambda t: {"continue": True, "systemMessage": t},
    }),
    "cursor": ("cursor", {
        "prime": lambda t: {"additional_context": t},
        "nudge": lambda t: {"followup_message": t},
        "compact": lambda t: {"user_message": t},
    }),
    "nanobot": ("nanobot", {}),
    "openclaw": ("openclaw", {
        "prime": lambda t: {"appendSystemContext": t},
        **{p: (lambda t: {"prependContext": t}) for p in ("remind", "nudge", "compact")},
    }),
    "pi": ("pi", {
        **{p: (lambda t: {"systemPrompt": t}) for p in ("prime", "remind", "nudge")},
        "compact": lambda t: {"message": {"role": "custom", "customType": "mnemon", "content": t, "display": False}},
    }),
    "hermes": ("hermes", {p: (lambda t: {"context": t}) for p in PHASES}),
    "opencode": ("opencode", {
        "prime": lambda t: {"system": t},
        "remind": lambda t: {"part": _part(t)},
        "nudge": lambda t: {"part": _part(t)},
        "compact": lambda t: {"context": t},
    }),
}
HOSTS = tuple(name for name, (_, envelopes) in REGISTRY.items() if envelopes)  # the hosts with hooks
