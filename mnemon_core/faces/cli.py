"""`mnemon`: parse flags → one `Memory` call → JSON on stdout.

One error boundary (`main`): errors a user can cause (`MnemonError`) and faults of the environment (a file
system, text or database that refuses, see `errors.fault_message`) are one line on stderr and exit status 1;
so is a bug, as `internal error: ...`. The traceback is printed only under `MNEMON_DEBUG=1`. `main` runs a
command on the process's streams; `call` runs one with streams and variables of its own (`console.own`) and
returns (code, out, err): the resident engine is such a caller.

The module imports only the standard library at load time: the CLI starts on every agent turn, so the
engine (pydantic, numpy) is imported when a command runs, not for `--version`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar

TYPE_CHECKING = False  # not `typing`'s: this module is imported on every start, typing costs ~5 ms
if TYPE_CHECKING:
    from typing import Any

from .. import __version__  # the package's one version (pyproject reads it too); the package is loaded already
from .. import console

# argparse's messages stay English whatever the locale (agents and tests read them), which also spares every
# start the ~70 gettext catalogue lookups building the parser makes (20 ms).
argparse._ = lambda message: message  # type: ignore[attr-defined]

Handler = Callable[[argparse.Namespace], object]
COMMANDS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = fn
        return fn

    return register


def dump(value: Any) -> str:
    """Pretty JSON (2-space indent) of a model, a list of models or plain data."""
    from ..models import printed

    return printed(value)


def emit(value: Any) -> None:
    console.out().write(dump(value) + "\n")


def memory(args: argparse.Namespace, origin: str = "cli", *, creates: bool = False) -> Any:
    """The `Memory` a command works on. A named store must exist, so a typo in `--store` is an error rather
    than a new empty store; only a command that `creates` (adds insights) may make one, and `main` says so
    once it did. The default store stays implicit."""
    from .. import stores
    from ..config import DEFAULT_STORE, Settings
    from ..memory import Memory

    settings = Settings.resolve(
        data_dir=args.data_dir, store=args.store, readonly=args.readonly, embed_model=args.embed_model,
        database_url=getattr(args, "database_url", None), origin=origin,
    )
    if settings.store != DEFAULT_STORE and not stores.exists(settings):
        if not creates:
            raise stores.missing(settings.store)
        args.new_store = settings
    args.session_default = settings.session  # this call's MNEMON_SESSION (a warm Memory may be shared)
    cache = _memories.get()
    return cache(settings) if cache is not None else Memory(settings=settings)


# Where a command's Memory comes from (`call`'s `memories`: the resident engine keeps one warm Memory per
# configuration and hands it out); None: a new one.
_memories: ContextVar[Callable[[Any], Any] | None] = ContextVar("mnemon_memories", default=None)


# ---------------------------------------------------------------- commands


@command("remember")
def _remember(a: argparse.Namespace) -> None:
    r = memory(a, creates=True).remember(
        " ".join(a.content), category=a.cat, importance=a.imp, tags=a.tags, entities=a.entities,
        entity_mode=a.entity_mode, source=a.source, no_diff=a.no_diff, session=a.session or a.session_default,
    )
    emit(r)


@command("link")
def _link(a: argparse.Namespace) -> None:
    emit(memory(a).link(a.source_id, a.target_id, type=a.type, weight=a.weight, metadata=a.meta))


@command("recall")
def _recall(a: argparse.Namespace) -> None:
    r = memory(a).recall(
        " ".join(a.query), limit=a.limit, intent=a.intent, category=a.cat, source=a.source, basic=a.basic,
        verbose=a.verbose, brief=a.brief, excerpt_chars=a.excerpt_chars, recipe=a.recipe, max_tokens=a.max_tokens,
    )
    if a.brief:  # compact, unindented
        import json

        from pydantic import BaseModel

        data = r.model_dump(mode="json") if isinstance(r, BaseModel) else r
        console.out().write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        emit(r)


@command("search")
def _search(a: argparse.Namespace) -> None:
    emit(memory(a).search(" ".join(a.query), limit=a.limit))


@command("show")
def _show(a: argparse.Namespace) -> None:
    emit(memory(a).show(a.id))


@command("related")
def _related(a: argparse.Namespace) -> None:
    emit(memory(a).related(a.id, edge_type=a.edge, depth=a.depth))


@command("forget")
def _forget(a: argparse.Namespace) -> None:
    emit(memory(a).forget(a.id))


@command("gc")
def _gc(a: argparse.Namespace) -> None:
    mem = memory(a)
    given = {k: v for k, v in (("threshold", a.threshold), ("limit", a.limit)) if v is not None}
    emit(mem.gc_keep(a.keep) if a.keep else mem.gc(**given))


@command("status")
def _status(a: argparse.Namespace) -> None:
    emit(memory(a).status())


@command("log")
def _log(a: argparse.Namespace) -> None:
    entries = memory(a).log(limit=a.limit)
    console.out().write(format_log(entries))


# C0/C1 controls, line separators and lone surrogates: what a terminal would obey or a line would break on
# (a pattern, compiled by `re`'s cache on first use: start-up does not pay for it).
_UNPRINTABLE = "[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]"


def printable(text: str) -> str:
    """`text` with every control character as its escape (`\\x1b`, `\\n`): shown, never obeyed, one line."""
    return re.sub(_UNPRINTABLE, lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def format_log(entries: Sequence[Any]) -> str:
    """Text table like Go's tabwriter (2-space padding), newest first; an insight id as its first ID_PREFIX_MIN
    characters, which every command that takes an id accepts."""
    from ..inputs import ID_PREFIX_MIN

    if not entries:
        return "No operations recorded yet.\n"
    rows = [("TIME", "OP", "INSIGHT", "DETAIL"), ("----", "--", "-------", "------")]
    for e in entries:
        detail = printable(e.detail.replace("\n", " "))
        if len(detail.encode()) > 60:
            detail = detail[:57] + "..."
        rows.append((e.created_at, printable(e.operation), printable((e.insight_id or "")[:ID_PREFIX_MIN]), detail))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


@command("store")
def _store(a: argparse.Namespace) -> None:
    from .. import stores

    console.out().write(stores.run(a.data_dir, a.store, a.action, a.name, a.database_url, readonly=a.readonly) + "\n")


@command("import")
def _import(a: argparse.Namespace) -> None:
    mem = memory(a, creates=True)
    r = mem.import_draft(a.file, dry_run=a.dry_run, no_diff=a.no_diff, vectors=a.vectors)
    if isinstance(r, str):
        console.out().write(r + "\n")
        return
    emit(r)
    if r.vectors_pending:
        global queued_vectors
        queued_vectors = (mem.settings, r.vectors_pending)


# Set by `import` when it wrote insights without their vectors: (the settings of the store, how many). The
# `mnemon` entry point (`client.main`, which imports this module, not the other way) then has the data directory's
# resident engine fill them in.
queued_vectors: tuple[Any, int] | None = None


@command("embed")
def _embed(a: argparse.Namespace) -> None:
    emit(memory(a).embed(a.id, all=a.all, status=a.status))


@command("viz")
def _viz(a: argparse.Namespace) -> None:
    from .viz import render

    text = render(memory(a), a.format)
    if a.output in ("-", None):
        console.out().write(text)
    else:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"written to {a.output}", file=console.err())


@command("daemon")
def _daemon(a: argparse.Namespace) -> None:
    from ..daemon.resident import daemon, data_dir_of
    from ..config import environment

    emit(daemon(a.action, data_dir_of(["--data-dir", a.data_dir] if a.data_dir else [], environment())))


@command("mcp")
def _mcp(a: argparse.Namespace) -> None:
    from .mcp import serve  # the MCP SDK loads only here: start-up time of every other command

    serve(memory(a, origin="mcp"))


# ---------------------------------------------------------------- extract / judge (extra mnemon-core[openai])
# The LLM jobs live in the separate `mnemon_extractor` package, imported only when one of these runs.


def _extractor() -> Any:
    import importlib.util

    from ..errors import MissingExtraError

    try:  # checked before any file is read; openai itself (a second to import) loads at the first LLM call
        found = importlib.util.find_spec("openai") is not None
        import mnemon_extractor
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        found = False
    if not found:
        raise MissingExtraError("openai", "openai")
    return mnemon_extractor


def _llm_options(a: argparse.Namespace) -> dict[str, Any]:
    """Only the flags given: the rest come from $MNEMON_LLM_* or the defaults."""
    given = (("model", a.model), ("base_url", a.base_url), ("temperature", a.temperature), ("seed", a.seed))
    return {k: v for k, v in given if v is not None}


@command("extract")
def _extract(a: argparse.Namespace) -> None:
    from ..errors import ReadOnlyError, ValidationError

    if a.judge and not a.do_import:
        raise ValidationError("--judge needs --import: the judge links insights once they are stored", field="judge")
    if a.do_import and a.readonly:
        raise ReadOnlyError("extract --import")
    ex = _extractor()
    opts = {"chunk_tokens": a.chunk_tokens} if a.chunk_tokens is not None else {}
    extractor = ex.Extractor(**_llm_options(a), **opts, source=a.source or None, progress=True)
    run = extractor.run(a.file)
    summary: dict[str, Any] = {**run.report.model_dump(mode="json"), "output": None}
    if run.draft is None:
        emit(summary)
        raise ex.ExtractionError(f"no draft written: {ex.nothing_because(run.report)}", report=run.report)
    ex.write_draft(run.draft, a.output)
    summary["output"] = a.output
    if run.report.chunks_failed:
        print(f"mnemon: warning: {run.report.chunks_failed} of {run.report.chunks} chunks failed; see "
              '"failures"', file=console.err())
    if run.report.partial:
        print(f"mnemon: warning: {run.report.partial} answer(s) cut off at their token limit were kept in part "
              '(the insights written in full); see "calls"', file=console.err())
    if a.do_import:
        mem = memory(a, creates=True)
        imported = mem.import_draft(run.draft)
        summary["import"] = imported.model_dump(mode="json")
        if a.judge:
            judge = ex.LinkJudge(mem, **_llm_options(a), dry_run=a.dry_run)
            added = [item.id for item in imported.results if item.action == "added"]
            try:
                judged = judge.judge_many(added)
            except ex.LLMError as e:  # the import stands and is reported; the judge's fault is the exit status
                summary["judge_error"] = str(e)
                emit(summary)
                raise
            summary["judge"] = [r.model_dump(mode="json") for r in judged]
            if why := ex.nothing_judged(judged):  # the import stands: a warning, not a failure
                print(f"mnemon: warning: {why}", file=console.err())
    emit(summary)


@command("judge")
def _judge(a: argparse.Namespace) -> None:
    from ..errors import ReadOnlyError, ValidationError

    if (a.id is None) == (a.recent is None):
        raise ValidationError("give an insight ID or --recent N (one of them)", field="id")
    if not a.dry_run and a.readonly:
        raise ReadOnlyError("judge")
    ex = _extractor()
    judge = ex.LinkJudge(memory(a), **_llm_options(a), dry_run=a.dry_run)
    if a.recent is not None:
        if a.recent < 1:
            raise ValidationError(f"--recent must be at least 1, got {a.recent}", field="recent")
        results = judge.judge_recent(a.recent)
        emit(results)
    else:
        results = [judge.judge(a.id)]
        emit(results[0])
    if why := ex.nothing_judged(results):  # each result's error is on stdout; exit 1 when none got a decision
        raise ex.LLMError(why)


def add_llm_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    def llm_flags(s: argparse.ArgumentParser) -> None:
        s.add_argument("--model", default=None, help="model name (default $MNEMON_LLM_MODEL, else gpt-4o-mini)")
        s.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. "
                       "http://localhost:11434/v1 (default $MNEMON_LLM_BASE_URL, else OpenAI); key in "
                       "$MNEMON_LLM_API_KEY")
        s.add_argument("--temperature", type=float, default=None, help="sampling temperature, 0-2 (default 0: "
                       "the same input gives the same answer)")
        s.add_argument("--seed", type=int, default=None, help="sampling seed sent where the server takes one "
                       "(default 0)")

    s = cmd("extract", "Chat export → memory_draft.json through an LLM (extra mnemon-core[openai])")
    s.add_argument("file", help="Markdown/text transcript, ChatGPT or Claude conversations.json, JSON/JSONL "
                   "messages, LangChain messages")
    s.add_argument("-o", "--output", default="memory_draft.json", help="draft file (memory_draft.json)")
    s.add_argument("--import", dest="do_import", action="store_true", help="import the draft into the store")
    s.add_argument("--judge", action="store_true", help="with --import: the LLM links each imported insight")
    s.add_argument("--dry-run", action="store_true", help="with --judge: print its decisions, link nothing")
    s.add_argument("--chunk-tokens", type=int, default=None, help="transcript tokens per LLM call (1200)")
    s.add_argument("--source", default="chat-export", help="source label of the draft (chat-export)")
    llm_flags(s)

    s = cmd("judge", "LLM link judge: link an insight to the candidates it picks (extra mnemon-core[openai])")
    s.add_argument("id", nargs="?", help="insight id")
    s.add_argument("--recent", type=int, default=None, metavar="N", help="judge the N newest insights")
    s.add_argument("--dry-run", action="store_true", help="print the decisions, link nothing")
    llm_flags(s)


@command("migrate")
def _migrate(a: argparse.Namespace) -> None:
    from ..config import Settings
    from ..stores import StoreCatalog

    settings = Settings.resolve(data_dir=a.data_dir, store=a.store, embedder="none")
    emit(StoreCatalog(settings=settings).migrate(a.source, a.target))


@command("receipt")
def _receipt(a: argparse.Namespace) -> None:
    from .receipt import build
    from ..timeutil import now

    mem = memory(a)
    emit(build(mem.settings.store, a.limit, mem.log(limit=a.limit), now()).plain())


@command("setup")
def _setup(a: argparse.Namespace) -> None:
    from ..hosts.setup import main as setup

    console.out().write(setup(a))


@command("hook")
def _hook(a: argparse.Namespace) -> None:
    from ..config import env_count
    from ..hosts.hooks import NUDGE_EVERY, run  # the standard library only: hosts run this on every prompt
    from ..hosts.prompts import cli_command

    def counts() -> tuple[int, int, Any]:  # prime only: the one hook that opens the store
        mem = memory(a)
        status = mem.status()
        return status.total_insights, status.edge_count, mem.settings.data_dir

    def data_dir() -> Any:
        from ..config import UNSET, Settings

        return Settings.resolve(data_dir=a.data_dir or UNSET, store=a.store or UNSET).data_dir

    # The agent's commands name this executable with the data dir and store the hook was given.
    command = cli_command()
    if a.data_dir:
        command += ["--data-dir", os.path.abspath(a.data_dir)]
    if a.store:
        command += ["--store", a.store]
    console.out().write(run(a.phase, a.host, console.stdin(), counts, data_dir, command,
                         lambda: env_count("MNEMON_NUDGE_EVERY", NUDGE_EVERY)))


# ---------------------------------------------------------------- parser


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns` (what argparse wraps its help to): $COLUMNS, else the terminal's
    width, else 80; without importing shutil, whose compression modules cost `--help` ~3 ms."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter at argparse's width (the terminal's less 2)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)


class Parser(argparse.ArgumentParser):
    """Usage errors are one line and exit status 1, like every other error."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(1, f"Error: {printable(message)}\n")  # "unrecognized arguments" quotes them raw

    def _print_message(self, message: str, file: Any = None) -> None:
        """Help, usage and errors go to the command's own streams (`console`), as everything it prints does."""
        if message:
            (console.err() if file is sys.stderr else console.out()).write(message)


