"""mnemon's entries in Hermes's `config.yaml`, and nothing else of it.

Hermes keeps its shell hooks in the `hooks:` mapping of its YAML config: one list of `{command, timeout}` per
event. The config is the user's (model, keys, comments), so, as with the JSON settings (`jsonc`), mnemon
never re-serialises it: it adds its items as lines after the last line of an event's list and takes exactly
those lines out again; every other byte stays. The file is read only as far as that needs: block style, a
top-level `hooks:` whose value is a block, nothing, `{}` or null, events whose value is a block sequence.
Anything else there (flow style, anchors) is refused with the line it is on, before anything is written.

A hook is mnemon's when its command runs one of setup's scripts (`settings.is_ours`). Where setup had to
create `hooks:` or replace an empty `hooks: {}` to add the first entry, the line says so in a comment
(`MARK`), and eject puts back what was there once nothing else is under it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError
from .settings import is_ours

MARK = "# written by mnemon setup"
_WAS = ", was: "
_KEY = re.compile(r"(?P<key>[A-Za-z_][\w.-]*|\"[^\"\\]*\"|'[^']*')[ \t]*:(?:[ \t]+(?P<rest>.*))?$")
_EMPTY = ("{}", "null", "~", "")
INDENT = 2  # of the events under a `hooks:` setup creates, and of their items (when nothing shows the style)


def _content(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _key(line: str) -> tuple[str, str, str] | None:
    """(key, value, comment) of a `key: value  # comment` line."""
    m = _KEY.match(line.strip(" ").rstrip("\r\n"))
    if not m:
        return None
    key = m.group("key").strip("\"'")
    value, comment = _split_comment(m.group("rest") or "")
    return key, value, comment


def _split_comment(rest: str) -> tuple[str, str]:
    rest = rest.strip()
    if rest.startswith("#"):
        return "", rest
    m = re.search(r"[ \t]#", rest)
    if m and not rest.startswith(("'", '"')):
        return rest[:m.start()].rstrip(), rest[m.start():].strip()
    return rest, ""


def _scalar(text: str) -> str:
    """A plain or quoted YAML scalar's string (what a command value can be)."""
    text = text.strip()
    if text.startswith('"'):
        end = text.rfind('"')
        try:
            return json.loads(text[:end + 1]) if end > 0 else text
        except json.JSONDecodeError:
            return text[1:end]
    if text.startswith("'"):
        end = text.rfind("'")
        return text[1:end].replace("''", "'") if end > 0 else text
    return _split_comment(text)[0]


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))  # a double-quoted YAML scalar is a JSON string


@dataclass
class _Item:
    start: int
    end: int  # one past its last line of content
    command: str | None


@dataclass
class _Event:
    name: str
    line: int
    end: int
    items: list[_Item] = field(default_factory=list)
    item_indent: int | None = None


@dataclass
class _Hooks:
    line: int  # -1: there is no `hooks:`
    value: str = ""
    comment: str = ""
    end: int = 0
    indent: int | None = None
    events: list[_Event] = field(default_factory=list)


