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
at which text reaches the model, so their nudge asks about the previous exchange with the next prompt.

A nudge costs the user a model turn (Claude Code, Cursor) or the model a paragraph, so it comes only when the
exchange holds what the guide says to keep (the user's message states a decision, a preference, a correction,
or asks to remember: `CUES`), or when that many replies in a row remembered nothing (`MNEMON_NUDGE_EVERY`,
NUDGE_EVERY; 0: cues only); never when the reply already dealt with memory. The replies are counted per
session in a small file under `<data dir>/hooks/<host>/`; where the host sends the user's message with the
prompt and not with the reply (Claude Code, Codex), the remind hook notes its cue there for the nudge. The
plugins (templates/) only carry the host's event to `mnemon hook` and its answer back; they cache prime once
per session.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from ..config import make_private_dirs
from ..errors import ValidationError
from . import REGISTRY

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
# What the guide's tier A calls a directive of the user, in the user's message of an exchange: "remember this",
# a decision, a preference, a correction (English and Chinese).
CUES = re.compile(
    r"\bremember\b|\bdon'?t forget\b|\bkeep in mind\b|\bfrom now on\b|\bgoing forward\b|记住|别忘"
    r"|\bdecid(?:e|ed|ing)\b|\bdecision\b|\blet'?s (?:go with|use|stick with|keep)\b"
    r"|\bwe(?:'ll| will) (?:go with|use)\b|\bsettled on\b|决定"
    r"|\bprefer(?:s|red|ence)?\b|\b(?:i'?d|i would) rather\b|\bi (?:always|never|usually|hate|dislike|don'?t like)\b"
    r"|\bplease (?:always|never)\b|偏好|我喜欢|我不喜欢"
    r"|^\s*(?:no|nope)\b|\bactually,|\b(?:that'?s|that is|you'?re|you are|this is) (?:wrong|not right|incorrect)\b"
    r"|\bnot what i\b|\bi meant\b|不对|错了",
    re.I | re.M,
)
NUDGE_EVERY = 5  # MNEMON_NUDGE_EVERY's default: replies in a row that remembered nothing, then a nudge
STATE_KEEP_S = 30 * 86400  # a session's nudge state this long idle is forgotten
# Hosts whose nudge goes out with the next prompt, about the previous reply.
NEXT_PROMPT = frozenset({"hermes", "openclaw", "pi", "opencode"})
# What each host's compact hook says: before compaction, after it, or to the model that writes the summary.
_COMPACT_TEXT = {"claude-code": COMPACT, "cursor": COMPACT, "hermes": COMPACTED, "openclaw": COMPACTED,
                 "pi": COMPACTED, "opencode": COMPACT_SUMMARY}
HERMES_COMPRESSION = "compression"  # the `aux_task` of Hermes's context-compression call


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


