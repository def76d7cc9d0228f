"""`mnemon mcp serve`: the SDK's own stdio client drives the real server process; the SDK-free face
(schemas, argument errors, projection) is also checked in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from mnemon_core import Memory
from mnemon_core.faces.mcp import TOOLS, Face

ROOT = Path(__file__).resolve().parents[2]

ALL_TOOLS = ["remember", "recall", "search", "related", "link", "show", "forget", "status"]
READ_TOOLS = ["recall", "search", "related", "show", "status"]
EDGE_TYPES = ["temporal", "semantic", "causal", "entity", "supersedes"]
CATEGORIES = ["preference", "decision", "fact", "insight", "context", "general"]
TRUNCATION_HINT = (
    "Some content was cut to 600 characters (truncated: true). Call the same tool with full=true, or show "
    "with the id, for the complete text."
)
READONLY = "is unavailable with --readonly: database writes are disabled"


def schema(name: str) -> dict[str, Any]:
    return next(t.schema for t in TOOLS if t.name == name)


# ---------------------------------------------------------------- schemas (no SDK needed)


def test_recall_schema_matches_the_reference_limits() -> None:
    assert schema("recall") == {
        "additionalProperties": False,
        "properties": {
            "query": {"description": "at most 2000 characters", "maxLength": 2000, "minLength": 1, "type": "string"},
            "limit": {"default": 10, "description": "maximum results, 1-100", "maximum": 100, "minimum": 1,
                      "type": "integer"},
            "category": {"type": "string", "description": "only this category", "enum": CATEGORIES},
            "source": {"maxLength": 100, "type": "string", "description": "only this source"},
            "intent": {"type": "string", "description": "override the detected intent",
                       "enum": ["WHY", "WHEN", "ENTITY", "GENERAL"]},
            "basic": {"default": False, "description": "plain substring match instead of intent-aware graph recall",
                      "type": "boolean"},
            "max_tokens": {"type": "integer", "minimum": 150, "maximum": 100000, "description": (
                "150-100000: only the best results whose JSON fits this many tokens (e5's tokenizer): each "
                "memory's id, confidence and content, a long one as its best-matching passage (truncated, … "
                "where cut; show <id> gives the whole)")},
            "full": {"default": False, "description": "return complete content instead of the 600-character "
                     "projection", "type": "boolean"},
        },
        "required": ["query"],
        "type": "object",
    }


def test_other_schemas_carry_the_engine_limits() -> None:
    search = schema("search")["properties"]
    assert (search["query"]["maxLength"], search["limit"]["minimum"], search["limit"]["maximum"],
            search["limit"]["default"]) == (2000, 1, 100, 10)

    related = schema("related")
    p = related["properties"]
    assert related["required"] == ["id"]
    assert p["id"]["maxLength"] == 256
    assert (p["depth"]["minimum"], p["depth"]["maximum"], p["depth"]["default"]) == (1, 10, 2)
    assert (p["limit"]["minimum"], p["limit"]["maximum"], p["limit"]["default"]) == (1, 100, 20)
    assert p["edge_type"]["enum"] == EDGE_TYPES and "default" not in p["edge_type"]

    link = schema("link")
    p = link["properties"]
    assert link["required"] == ["source_id", "target_id"]
    assert p["source_id"]["maxLength"] == p["target_id"]["maxLength"] == 256
    assert (p["edge_type"]["enum"], p["edge_type"]["default"]) == (EDGE_TYPES, "semantic")
    assert (p["weight"]["type"], p["weight"]["minimum"], p["weight"]["maximum"], p["weight"]["default"]) == (
        "number", 0.0, 1.0, 0.5)
    meta = p["metadata"]
    assert (meta["type"], meta["maxProperties"], meta["propertyNames"], meta["additionalProperties"]) == (
        "object", 20, {"maxLength": 100}, {"maxLength": 1000, "type": "string"})

    remember = schema("remember")
    p = remember["properties"]
    assert remember["required"] == ["content"]
    assert (p["content"]["minLength"], p["content"]["maxLength"]) == (1, 8000)
    assert (p["category"]["enum"], p["category"]["default"]) == (CATEGORIES, "general")
    assert (p["importance"]["minimum"], p["importance"]["maximum"], p["importance"]["default"]) == (1, 5, 3)
    assert (p["tags"]["maxItems"], p["tags"]["items"]) == (20, {"maxLength": 100, "type": "string"})
    assert (p["entities"]["maxItems"], p["entities"]["items"]) == (50, {"maxLength": 200, "type": "string"})
    assert (p["entity_mode"]["enum"], p["entity_mode"]["default"]) == (["merge", "provided", "auto"], "merge")
    assert (p["source"]["maxLength"], p["source"]["default"]) == (100, "user")
    assert p["no_diff"] == {"default": False, "description": "store even an exact duplicate", "type": "boolean"}

    for name in ("show", "forget"):
        assert schema(name) == {
            "additionalProperties": False, "required": ["id"], "type": "object",
            "properties": {"id": {"description": "an insight id, or a unique prefix of at least 8 characters",
                                  "maxLength": 256, "minLength": 1, "type": "string"}},
        }
    assert schema("status") == {"additionalProperties": False, "properties": {}, "type": "object"}
    for t in TOOLS:  # a host never sees pydantic's titles or nullable unions
        text = json.dumps(t.schema)
        assert '"title"' not in text and "anyOf" not in text and "null" not in text, t.name


# ---------------------------------------------------------------- the face in-process (no SDK needed)


async def test_face_argument_errors_are_one_line_in_the_engine_style(mem: Memory) -> None:
    face = Face(mem)
    a = mem.remember("Chose SQLite for the embedded store", category="decision").id
    cases = [
        ("search", {"query": "x", "limit": 0}, "limit must be between 1 and 100, got 0"),
        ("recall", {"query": "x", "limit": 101}, "limit must be between 1 and 100, got 101"),
        ("related", {"id": a, "depth": 11}, "depth must be between 1 and 10, got 11"),
        ("search", {}, "query is required"),
        ("search", {"query": ""}, "query must not be empty"),
        ("recall", {"query": "  \n "}, "query must not be empty"),
        ("forget", {"id": " "}, "id must not be empty"),
        ("recall", {"query": "x", "category": "gossip"},
         'invalid category "gossip"; valid: preference, decision, fact, insight, context, general'),
        ("recall", {"query": "x", "intent": "how"}, 'unknown intent "how"; valid: WHY, WHEN, ENTITY, GENERAL'),
        ("search", {"query": "q" * 2001}, "query too long (2001 chars, max 2000)"),
        ("show", {"id": "i" * 257}, "id too long (257 chars, max 256)"),
        ("status", {"verbose": True}, 'unknown argument "verbose"'),
        ("search", {"query": "x", "limit": "ten"},
         "limit: Input should be a valid integer, unable to parse string as an integer"),
        ("link", {"source_id": a, "target_id": a, "metadata": {f"k{i}": "v" for i in range(21)}},
         "too many metadata entries (21, max 20)"),
        ("link", {"source_id": a, "target_id": a, "metadata": {"k" * 101: "v"}},
         f'metadata key "{"k" * 50}" too long (101 chars, max 100)'),
        ("link", {"source_id": a, "target_id": a, "metadata": {"reason": "v" * 1001}},
         'metadata["reason"] too long (1001 chars, max 1000)'),
        ("search", {"limit": 0}, "query is required; limit must be between 1 and 100, got 0"),
        # what the engine checks comes back in the engine's words
        ("link", {"source_id": a, "target_id": "nope", "edge_type": "friend"},
         'invalid edge type "friend"; valid: temporal, semantic, causal, entity, supersedes'),
        ("link", {"source_id": a, "target_id": "nope", "weight": 1.5}, "weight must be between 0.0 and 1.0, got 1.50"),
        ("link", {"source_id": "nope", "target_id": a}, "source insight nope not found"),
        ("forget", {"id": "nope"}, "forget: insight nope not found or already deleted"),
        ("show", {"id": "nope"}, "insight nope not found"),
        ("remember", {"content": "x", "importance": 7}, "importance must be 1-5, got 7"),
        ("remember", {"content": "x", "category": "gossip"},
         'invalid category "gossip"; valid: preference, decision, fact, insight, context, general'),
        ("remember", {"content": "   "}, "content must not be empty"),
        ("nosuch", {}, 'unknown tool "nosuch"; available: ' + ", ".join(ALL_TOOLS)),
    ]
    for name, args, message in cases:
        assert await face.call(name, args) == (True, message), (name, args)
    assert mem.status().total_insights == 1 and mem.status().edge_count == 0


async def test_face_readonly_hides_and_refuses_the_write_tools(mem: Memory, data_dir: Path) -> None:
    mem.remember("Readonly stores still answer searches")
    ro = Memory(readonly=True)
    face = Face(ro)
    assert [t.name for t in face.tools()] == READ_TOOLS
    for name in ("remember", "link", "forget"):
        assert await face.call(name, {}) == (True, f"{name} {READONLY}")
    is_error, text = await face.call("search", {"query": "readonly searches"})
    assert not is_error and [r["content"] for r in json.loads(text)["results"]] == [
        "Readonly stores still answer searches"]
    ro.close()


# ---------------------------------------------------------------- the real server over stdio


@pytest.fixture
def sdk() -> Any:
    return pytest.importorskip("mcp")


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@asynccontextmanager
async def serve(tmp_path: Path, *flags: str) -> AsyncIterator[Any]:
    """The SDK's client spawning `python -m mnemon_core mcp serve <flags>`; the server's stderr goes to a file
    (checked for tracebacks on the way out)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mnemon_core", "mcp", "serve", *flags], env=server_env()
    )
    errlog = tmp_path / "server.err"
    with errlog.open("w") as err, anyio.fail_after(120):
        try:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session
        except BaseExceptionGroup as group:  # show the test's own failure, not the SDK's task-group wrapping
            error: BaseException = group
            while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
                error = error.exceptions[0]
            raise error from None
    assert "Traceback" not in errlog.read_text(), errlog.read_text()


