"""`mnemon hook prime|remind|nudge|compact --host H`: what the hooks and plugins of `mnemon setup` run.

A host runs a hook on every session start, prompt or reply, so this module imports only the standard
library; only `prime` opens the store (for its counts). Each host wants its own envelope on stdout:

| phase   | claude-code          | codex                   | cursor             | hermes (shell hooks)    |
|---------|----------------------|-------------------------|--------------------|-------------------------|
| prime   | text (to context)    | hookSpecificOutput.additionalContext | additional_context | `{"context"}`, first turn only |
| remind  | text (to context)    | hookSpecificOutput.additionalContext | —       | `{"context"}`           |
| nudge   | decision block + reason | systemMessage (user) | followup_message   | `{"context"}`, next turn |
| compact | text (to the user)   | —                       | user_message       | `{"context"}`, after compression |

| phase   | openclaw (plugin)             | pi (extension)                | opencode (plugin)             |
|---------|-------------------------------|-------------------------------|-------------------------------|
| prime   | `appendSystemContext`         | `systemPrompt` (appended)     | `system` (pushed)             |
| remind  | `prependContext`              | `systemPrompt` (appended)     | `part` (on the user message)  |
| nudge   | `prependContext`, next prompt | `systemPrompt`, next prompt   | `part`, next prompt           |
| compact | `prependContext`, after it    | `message` (custom), after it  | `context` (compaction prompt) |

Claude Code shows a Stop hook's plain output to the user only, so the nudge reaches the model as the reason
of a one-time block (never while `stop_hook_active`); Codex's original nudge is a non-blocking notice; Cursor
submits the follow-up once (`loop_limit: 1`). Hermes, OpenClaw, Pi and OpenCode have no moment after a reply
at which text reaches the model, so their nudge asks about the previous exchange with the next prompt. No
nudge when the reply already dealt with memory. The plugins (templates/) only carry the host's event to
`mnemon hook` and its answer back; they cache prime once per session.
"""

from __future__ import annotations

import hashlib
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
NUDGE_NEXT = ("[mnemon] Before you answer: did the previous exchange hold durable memory not stored yet (a "
              "decision, a preference, a lasting fact)? If so, remember it (through a sub-agent where you have "
              "one), only durable, non-secret facts.")
COMPACT = ("[mnemon] Context compaction is starting. Before the context is compressed, remember the most "
           "valuable insights of this session (up to 5), through a sub-agent where you have one.")
COMPACTED = ("[mnemon] The context was just compacted, so details of this session may be gone from it: recall "
             "what the task still needs, and remember what this session learned that is not stored yet.")
COMPACT_SUMMARY = ("[mnemon] The agent keeps durable memory with mnemon. In the summary, list the decisions, "
                   "preferences and lasting facts of this session that were not stored with mnemon remember "
                   "yet, so they can be remembered after compaction; leave out secrets.")
# A reply that already remembered, delegated a remember, or answered the nudge gets no nudge.
_DEALT_WITH = re.compile(r"mnemon remember|sub-agent.{0,80}remember|durable memory|no memory is needed", re.I | re.S)
# Hosts whose nudge goes out with the next prompt, about the previous reply.
NEXT_PROMPT = frozenset({"hermes", "openclaw", "pi", "opencode"})
# What each host's compact hook says: before compaction, after it, or to the model that writes the summary.
_COMPACT_TEXT = {"claude-code": COMPACT, "cursor": COMPACT, "hermes": COMPACTED, "openclaw": COMPACTED,
                 "pi": COMPACTED, "opencode": COMPACT_SUMMARY}
HERMES_COMPRESSION = "compression"  # the `aux_task` of Hermes's context-compression call


def _part(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t, "synthetic": True}


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
    **{("hermes", p): (lambda t: {"context": t}) for p in ("prime", "remind", "nudge", "compact")},
    ("openclaw", "prime"): lambda t: {"appendSystemContext": t},
    **{("openclaw", p): (lambda t: {"prependContext": t}) for p in ("remind", "nudge", "compact")},
    **{("pi", p): (lambda t: {"systemPrompt": t}) for p in ("prime", "remind", "nudge")},
    ("pi", "compact"): lambda t: {"message": {"role": "custom", "customType": "mnemon", "content": t,
                                              "display": False}},
    ("opencode", "prime"): lambda t: {"system": t},
    ("opencode", "remind"): lambda t: {"part": _part(t)},
    ("opencode", "nudge"): lambda t: {"part": _part(t)},
    ("opencode", "compact"): lambda t: {"context": t},
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


