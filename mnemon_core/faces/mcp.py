"""`mnemon mcp serve`: the `Memory` calls as Model Context Protocol tools over stdio (reference §8.3).

A thin face. Each tool checks its arguments against a pydantic model (the input schema it advertises), makes
one `Memory` call and returns that call's CLI JSON as one text block. List results (`recall`, `search`,
`related`) come as `{"results": [...], ...}` with each content cut to 600 characters unless `full` is true
(`truncated: true` on a cut item, a `truncation_hint` beside the results); a recall with `max_tokens` is
`recall --max-tokens`'s JSON as it is (its passages already bound it). A failure is a tool result with
`isError` and one line of text: the engine's own message for what the engine checks, a message in the same
style for the limits that only this face has. The server keeps serving after any error.

The schemas are the calls' input models (`inputs.py`), which say which limit is enforced where: one the
engine checks is only advertised, so the caller gets the engine's message; the limits of tool calls (query
≤2000 chars, ids ≤256, limit 1–100, depth 1–10, link metadata sizes) are enforced by the models.

The SDK (`pip install 'mnemon-core[mcp]'`) is imported only when the server starts; both of its major versions
work (1.x registers handlers with decorators, 2.x passes them to the constructor). Everything above
`serve()` runs without it.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
import traceback
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import pydantic
from pydantic import Field

from .. import __version__
from ..async_memory import AsyncMemory
from ..config import debug
from ..errors import MissingExtraError, MnemonError, ReadOnlyError, fault_message
from ..inputs import (
    MAX_METADATA,
    METADATA,
    Args,
    IdInput,
    LinkInput,
    Limit,
    MetaKey,
    MetaValue,
    NoInput,
    RecallInput,
    RelatedInput,
    RememberInput,
    SearchInput,
)
from ..memory import Memory
from ..models import plain, printed

# The MCP face's own limits (reference §8.3); the tool-call limits it shares with other faces are in inputs.py.
CONTENT_CHARS = 600
RELATED_LIMIT = 20

SERVER_NAME = "mnemon"
INSTRUCTIONS = (
    "Mnemon is durable graph memory shared across sessions. Use recall before answering from memory and "
    "remember for facts, decisions and preferences worth keeping. Recall, search and related cut each "
    f"content to {CONTENT_CHARS} characters; pass full=true (or call show with the id) only when the "
    "complete text is needed. Recall with max_tokens returns only what fits that many tokens, a long memory as "
    "its best-matching passage."
)
TRUNCATION_HINT = (
    f"Some content was cut to {CONTENT_CHARS} characters (truncated: true). Call the same tool with "
    "full=true, or show with the id, for the complete text."
)


# ---------------------------------------------------------------- input models (the advertised schemas)
# The calls' own models (`inputs.py`); this face adds `full` (its projection), a cut of related's list and
# what it writes as created_by.

Full = Annotated[
    bool, Field(description=f"return complete content instead of the {CONTENT_CHARS}-character projection")
]


class RecallArgs(RecallInput):
    full: Full = False


class SearchArgs(SearchInput):
    full: Full = False


class RelatedArgs(RelatedInput):
    limit: Limit = RELATED_LIMIT
    full: Full = False


class LinkArgs(LinkInput):
    metadata: dict[MetaKey, MetaValue] = Field(
        default_factory=dict, max_length=MAX_METADATA, description=f"{METADATA}; created_by is set to mcp"
    )


def input_schema(model: type[Args]) -> dict[str, Any]:
    """The model's JSON schema, tidied for hosts: no titles, and an optional field shows its plain type
    (`anyOf [T, null]` → T; leaving it out is how a caller says "none")."""
    return _tidy(model.model_json_schema())


def _tidy(node: Any) -> Any:
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _tidy(v) for k, v in node.items() if k not in ("title", "properties")}
    if "properties" in node:  # property names are data here, not schema keywords
        out["properties"] = {k: _tidy(v) for k, v in node["properties"].items()}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        out.pop("anyOf")
        out = {**next(o for o in options if o != {"type": "null"}), **out}
        if out.get("default", ...) is None:
            out.pop("default")
    return out


# ---------------------------------------------------------------- errors in the engine's style


def describe(error: pydantic.ValidationError, model: type[Args]) -> str:
    """One line for all of a call's bad arguments, phrased like the engine's messages."""
    return "; ".join(_describe_one(e, model) for e in error.errors(include_url=False))


def _describe_one(e: Any, model: type[Args]) -> str:
    loc, kind, value, ctx = e["loc"], e["type"], e.get("input"), e.get("ctx") or {}
    name = _where(loc)
    if kind == "missing":
        return f"{name} is required"
    if kind == "extra_forbidden":
        return f'unknown argument "{name}"'
    if kind in ("greater_than_equal", "less_than_equal") and len(loc) == 1:
        lo, hi = _bounds(model, str(loc[0]))
        if lo is not None and hi is not None:
            return f"{name} must be between {lo} and {hi}, got {value}"
    if kind == "string_too_short":
        return f"{name} must not be empty"
    if kind == "value_error":
        return f"{name} {ctx.get('error')}"
    if kind == "string_too_long":
        return f"{name} too long ({len(value)} chars, max {ctx.get('max_length')})"
    if kind == "too_long":
        n = ctx.get("actual_length") or (len(value) if hasattr(value, "__len__") else "?")
        return f"too many {name} entries ({n}, max {ctx.get('max_length')})"
    return f"{name}: {e['msg']}"


def _where(loc: tuple[Any, ...]) -> str:
    if not loc:
        return "arguments"
    if len(loc) == 3 and loc[-1] == "[key]":
        return f"{loc[0]} key {json.dumps(str(loc[1])[:50], ensure_ascii=False)}"
    head, rest = str(loc[0]), loc[1:]
    return head + "".join(f"[{json.dumps(p, ensure_ascii=False)}]" for p in rest)


def _bounds(model: type[Args], name: str) -> tuple[Any, Any]:
    info = model.model_fields.get(name)
    lo = hi = None
    for m in info.metadata if info else ():
        lo = getattr(m, "ge", lo)
        hi = getattr(m, "le", hi)
    return lo, hi


# ---------------------------------------------------------------- results


def cut(content: str, full: bool) -> tuple[str, bool]:
    """At most CONTENT_CHARS characters, the last one an ellipsis, unless `full`."""
    if full or len(content) <= CONTENT_CHARS:
        return content, False
    return content[: CONTENT_CHARS - 1].strip() + "…", True


def project(value: Any, full: bool) -> dict[str, Any]:
    """`{"results": [...], <other keys of the CLI result>}` with contents cut; a bare list becomes results."""
    data = plain(value)
    data = dict(data) if isinstance(data, dict) else {"results": data}
    items, any_cut = [], False
    for item in data.get("results") or []:
        if isinstance(item, dict) and isinstance(item.get("content"), str):
            item = dict(item)
            item["content"], was_cut = cut(item["content"], full)
            if was_cut:
                item["truncated"] = any_cut = True
        items.append(item)
    data["results"] = items
    if any_cut:
        data["truncation_hint"] = TRUNCATION_HINT
    return data


# ---------------------------------------------------------------- the tools

Run = Callable[[AsyncMemory, Any], Awaitable[Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args: type[Args]
    run: Run
    write: bool = False
    hints: dict[str, bool] = field(default_factory=dict)  # MCP tool annotations (readOnlyHint, …)

    @property
    def schema(self) -> dict[str, Any]:
        return input_schema(self.args)


async def _remember(m: AsyncMemory, a: RememberInput) -> Any:
    return await m.remember(
        a.content, category=a.category, importance=a.importance, tags=a.tags, entities=a.entities,
        entity_mode=a.entity_mode, source=a.source, no_diff=a.no_diff,
    )


async def _recall(m: AsyncMemory, a: RecallArgs) -> Any:
    scope = {"limit": a.limit, "intent": a.intent, "category": a.category, "source": a.source}
    if a.max_tokens is not None:  # the budget bounds the text itself (passages, not the 600-character cut)
        return await m.recall(a.query, basic=a.basic, max_tokens=a.max_tokens, **scope)
    if a.basic:
        return project(await m.recall(a.query, basic=True, **scope), a.full)
    return project((await m.retrieve(a.query, **scope)).compact(), a.full)  # the CLI's default shape


async def _search(m: AsyncMemory, a: SearchArgs) -> Any:
    return project(await m.search(a.query, limit=a.limit), a.full)


async def _related(m: AsyncMemory, a: RelatedArgs) -> Any:
    hits = await m.related(a.id, edge_type=a.edge_type, depth=a.depth)
    return project(hits[: a.limit], a.full)


async def _link(m: AsyncMemory, a: LinkArgs) -> Any:
    return await m.link(a.source_id, a.target_id, type=a.edge_type, weight=a.weight, metadata=a.metadata)


async def _show(m: AsyncMemory, a: IdInput) -> Any:
    return await m.show(a.id)


async def _forget(m: AsyncMemory, a: IdInput) -> Any:
    return await m.forget(a.id)


async def _status(m: AsyncMemory, a: NoInput) -> Any:
    return await m.status()


READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
# search, recall and show count an access and write an oplog row, so they are not read-only in MCP's sense.
ACCESS = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("remember", "Store one durable insight and build its temporal, entity, causal and semantic edges. "
             "An exact duplicate of an active insight is skipped (its id is returned). Returns the new id, the "
             "edges created and candidates worth linking.", RememberInput, _remember, write=True,
             hints={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False,
                    "openWorldHint": False}),
    ToolSpec("recall", "Intent-aware graph recall (WHY / WHEN / ENTITY / GENERAL): keyword, entity, similarity "
             "and graph signals; or basic=true for a plain substring match. Records an access on each result.",
             RecallArgs, _recall, hints=ACCESS),
    ToolSpec("search", "Keyword search: the share of the query's tokens each insight holds. Records an access on "
             "each result.", SearchArgs, _search, hints=ACCESS),
    ToolSpec("related", "Insights connected to one insight, breadth-first over typed edges up to depth hops.",
             RelatedArgs, _related, hints=READ),
    ToolSpec("link", "Create or replace a typed edge between two insights (both directions, except supersedes "
             "which points from the new insight to the old one).", LinkArgs, _link, write=True,
             hints={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                    "openWorldHint": False}),
    ToolSpec("show", "One insight with its complete content.", IdInput, _show, hints=ACCESS),
    ToolSpec("forget", "Soft-delete an insight and drop its edges.", IdInput, _forget, write=True,
             hints={"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False,
                    "openWorldHint": False}),
    ToolSpec("status", "Counts for the selected store: insights by category, edges, top entities, size.",
             NoInput, _status, hints=READ),
)


class Face:
    """The tools over one `Memory`, without the SDK: `tools()` to list, `call()` to run one."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.async_memory = AsyncMemory(memory=memory)
        self.readonly = memory.settings.readonly
        self.by_name = {t.name: t for t in TOOLS}

    def tools(self) -> list[ToolSpec]:
        """With --readonly the write tools are not offered."""
        return [t for t in TOOLS if not (self.readonly and t.write)]

    async def call(self, name: str, arguments: dict[str, Any] | None) -> tuple[bool, str]:
        """(is_error, text). Never raises for anything a caller or the engine can cause."""
        spec = self.by_name.get(name)
        if spec is None:
            return True, f'unknown tool "{name}"; available: {", ".join(t.name for t in self.tools())}'
        if self.readonly and spec.write:
            return True, str(ReadOnlyError(name))
        try:
            args = spec.args.model_validate(arguments or {})
        except pydantic.ValidationError as e:
            return True, describe(e, spec.args)
        try:
            return False, printed(await spec.run(self.async_memory, args))  # as the CLI prints it
        except Exception as e:  # noqa: BLE001 - the face's one error boundary: an error result, keep serving
            message = fault_message(e)  # a MnemonError or a fault of the environment (errors.fault_message)
            if debug() or message is None:  # a bug keeps its traceback in the server's log (stderr)
                traceback.print_exc(file=sys.stderr)
            return True, message if message is not None else f"internal error in {name}: {type(e).__name__}: {e}"


