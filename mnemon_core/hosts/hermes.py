"""Hermes Agent: one directory whatever the scope, `$HERMES_HOME` or `~/.hermes/`; shell hooks in its
`config.yaml` (yamlhooks.py), scripts in `agent-hooks/mnemon/`.

Only `pre_llm_call` puts text in front of the model (`{"context": ...}`, appended to the turn's user
message and kept with it), so every phase runs there: prime on the session's first turn only (the guide
once, kept in that turn), the reminder, and the nudge about the previous reply, which it finds in the
conversation history (the original's nudge read a field Hermes does not send, so it never saw a reply that
had dealt with memory). Compact is noted at `pre_auxiliary_call` when the call is the context compression,
and said at the next turn. Hermes asks once to approve each new hook command.
"""

from __future__ import annotations

import os
from pathlib import Path

from .base import Phase, Target, home


def _home() -> Path:
    return Path(os.environ.get("HERMES_HOME") or home() / ".hermes")


TARGET = Target(
    name="hermes", display="Hermes", binary="hermes", local_dir=".hermes", global_dir=_home, fixed=True,
    settings_file="config.yaml", layout="yaml", hooks_dir="agent-hooks",
    phases=(
        Phase("prime", "pre_llm_call", {"timeout": 30}),
        Phase("compact", "pre_llm_call", {"timeout": 10}),
        Phase("remind", "pre_llm_call", {"timeout": 10}),
        Phase("nudge", "pre_llm_call", {"timeout": 10}),
        Phase("compact", "pre_auxiliary_call", {"timeout": 10}),
    ),
    check={"hook_event_name": "pre_llm_call", "extra": {"is_first_turn": True}},
    note="Start Hermes and approve the mnemon hooks when it asks (non-interactive runs: --accept-hooks).",
)
