"""Step one: validate a remember (reference §3.1). Lengths are bytes; every error names the field and limit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ..models import Category, EntityMode
from .constants import (
    MAX_CONTENT_BYTES,
    MAX_ENTITIES,
    MAX_ENTITY_BYTES,
    MAX_SESSION_BYTES,
    MAX_SOURCE_BYTES,
    MAX_TAG_BYTES,
    MAX_TAGS,
)

CATEGORIES = ", ".join(c.value for c in Category)


@dataclass(frozen=True)
class RememberInput:
    content: str
    category: Category
    importance: int
    tags: list[str]
    entities: list[str]
    entity_mode: EntityMode
    source: str


def validate_text(value: Any, field: str) -> str:
    """Every text argument of the `Memory` API passes here: a str that encodes as UTF-8. Command-line bytes
    that are not UTF-8 reach Python as lone surrogates (U+DC80-U+DCFF), which SQLite, Postgres and stdout
    refuse; the error names the field and the first bad character instead."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, got {type(value).__name__}", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        code = ord(value[e.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"lone surrogate U+{code:04X}"
        raise ValidationError(f"{field} is not valid UTF-8 text ({what} at character {e.start})",
                              field=field) from None
    return value


def split_list(value: str | Sequence[str] | None, field: str) -> list[str]:
    """A comma list or a sequence of strings → trimmed, non-empty items."""
    if value is None:
        return []
    if isinstance(value, str):
        items = validate_text(value, field).split(",")
    elif isinstance(value, (list, tuple, set, frozenset)):
        for s in value:
            if not isinstance(s, str):
                raise ValidationError(f"{field} must be strings, got {type(s).__name__} {s!r:.50}", field=field)
        items = [validate_text(s, field) for s in value]
    else:
        raise ValidationError(f"{field} must be a comma list or a list of strings, got {type(value).__name__}",
                              field=field)
    return [s.strip() for s in items if s.strip()]


def validate_content(content: str) -> str:
    validate_text(content, "content")
    if not content.strip():
        raise ValidationError("content must not be empty", field="content")
    n = len(content.encode("utf-8"))
    if n > MAX_CONTENT_BYTES:
        raise ValidationError(
            f"content too long ({n} bytes, max {MAX_CONTENT_BYTES}); "
            "consider chunking into multiple remember calls",
            field="content",
        )
    return content


def validate_category(category: str | Category | None) -> Category:
    try:
        return Category(category or "general")
    except ValueError:
        raise ValidationError(f'invalid category "{category}"; valid: {CATEGORIES}', field="category") from None


def validate_importance(importance: int) -> int:
    if isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 5:
        raise ValidationError(f"importance must be 1-5, got {importance}", field="importance")
    return importance


def validate_tags(tags: str | Sequence[str] | None) -> list[str]:
    items = split_list(tags, "tags")
    for t in items:
        n = len(t.encode("utf-8"))
        if n > MAX_TAG_BYTES:
            raise ValidationError(f"tag too long ({n} bytes, max {MAX_TAG_BYTES}): {t[:50]}", field="tags")
    if len(items) > MAX_TAGS:
        raise ValidationError(f"too many tags ({len(items)}, max {MAX_TAGS})", field="tags")
    return items


def validate_entities(entities: str | Sequence[str] | None) -> list[str]:
    items = split_list(entities, "entities")
    for e in items:
        n = len(e.encode("utf-8"))
        if n > MAX_ENTITY_BYTES:
            raise ValidationError(
                f"entity too long ({n} bytes, max {MAX_ENTITY_BYTES}): {e[:50]}", field="entities"
            )
    if len(items) > MAX_ENTITIES:
        raise ValidationError(f"too many entities ({len(items)}, max {MAX_ENTITIES})", field="entities")
    return items


def validate_entity_mode(mode: str | EntityMode | None) -> EntityMode:
    try:
        return EntityMode(mode or "merge")
    except ValueError:
        raise ValidationError(
            f'invalid entity mode "{mode}"; valid: merge, provided, auto', field="entity_mode"
        ) from None


def validate_source(source: str | None) -> str:
    src = "user" if source is None else validate_text(source, "source")
    n = len(src.encode("utf-8"))
    if n > MAX_SOURCE_BYTES:
        raise ValidationError(f"source too long ({n} bytes, max {MAX_SOURCE_BYTES})", field="source")
    return src


def validate_session(session: str | None) -> str | None:
    """A conversation's name (None or empty: no session)."""
    if session is None or session == "":
        return None
    validate_text(session, "session")
    n = len(session.encode("utf-8"))
    if n > MAX_SESSION_BYTES:
        raise ValidationError(f"session too long ({n} bytes, max {MAX_SESSION_BYTES})", field="session")
    return session


def validate_remember(
    content: str,
    category: str | Category | None = "general",
    importance: int = 3,
    tags: str | Sequence[str] | None = None,
    entities: str | Sequence[str] | None = None,
    entity_mode: str | EntityMode | None = "merge",
    source: str | None = "user",
) -> RememberInput:
    return RememberInput(
        content=validate_content(content),
        category=validate_category(category),
        importance=validate_importance(importance),
        tags=validate_tags(tags),
        entities=validate_entities(entities),
        entity_mode=validate_entity_mode(entity_mode),
        source=validate_source(source),
    )