async def call(session: Any, name: str, **arguments: Any) -> Any:
    """The tool's JSON; a tool error fails the test with its text."""
    is_error, text = await raw_call(session, name, **arguments)
    assert not is_error, text
    return json.loads(text)


async def raw_call(session: Any, name: str, **arguments: Any) -> tuple[bool, str]:
    wire = (await session.call_tool(name, arguments)).model_dump(by_alias=True, mode="json")
    assert [c["type"] for c in wire["content"]] == ["text"]
    return bool(wire.get("isError")), wire["content"][0]["text"]


async def listed(session: Any) -> dict[str, dict[str, Any]]:
    tools = (await session.list_tools()).tools
    return {t.name: t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools}


async def test_lists_the_tools_with_their_schemas(sdk: Any, tmp_path: Path) -> None:
    async with serve(tmp_path) as s:
        tools = await listed(s)
    assert list(tools) == ALL_TOOLS
    for t in TOOLS:
        assert tools[t.name]["inputSchema"] == t.schema
        assert tools[t.name]["description"] == t.description
    assert tools["recall"]["inputSchema"]["properties"]["limit"]["maximum"] == 100
    assert tools["related"]["inputSchema"]["properties"]["depth"]["maximum"] == 10
    assert tools["status"]["annotations"]["readOnlyHint"] is True
    assert tools["related"]["annotations"]["readOnlyHint"] is True
    assert tools["forget"]["annotations"]["destructiveHint"] is True
    assert tools["remember"]["annotations"]["readOnlyHint"] is False


