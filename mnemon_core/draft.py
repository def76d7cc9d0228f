"""The memory draft, schema v1 (spec 003, reference §6 "import"): its pydantic models, their validation, and the
answers of an import (`ImportResult`, `DryRun`). The importer itself is `write/importer.py`.

The whole draft is validated before anything is written; every error names the insight or edge index and
the field (`insights[3].tags: too many tags (21, max 20)`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic import ValidationError as PydanticValidationError

from .errors import NotFoundError, ValidationError
from .models import Category, EdgeType, OmitEmpty
from .timeutil import normalise
from .write.validate import (
    validate_category,
    validate_content,
    validate_entities,
    validate_importance,
    validate_session,
    validate_source,
    validate_tags,
    validate_text,
)

__all__ = [
    "DraftEdge",
    "DraftInsight",
    "DryRun",
    "ImportDraft",
    "ImportItem",
    "ImportResult",
    "load_draft",
]

SCHEMA_VERSION = "1"
DEFAULT_IMPORTANCE = 3  # importance 0 (or absent) means this
DEFAULT_EDGE_WEIGHT = 0.5  # weight 0 (or absent) means this
INSIGHT_COUNT = "insights"  # the validation context's key: how many insights the draft holds (`DraftEdge._index`)
DEFAULT_SOURCE = "import"  # when neither the insight nor the draft names a source
# A validation error lists at most this many problems on its one line.
MAX_REPORTED_ERRORS = 10
EDGE_TYPES = ", ".join(t.value for t in EdgeType)

# RFC 3339 date-time (what Go's time.RFC3339 accepts): seconds required, a zone required.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


# ---------------------------------------------------------------------------------------------------- schema


# Validators raise ValueError even for a wrong type: pydantic turns only ValueError (and AssertionError) into a
# validation error with its location; a TypeError would escape as a crash.


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _string_list(v: Any, what: str) -> list[str]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise ValueError(f"{what} must be an array of strings")
    return v


def _optional_source(v: Any) -> str | None:
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise ValueError("source must be a string")  # noqa: TRY004
    return validate_source(v)


class DraftInsight(BaseModel):
    """One memory of a draft. Unknown keys are ignored (an LLM may add some), as Go's decoder does."""

    model_config = ConfigDict(extra="ignore")

    content: str = Field(description="the memory text, at most 8000 bytes; self-contained")
    category: Category = Field(
        default=Category.general, description="preference, decision, fact, insight, context or general"
    )
    importance: int = Field(
        default=DEFAULT_IMPORTANCE, ge=1, le=5,
        description="1-5 (0 or absent means 3): 5 core decision or strong preference, 1 temporary",
    )
    tags: list[str] = Field(default_factory=list, description="at most 20 free tags, each at most 100 bytes")
    entities: list[str] = Field(
        default_factory=list,
        description="at most 50 named things (people, projects, tools, libraries), each at most 200 bytes; "
        "merged with the entities mnemon extracts",
    )
    source: str | None = Field(default=None, description="where this memory came from; overrides the draft's")
    created_at: str | None = Field(
        default=None, description="original time, RFC 3339 (2024-03-15T09:30:00Z); absent means import time"
    )
    session: str | None = Field(
        default=None, description="the conversation it belongs to, at most 200 bytes: consecutive items of one "
        "session are linked as a conversation (absent: part of no conversation, linked to no neighbour)",
    )

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError("content must be a string")  # noqa: TRY004
        return validate_content(v)

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, v: Any) -> Category:
        if v is not None and not isinstance(v, str):
            raise ValueError("category must be a string")
        return validate_category(v)

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, v: Any) -> int:
        if v is None or (_is_int(v) and v == 0):
            return DEFAULT_IMPORTANCE
        if not _is_int(v):
            raise ValueError(f"importance must be an integer, got {json.dumps(v, ensure_ascii=False)}")
        return validate_importance(v)

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, v: Any) -> list[str]:
        return validate_tags(_string_list(v, "tags"))

    @field_validator("entities", mode="before")
    @classmethod
    def _entities(cls, v: Any) -> list[str]:
        return validate_entities(_string_list(v, "entities"))

    @field_validator("source", mode="before")
    @classmethod
    def _source(cls, v: Any) -> str | None:
        return _optional_source(v)

    @field_validator("session", mode="before")
    @classmethod
    def _session(cls, v: Any) -> str | None:
        if v is not None and not isinstance(v, str):
            raise ValueError("session must be a string")
        try:
            return validate_session(v)
        except ValidationError as e:
            raise ValueError(str(e)) from None

    @field_validator("created_at", mode="before")
    @classmethod
    def _created_at(cls, v: Any) -> str | None:
        if v is None or v == "":
            return None
        if not isinstance(v, str) or not _RFC3339.fullmatch(v.strip()):
            raise ValueError(f"invalid RFC 3339 timestamp {json.dumps(v, ensure_ascii=False)}")
        try:
            return normalise(v)
        except (ValueError, OverflowError):  # well-formed but impossible: month 13, or past year 9999 in UTC
            raise ValueError(f"invalid RFC 3339 timestamp {json.dumps(v, ensure_ascii=False)}") from None


