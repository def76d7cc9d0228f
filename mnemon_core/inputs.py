"""The input of the `Memory` calls as pydantic models: each parameter once, with its default, its limits and
a description. Every face builds on them instead of restating the contract:

* `Memory`'s signatures take their defaults from the constants below;
* the CLI (`cli.py`) makes each command's flags from a model: type, default and help text;
* the MCP server (`mcp.py`) advertises the models as its tool schemas (adding only its `full` projection);
* LangChain's tools (`integrations/langchain_mnemon/tools.py`) take the value lists and limits from here.

Which limit is enforced where: a limit the engine checks itself (category, importance, tag and entity sizes,
edge type, weight, intent, a recall's token budget) is only shown in the schema (`json_schema_extra`), so a
caller gets the engine's message whichever face it uses; the limits of tool calls by agents (query ≤2000
characters, ids ≤256, limit 1–100, depth 1–10, link metadata sizes; reference §8.3) are enforced by the models.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from .models import Category, EdgeType, EntityMode, Intent
from .recall.constants import EXCERPT_CHARS, MAX_TOKENS_MAX, MAX_TOKENS_MIN, RECALL_LIMIT
from .write.constants import (
    MAX_CONTENT_BYTES,
    MAX_ENTITIES,
    MAX_ENTITY_BYTES,
    MAX_SOURCE_BYTES,
    MAX_TAG_BYTES,
    MAX_TAGS,
)

__all__ = [
    "EXCERPT_CHARS", "IdInput", "LinkInput", "LogInput", "MAX_TOKENS_MAX", "MAX_TOKENS_MIN", "NoInput", "RECALL_LIMIT",
    "RecallInput", "RecallShape",
    "RelatedInput", "RememberInput", "SearchInput", "literal",
]

# Defaults of the calls (RECALL_LIMIT, EXCERPT_CHARS and the token budget's limits live with recall's other numbers).
SEARCH_LIMIT = 10
LOG_LIMIT = 20
RELATED_DEPTH = 2
LINK_WEIGHT = 0.5
IMPORTANCE = 3
IMPORTANCE_MIN, IMPORTANCE_MAX = 1, 5

# Ids: `log` shows an insight's first ID_PREFIX_MIN characters, and every call that takes an id takes a unique
# prefix of at least that many too (`Memory.resolve_id`; an ambiguous one is refused, naming up to
# AMBIGUOUS_SHOWN of the insights it starts).
ID_PREFIX_MIN = 8
ID_CHARS = 36  # an id as mnemon makes them (a UUID); anything shorter may be a prefix
AMBIGUOUS_SHOWN = 5

# Limits of tool calls by agents (reference §8.3).
MAX_QUERY_CHARS = 2000
MAX_ID_CHARS = 256
MAX_RESULTS = 100
MAX_DEPTH = 10
MAX_METADATA = 20
MAX_METADATA_KEY = 100
MAX_METADATA_VALUE = 1000


def values(enum: type[Enum]) -> list[str]:
    return [e.value for e in enum]


def literal(enum: type[Enum]) -> Any:
    """`Literal["a", "b", …]` of an enum's values, for a face that enforces the choice in its own schema."""
    return Literal[tuple(values(enum))]  # type: ignore[valid-type]


def _shown(**schema: Any) -> dict[str, Any]:
    """Schema keywords the engine enforces itself: shown to the caller (`json_schema_extra`), not checked here."""
    return schema


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


Query = Annotated[
    str,
    Field(min_length=1, max_length=MAX_QUERY_CHARS, description=f"at most {MAX_QUERY_CHARS} characters"),
    AfterValidator(_not_blank),
]
Id = Annotated[
    str, Field(min_length=1, max_length=MAX_ID_CHARS,
               description=f"an insight id, or a unique prefix of at least {ID_PREFIX_MIN} characters"),
    AfterValidator(_not_blank),
]
Limit = Annotated[int, Field(ge=1, le=MAX_RESULTS, description=f"maximum results, 1-{MAX_RESULTS}")]
MetaKey = Annotated[str, StringConstraints(max_length=MAX_METADATA_KEY)]
MetaValue = Annotated[str, StringConstraints(max_length=MAX_METADATA_VALUE)]


METADATA = (
    f"up to {MAX_METADATA} string entries (keys ≤{MAX_METADATA_KEY}, values ≤{MAX_METADATA_VALUE} characters), "
    "e.g. sub_type (causes, enables, prevents) or reason"
)