async def test_remember_link_recall_forget(sdk: Any, tmp_path: Path) -> None:
    why = "Chose Qdrant for the vector store because filtering speed matters"
    what = "Filtering speed was the bottleneck of the old Postgres setup"
    async with serve(tmp_path) as s:
        r1 = await call(s, "remember", content=why, category="decision", importance=5, tags=["db"])
        r2 = await call(s, "remember", content=what, category="fact", source="agent")
        a, b = r1["id"], r2["id"]
        assert (r1["action"], r1["content"], r1["category"], r1["importance"], r1["tags"]) == (
            "added", why, "decision", 5, ["db"])
        assert (r2["action"], r2["category"]) == ("added", "fact")

        linked = await call(s, "link", source_id=b, target_id=a, edge_type="causal", weight=0.8,
                            metadata={"sub_type": "causes"})
        assert linked == {"edge_type": "causal", "metadata": {"sub_type": "causes", "created_by": "mcp"},
                          "source_id": b, "status": "linked", "target_id": a, "weight": 0.8}
        related = await call(s, "related", id=a, edge_type="causal")
        assert related == {"results": [{"id": b, "content": what, "category": "fact", "importance": 3,
                                        "depth": 1, "via_edge_type": "causal"}]}

        recalled = await call(s, "recall", query="why Qdrant for the vector store?")
        ids = [hit["id"] for hit in recalled["results"]]
        assert a in ids
        assert next(h for h in recalled["results"] if h["id"] == a)["content"] == why
        basic = await call(s, "recall", query="Qdrant", basic=True)
        assert [(h["id"], h["content"]) for h in basic["results"]] == [(a, why)]

        shown = await call(s, "show", id=a)
        assert (shown["id"], shown["content"], shown["source"]) == (a, why, "user")

        assert await call(s, "forget", id=a) == {"id": a, "message": "Insight soft-deleted successfully",
                                                  "status": "deleted"}
        assert await raw_call(s, "show", id=a) == (True, f"insight {a} not found")
        assert a not in [h["id"] for h in (await call(s, "recall", query="why Qdrant?"))["results"]]
        assert await call(s, "related", id=b, edge_type="causal") == {"results": []}
        status = await call(s, "status")
        assert (status["total_insights"], status["deleted_insights"]) == (1, 1)

    with Memory() as mem:  # the oplog marks the MCP origin and holds no content
        log = mem.log(limit=100)
        remembers = [e for e in log if e.operation == "remember"]
        assert [e.insight_id for e in remembers] == [b, a]
        assert all(e.detail.startswith("origin=mcp bytes=") for e in remembers)
        assert not any(why in e.detail or what in e.detail for e in log)