class DraftEdge(BaseModel):
    """A relation the draft states; written in its one direction only."""

    model_config = ConfigDict(extra="ignore")

    source_index: int = Field(ge=0, description="zero-based index into insights: where the edge starts")
    target_index: int = Field(ge=0, description="zero-based index into insights; differs from source_index")
    edge_type: EdgeType = Field(description="temporal, causal, semantic, entity (or supersedes: new → old)")
    weight: float = Field(default=DEFAULT_EDGE_WEIGHT, ge=0.0, le=1.0, description="0.0-1.0 (0 or absent: 0.5)")
    reason: str | None = Field(default=None, description="why the relation holds; kept as edge metadata")

    @field_validator("source_index", "target_index", mode="before")
    @classmethod
    def _index(cls, v: Any, info: ValidationInfo) -> int:
        """An index into the draft's insights: their number comes as the validation's context (`load_draft`),
        so each edge is checked on its own and a draft's every bad edge is reported, whatever else is wrong."""
        if not _is_int(v):
            raise ValueError(f"index must be an integer, got {json.dumps(v, ensure_ascii=False)}")
        if v < 0:
            raise ValueError(f"index must not be negative, got {v}")
        n = (info.context or {}).get(INSIGHT_COUNT)
        if n is not None and v >= n:
            raise ValueError(f"index {v} out of range (the draft has {n} insights)")
        if info.field_name == "target_index" and info.data.get("source_index") == v:
            raise ValueError(f"must differ from source_index ({v})")
        return v

    @field_validator("edge_type", mode="before")
    @classmethod
    def _edge_type(cls, v: Any) -> EdgeType:
        try:
            return EdgeType(str(v).strip().lower()) if isinstance(v, str) else EdgeType(v)
        except ValueError:
            raise ValueError(f'invalid edge type "{v}"; valid: {EDGE_TYPES}') from None

    @field_validator("weight", mode="before")
    @classmethod
    def _weight(cls, v: Any) -> float:
        if v is None:
            return DEFAULT_EDGE_WEIGHT
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"weight must be a number, got {json.dumps(v, ensure_ascii=False)}")  # noqa: TRY004
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"weight must be between 0.0 and 1.0, got {v:.2f}")
        return float(v) if v != 0 else DEFAULT_EDGE_WEIGHT

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: Any) -> str | None:
        if v is None or v == "":
            return None
        if not isinstance(v, str):
            raise ValueError("reason must be a string")  # noqa: TRY004
        return validate_text(v, "reason")


