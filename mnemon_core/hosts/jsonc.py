"""A host's settings file as its owner wrote it: JSON with `//` and `/* */` comments and trailing commas,
read with the offsets of every value, and changed by splicing text at those offsets.

Hosts keep their hooks in files people edit by hand (Claude Code's `settings.json`, Codex's and Cursor's
`hooks.json`). Loading them into a dict and writing it back would drop the comments and reformat the rest, so
mnemon never re-serialises a file: an edit removes or inserts one element's text, and every other byte stays
where it was. An insertion followed by the removal of what it inserted gives back the original bytes.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from json.decoder import scanstring
from pathlib import Path
from typing import Any

from ..errors import ValidationError

_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_BLANK = " \t\r\n\ufeff"  # the BOM counts as blank, so a file that starts with one keeps it
INDENT_UNIT = "  "  # inside a container that has no element yet to copy the indentation from


@dataclass
class Item:
    """An element of an array, or a member of an object (`key` set; `start` is where its key starts)."""

    start: int
    end: int
    value: Node
    key: str | None = None
    comma: int | None = None  # offset of the comma that follows it


@dataclass
class Node:
    kind: str  # "object", "array" or "scalar"
    start: int  # the opening bracket, or the scalar's first character
    end: int  # one past the closing bracket or the scalar
    scalar: Any = None
    items: list[Item] = field(default_factory=list)

    def get(self, key: str) -> Item | None:
        return next((m for m in self.items if m.key == key), None)

    def plain(self) -> Any:
        """The Python value (later duplicate keys win, as in `json`)."""
        if self.kind == "object":
            return {m.key: m.value.plain() for m in self.items}
        if self.kind == "array":
            return [e.value.plain() for e in self.items]
        return self.scalar


class _Parser:
    def __init__(self, text: str, name: str) -> None:
        self.s, self.name, self.i = text, name, 0
        self.last_string = ""  # what `string()` read

    def fail(self, what: str, at: int | None = None) -> ValidationError:
        at = self.i if at is None else at
        line = self.s.count("\n", 0, at) + 1
        column = at - (self.s.rfind("\n", 0, at) + 1) + 1
        return ValidationError(f"{self.name}: {what} at line {line} column {column}", field="settings")

    def blank(self) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in _BLANK:
                self.i += 1
            elif s.startswith("//", self.i):
                nl = s.find("\n", self.i)
                self.i = len(s) if nl < 0 else nl + 1
            elif s.startswith("/*", self.i):
                close = s.find("*/", self.i + 2)
                if close < 0:
                    raise self.fail("unterminated /* comment")
                self.i = close + 2
            else:
                return

    def value(self) -> Node:
        self.blank()
        s, start = self.s, self.i
        if start >= len(s):
            raise self.fail("unexpected end of file")
        c = s[start]
        if c in "{[":
            return self.container(c)
        if c == '"':
            end = self.string()
            return Node("scalar", start, end, scalar=self.last_string)
        m = _SCALAR.match(s, start)
        if not m:
            raise self.fail(f"unexpected {s[start]!r}")
        self.i = m.end()
        return Node("scalar", start, m.end(), scalar=json.loads(m.group()))

    def string(self) -> int:
        try:
            self.last_string, self.i = scanstring(self.s, self.i + 1)
        except json.JSONDecodeError as e:  # "Invalid control character at": the position follows
            what = e.msg.removesuffix(" at")
            raise self.fail(what[:1].lower() + what[1:], e.pos) from None
        return self.i

    def container(self, opener: str) -> Node:
        is_object = opener == "{"
        closer = "}" if is_object else "]"
        node = Node("object" if is_object else "array", self.i, -1)
        self.i += 1
        while True:
            self.blank()
            if self.s.startswith(closer, self.i):
                self.i += 1
                node.end = self.i
                return node
            if node.items and node.items[-1].comma is None:
                raise self.fail(f"expected ',' or '{closer}'")
            start, key = self.i, None
            if is_object:
                if not self.s.startswith('"', self.i):
                    raise self.fail("expected a member name in double quotes")
                self.string()
                key = self.last_string
                self.blank()
                if not self.s.startswith(":", self.i):
                    raise self.fail("expected ':'")
                self.i += 1
            value = self.value()
            item = Item(start if is_object else value.start, value.end, value, key)
            node.items.append(item)
            self.blank()
            if self.s.startswith(",", self.i):
                item.comma = self.i
                self.i += 1


def parse(text: str, name: str = "settings") -> Node:
    """The document's root value; a file that is empty or only blank and comments is an empty object."""
    p = _Parser(text, name)
    p.blank()
    if p.i == len(text):
        return Node("object", -1, -1)  # nothing to splice into: `Document` writes a fresh object
    root = p.value()
    p.blank()
    if p.i != len(text):
        raise p.fail("unexpected text after the document")
    return root