async def test_results_are_the_cli_json_with_content_cut_to_600(sdk: Any, tmp_path: Path, cli: Any) -> None:
    long_text = "Long note about the ingestion pipeline. " + "x" * 700 + " the end"
    short_text = "A short note about the ingestion pipeline"
    async with serve(tmp_path) as s:
        a = (await call(s, "remember", content=long_text))["id"]
        b = (await call(s, "remember", content=short_text))["id"]
        await call(s, "remember", content="Lunch is at noon on Fridays")
        cut = await call(s, "search", query="ingestion pipeline")
        whole = await call(s, "search", query="ingestion pipeline", full=True)
        related_cut = await call(s, "related", id=b)
        related_all = await call(s, "related", id=b, full=True)
        related_one = await call(s, "related", id=b, limit=1, full=True)
    r = cli("search", "ingestion", "pipeline")
    assert r.code == 0, r.err
    assert whole == {"results": r.json()}  # the CLI's objects, wrapped
    assert sorted(h["id"] for h in whole["results"]) == sorted([a, b])

    short = long_text[:599].strip() + "…"
    assert len(short) == 600
    by_id = {h["id"]: h for h in cut["results"]}
    assert (by_id[a]["content"], by_id[a]["truncated"]) == (short, True)
    assert by_id[b] == next(h for h in whole["results"] if h["id"] == b)  # short content: untouched, no flag
    assert cut["truncation_hint"] == TRUNCATION_HINT
    assert "truncation_hint" not in whole and all("truncated" not in h for h in whole["results"])
    assert next(h for h in whole["results"] if h["id"] == a)["content"] == long_text

    assert len(related_all["results"]) == 2
    assert [h["content"] for h in related_cut["results"] if h["id"] == a] == [short]
    assert [h.get("truncated") for h in related_cut["results"] if h["id"] != a] == [None]
    assert related_cut["truncation_hint"] == TRUNCATION_HINT
    assert related_one == {"results": related_all["results"][:1]}


async def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(sdk: Any, tmp_path: Path) -> None:
    async with serve(tmp_path) as s:
        a = (await call(s, "remember", content="Deploys go out on Tuesdays"))["id"]
        bad = [
            ("recall", {"query": "deploys", "limit": 0}, "limit must be between 1 and 100, got 0"),
            ("link", {"source_id": a, "target_id": a, "edge_type": "friend"},
             'invalid edge type "friend"; valid: temporal, semantic, causal, entity, supersedes'),
            ("forget", {"id": "missing-id"}, "forget: insight missing-id not found or already deleted"),
            ("related", {"id": "missing-id"}, "insight missing-id not found"),
            ("link", {"source_id": a, "target_id": "missing-id"}, "target insight missing-id not found"),
            ("search", {"query": "deploys", "limit": 0}, "limit must be between 1 and 100, got 0"),
            ("status", {"extra": 1}, 'unknown argument "extra"'),
        ]
        for name, args, message in bad:
            assert await raw_call(s, name, **args) == (True, message), name
            assert (await call(s, "status"))["total_insights"] == 1
        assert [h["id"] for h in (await call(s, "search", query="deploys"))["results"]] == [a]