class ImportDraft(BaseModel):
    """A memory draft, schema version "1" (spec 003)."""

    model_config = ConfigDict(extra="ignore")

    schema_version: str = Field(description='must be "1"')
    source: str | None = Field(default=None, description='source label of the whole batch, e.g. "chat-export"')
    insights: list[DraftInsight] = Field(description="the memories, at least one")
    edges: list[DraftEdge] = Field(default_factory=list, description="explicit relations between insights")

    @field_validator("schema_version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> str:
        if v != SCHEMA_VERSION or not isinstance(v, str):
            raise ValueError(f'must be "{SCHEMA_VERSION}", got {json.dumps(v, ensure_ascii=False)}')
        return v

    @field_validator("source", mode="before")
    @classmethod
    def _source(cls, v: Any) -> str | None:
        return _optional_source(v)

    @field_validator("insights", mode="before")
    @classmethod
    def _insights(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise ValueError("empty draft: at least one insight is required")
        return v

    @field_validator("edges", mode="before")
    @classmethod
    def _edges(cls, v: Any) -> Any:
        return [] if v is None else v

    def source_of(self, index: int) -> str:
        """The insight's own source, else the draft's, else "import"."""
        return self.insights[index].source or self.source or DEFAULT_SOURCE


def _join(problems: Sequence[str]) -> str:
    shown = list(problems[:MAX_REPORTED_ERRORS])
    if len(problems) > MAX_REPORTED_ERRORS:
        shown.append(f"… and {len(problems) - MAX_REPORTED_ERRORS} more")
    return "; ".join(shown)


_TYPE_WORDS = {
    "missing": "required",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "list_type": "must be an array",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
}


def _path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _convert(err: PydanticValidationError) -> ValidationError:
    """pydantic's errors → one line naming each index and field, in document order."""
    problems: list[str] = []
    first_field: str | None = None
    for e in err.errors(include_url=False):
        path = _path(e["loc"])
        cause = (e.get("ctx") or {}).get("error")
        msg = str(cause) if isinstance(cause, Exception) else _TYPE_WORDS.get(e["type"], e["msg"])
        problems.append(f"{path}: {msg}" if path else msg)
        if first_field is None:
            first_field = path or None
    return ValidationError(_join(problems), field=first_field)


def load_draft(draft: ImportDraft | dict[str, Any] | str | Path) -> ImportDraft:
    """A draft from a model, a dict, JSON text, a file path or "-" (stdin), validated in full."""
    if isinstance(draft, ImportDraft):
        data: Any = draft.model_dump(mode="json")  # validated again: a model can be built with bad indices
    elif isinstance(draft, dict):
        data = draft
    else:
        text = _read(draft)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValidationError(f"invalid draft JSON: {e}", field="draft") from None
        except RecursionError:
            raise ValidationError("invalid draft JSON: nested too deeply", field="draft") from None
    if not isinstance(data, dict):
        raise ValidationError("invalid draft: must be a JSON object", field="draft")
    insights = data.get("insights")  # not a list, or empty: that is the error, and no edge is in range
    try:
        return ImportDraft.model_validate(
            data, context={INSIGHT_COUNT: len(insights)} if isinstance(insights, list) and insights else None)
    except PydanticValidationError as e:
        raise _convert(e) from None


def _read(draft: str | Path) -> str:
    if isinstance(draft, str) and draft.lstrip().startswith("{"):
        return draft
    if str(draft) == "-":
        from .console import stdin

        return stdin().read()
    path = Path(draft)
    try:
        return path.read_text(encoding="utf-8-sig")  # tolerate a BOM from Windows editors
    except FileNotFoundError:
        raise NotFoundError(f"draft file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValidationError(f"cannot read draft file {path}: {e}", field="draft") from None


# ---------------------------------------------------------------------------------------------------- results


class ImportItem(OmitEmpty):
    """What happened to one draft insight; `id` is the existing insight's for a skipped duplicate."""

    _omit_empty = frozenset({"error"})

    index: int
    id: str
    content: str
    action: str = Field(description='"added", "skipped" (exact duplicate) or "error"')
    error: str | None = None


class ImportResult(OmitEmpty):
    """The JSON of `mnemon import` (spec 003). `errors` > 0 means a partial import."""

    _omit_empty = frozenset({"vectors_pending"})

    imported: int
    updated: int = Field(default=0, description="always 0: import never replaces (only exact repeats skip)")
    skipped: int
    errors: int
    edges_inserted: int = Field(description="explicit draft edges that became new rows (a repeat counts once)")
    auto_pruned: int
    auto_pruned_ids: list[str]
    results: list[ImportItem]
    vectors_pending: int = Field(default=0, description="insights written without their vectors, which are being "
                                 "filled in behind (a large import: docs/import.md); absent when 0")


class DryRun(str):
    """The answer of `import --dry-run` for a draft that passed validation: the line it prints (`Dry run: 2
    insights, 1 explicit edges — validation passed.`), a `str` as it always was, with the two counts."""

    insights: int
    edges: int

    def __new__(cls, insights: int, edges: int) -> DryRun:
        self = super().__new__(cls, f"Dry run: {insights} insights, {edges} explicit edges — validation passed.")
        self.insights, self.edges = insights, edges
        return self

    def __getnewargs__(self) -> tuple[int, int]:  # pickle and copy rebuild it from the counts
        return self.insights, self.edges

    @classmethod
    def of(cls, draft: ImportDraft) -> DryRun:
        return cls(len(draft.insights), len(draft.edges))
