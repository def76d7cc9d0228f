"""`mnemon hook prime|remind|nudge|compact --host H`: what the hook scripts of `mnemon setup` run.

A host runs a hook on every session start, prompt or reply, so this module imports only the standard
library; only `prime` opens the store (for its counts). Each host wants its own envelope on stdout:

| phase   | when                  | claude-code                 | codex                              | cursor               |
|---------|-----------------------|-----------------------------|------------------------------------|----------------------|
| prime   | session start         | text (added to the context) | hookSpecificOutput.additionalContext | additional_context |
| remind  | each user prompt      | text (added to the context) | hookSpecificOutput.additionalContext | —                  |
| nudge   | the agent has replied | decision "block" + reason   | systemMessage (to the user)        | followup_message     |
| compact | before compaction     | text (to the user)          | —                                  | user_message         |

Claude Code shows a Stop hook's plain output to the user only, so the nudge reaches the model as the reason
of a one-time block (never while `stop_hook_active`); Codex's original nudge is a non-blocking notice; Cursor
submits the follow-up once (`loop_limit: 1`). No nudge when the reply already dealt with memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from ..errors import ValidationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

PRIME_LINE = "[mnemon] Memory active ({insights} insights, {edges} edges)."
REMIND = "[mnemon] Evaluate: recall needed? After responding, evaluate: remember needed?"
NUDGE = ("[mnemon] Consider: does this exchange warrant durable memory? If it does, remember it now (through a "
         "sub-agent where you have one), only durable, non-secret facts; if not, say that no memory is needed.")
COMPACT = ("[mnemon] Context compaction is starting. Before the context is compressed, remember the most "
           "valuable insights of this session (up to 5), through a sub-agent where you have one.")
# A reply that already remembered, delegated a remember, or answered the nudge gets no nudge.
_DEALT_WITH = re.compile(r"mnemon remember|sub-agent.{0,80}remember|durable memory|no memory is needed", re.I | re.S)

# (host, phase) -> how the text goes out; a pair not listed is a phase the host has no hook for.
_ENVELOPES: dict[tuple[str, str], Callable[[str], Any]] = {
    ("claude-code", "prime"): lambda t: t,
    ("claude-code", "remind"): lambda t: t,
    ("claude-code", "nudge"): lambda t: {"decision": "block", "reason": t},
    ("claude-code", "compact"): lambda t: t,
    ("codex", "prime"): lambda t: {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": t}},
    ("codex", "remind"): lambda t: {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                            "additionalContext": t}},
    ("codex", "nudge"): lambda t: {"continue": True, "systemMessage": t},
    ("cursor", "prime"): lambda t: {"additional_context": t},
    ("cursor", "nudge"): lambda t: {"followup_message": t},
    ("cursor", "compact"): lambda t: {"user_message": t},
}


def read_payload(stream: IO[str] | None) -> dict[str, Any]:
    """The JSON object a host sends on stdin; nothing (a terminal, an empty pipe) is an empty one."""
    if stream is None or stream.isatty():
        return {}
    text = stream.read()
    if not text.strip():
        return {}
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValidationError(f"hook input is not JSON: {e.msg} at line {e.lineno} column {e.colno}",
                              field="stdin") from None
    if not isinstance(payload, dict):
        raise ValidationError(f"hook input must be a JSON object, got {type(payload).__name__}", field="stdin")
    return payload


def nudge_needed(payload: dict[str, Any]) -> bool:
    if payload.get("stop_hook_active") is True:  # Claude Code / Codex: this stop follows our own block
        return False
    loops = payload.get("loop_count")
    if isinstance(loops, int) and not isinstance(loops, bool) and loops > 0:  # Cursor: a follow-up already ran
        return False
    last = payload.get("last_assistant_message")
    return not (isinstance(last, str) and _DEALT_WITH.search(last))


def prime_text(insights: int, edges: int, data_dir: Path) -> str:
    from .prompts import prompt_dir

    text = PRIME_LINE.format(insights=insights, edges=edges) + "\n"
    guide = prompt_dir(data_dir) / "guide.md"
    if guide.is_file():
        text += guide.read_text(encoding="utf-8")
    return text


def run(phase: str, host: str, stdin: IO[str] | None,
        counts: Callable[[], tuple[int, int, Path]]) -> str:
    """What the hook prints (possibly nothing). `counts` gives (insights, edges, data dir); only prime calls it."""
    envelope = _ENVELOPES.get((host, phase))
    if envelope is None:
        raise ValidationError(f"{host} has no {phase} hook; its hooks: "
                              + ", ".join(p for h, p in _ENVELOPES if h == host), field="phase")
    payload = read_payload(stdin)
    if phase == "prime":
        text = prime_text(*counts())
    elif phase == "remind":
        text = REMIND
    elif phase == "compact":
        text = COMPACT
    elif nudge_needed(payload):
        text = NUDGE
    else:
        return ""
    out = envelope(text)
    if isinstance(out, str):
        return out if out.endswith("\n") else out + "\n"
    return json.dumps(out, ensure_ascii=False) + "\n"