async def test_concurrent_calls_are_served_one_at_a_time(sdk: Any, tmp_path: Path) -> None:
    import anyio

    texts = [f"Concurrent note number {i} about service {i}" for i in range(12)]
    results: dict[str, Any] = {}

    async def remember(text: str) -> None:
        results[text] = await raw_call(s, "remember", content=text)

    async def search() -> None:
        is_error, body = await raw_call(s, "search", query="concurrent note")
        assert not is_error, body

    async with serve(tmp_path) as s:
        async with anyio.create_task_group() as tg:
            for text in texts:
                tg.start_soon(remember, text)
                tg.start_soon(search)
        status = await call(s, "status")
    assert all(not is_error for is_error, _ in results.values())
    assert sorted(json.loads(body)["content"] for _, body in results.values()) == sorted(texts)
    assert status["total_insights"] == 12


async def test_readonly_offers_only_the_read_tools(sdk: Any, tmp_path: Path, mem: Memory) -> None:
    a = mem.remember("The staging cluster runs in eu-west-1").id
    before = mem.store.count_log()
    mem.close()
    async with serve(tmp_path, "--readonly") as s:
        assert list(await listed(s)) == READ_TOOLS
        assert await raw_call(s, "remember", content="nope") == (True, f"remember {READONLY}")
        assert [h["id"] for h in (await call(s, "search", query="staging cluster"))["results"]] == [a]
        assert (await call(s, "show", id=a))["access_count"] == 0
    with Memory() as m:
        assert (m.store.count_log(), m.status().total_insights) == (before, 1)


async def test_the_documented_host_config_serves(
    sdk: Any, tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/mcp.md's JSON snippet, run as a host would (the command is this interpreter's `-m mnemon_core`)."""
    doc = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    snippet = json.loads(doc.split("```json\n", 1)[1].split("```", 1)[0])
    entry = snippet["mcpServers"]["mnemon"]
    assert (entry["command"].endswith("/mnemon"), entry["args"]) == (True, ["mcp", "serve"])
    for key, value in entry["env"].items():
        monkeypatch.setenv(key, value)
    async with serve(tmp_path, *entry["args"][2:]) as s:
        assert list(await listed(s)) == ALL_TOOLS
        assert (await call(s, "status"))["db_path"] == str(data_dir / "data" / "default" / "mnemon.db")


# ---------------------------------------------------------------- start-up


def test_readonly_without_a_database_fails_at_start_up(data_dir: Path, cli: Any) -> None:
    r = cli("mcp", "serve", "--readonly")
    assert (r.code, r.out) == (1, "")
    assert r.err == f"Error: database not found: {data_dir / 'data' / 'default' / 'mnemon.db'}\n"


def test_missing_sdk_names_the_extra(tmp_path: Path, cli: Any) -> None:
    shim = tmp_path / "shim" / "mcp"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n")
    r = cli("mcp", "serve", env={"PYTHONPATH": os.pathsep.join([str(shim.parent), str(ROOT)])})
    assert (r.code, r.out, r.err) == (1, "", "Error: mcp is not installed: pip install 'mnemon-core[mcp]'\n")


def test_a_broken_sdk_is_not_reported_as_missing(tmp_path: Path, cli: Any) -> None:
    shim = tmp_path / "shim" / "mcp"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError(\"cannot import name 'x' from 'pydantic'\")\n")
    r = cli("mcp", "serve", env={"PYTHONPATH": os.pathsep.join([str(shim.parent), str(ROOT)])})
    assert (r.code, r.out) == (1, "")
    assert r.err == ("Error: the mcp package does not import (cannot import name 'x' from 'pydantic'); "
                     "pip install -U 'mnemon-core[mcp]'\n")


def test_mcp_without_subcommand_is_a_usage_error(cli: Any) -> None:
    r = cli("mcp")
    assert r.code == 1 and r.err.startswith("Error: the following arguments are required: <subcommand>")


def test_the_sdk_is_not_imported_by_the_cli_or_the_face() -> None:
    code = (
        "import sys, mnemon_core.faces.cli as c, mnemon_core.faces.mcp; c.build_parser(); "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=server_env(), timeout=60,
                         check=False)
    assert (out.returncode, out.stdout) == (0, "[]\n"), out.stderr
