"""Readers for the chat exports people actually have, all turned into `Conversation`s of `Message`s.

Formats (detected from the content, not the file name):
- Markdown / plain-text transcripts: `User:` / `**Assistant:**` / `## Human` role lines, optional timestamps;
  text without role lines is read as one document.
- ChatGPT `conversations.json`: the message tree under `mapping`, current branch only (walked up from
  `current_node`), hidden and tool messages left out.
- Claude `conversations.json`: `chat_messages` with `sender` human/assistant and `content` text blocks.
- JSON or JSONL lists of `{role, content, timestamp?}` (or `{"messages": [...]}`).
- LangChain message lists: `messages_to_dict` (`{type, data}`) or `dumpd` (`{lc, type, id, kwargs}`).

Timestamps become RFC 3339 UTC (`2024-03-15T09:30:00Z`), the draft's `created_at` form.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from mnemon_core.timeutil import iso

from .errors import UnknownFormatError

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".log", ""}

ROLE_ALIASES = {
    "user": "user", "human": "user", "you": "user", "me": "user",
    "assistant": "assistant", "ai": "assistant", "bot": "assistant", "model": "assistant",
    "chatgpt": "assistant", "gpt": "assistant", "claude": "assistant", "gemini": "assistant",
    "system": "system",
    "tool": "tool", "function": "tool",
}
KEPT_ROLES = ("user", "assistant", "system")
TIMESTAMP_KEYS = ("timestamp", "created_at", "create_time", "time", "date", "datetime")


@dataclass
class Message:
    role: str  # user | assistant | system | document
    content: str
    timestamp: str | None = None


@dataclass
class Conversation:
    title: str
    messages: list[Message] = field(default_factory=list)


@dataclass
class Transcript:
    """What a file held: its format and its conversations (empty ones dropped)."""

    path: str
    format: str
    conversations: list[Conversation]

    @property
    def message_count(self) -> int:
        return sum(len(c.messages) for c in self.conversations)


# ---------------------------------------------------------------- timestamps


def to_rfc3339(value: Any) -> str | None:
    """Epoch seconds (or milliseconds), ISO 8601 / RFC 3339 text, or `YYYY-MM-DD HH:MM` → UTC RFC 3339;
    None when it cannot be read (a bad timestamp never loses the message)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        ts = float(value)
        if ts > 1e11:  # milliseconds
            ts /= 1000.0
        return iso(ts) if ts > 0 else None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return to_rfc3339(float(text))
    t = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)  # exports without an offset are taken as UTC
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def norm_role(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return ROLE_ALIASES.get(value.strip().lower())


def text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of parts / content blocks."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and p.get("type") in (None, "text", "input_text", "output_text"):
                t = p.get("text")
                if isinstance(t, str):
                    parts.append(t)
        return "\n".join(x.strip() for x in parts if x.strip())
    return ""


# ---------------------------------------------------------------- Markdown / plain text

_TS = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
_ROLE_WORDS = "|".join(sorted(ROLE_ALIASES, key=len, reverse=True))
# `## User`, `### Assistant (2024-03-15 09:30)`: a heading that is only a role (and maybe a time).
_HEADING = re.compile(
    rf"^\s*#{{1,6}}\s*(?:\[(?P<ts1>{_TS})\]\s*)?(?:\*\*|__)?(?P<role>{_ROLE_WORDS})(?:\*\*|__)?"
    rf"\s*(?:[(\[](?P<ts2>{_TS})[)\]])?\s*:?\s*$",
    re.IGNORECASE,
)
# `User: text`, `**Assistant:** text`, `[2024-03-15 09:30] Human: text`, `> **User**: text`.
_INLINE = re.compile(
    rf"^\s*(?:>\s*)?(?:\[(?P<ts1>{_TS})\]\s*)?(?:\*\*|__)?(?P<role>{_ROLE_WORDS})(?:\*\*|__)?"
    rf"\s*(?:[(\[](?P<ts2>{_TS})[)\]])?\s*(?:\*\*|__)?:(?:\*\*|__)?\s?(?P<rest>.*)$",
    re.IGNORECASE,
)
_TITLE = re.compile(r"^\s*#\s+(?P<title>.+?)\s*$")


def read_markdown(text: str, name: str) -> list[Conversation]:
    lines = text.splitlines()
    title = name
    messages: list[Message] = []
    current: Message | None = None
    body: list[str] = []

    def close() -> None:
        if current is not None:
            current.content = "\n".join(body).strip()
            if current.content:
                messages.append(current)

    fenced = False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        m = None if fenced else (_HEADING.match(line) or _INLINE.match(line))
        if m:
            close()
            ts = m.group("ts1") or m.group("ts2")
            current = Message(role=ROLE_ALIASES[m.group("role").lower()], content="", timestamp=to_rfc3339(ts))
            rest = m.groupdict().get("rest")
            body = [rest] if rest else []
            continue
        if current is None and not messages and title == name:
            t = _TITLE.match(line)
            if t:
                title = t.group("title")
        body.append(line)
    close()
    roles = {m.role for m in messages}
    if not {"user", "assistant"} <= roles:
        # Not a transcript (no role lines, or only a stray "System: …" in notes): one document.
        doc = text.strip()
        return [Conversation(title=title, messages=[Message(role="document", content=doc)])] if doc else []
    return [Conversation(title=title, messages=[m for m in messages if m.role in KEPT_ROLES])]


# ---------------------------------------------------------------- ChatGPT


def is_chatgpt(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(c, dict) and "mapping" in c for c in data)


def chatgpt_branch(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes of the current branch, root first: walk up from `current_node` (else the newest leaf)."""
    mapping: dict[str, Any] = conv.get("mapping") or {}
    node_id = conv.get("current_node")
    if node_id not in mapping:
        leaves = [n for n in mapping.values() if isinstance(n, dict) and not n.get("children")]

        def when(n: dict[str, Any]) -> float:
            msg = n.get("message") or {}
            return float(msg.get("create_time") or 0)

        node_id = max(leaves, key=when)["id"] if leaves else None
    path = []
    seen: set[str] = set()
    while node_id in mapping and node_id not in seen:  # `seen` guards against a cyclic (corrupt) tree
        seen.add(node_id)
        node = mapping[node_id]
        path.append(node)
        node_id = node.get("parent")
    return path[::-1]


def chatgpt_message(node: dict[str, Any]) -> Message | None:
    msg = node.get("message")
    if not isinstance(msg, dict):
        return None
    role = norm_role((msg.get("author") or {}).get("role"))
    meta = msg.get("metadata") or {}
    if role not in KEPT_ROLES or meta.get("is_visually_hidden_from_conversation"):
        return None
    if msg.get("recipient", "all") != "all":  # a call to a tool (code, browser), not a turn of the chat
        return None
    content = msg.get("content") or {}
    ctype = content.get("content_type")
    if ctype in ("text", "multimodal_text"):
        text = text_of(content.get("parts") or [])
    elif ctype == "code":
        text = (content.get("text") or "").strip()
    else:  # user_editable_context, tether_browsing_display, thoughts, …
        return None
    if not text:
        return None
    return Message(role=role, content=text, timestamp=to_rfc3339(msg.get("create_time")))


def read_chatgpt(data: list[dict[str, Any]]) -> list[Conversation]:
    out = []
    for conv in data:
        msgs = [m for m in (chatgpt_message(n) for n in chatgpt_branch(conv)) if m is not None]
        fallback = to_rfc3339(conv.get("create_time"))
        for m in msgs:
            m.timestamp = m.timestamp or fallback
        out.append(Conversation(title=str(conv.get("title") or "Untitled"), messages=msgs))
    return out


# ---------------------------------------------------------------- Claude


def is_claude(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(c, dict) and "chat_messages" in c for c in data)


def read_claude(data: list[dict[str, Any]]) -> list[Conversation]:
    out = []
    for conv in data:
        msgs = []
        for cm in conv.get("chat_messages") or []:
            if not isinstance(cm, dict):
                continue
            role = norm_role(cm.get("sender"))
            if role not in KEPT_ROLES:
                continue
            text = text_of(cm.get("content")) if cm.get("content") else ""
            if not text:
                text = text_of(cm.get("text") or "")
            for att in cm.get("attachments") or []:  # pasted documents carry what was discussed
                extracted = (att or {}).get("extracted_content")
                if isinstance(extracted, str) and extracted.strip():
                    text += f"\n\n[attachment {att.get('file_name') or ''}]\n{extracted.strip()}"
            if text.strip():
                msgs.append(Message(role=role, content=text.strip(), timestamp=to_rfc3339(cm.get("created_at"))))
        out.append(Conversation(title=str(conv.get("name") or "Untitled"), messages=msgs))
    return out


# ---------------------------------------------------------------- LangChain


def is_langchain_item(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get("lc") == 1 and isinstance(item.get("id"), list) and isinstance(item.get("kwargs"), dict):
        return True  # dumpd
    return isinstance(item.get("data"), dict) and isinstance(item.get("type"), str)  # messages_to_dict


LC_CLASSES = {"HumanMessage": "user", "AIMessage": "assistant", "SystemMessage": "system",
              "ToolMessage": "tool", "FunctionMessage": "tool", "ChatMessage": None}


def langchain_message(item: dict[str, Any]) -> Message | None:
    if "kwargs" in item:
        kw = item["kwargs"]
        cls = str(item["id"][-1]).removesuffix("Chunk")
        role = LC_CLASSES.get(cls) or norm_role(kw.get("role")) or norm_role(kw.get("type"))
        data = kw
    else:
        data = item["data"]
        role = norm_role({"human": "user", "ai": "assistant", "chat": data.get("role")}.get(item["type"],
                                                                                             item["type"]))
    if role not in KEPT_ROLES:
        return None
    text = text_of(data.get("content"))
    if not text:
        return None
    extra = {**(data.get("response_metadata") or {}), **(data.get("additional_kwargs") or {})}
    ts = next((extra[k] for k in TIMESTAMP_KEYS if extra.get(k) is not None), None)
    return Message(role=role, content=text, timestamp=to_rfc3339(ts))


# ---------------------------------------------------------------- generic {role, content, timestamp?}


def is_message_item(item: Any) -> bool:
    return isinstance(item, dict) and "content" in item and ("role" in item or "sender" in item or "author" in item)


def generic_message(item: dict[str, Any]) -> Message | None:
    author = item.get("role", item.get("sender", item.get("author")))
    if isinstance(author, dict):
        author = author.get("role")
    role = norm_role(author)
    if role not in KEPT_ROLES:
        return None
    text = text_of(item.get("content"))
    if not text:
        return None
    ts = next((item[k] for k in TIMESTAMP_KEYS if item.get(k) is not None), None)
    return Message(role=role, content=text, timestamp=to_rfc3339(ts))


def _conversation(read: Callable[[dict[str, Any]], Message | None]) -> Callable[[list[Any], str], list[Conversation]]:
    """A reader of a list of messages: one conversation of those it can read."""
    def conversation(items: list[Any], title: str) -> list[Conversation]:
        msgs = [read(x) for x in items]
        return [Conversation(title=title, messages=[m for m in msgs if m])]

    return conversation


# ---------------------------------------------------------------- the formats


class Reader(NamedTuple):
    """One export format: its name, what it is (as errors list it), whether a JSON list is one (None: the
    text fallback), and how to read that list (and the file's title) into conversations."""

    name: str
    about: str
    detect: Callable[[list[Any]], bool] | None
    read: Callable[[list[Any], str], list[Conversation]] | None
    conversations: bool = False  # the list holds whole conversations (else the messages of one)


def _all(item_is: Callable[[Any], bool]) -> Callable[[list[Any]], bool]:
    return lambda items: bool(items) and all(item_is(x) for x in items)


# In the order errors list them, and asked in this order (the markdown reader is the fallback for text).
READERS: tuple[Reader, ...] = (
    Reader("markdown", "Markdown / plain-text transcripts (.md, .txt)", None, None),
    Reader("chatgpt", "ChatGPT conversations.json", is_chatgpt, lambda d, _: read_chatgpt(d), True),
    Reader("claude", "Claude conversations.json", is_claude, lambda d, _: read_claude(d), True),
    # A list of LangChain messages that are also {role, content} items is LangChain's.
    Reader("messages", "JSON or JSONL lists of {role, content, timestamp?}",
           lambda d: _all(is_message_item)(d) and not _all(is_langchain_item)(d), _conversation(generic_message)),
    Reader("langchain", "LangChain message lists (messages_to_dict or dumpd)", _all(is_langchain_item),
           _conversation(langchain_message)),
)
FORMATS = {r.name: r.about for r in READERS}
FORMAT_LIST = "; ".join(FORMATS.values())


def read_list(items: list[Any], title: str, path: str, *, conversations: bool = True) -> tuple[str, list[Conversation]]:
    """A JSON list by the first reader that takes it; `conversations=False`: only the message-list readers (a
    `{"messages": [...]}` wrapper)."""
    for r in READERS:
        if r.detect is not None and r.read is not None and (conversations or not r.conversations) and r.detect(items):
            return r.name, r.read(items, title)
    bad = next((x for x in items if not (is_message_item(x) or is_langchain_item(x))), None)
    raise UnknownFormatError(path, f"a JSON list whose items are not messages, e.g. {_peek(bad)}", FORMAT_LIST)


def _peek(value: Any) -> str:
    if isinstance(value, dict):
        return "an object with keys " + ", ".join(sorted(map(str, value))[:6])
    return type(value).__name__


# ---------------------------------------------------------------- entry point


def parse_json_text(text: str) -> Any:
    """A JSON document, or JSONL (one value per line); raises ValueError when it is neither."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as first:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) < 2:
            raise ValueError(str(first)) from None
        try:
            return [json.loads(ln) for ln in lines]
        except json.JSONDecodeError:
            raise ValueError(str(first)) from None


def read_json_data(data: Any, title: str, path: str) -> tuple[str, list[Conversation]]:
    if isinstance(data, dict):
        if isinstance(data.get("messages"), list):
            return read_list(data["messages"], str(data.get("title") or title), path, conversations=False)
        # One conversation, or one message (JSONL of one line): a list of one.
        if "mapping" in data or "chat_messages" in data or is_message_item(data) or is_langchain_item(data):
            return read_list([data], title, path)
        raise UnknownFormatError(path, f"JSON holding {_peek(data)}", FORMAT_LIST)
    if isinstance(data, list):
        if not data:
            raise UnknownFormatError(path, "an empty JSON list", FORMAT_LIST)
        return read_list(data, title, path)
    raise UnknownFormatError(path, f"a JSON {type(data).__name__}", FORMAT_LIST)


def read_export(path: str | Path) -> Transcript:
    """Read a chat export, whatever its format. Raises `UnknownFormatError` naming the formats we read."""
    p = Path(path)
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnknownFormatError(str(p), "not UTF-8 text", FORMAT_LIST) from None
    if "\x00" in text:
        raise UnknownFormatError(str(p), "binary content", FORMAT_LIST)
    if not text.strip():
        raise UnknownFormatError(str(p), "the file is empty", FORMAT_LIST)
    stripped = text.lstrip()
    title = p.stem
    if stripped[:1] in "[{":
        try:
            data = parse_json_text(text)
        except ValueError as e:
            if p.suffix.lower() in (".json", ".jsonl"):
                raise UnknownFormatError(str(p), f"invalid JSON: {e}", FORMAT_LIST) from None
        else:
            fmt, convs = read_json_data(data, title, str(p))
            return Transcript(str(p), fmt, [c for c in convs if c.messages])
    if p.suffix.lower() not in TEXT_SUFFIXES:
        raise UnknownFormatError(str(p), f"a {p.suffix} file that is not JSON", FORMAT_LIST)
    convs = read_markdown(text, title)
    return Transcript(str(p), "markdown", [c for c in convs if c.messages])