class Config:
    """The text of a config.yaml and where its hooks are; every edit splices lines and reads it again."""

    def __init__(self, text: str, name: str) -> None:
        self.name = name
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.lines = text.splitlines(keepends=True)
        self.hooks = self._read()

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def _fail(self, i: int, what: str) -> ValidationError:
        return ValidationError(f"{self.name}: {what} at line {i + 1}; mnemon edits only a block-style "
                               '"hooks:" mapping of event lists', field="settings")

    def _read(self) -> _Hooks:
        lines = self.lines
        top = [i for i, s in enumerate(lines) if _content(s) and _indent(s) == 0]
        found = [i for i in top if (k := _key(lines[i])) is not None and k[0] == "hooks"]
        if not found:
            return _Hooks(-1)
        if len(found) > 1:
            raise self._fail(found[1], '"hooks" appears twice')
        i = found[0]
        _, value, comment = _key(lines[i]) or ("", "", "")
        if value not in _EMPTY:
            raise self._fail(i, '"hooks" is not a block mapping')
        stop = next((j for j in top if j > i), len(lines))
        body = [j for j in range(i + 1, stop) if _content(lines[j])]
        hooks = _Hooks(i, value, comment, end=(body[-1] + 1) if body else i + 1)
        if body and value:
            raise self._fail(body[0], f'"hooks: {value}" has lines under it')
        if body:
            hooks.indent = _indent(lines[body[0]])
        event: _Event | None = None
        for j in body:
            ind, line = _indent(lines[j]), lines[j].strip()
            is_item = line == "-" or line.startswith("- ")
            if ind < (hooks.indent or 0):
                raise self._fail(j, "unexpected indentation")
            if ind == hooks.indent and not is_item:
                k = _key(lines[j])
                if k is None:
                    raise self._fail(j, "expected an event name")
                if k[1]:
                    raise self._fail(j, f'"{k[0]}" is not a block list')
                event = _Event(k[0], j, j + 1)
                hooks.events.append(event)
                continue
            if event is None:
                raise self._fail(j, "expected an event name")
            event.end = j + 1
            if event.item_indent is None:
                event.item_indent = ind
            if ind == event.item_indent:
                if not is_item:
                    raise self._fail(j, f'expected a "- " item of "{event.name}"')
                event.items.append(_Item(j, j + 1, None))
            elif ind < event.item_indent:
                raise self._fail(j, "unexpected indentation")
            item = event.items[-1]
            item.end = j + 1
            entry = line[1:].strip() if ind == event.item_indent else line
            k = _key(entry) if entry else None
            if k is not None and k[0] == "command" and item.command is None:
                item.command = _scalar(entry.split(":", 1)[1])
        return hooks

    def _splice(self, start: int, end: int, new: list[str]) -> None:
        self.lines[start:end] = new
        self.hooks = self._read()

    # ---------------------------------------------------------------- edits

    def _item_lines(self, entry: dict[str, Any], indent: int) -> list[str]:
        nl, pad = self.newline, " " * indent
        keys = list(entry)
        out = [f"{pad}- {keys[0]}: {_value(entry[keys[0]])}{nl}"]
        out += [f"{pad}  {k}: {_value(entry[k])}{nl}" for k in keys[1:]]
        return out

    def _style(self) -> int:
        """How far items sit right of their event here (0 for PyYAML's `- ` under the key), else INDENT."""
        for e in self.hooks.events:
            if e.item_indent is not None:
                return e.item_indent - (self.hooks.indent or 0)
        return INDENT

    def add(self, entries: dict[str, list[dict[str, Any]]]) -> None:
        """Append each entry to its event's list (creating the list, and `hooks:`, where missing)."""
        nl = self.newline
        for event, values in entries.items():
            if self.hooks.line < 0:
                if self.lines and not self.lines[-1].endswith("\n"):
                    self.lines[-1] += nl
                self._splice(len(self.lines), len(self.lines), [f"hooks:  {MARK}{nl}"])
            elif self.hooks.value:  # `hooks: {}` or null: a block now, and the line remembers what it was
                was = self.lines[self.hooks.line].rstrip("\r\n")
                self._splice(self.hooks.line, self.hooks.line + 1, [f"hooks:  {MARK}{_WAS}{was}{nl}"])
            hooks = self.hooks
            indent = hooks.indent if hooks.indent is not None else INDENT
            existing = next((e for e in hooks.events if e.name == event), None)
            if existing is None:
                lines = [f"{' ' * indent}{event}:{nl}"]
                for value in values:
                    lines += self._item_lines(value, indent + self._style())
                self._splice(hooks.end, hooks.end, lines)
                continue
            item_indent = existing.item_indent if existing.item_indent is not None else indent + self._style()
            lines = [line for value in values for line in self._item_lines(value, item_indent)]
            self._splice(existing.end, existing.end, lines)

    def strip(self) -> int:
        """Remove every hook of ours, each event list that only held ours, and a `hooks:` setup made that is
        empty again. Returns how many hooks went."""
        removed, emptied = 0, set()
        while True:
            found = next(((e, it) for e in self.hooks.events for it in e.items if is_ours(it.command)), None)
            if found is None:
                break
            event, item = found
            self._splice(item.start, item.end, [])
            removed += 1
            emptied.add(event.name)
        for name in emptied:
            event = next((e for e in self.hooks.events if e.name == name), None)
            if event is not None and not event.items:
                self._splice(event.line, event.line + 1, [])
        hooks = self.hooks
        if removed and hooks.line >= 0 and not hooks.events and MARK in hooks.comment:
            was = hooks.comment.split(_WAS, 1)
            line = [was[1] + self.newline] if len(was) == 2 else []
            self._splice(hooks.line, hooks.line + 1, line)
        return removed

    def ours(self) -> int:
        return sum(is_ours(it.command) for e in self.hooks.events for it in e.items)