class Args(BaseModel):
    # Built on first validation, not at import: the CLI reads only the fields (its flags' defaults and help).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class RememberInput(Args):
    content: str = Field(
        description=f"the insight, at most {MAX_CONTENT_BYTES} bytes",
        json_schema_extra=_shown(minLength=1, maxLength=MAX_CONTENT_BYTES),
    )
    category: str = Field(
        Category.general.value, description="kind of insight", json_schema_extra=_shown(enum=values(Category))
    )
    importance: int = Field(
        IMPORTANCE, description="1 (trivia) to 5 (critical)",
        json_schema_extra=_shown(minimum=IMPORTANCE_MIN, maximum=IMPORTANCE_MAX),
    )
    tags: list[str] = Field(
        default_factory=list,
        description=f"up to {MAX_TAGS} tags, each at most {MAX_TAG_BYTES} bytes",
        json_schema_extra=_shown(maxItems=MAX_TAGS, items={"type": "string", "maxLength": MAX_TAG_BYTES}),
    )
    entities: list[str] = Field(
        default_factory=list,
        description=f"up to {MAX_ENTITIES} explicit entities, each at most {MAX_ENTITY_BYTES} bytes",
        json_schema_extra=_shown(maxItems=MAX_ENTITIES, items={"type": "string", "maxLength": MAX_ENTITY_BYTES}),
    )
    entity_mode: str = Field(
        EntityMode.merge.value,
        description="merge (given + extracted), provided (given only) or auto (extracted only)",
        json_schema_extra=_shown(enum=values(EntityMode)),
    )
    source: str = Field(
        "user", description=f"who provided it, at most {MAX_SOURCE_BYTES} bytes",
        json_schema_extra=_shown(maxLength=MAX_SOURCE_BYTES),
    )
    no_diff: bool = Field(False, description="store even an exact duplicate")


class RecallInput(Args):
    query: Query
    limit: Limit = RECALL_LIMIT
    category: str | None = Field(
        None, description="only this category", json_schema_extra=_shown(enum=values(Category))
    )
    source: str | None = Field(None, max_length=MAX_SOURCE_BYTES, description="only this source")
    intent: str | None = Field(
        None, description="override the detected intent", json_schema_extra=_shown(enum=values(Intent))
    )
    basic: bool = Field(False, description="plain substring match instead of intent-aware graph recall")
    max_tokens: int | None = Field(
        None,
        description=f"{MAX_TOKENS_MIN}-{MAX_TOKENS_MAX}: only the best results whose JSON fits this many tokens "
        "(e5's tokenizer): each memory's id, confidence and content, a long one as its best-matching passage "
        "(truncated, … where cut; show <id> gives the whole)",
        json_schema_extra=_shown(minimum=MAX_TOKENS_MIN, maximum=MAX_TOKENS_MAX),
    )


class RecallShape(Args):
    """How a face shows a recall (`recall/output.py`); the library's `Memory.recall` takes the same flags."""

    verbose: bool = Field(False, description="full insights, raw scores, the four signals and the run's meta")
    brief: bool = Field(False, description="compact excerpts instead of contents")
    excerpt_chars: int = Field(EXCERPT_CHARS, description="characters of a brief excerpt")
    recipe: str | None = Field(
        None, description="hybrid (the default) or spec: the documents' formulas (docs/recall.md)"
    )


class SearchInput(Args):
    query: Query
    limit: Limit = SEARCH_LIMIT


class LogInput(Args):
    limit: Limit = LOG_LIMIT


class RelatedInput(Args):
    id: Id
    edge_type: str | None = Field(
        None, description="follow only this edge type", json_schema_extra=_shown(enum=values(EdgeType))
    )
    depth: int = Field(RELATED_DEPTH, ge=1, le=MAX_DEPTH, description="hops to follow")


class LinkInput(Args):
    source_id: Id
    target_id: Id
    edge_type: str = Field(
        EdgeType.semantic.value,
        description="supersedes is directed (new → old); the other types are written both ways",
        json_schema_extra=_shown(enum=values(EdgeType)),
    )
    weight: float = Field(
        LINK_WEIGHT, description="0.0 to 1.0", json_schema_extra=_shown(minimum=0.0, maximum=1.0)
    )
    metadata: dict[MetaKey, MetaValue] = Field(default_factory=dict, max_length=MAX_METADATA, description=METADATA)


class IdInput(Args):
    id: Id


class NoInput(Args):
    pass