def text_of(value: Any) -> str:
    """The text of a message in any host's shape: a string, a list of parts, `{content}`, `{text}` or
    OpenCode's `{info, parts}`; parts that are not text (tool calls, images, reasoning) count for nothing."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (text_of(v) for v in value) if t)
    if isinstance(value, dict) and value.get("type") in (None, "text"):
        for key in ("text", "content", "parts"):
            if key in value:
                return text_of(value[key])
    return ""


def _extra(payload: dict[str, Any]) -> dict[str, Any]:
    extra = payload.get("extra")
    return extra if isinstance(extra, dict) else {}


def last_reply(payload: dict[str, Any]) -> str:
    """The agent's last reply: `last_assistant_message` (Claude Code, Codex, Cursor and the plugins), else the
    last assistant message of Hermes's `extra.conversation_history`."""
    if "last_assistant_message" in payload:
        return text_of(payload["last_assistant_message"])
    history = _extra(payload).get("conversation_history")
    for message in reversed(history if isinstance(history, list) else []):
        if isinstance(message, dict) and message.get("role") == "assistant" and (text := text_of(message)):
            return text
    return ""


def nudge_needed(host: str, payload: dict[str, Any]) -> bool:
    if payload.get("stop_hook_active") is True:  # Claude Code / Codex: this stop follows our own block
        return False
    loops = payload.get("loop_count")
    if isinstance(loops, int) and not isinstance(loops, bool) and loops > 0:  # Cursor: a follow-up already ran
        return False
    last = last_reply(payload)
    if host in NEXT_PROMPT and not last.strip():  # the first prompt: no exchange before it
        return False
    return not _DEALT_WITH.search(last)


def prime_text(insights: int, edges: int, data_dir: Path, command: list[str]) -> str:
    from .prompts import name_executable, prompt_dir

    text = PRIME_LINE.format(insights=insights, edges=edges) + "\n"
    guide = prompt_dir(data_dir) / "guide.md"
    if guide.is_file():
        text += name_executable(guide.read_text(encoding="utf-8"), command)
    return text


def _compaction_flag(data_dir: Path, payload: dict[str, Any]) -> Path:
    """Where a Hermes session's compression is noted until its next turn (a hash: ids are opaque)."""
    session = str(payload.get("session_id") or _extra(payload).get("session_id") or "")
    return data_dir / "hooks" / "hermes" / (hashlib.sha256(session.encode()).hexdigest()[:32] + ".compacted")


def _hermes_compact(payload: dict[str, Any], data_dir: Callable[[], Path]) -> bool:
    """Hermes's compact hook runs twice: at `pre_auxiliary_call` it notes a compression (its output is
    ignored there), at the next `pre_llm_call` it says so once."""
    if payload.get("hook_event_name") == "pre_auxiliary_call":
        if _extra(payload).get("aux_task") == HERMES_COMPRESSION:
            flag = _compaction_flag(data_dir(), payload)
            flag.parent.mkdir(parents=True, exist_ok=True)
            flag.touch()
        return False
    flag = _compaction_flag(data_dir(), payload)
    if not flag.exists():
        return False
    flag.unlink(missing_ok=True)
    return True


def phases_of(host: str) -> list[str]:
    return [p for h, p in _ENVELOPES if h == host]


def run(phase: str, host: str, stdin: IO[str] | None, counts: Callable[[], tuple[int, int, Path]],
        data_dir: Callable[[], Path], command: list[str]) -> str:
    """What the hook prints (possibly nothing). `counts` gives (insights, edges, data dir); only prime calls it.
    `command` is how the agent runs mnemon (the executable and the options the hook was given)."""
    envelope = _ENVELOPES.get((host, phase))
    if envelope is None:
        raise ValidationError(f"{host} has no {phase} hook; its hooks: " + ", ".join(phases_of(host)),
                              field="phase")
    payload = read_payload(stdin)
    if phase == "prime":
        if host == "hermes" and _extra(payload).get("is_first_turn") is not True:
            return ""  # Hermes runs it every turn; the guide goes with the session's first
        insights, edges, where = counts()
        text = prime_text(insights, edges, where, command)
    elif phase == "remind":
        text = REMIND
    elif phase == "compact":
        if host == "hermes" and not _hermes_compact(payload, data_dir):
            return ""
        text = _COMPACT_TEXT[host]
    elif nudge_needed(host, payload):
        text = NUDGE_NEXT if host in NEXT_PROMPT else NUDGE
    else:
        return ""
    out = envelope(text)
    if isinstance(out, str):
        return out if out.endswith("\n") else out + "\n"
    return json.dumps(out, ensure_ascii=False) + "\n"
