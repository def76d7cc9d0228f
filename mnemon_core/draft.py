"""Batch import of memory drafts (spec 003, reference §6 "import"): the draft schema v1 as pydantic models,
its validation, and the importer behind `mnemon import` / `Memory.import_draft`.

The whole draft is validated before anything is written; every error names the insight or edge index and
the field (`insights[3].tags: too many tags (21, max 20)`). Then insights are written in batches, each batch
embedded in one call (outside the transaction) and committed as one transaction, so an import killed midway
leaves whole batches and no half-written insight, and running it again skips what is already there (exact
duplicates map to the existing id). A final transaction adds the explicit edges, rebuilds the temporal
backbone through the imported items, refreshes EI and runs auto-prune once.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from . import lifecycle
from .errors import NotFoundError, ValidationError
from .models import Category, Edge, EdgeType, EntityMode, Insight, OmitEmpty
from .progress import progress_bar
from .store import NO_FILTERS, Filters, Store
from .text import tokens_of
from .timeutil import normalise
from .write.constants import CAUSAL_LOOKBACK, ENTITY_LINKS_PER_ENTITY, SEMANTIC_AUTO_LINK
from .write.pipeline import resolve, write_insight
from .write.temporal import sequence_edges
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

if TYPE_CHECKING:
    from .memory import Memory

__all__ = [
    "DraftEdge",
    "DraftInsight",
    "ImportDraft",
    "ImportItem",
    "ImportResult",
    "import_draft",
    "load_draft",
]

SCHEMA_VERSION = "1"
DEFAULT_IMPORTANCE = 3  # importance 0 (or absent) means this
DEFAULT_EDGE_WEIGHT = 0.5  # weight 0 (or absent) means this
DEFAULT_SOURCE = "import"  # when neither the insight nor the draft names a source
# Insights per committed transaction and per embedding call: small enough that a killed import loses
# little, large enough that commits (an fsync each) do not dominate.
IMPORT_BATCH = 500
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
        "session (absent: the draft's one session) are linked as a conversation",
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
    def _index(cls, v: Any) -> int:
        if not _is_int(v):
            raise ValueError(f"index must be an integer, got {json.dumps(v, ensure_ascii=False)}")
        if v < 0:
            raise ValueError(f"index must not be negative, got {v}")
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
            raise ValueError("at least one insight is required")
        return v

    @field_validator("edges", mode="before")
    @classmethod
    def _edges(cls, v: Any) -> Any:
        return [] if v is None else v

    @model_validator(mode="after")
    def _edge_indices(self) -> ImportDraft:
        n = len(self.insights)
        problems: list[str] = []
        for k, e in enumerate(self.edges):
            for name in ("source_index", "target_index"):
                i = getattr(e, name)
                if i >= n:
                    problems.append(f"edges[{k}].{name}: index {i} out of range (the draft has {n} insights)")
            if e.source_index == e.target_index:
                problems.append(f"edges[{k}].target_index: must differ from source_index ({e.source_index})")
        if problems:
            raise ValueError(_join(problems))
        return self

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
    try:
        return ImportDraft.model_validate(data)
    except PydanticValidationError as e:
        raise _convert(e) from None


def _read(draft: str | Path) -> str:
    if isinstance(draft, str) and draft.lstrip().startswith("{"):
        return draft
    if str(draft) == "-":
        return sys.stdin.read()
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


class ImportResult(BaseModel):
    """The JSON of `mnemon import` (spec 003). `errors` > 0 means a partial import."""

    imported: int
    updated: int = Field(default=0, description="always 0: import never replaces (only exact repeats skip)")
    skipped: int
    errors: int
    edges_inserted: int = Field(description="explicit draft edges that became new rows (a repeat counts once)")
    auto_pruned: int
    auto_pruned_ids: list[str]
    results: list[ImportItem]


def dry_run_message(draft: ImportDraft) -> str:
    return f"Dry run: {len(draft.insights)} insights, {len(draft.edges)} explicit edges — validation passed."


# ---------------------------------------------------------------------------------------------------- importer


def import_draft(mem: Memory, draft: Any, *, dry_run: bool = False, no_diff: bool = False) -> ImportResult | str:
    if not dry_run:
        mem._writable("import")
    d = load_draft(draft)
    if dry_run:
        return dry_run_message(d)
    return _Importer(mem, d, no_diff).run()


class _Importer:
    def __init__(self, mem: Memory, draft: ImportDraft, no_diff: bool) -> None:
        self.mem = mem
        self.store: Store = mem.store
        self.draft = draft
        self.no_diff = no_diff
        n = len(draft.insights)
        self.ids: list[str | None] = [None] * n  # draft index → the insight it became (or duplicates)
        self.results: list[ImportItem | None] = [None] * n
        self.added: dict[str, str] = {}  # id → source, of insights this run wrote
        self.skipped: list[str] = []  # existing ids that draft items duplicated

    def run(self) -> ImportResult:
        n = len(self.draft.insights)
        planned: set[str] = set()  # contents this run will write, so a repeat inside the draft is not embedded
        with progress_bar(n, "importing") as advance:
            for start in range(0, n, IMPORT_BATCH):
                batch = range(start, min(n, start + IMPORT_BATCH))
                self._batch(batch, planned)
                advance(len(batch))
        edges_inserted, pruned = self._finish()
        results = [r for r in self.results if r is not None]
        return ImportResult(
            imported=sum(r.action == "added" for r in results),
            skipped=sum(r.action == "skipped" for r in results),
            errors=sum(r.error is not None for r in results),
            edges_inserted=edges_inserted, auto_pruned=len(pruned), auto_pruned_ids=pruned, results=results,
        )

    def _batch(self, batch: range, planned: set[str]) -> None:
        store, mem = self.store, self.mem
        # Embed (outside the transaction, in one call) only what will be written.
        todo: list[int] = []
        for i in batch:
            c = self.draft.insights[i].content
            if self.no_diff or (c not in planned and store.find_by_content(c) is None):
                todo.append(i)
                planned.add(c)
        vectors: dict[int, np.ndarray] = {}
        vecs = mem.embed_texts([self.draft.insights[i].content for i in todo])
        emb = mem.embedder
        model = emb.name if vecs is not None and emb is not None else None
        if vecs is not None:
            vectors = dict(zip(todo, vecs))
            mem._fold_stale_index(int(vecs.shape[1]))
        now, ts = mem._now()
        try:
            with store.transaction():  # the fast path: the whole batch, no per-item savepoints
                view = _BuilderView(store)
                done = [self._one(view, i, vectors.get(i), model, now, ts) for i in batch]
        except Exception:  # noqa: BLE001 — rolled back; redo one by one so only the failing items fail
            done = []
            with store.transaction():
                view = _BuilderView(store)
                for i in batch:
                    try:
                        with store.transaction():  # a savepoint: a failing insight leaves nothing behind
                            row = self._one(view, i, vectors.get(i), model, now, ts)
                        done.append(row)
                    except Exception as e:  # noqa: BLE001 — partial success: reported per item
                        view = _BuilderView(store)  # it may remember what the savepoint undid
                        err = f"{type(e).__name__}: {e}"
                        done.append((ImportItem(index=i, id="", content=self.draft.insights[i].content,
                                                action="error", error=err), None))
        for item, source in done:  # only now committed
            self.results[item.index] = item
            if item.action == "error":
                continue
            self.ids[item.index] = item.id
            if source is None:
                self.skipped.append(item.id)
            else:
                self.added[item.id] = source

    def _one(
        self, view: _BuilderView, i: int, vector: np.ndarray | None, model: str | None, now: str, ts: float
    ) -> tuple[ImportItem, str | None]:
        """Write draft insight i (or find its exact duplicate); returns its result row and, when written,
        its source."""
        store, mem, di = self.store, self.mem, self.draft.insights[i]
        if not self.no_diff:
            # Under the write lock, so it also sees earlier items of this draft and other writers.
            existing = store.find_by_content(di.content)
            if existing is not None:
                store.log("import-skip", existing, f"duplicate of {existing}", now)
                return ImportItem(index=i, id=existing, content=di.content, action="skipped"), None
        new_id = str(uuid.uuid4())
        source = self.draft.source_of(i)
        ents = resolve(view, di.content, di.entities, EntityMode.merge)
        created = di.created_at or now
        ins = Insight(
            id=new_id, content=di.content, category=di.category, importance=di.importance, tags=di.tags,
            entities=ents, source=source, created_at=created, updated_at=created, stored_at=now,
        )
        tokens = tokens_of(di.content, di.tags, ents)
        cos = mem.cosines(vector, floor=SEMANTIC_AUTO_LINK) if vector is not None else {}
        # The temporal backbone is rebuilt once at the end, in created_at order (dates are backdated).
        builders: Any = view  # duck-typed Store
        write_insight(builders, ins, tokens, vector, model, cos, temporal=False, now=now, now_ts=ts)
        view.inserted(ins, tokens)
        store.log("import", new_id, mem._detail(di.content), now)
        return ImportItem(index=i, id=new_id, content=di.content, action="added"), source

    def _finish(self) -> tuple[int, list[str]]:
        """One transaction: temporal backbone, explicit edges, EI of everything touched, auto-prune."""
        store, mem = self.store, self.mem
        now, ts = mem._now()
        with store.transaction():
            # Skipped items join the chain too: a re-run after a kill then finishes the backbone the killed
            # run never reached.
            chained = dict(self.added)
            for id_, ins in store.get_insights([s for s in self.skipped if s not in chained]).items():
                chained[id_] = ins.source
            conversation = self._conversation(now)
            touched = repair_backbone(store, chained, now) | conversation
            # Keyed by the edge's primary key: a repeated draft edge is one row (the last one's weight and
            # reason win), and an edge the store already has is replaced, not inserted.
            explicit: dict[tuple[str, str, str], Edge] = {}
            for e in self.draft.edges:
                src, dst = self.ids[e.source_index], self.ids[e.target_index]
                if src is None or dst is None or src == dst:  # a failed item, or two repeats of one text
                    continue
                meta = {"reason": e.reason} if e.reason else {}
                explicit[(src, dst, e.edge_type.value)] = Edge(
                    source_id=src, target_id=dst, edge_type=e.edge_type, weight=e.weight, metadata=meta,
                    created_at=now,
                )
            edges_inserted = len(explicit.keys() - store.existing_edges(explicit))
            for (src, dst, _), edge in explicit.items():
                store.upsert_edge(edge)
                touched.update((src, dst))
            touched.update(self.added)
            lifecycle.refresh_ei(store, sorted(touched), ts)
            pruned = lifecycle.auto_prune(
                store, max_insights=mem.settings.max_insights, min_age_s=mem.settings.prune_min_age_s,
                exclude=None, now=now, trigger=None,
            )
        return edges_inserted, pruned


    def _conversation(self, now: str) -> set[str]:
        """Conversation edges between consecutive items of one session (in draft order), written before the
        backbone repair so that a pair that is both keeps its backbone edge. Returns the ids linked."""
        store, items = self.store, self.draft.insights
        touched: set[str] = set()
        for i in range(1, len(items)):
            a, b = self.ids[i - 1], self.ids[i]
            if a is None or b is None or a == b or items[i - 1].session != items[i].session:
                continue
            if a not in self.added and b not in self.added:  # both were there before this import
                continue
            for e in sequence_edges(a, b, now, "conversation"):
                store.upsert_edge(e)
            touched.update((a, b))
        return touched


class _BuilderView:
    """The store as the graph builders see it inside one import batch.

    For every insight the builders ask three things that cost a scan of every row sharing the entity or the
    source: the entity graph's most recent holders of each entity, the causal graph's look-back over the
    source, and the known-entity path's "is this word a stored entity". Here each question is asked of the
    store once per batch and the answer is kept up to date in memory as the batch inserts, so the answers
    are the store's own: inside the batch transaction nobody else writes and nothing is deleted. Everything
    else goes to the store. A fresh view per batch (and after a rolled-back savepoint) sees other writers.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._entity: dict[str, list[tuple[str, str]]] = {}  # entity → [(created_at, id)], most recent first
        self._source: dict[str, list[Insight]] = {}  # source → insights, most recent first
        self._tokens: dict[str, frozenset[str]] = {}
        self._known: dict[str, str | None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def with_entity(self, entity: str, *, exclude: str, limit: int) -> list[str]:
        if limit > ENTITY_LINKS_PER_ENTITY:
            return self._store.with_entity(entity, exclude=exclude, limit=limit)
        rows = self._entity.get(entity)
        if rows is None:
            ids = self._store.with_entity(entity, exclude=exclude, limit=ENTITY_LINKS_PER_ENTITY)
            found = self._store.get_insights(ids)
            rows = self._entity[entity] = [(found[i].created_at, i) for i in ids if i in found]
        return [i for _, i in rows if i != exclude][:limit]

    def latest(
        self, *, source: str | None = None, since: str | None = None, exclude: str | None = None, limit: int,
        filters: Filters = NO_FILTERS,
    ) -> list[Insight]:
        if source is None or since is not None or filters != NO_FILTERS or limit > CAUSAL_LOOKBACK:
            return self._store.latest(source=source, since=since, exclude=exclude, limit=limit, filters=filters)
        rows = self._source.get(source)
        if rows is None:
            rows = self._source[source] = self._store.latest(source=source, exclude=exclude, limit=CAUSAL_LOOKBACK)
            self._tokens.update(self._store.insight_tokens([r.id for r in rows]))
        return [r for r in rows if r.id != exclude][:limit]

    def insight_tokens(self, ids: Sequence[str]) -> dict[str, frozenset[str]]:
        missing = [i for i in ids if i not in self._tokens]
        if missing:
            self._tokens.update(self._store.insight_tokens(missing))
        return {i: self._tokens[i] for i in ids if i in self._tokens}

    def known_entities(self, candidates: Collection[str], *, casefold: bool = False) -> dict[str, str]:
        if casefold:
            return self._store.known_entities(candidates, casefold=True)
        cands = list(dict.fromkeys(candidates))
        missing = [c for c in cands if c not in self._known]
        if missing:
            found = self._store.known_entities(missing)
            for c in missing:
                self._known[c] = found.get(c)
        return {c: k for c in cands if (k := self._known[c]) is not None}

    def inserted(self, ins: Insight, tokens: frozenset[str]) -> None:
        """Keep the answers true after `ins` was written (its rowid is the newest: it wins ties)."""
        self._tokens[ins.id] = tokens
        for e in dict.fromkeys(ins.entities):
            self._known[e] = e
            rows = self._entity.get(e)
            if rows is not None:
                k = next((j for j, (t, _) in enumerate(rows) if t <= ins.created_at), len(rows))
                rows.insert(k, (ins.created_at, ins.id))
                del rows[ENTITY_LINKS_PER_ENTITY:]
        recent = self._source.get(ins.source)
        if recent is not None:
            k = next((j for j, r in enumerate(recent) if r.created_at <= ins.created_at), len(recent))
            recent.insert(k, ins)
            del recent[CAUSAL_LOOKBACK:]


def repair_backbone(store: Store, chained: dict[str, str], now: str) -> set[str]:
    """Rebuild the temporal backbone through `chained` ({id: source}), per source, in created_at order: each
    chained insight is linked to its chronological neighbours (precedes / succeeds, weight 1.0), and the
    direct backbone link between the two existing insights around a run of chained ones is removed. No
    proximity edges. Returns every id whose edges changed."""
    touched: set[str] = set()
    for source in sorted(set(chained.values())):
        rows = list(store.iter_active(Filters(source=source)))  # insertion order, so ties keep it
        rows.sort(key=lambda r: r.created_at)
        inside = [r.id in chained for r in rows]
        k = 0
        while k < len(rows):
            if not inside[k]:
                k += 1
                continue
            end = k
            while end < len(rows) and inside[end]:
                end += 1
            if k > 0 and end < len(rows):  # existing neighbours on both sides of the run
                left, right = rows[k - 1].id, rows[end].id
                for e in store.edges_among([left, right], EdgeType.temporal.value):
                    if e.metadata.get("sub_type") == "backbone":
                        store.delete_edge(e.source_id, e.target_id, EdgeType.temporal.value)
                        touched.update((left, right))
            k = end
        for a, b, ia, ib in zip(rows, rows[1:], inside, inside[1:]):
            if ia or ib:
                for e in sequence_edges(a.id, b.id, now):
                    store.upsert_edge(e)
                touched.update((a.id, b.id))
    return touched