# ---------------------------------------------------------------- the SDK


def serve(memory: Memory) -> None:
    """Serve `memory` over stdio until the host closes the connection."""
    try:
        import anyio
        from mcp import types
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in ("mcp", "anyio"):
            raise
        raise MissingExtraError("mcp", "mcp") from None
    except ImportError as e:  # installed but broken, e.g. an old 1.x SDK beside a newer pydantic
        raise MnemonError(f"the mcp package does not import ({e}); pip install -U 'mnemon-core[mcp]'") from None
    _ = memory.store  # open it now: a bad --store or a missing --readonly database fails at start-up
    if memory.settings.session is None:  # one server process serves one agent session: its remembers are a conversation
        memory.settings.session = f"mcp-{uuid.uuid4().hex[:12]}"
    face = Face(memory)
    server = build_server(face, Server, types)

    async def run() -> None:
        async with stdio_server() as (read, write):
            # The wire is stdout; anything else printed goes to stderr (the 2.x SDK also diverts fd 1).
            with contextlib.redirect_stdout(sys.stderr):
                await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        pass
    finally:
        memory.close()


def build_server(face: Face, Server: Any, types: Any) -> Any:
    """A low-level SDK server for `face`. Low-level, so the tool list, the schemas and the error texts are
    exactly ours (the high-level server prefixes errors and re-validates with its own messages)."""
    tools = [
        types.Tool.model_validate({
            "name": t.name, "description": t.description, "inputSchema": t.schema, "annotations": t.hints,
        })
        for t in face.tools()
    ]

    def text(body: str) -> Any:
        return types.TextContent(type="text", text=body)

    if "on_call_tool" in inspect.signature(Server.__init__).parameters:  # mcp 2.x

        async def on_list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=tools)

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            is_error, body = await face.call(params.name, params.arguments)
            return types.CallToolResult.model_validate({"content": [text(body)], "isError": is_error})

        return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                      on_list_tools=on_list_tools, on_call_tool=on_call_tool)

    server = Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS)  # mcp 1.x

    @server.list_tools()
    async def list_tools() -> list[Any]:
        return tools

    # Our models validate; the SDK's jsonschema check (1.10+) would answer first, in its own words.
    options = {"validate_input": False} if "validate_input" in inspect.signature(server.call_tool).parameters else {}

    @server.call_tool(**options)
    async def call_tool(name: str, arguments: dict[str, Any] | None) -> list[Any]:
        is_error, body = await face.call(name, arguments)
        if is_error:
            raise ToolFailure(body)  # 1.x turns a raised error into isError with exactly this text
        return [text(body)]

    return server


class ToolFailure(Exception):
    """Carries a tool error's text through the 1.x SDK, which reports it as `isError` with `str(err)`."""
