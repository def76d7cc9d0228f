"""mnemon's entries in a host's hooks file, and nothing else of it.

Two layouts exist. Claude Code and Codex group hooks (`hooks.<Event>: [{matcher?, hooks: [{type, command}]}]`);
Cursor lists them (`hooks.<event>: [{command, ...}]`). A hook is mnemon's when its command runs one of the
scripts `mnemon setup` writes (`.../hooks/mnemon/prime.sh` and its siblings: the Go original's names too, so
its entries are replaced as well). Anything else — another tool's hook, a group that mixes one of ours with
others (only ours leaves it), comments, key order — is kept byte for byte (`jsonc`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from ..errors import ValidationError
from .jsonc import Document, Node

Layout = Literal["grouped", "flat"]
# The script of each hook phase, under `<config dir>/hooks/mnemon/` (the Go original's names).
SCRIPTS = {"prime": "prime.sh", "remind": "user_prompt.sh", "nudge": "stop.sh", "compact": "compact.sh"}
_OURS = re.compile(r"hooks/mnemon/(?:%s)\b" % "|".join(re.escape(s) for s in SCRIPTS.values()))


def is_ours(command: Any) -> bool:
    return isinstance(command, str) and _OURS.search(command) is not None


def _member(doc: Document, node: Node, key: str, kind: str, where: str = "") -> tuple[int, Node] | None:
    """The index and value of member `key` of `node`, which must be of `kind` when it is there."""
    for i, item in enumerate(node.items):
        if item.key == key:
            if item.value.kind != kind:
                raise ValidationError(f'{doc.name}: {where}"{key}" must be an {kind}', field="settings")
            return i, item.value
    return None


def _root(doc: Document) -> Node:
    if doc.root.kind != "object":
        raise ValidationError(f"{doc.name}: the top level must be an object", field="settings")
    return doc.root


def _command(entry: Node) -> Any:
    item = entry.get("command") if entry.kind == "object" else None
    return item.value.plain() if item else None


def _next_removal(doc: Document, layout: Layout) -> tuple[Node, int, list[tuple[Node, int]]] | None:
    """The first hook of ours: its container, its index, and the containers it would leave empty (innermost
    first, each with its index in its parent), which go with it."""
    root = _root(doc)
    found = _member(doc, root, "hooks", "object")
    if found is None:
        return None
    hooks_index, hooks = found
    for ev_index, event in enumerate(hooks.items):
        if event.value.kind != "array":
            raise ValidationError(f'{doc.name}: "hooks"."{event.key}" must be an array', field="settings")
        entries = event.value
        for i, entry in enumerate(entries.items):
            if layout == "flat":
                if is_ours(_command(entry.value)):
                    return entries, i, [(hooks, ev_index), (root, hooks_index)]
                continue
            group = entry.value
            inner = _member(doc, group, "hooks", "array", f'"hooks"."{event.key}"[{i}].') \
                if group.kind == "object" else None
            if inner is None:
                continue
            for j, hook in enumerate(inner[1].items):
                if is_ours(_command(hook.value)):
                    return inner[1], j, [(entries, i), (hooks, ev_index), (root, hooks_index)]
    return None


def strip(doc: Document, layout: Layout) -> int:
    """Remove every hook of ours, and each group, event list and `hooks` object that only held ours.
    Returns how many hooks went."""
    removed = 0
    while (found := _next_removal(doc, layout)) is not None:
        container, index, parents = found
        # A container left with nothing goes with the hook (a group, an event's list, `hooks`); never the root.
        for parent, parent_index in parents:
            if len(container.items) > 1:
                break
            container, index = parent, parent_index
        doc.remove(container, index)
        removed += 1
    return removed


def add(doc: Document, layout: Layout, entries: dict[str, list[dict[str, Any]]],
        root_defaults: dict[str, Any] | None = None) -> None:
    """Append our entries to each event's list (creating the list, and `hooks`, where missing)."""
    for key, value in (root_defaults or {}).items():
        if _root(doc).get(key) is None:
            doc.append(doc.root, value, key=key)
    for event, values in entries.items():
        for value in values:
            hooks = _member(doc, _root(doc), "hooks", "object")
            if hooks is None:
                doc.append(doc.root, {event: [value]}, key="hooks")
                continue
            existing = _member(doc, hooks[1], event, "array", '"hooks".')
            if existing is None:
                doc.append(hooks[1], [value], key=event)
            else:
                doc.append(existing[1], value)


def ours_in(doc: Document, layout: Layout) -> int:
    """How many hooks of ours the document holds."""
    copy = Document(doc.text, doc.name)
    return strip(copy, layout)


def is_empty(doc: Document, root_defaults: dict[str, Any] | None = None) -> bool:
    """Whether nothing is left but what `add` itself puts at the top level (Cursor's `"version": 1`)."""
    defaults = root_defaults or {}
    return all(k in defaults and defaults[k] == v for k, v in _root(doc).plain().items())
