"""`remember`, `recall` and `link` as LangChain `StructuredTool`s for tool-calling agents.

Each tool returns the same JSON the `mnemon` command prints for that call (on one line), so an agent sees one
format whether it drives the CLI, MCP or LangChain. Mnemon's own errors (bad importance, unknown id, …) come back
to the model as the tool's text instead of ending the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, ConfigDict, Field

from mnemon_core import AsyncMemory, Memory, MnemonError
from mnemon_core.faces.kit import open_memory
from mnemon_core.inputs import (
    IMPORTANCE,
    IMPORTANCE_MAX,
    IMPORTANCE_MIN,
    LINK_WEIGHT,
    MAX_RESULTS,
    MAX_TOKENS_MAX,
    MAX_TOKENS_MIN,
    literal,
)
from mnemon_core.models import Category, EdgeType, Intent, plain

# The choices and limits are the engine's (mnemon_core.inputs); the descriptions are written for the model.
CategoryName = literal(Category)
IntentName = literal(Intent)
EdgeTypeName = literal(EdgeType)
RECALL_LIMIT = 5  # the guide's focused recall (`recall --limit 5`)


class RememberArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="the memory itself, one self-contained statement")
    category: CategoryName = Field(default=Category.general.value, description="what kind of memory this is")
    importance: int = Field(
        default=IMPORTANCE, ge=IMPORTANCE_MIN, le=IMPORTANCE_MAX,
        description="1 (trivia) to 5 (must never be forgotten)",
    )
    tags: list[str] = Field(default_factory=list, description="short labels to find it by")
    entities: list[str] = Field(default_factory=list, description="names it is about (people, tools, projects)")


class RecallArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="what to remember: a question or a few keywords")
    limit: int = Field(default=RECALL_LIMIT, ge=1, le=MAX_RESULTS, description="how many memories to return")
    intent: IntentName | None = Field(default=None, description="force WHY, WHEN, ENTITY or GENERAL; default: detect")
    category: CategoryName | None = Field(default=None, description="only memories of this category")
    max_tokens: int | None = Field(
        default=None, ge=MAX_TOKENS_MIN, le=MAX_TOKENS_MAX,
        description="return only what fits this many tokens: the best memories' ids, confidence and text, a "
        "long one as its best-matching passage (truncated: true)",
    )


class LinkArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_id: str = Field(description="id of the first memory")
    target_id: str = Field(description="id of the second memory")
    type: EdgeTypeName = Field(default=EdgeType.semantic.value, description="edge type; supersedes points new → old")
    weight: float = Field(default=LINK_WEIGHT, ge=0.0, le=1.0, description="strength of the link")
    metadata: dict[str, str] | None = Field(
        default=None, description='extra string labels, e.g. {"sub_type": "causes"} for a causal link'
    )


REMEMBER_DOC = (
    "Store a durable memory (a decision, preference, fact or insight) for later conversations. Returns its id "
    "and candidate memories it may relate to; link them with the link tool when they do."
)
RECALL_DOC = (
    "Recall memories relevant to a query, best first, each with its id, content, category and score. "
    "Use it before answering anything that may depend on earlier conversations."
)
LINK_DOC = "Connect two memories by id with a typed edge (semantic, causal, temporal, entity or supersedes)."


def _dumps(result: Any) -> str:
    """The command's JSON on one line: the same tokens by the budget's counter, which ignores whitespace, and
    fewer by a model's, which pays for indentation."""
    return json.dumps(plain(result), ensure_ascii=False)


def create_mnemon_tools(
    memory: Memory | AsyncMemory | None = None,
    *,
    data_dir: str | Path | None = None,
    store: str | None = None,
    embedder: str | None = None,
    source: str = "agent",
) -> list[StructuredTool]:
    """The `remember`, `recall` and `link` tools over one memory (sync and async paths both real).

    `source` is what `remember` records as the memory's source (mnemon's `--source`)."""
    mem, amem = open_memory(memory, data_dir, store, embedder)

    def guarded(fn: Any) -> Any:
        def call(**kwargs: Any) -> str:
            try:
                return _dumps(fn(**kwargs))
            except MnemonError as e:
                raise ToolException(str(e)) from e

        return call

    def aguarded(fn: Any) -> Any:
        async def call(**kwargs: Any) -> str:
            try:
                return _dumps(await fn(**kwargs))
            except MnemonError as e:
                raise ToolException(str(e)) from e

        return call

    def tool(name: str, doc: str, schema: type[BaseModel], sync: Any, coro: Any) -> StructuredTool:
        return StructuredTool.from_function(
            func=guarded(sync), coroutine=aguarded(coro), name=name, description=doc, args_schema=schema,
            handle_tool_error=True,
        )

    return [
        tool("remember", REMEMBER_DOC, RememberArgs,
             lambda **a: mem.remember(**a, source=source), lambda **a: amem.remember(**a, source=source)),
        tool("recall", RECALL_DOC, RecallArgs, mem.recall, amem.recall),
        tool("link", LINK_DOC, LinkArgs, mem.link, amem.link),
    ]