class Document:
    """Text plus its parse; each edit splices the text and parses it again (settings files are small)."""

    def __init__(self, text: str, name: str = "settings") -> None:
        self.name = name
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.text = text
        self.root = parse(text, name)

    def _splice(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]
        self.root = parse(self.text, self.name)

    # ---------------------------------------------------------------- layout

    def _line_indent(self, at: int) -> str:
        line = self.text.rfind("\n", 0, at) + 1
        m = re.match(r"[ \t]*", self.text[line:at])
        return m.group() if m else ""

    def _starts_line(self, at: int) -> bool:
        line = self.text.rfind("\n", 0, at) + 1
        return self.text[line:at].strip(" \t\ufeff") == ""

    def _end_of_line(self, at: int) -> int:
        """Where the line goes on after `at` when only blanks or a `//` comment follow, else `at`."""
        s, i = self.text, at
        while i < len(s) and s[i] in " \t":
            i += 1
        if s.startswith("//", i) or s.startswith("\n", i) or s.startswith("\r\n", i):
            nl = s.find("\n", i)
            nl = len(s) if nl < 0 else nl
            return nl - (s[nl - 1:nl] == "\r")
        return at

    def _render(self, value: Any, indent: str) -> str:
        unit = "\t" if indent.startswith("\t") else INDENT_UNIT
        lines = json.dumps(value, indent=unit, ensure_ascii=False).split("\n")
        return (self.newline + indent).join(lines)

    # ---------------------------------------------------------------- edits

    def append(self, container: Node, value: Any, key: str | None = None) -> None:
        """Add `value` (as member `key` of an object) after the container's last element, in its style."""
        if container.start < 0:  # an empty file
            nl = self.newline
            self.text = "{" + nl + INDENT_UNIT + self._member(key, value, INDENT_UNIT) + nl + "}" + nl
            self.root = parse(self.text, self.name)
            return
        if container.items:
            last = container.items[-1]
            if not self._starts_line(last.start):  # elements on one line: keep it one line
                self._splice(last.end, last.end, ", " + self._member(key, value, None))
                return
            # On a line of its own, after the last element's line (and its comment): that line is unchanged
            # but for the comma the last element needs now, unless it had a trailing one (then so does ours).
            indent = self._line_indent(last.start)
            trailing = last.comma is not None
            at = self._end_of_line(last.comma + 1 if last.comma is not None else last.end)
            line = self.newline + indent + self._member(key, value, indent) + ("," if trailing else "")
            if trailing:
                self._splice(at, at, line)
            else:  # one splice from the last element's end: the comma, the rest of its line, our line
                self._splice(last.end, at, "," + self.text[last.end:at] + line)
            return
        inner = self.text[container.start + 1:container.end - 1]
        base = self._line_indent(container.start)
        indent = base + ("\t" if base.startswith("\t") else INDENT_UNIT)
        new = self.newline + indent + self._member(key, value, indent)
        if inner.strip(_BLANK) == "":  # `[]`, `{ }`: the closing bracket goes on a line of its own
            self._splice(container.start + 1, container.end - 1, new + self.newline + base)
        else:  # only comments inside: they stay, after the new element
            self._splice(container.start + 1, container.start + 1, new)

    def _member(self, key: str | None, value: Any, indent: str | None) -> str:
        body = json.dumps(value, ensure_ascii=False) if indent is None else self._render(value, indent)
        return body if key is None else json.dumps(key, ensure_ascii=False) + ": " + body

    def remove(self, container: Node, index: int) -> None:
        """Take out one element with its comma, and its line(s) when it stood on lines of its own."""
        items, s = container.items, self.text
        item = items[index]
        if len(items) == 1:
            start, end = item.start, item.end if item.comma is None else item.comma + 1
            if s[container.start + 1:start].strip(_BLANK) == "" and s[end:container.end - 1].strip(_BLANK) == "":
                start, end = container.start + 1, container.end - 1
        elif index == len(items) - 1 and self._starts_line(item.start):  # the inverse of `append`
            before = items[index - 1]
            start = s.rfind("\n", 0, item.start)
            start -= s[start - 1:start] == "\r"
            end = item.end if item.comma is None else item.comma + 1
            if item.comma is None and before.comma is not None:  # the comma `append` gave the one before
                self._splice(before.comma, end, s[before.comma + 1:start])
            else:
                self._splice(start, end, "")
            return
        elif index == len(items) - 1:  # the last on a shared line: from the comma before it
            start, end = items[index - 1].comma, item.end
            assert start is not None
        else:
            assert item.comma is not None
            start, end = item.start, item.comma + 1
            while end < len(s) and s[end] in " \t":
                end += 1
            if self._starts_line(start) and s.startswith(self.newline, end):
                start, end = s.rfind("\n", 0, start) + 1, end + len(self.newline)
        self._splice(start, end, "")


def write_atomic(path: Path, text: str) -> None:
    """Replace the file in one rename (a reader sees the old or the new file, never half of one), keeping its
    permissions; a symlinked settings file (a dotfiles checkout) is written where the link points."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