def last_user(payload: dict[str, Any]) -> str:
    """The user's message of the exchange a nudge is about: `last_user_message` (the plugins), else the user
    message before the last assistant message of Hermes's `extra.conversation_history`; "" where the host sends
    none with the reply (Claude Code and Codex send it to the remind hook, which notes its cue)."""
    if "last_user_message" in payload:
        return text_of(payload["last_user_message"])
    history = _extra(payload).get("conversation_history")
    replied = False
    for message in reversed(history if isinstance(history, list) else []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            replied = True
        elif isinstance(message, dict) and message.get("role") == "user" and replied and (text := text_of(message)):
            return text
    return ""


def nudge_needed(host: str, payload: dict[str, Any], state: dict[str, Any], every: int) -> tuple[bool, dict[str, Any]]:
    """Whether this reply gets a nudge, and the session's state after it: `replies` in a row that remembered
    nothing, `cue` noted by the remind hook for this exchange. A nudge when the exchange holds a cue, or at the
    `every`-th such reply (0: never for that); none when the reply dealt with memory, and none that is not
    about a reply of the agent's own (a stop after our block, Cursor's follow-up, the first prompt)."""
    if payload.get("stop_hook_active") is True:  # Claude Code / Codex: this stop follows our own block
        return False, state
    loops = payload.get("loop_count")
    if isinstance(loops, int) and not isinstance(loops, bool) and loops > 0:  # Cursor: a follow-up already ran
        return False, state
    last = last_reply(payload)
    if host in NEXT_PROMPT and not last.strip():  # the first prompt: no exchange before it
        return False, state
    if _DEALT_WITH.search(last):
        return False, {"replies": 0, "cue": False}
    if state["cue"] or CUES.search(last_user(payload)):
        return True, {"replies": 0, "cue": False}
    replies = state["replies"] + 1
    if every and replies >= every:
        return True, {"replies": 0, "cue": False}
    return False, {"replies": replies, "cue": False}


def prime_text(insights: int, edges: int, data_dir: Path, command: list[str]) -> str:
    from .prompts import name_executable, prompt_dir

    text = PRIME_LINE.format(insights=insights, edges=edges) + "\n"
    guide = prompt_dir(data_dir) / "guide.md"
    if guide.is_file():
        text += name_executable(guide.read_text(encoding="utf-8"), command)
    return text


def _session_file(data_dir: Path, host: str, payload: dict[str, Any], suffix: str) -> Path:
    """A file of the host's session the payload names (a hash: ids are opaque; none: one for the host)."""
    session = str(payload.get("session_id") or payload.get("conversation_id") or payload.get("session")
                  or _extra(payload).get("session_id") or "")
    return data_dir / "hooks" / host / (hashlib.sha256(session.encode()).hexdigest()[:32] + suffix)


def _read_state(path: Path) -> dict[str, Any]:
    """A session's nudge state; a new one when there is none (or it is not ours to read)."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(state.get("replies"), int) and isinstance(state.get("cue"), bool):
            return {"replies": state["replies"], "cue": state["cue"]}
    except (OSError, ValueError, AttributeError):
        pass
    return {"replies": 0, "cue": False}


def _write_state(path: Path, state: dict[str, Any]) -> None:
    """Write the state whole (a rename); a session's first one also clears the host's files of sessions idle
    for STATE_KEEP_S."""
    if not path.exists() and path.parent.is_dir():
        cut = time.time() - STATE_KEEP_S
        for old in path.parent.glob("*.replies"):
            with contextlib.suppress(OSError):
                if old.stat().st_mtime < cut:
                    old.unlink()
    make_private_dirs(path.parent)
    tmp = path.with_name(f"{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(state), encoding="utf-8")
    tmp.replace(path)


def _hermes_compact(payload: dict[str, Any], data_dir: Callable[[], Path]) -> bool:
    """Hermes's compact hook runs twice: at `pre_auxiliary_call` it notes a compression (its output is
    ignored there), at the next `pre_llm_call` it says so once."""
    if payload.get("hook_event_name") == "pre_auxiliary_call":
        if _extra(payload).get("aux_task") == HERMES_COMPRESSION:
            flag = _session_file(data_dir(), "hermes", payload, ".compacted")
            make_private_dirs(flag.parent)
            flag.touch()
        return False
    flag = _session_file(data_dir(), "hermes", payload, ".compacted")
    if not flag.exists():
        return False
    flag.unlink(missing_ok=True)
    return True


def phases_of(host: str) -> list[str]:
    return list(REGISTRY[host][1]) if host in REGISTRY else []


def run(phase: str, host: str, stdin: IO[str] | None, counts: Callable[[], tuple[int, int, Path]],
        data_dir: Callable[[], Path], command: list[str], nudge_every: Callable[[], int]) -> str:
    """What the hook prints (possibly nothing). `counts` gives (insights, edges, data dir); only prime calls it.
    `command` is how the agent runs mnemon (the executable and the options the hook was given); `nudge_every`
    is MNEMON_NUDGE_EVERY's value."""
    envelope = REGISTRY[host][1].get(phase) if host in REGISTRY else None
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
        if host not in NEXT_PROMPT and CUES.search(text_of(payload.get("prompt"))):  # for this reply's nudge
            path = _session_file(data_dir(), host, payload, ".replies")
            _write_state(path, {**_read_state(path), "cue": True})
        text = REMIND
    elif phase == "compact":
        if host == "hermes" and not _hermes_compact(payload, data_dir):
            return ""
        text = _COMPACT_TEXT[host]
    else:
        path = _session_file(data_dir(), host, payload, ".replies")
        before = _read_state(path)
        needed, after = nudge_needed(host, payload, before, nudge_every())
        if after != before:
            _write_state(path, after)
        if not needed:
            return ""
        text = NUDGE_NEXT if host in NEXT_PROMPT else NUDGE
    out = envelope(text)
    if isinstance(out, str):
        return out if out.endswith("\n") else out + "\n"
    return json.dumps(out, ensure_ascii=False) + "\n"