Fill = Callable[[argparse.ArgumentParser], None]


class Command(Parser):
    """A command's parser whose flags (`fills`, in order) are added when the command is parsed: most come from
    the input models, which import pydantic, and `--version` and the command list must not pay for that."""

    def __init__(self, *args: Any, fills: Sequence[Fill] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fills = list(fills)

    def fill(self) -> None:
        while self._fills:
            self._fills.pop(0)(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        self.fill()
        return super().parse_known_args(args, namespace)


def options(model: str, **flags: str | tuple[str, str]) -> Fill:
    """Flags for fields of `inputs.<model>`: `field="--flag"` (or `("--flag", help)` where the model's
    description speaks of a tool-call limit the CLI does not have), each with the field's type, default and
    description; a bool is a switch, a list a comma list."""

    def fill(s: argparse.ArgumentParser) -> None:
        from .. import inputs

        fields = getattr(inputs, model).model_fields
        for name, spec in flags.items():
            flag, text = spec if isinstance(spec, tuple) else (spec, None)
            f = fields[name]
            default = f.get_default(call_default_factory=True)
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            text = text or f.description or ""
            if f.annotation is bool:
                s.add_argument(flag, action="store_true", help=text)
                continue
            if isinstance(default, list):
                text, default = f"comma list, {text}", None
            if "enum" in extra:
                text += ": " + "|".join(extra["enum"])  # type: ignore[arg-type]
            if default is not None:
                text += f" (default {default})"
            given = [t for t in getattr(f.annotation, "__args__", ()) if t is not type(None)]  # `int | None` → int
            kind = {int: int, float: float}.get(given[0] if len(given) == 1 else f.annotation)  # type: ignore[call-overload]
            s.add_argument(flag, type=kind, default=default, help=text)

    return fill


LIMIT = ("--limit", "maximum results")  # the models' "1-100" is the tool-call ceiling; the CLI takes any N ≥ 1


def build_parser() -> argparse.ArgumentParser:
    # Global flags are accepted before or after the command (a parent parser with suppressed defaults).
    glob = Parser(add_help=False)
    g = glob.add_argument_group("global flags")
    g.add_argument("--data-dir", default=argparse.SUPPRESS, help="base directory (default $MNEMON_DATA_DIR or ~/.mnemon)")
    g.add_argument("--store", default=argparse.SUPPRESS, help="store name (beats $MNEMON_STORE and the active file)")
    g.add_argument("--readonly", action="store_true", default=argparse.SUPPRESS, help="refuse every write")
    g.add_argument("--embed-model", default=argparse.SUPPRESS, help="embedding model (default $MNEMON_EMBED_MODEL)")
    g.add_argument("--database-url", default=argparse.SUPPRESS,
                   help="postgresql://…, kuzu:///abs/dir, redis://… or falkordb://… (default $MNEMON_DATABASE_URL)")
    g.add_argument("--no-daemon", action="store_true", default=argparse.SUPPRESS,
                   help="run in this process, not in the data directory's resident engine ($MNEMON_DAEMON=off)")

    p = Parser(prog="mnemon", description="Graph memory for LLM agents.", parents=[glob])
    p.add_argument("--version", action="version", version=f"mnemon {__version__}")
    sub = p.add_subparsers(dest="command", metavar="<command>", parser_class=Command)

    def cmd(name: str, help: str, *fills: Fill) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, parents=[glob], fills=fills)

    # Flags named in `options(...)` come from the calls' input models (inputs.py): type, default, help.
    s = cmd("remember", "Store a memory; builds temporal, entity, causal and semantic edges", options(
        "RememberInput", category="--cat", importance="--imp", tags="--tags", entities="--entities",
        entity_mode="--entity-mode", source="--source", no_diff="--no-diff",
    ), lambda s: s.add_argument("--session", default=None, help="conversation this continues (default "
                                "$MNEMON_SESSION): consecutive remembers of one session are linked"))
    s.add_argument("content", nargs="+")

    s = cmd("link", "Create an edge between two insights", options("LinkInput", edge_type="--type", weight="--weight"),
            lambda s: s.add_argument("--meta", default=None, help="JSON object of strings"))
    s.add_argument("source_id")
    s.add_argument("target_id")

    s = cmd("recall", "Intent-aware graph recall", options(
        "RecallInput", limit=LIMIT, intent="--intent", category="--cat", source="--source", basic="--basic",
        max_tokens="--max-tokens",
    ), options("RecallShape", verbose="--verbose", brief="--brief", excerpt_chars="--excerpt-chars", recipe="--recipe"),
        lambda s: s.add_argument("--smart", action="store_true", help=argparse.SUPPRESS))
    s.add_argument("query", nargs="+")

    s = cmd("search", "Keyword search", options("SearchInput", limit=LIMIT))
    s.add_argument("query", nargs="+")

    s = cmd("show", "Show one insight")
    s.add_argument("id")

    s = cmd("related", "Insights connected to one insight",
            options("RelatedInput", edge_type="--edge", depth="--depth"))
    s.add_argument("id")

    s = cmd("forget", "Soft-delete an insight")
    s.add_argument("id")

    s = cmd("gc", "Suggest low-value insights to forget, or keep one")
    # Unset flags are left out of the call: the defaults are Memory.gc's.
    s.add_argument("--threshold", type=float, default=None, help="suggest insights whose effective importance is "
                   "below this")
    s.add_argument("--limit", type=int, default=None, help="most suggestions")
    s.add_argument("--keep", default=None, metavar="ID")

    cmd("status", "Store statistics")

    s = cmd("log", "Recent operations", options("LogInput", limit=LIMIT))

    s = cmd("store", "Manage named stores")
    s.add_argument("action", choices=["list", "create", "set", "remove"])
    s.add_argument("name", nargs="?")

    s = cmd("import", "Import a memory_draft.json (schema v1; every field and limit: docs/import.md)")
    s.add_argument("file")
    s.add_argument("--dry-run", action="store_true")
    s.add_argument("--no-diff", action="store_true")
    s.add_argument("--vectors", choices=("auto", "now", "later"), default="auto",
                   help="auto: a large import is recallable at once and fills its vectors in behind; now: wait for "
                   "them; later: always fill them in behind (docs/import.md)")

    s = cmd("embed", "Embed insights: one id, --all (backfill) or --status")
    s.add_argument("id", nargs="?")
    s.add_argument("--all", action="store_true")
    s.add_argument("--status", action="store_true")

    s = cmd("viz", "Draw the graph as DOT or a self-contained HTML page")
    s.add_argument("--format", default="dot", help="dot|html")
    s.add_argument("-o", "--output", default="-")

    s = cmd("daemon", "The resident engine that serves this data directory's commands warm")
    s.add_argument("action", choices=["start", "stop", "status"])

    s = cmd("mcp", "Model Context Protocol server for MCP hosts (extra mnemon-core[mcp])")
    msub = s.add_subparsers(dest="mcp_command", metavar="<subcommand>", required=True)
    msub.add_parser("serve", help="serve the memory tools over stdio", description="Serve the memory tools "
                    "over stdio; --store, --data-dir and --readonly pick the store at start-up.", parents=[glob])

    add_llm_commands(cmd)  # extract, judge

    s = cmd("migrate", "Copy a store into Postgres, Kùzu, Redis or FalkorDB (insights, vectors, edges, oplog), "
            "verified by counts and a checksum")
    s.add_argument("--from", dest="source", required=True, metavar="SRC",
                   help="sqlite:PATH (sqlite: = current store), postgresql://…, kuzu:///dir, redis://… or falkordb://…")
    s.add_argument("--to", dest="target", required=True, metavar="URL",
                   help="postgresql://…, kuzu:///dir, redis://… or falkordb://… (store: --store)")

    s = cmd("receipt", "Recent operations as a shareable receipt: hashes of ids and details, no content")
    s.add_argument("--limit", type=int, default=20)

    s = cmd("setup", "Install the skill, the guide and hooks into coding-agent hosts (docs/agents.md)")
    s.add_argument("--target", nargs="+", action="extend", metavar="T",
                   help="claude-code, codex, cursor, nanobot, openclaw, pi, hermes, opencode (default: the hosts "
                        "detected)")
    s.add_argument("--global", dest="is_global", action="store_true",
                   help="the user-wide config (~/.claude, ~/.codex, ...) instead of the project's")
    s.add_argument("--yes", action="store_true", help="ask nothing: every host detected, the default hooks")
    s.add_argument("--eject", action="store_true", help="remove mnemon's entries and files, nothing else")

    from ..hosts import HOSTS, PHASES  # constants only

    s = cmd("hook", "What the hooks installed by setup run (reads the host's JSON on stdin)")
    s.add_argument("phase", choices=PHASES)
    s.add_argument("--host", choices=HOSTS, default="claude-code")

    return p


def built_parser() -> argparse.ArgumentParser:
    """The parser with every command's flags added: built once by a process that parses many calls (the
    resident engine; a parse leaves the parser as it was)."""
    parser = build_parser()
    for action in parser._subparsers._group_actions if parser._subparsers else ():  # noqa: SLF001 - argparse's own
        for sub in getattr(action, "choices", {}).values():
            if isinstance(sub, Command):
                sub.fill()
    return parser


def main(argv: Sequence[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Run one command; `parser`: one made by `built_parser` (else each call builds its own, lazily)."""
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    for name in ("data_dir", "store", "embed_model", "database_url"):
        if not hasattr(args, name):
            setattr(args, name, None)
    if not hasattr(args, "readonly"):
        args.readonly = False
    if not args.command:
        parser.print_help()
        return 0
    try:
        COMMANDS[args.command](args)
        new = getattr(args, "new_store", None)
        if new is not None:
            from .. import stores

            if stores.exists(new):  # not after a dry run
                print(f'mnemon: created store "{new.store}"', file=console.err())
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt as e:  # Ctrl-C: one line, the shell's status for SIGINT; a long run says how far
        from ..errors import Interrupted

        print(str(e) if isinstance(e, Interrupted) else "interrupted", file=console.err())
        return 130
    except Exception as e:  # the one error boundary
        from ..config import debug
        from ..errors import fault_message
        from ..redact import redact

        message = fault_message(e)
        if message is None:
            message = f"internal error (a bug; MNEMON_DEBUG=1 shows where): {type(e).__name__}: {e}"
        if debug():
            import traceback

            traceback.print_exc(file=console.err())
        print(f"Error: {printable(redact(message))}", file=console.err())
        return 1
    return 0


def call(argv: Sequence[str], env: Mapping[str, str], stdin: str | None = None, *,
         parser: argparse.ArgumentParser | None = None, memories: Callable[[Any], Any] | None = None,
         ) -> tuple[int, str, str]:
    """Run one command with streams of its own (`console.own`): `env` the variables it reads, `stdin` its input
    (None: a terminal), `memories` where its Memory comes from (else a new one). Its exit status and what it
    printed on stdout and on stderr. The resident engine runs its clients' commands so, side by side."""
    token = _memories.set(memories)
    try:
        with console.own(env, stdin) as (out, err):
            try:
                code = main(argv, parser)
            except SystemExit as e:  # argparse's usage errors and --help
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if isinstance(e.code, str):
                    err.write(e.code + "\n")
    finally:
        _memories.reset(token)
    return code, out.getvalue(), err.getvalue()


if __name__ == "__main__":
    sys.exit(main())
