"""`Memory`: the one public API. It resolves settings, opens the store and the embedder lazily, checks
input before any work, and runs the pipelines; it owns nothing else. `AsyncMemory` (`async_memory.py`) has
the same methods as coroutines."""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import console, lifecycle, once, related
from .config import UNSET, Settings, shown_path
from .context import Context
from .embed import Embedder, get_embedder
from .errors import EmbedderError, NotFoundError, ReadOnlyError, StoreError, ValidationError
from .inputs import (
    AMBIGUOUS_SHOWN,
    EXCERPT_CHARS,
    ID_CHARS,
    ID_PREFIX_MIN,
    LINK_WEIGHT,
    LOG_LIMIT,
    MAX_TOKENS_MAX,
    MAX_TOKENS_MIN,
    RECALL_LIMIT,
    RELATED_DEPTH,
    SEARCH_LIMIT,
)
from .models import (
    Category,
    CausalCandidate,
    EdgeType,
    EntityCount,
    EntityMode,
    ForgetResult,
    GcKeepResult,
    GcResult,
    Insight,
    LinkResult,
    OplogEntry,
    OplogRetentionInfo,
    OplogStatus,
    RelatedHit,
    RememberResult,
    SearchHit,
    SemanticCandidate,
    StatusResult,
)
from .redact import redact
from .store import Access, Filters, Store, open_store
from .text import token_set
from .timeutil import iso
from .write import candidates, similarity
from .write.constants import SEMANTIC_REVIEW
from .write.link import edge_type as parse_edge_type
from .write.validate import validate_category, validate_remember, validate_session, validate_text

if TYPE_CHECKING:  # these modules load with their first call: `import mnemon_core` stays light
    from .draft import DryRun, ImportDraft, ImportResult
    from .embed_ops import EmbedResult
    from .recall.config import RecallConfig
    from .recall.results import BriefRecallResult, BudgetRecallResult, RecallResult, VerboseRecallResult

TOP_ENTITIES = 20
_NEVER = object()


def check_limit(limit: int, name: str = "--limit") -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"{name} must be at least 1, got {limit}", field="limit")
    return limit


def check_max_tokens(max_tokens: object) -> int:
    """A recall's token budget (`recall/budget.py`): a whole number within the limits every face shows."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not (
        MAX_TOKENS_MIN <= max_tokens <= MAX_TOKENS_MAX
    ):
        raise ValidationError(
            f"max_tokens must be between {MAX_TOKENS_MIN} and {MAX_TOKENS_MAX}, got {max_tokens!r:.50}", field="max_tokens"
        )
    return max_tokens


class Memory:
    """Graph memory over one store. `Memory(data_dir=..., store=..., readonly=..., embedder=...)`;
    unset arguments come from `MNEMON_*` variables, then defaults."""

    def __init__(
        self,
        data_dir: str | Path | None = UNSET,
        store: str | None = UNSET,
        *,
        readonly: bool = False,
        embedder: str | Embedder | None = UNSET,
        database_url: str | None = UNSET,
        settings: Settings | None = None,
        origin: str = "agent",
    ) -> None:
        instance = embedder if not (embedder is UNSET or embedder is None or isinstance(embedder, str)) else None
        if settings is None:
            name = "none" if embedder is None else (UNSET if instance is not None else embedder)
            settings = Settings.resolve(
                data_dir=data_dir, store=store, readonly=readonly, embedder=name, database_url=database_url,
                origin=origin,
            )
        self.settings = settings
        self._store: Store | None = None
        self._embedder: Any = instance if instance is not None else UNSET
        self._warned_in: object = _NEVER  # the call that printed this Memory's warning (`_warn`)
        self._healthy: bool | None = None
        self._probed_in: object = _NEVER  # the call that found out `_healthy`
        self._opening = threading.Lock()  # two threads' first use opens one store and loads one model

    # ------------------------------------------------------------------ plumbing

    @property
    def store(self) -> Store:
        if self._store is None:
            with self._opening:
                if self._store is None:
                    self._store = open_store(self.settings)
        return self._store

    @property
    def embedder(self) -> Embedder | None:
        if self._embedder is UNSET:
            with self._opening:
                if self._embedder is UNSET:
                    self._embedder = get_embedder(self.settings)
        return self._embedder

    def reopen_if_replaced(self) -> bool:
        """Let go of the store when the database it opened is no longer the one the settings name (`store
        remove`, a restore over the file): the next use opens what is there now, as a new process would. A
        long-lived holder (the resident engine) calls it before each command. True when it let go."""
        with self._opening:
            if self._store is None or not self._store.replaced():
                return False
            self._store.close()
            self._store = None
            return True

    def warm(self) -> None:
        """Load what a first recall reads: the store, its graph memo (from the index file where it keeps one),
        the embedder with one query, and the store's vector index or matrix. A long-lived holder (the resident
        engine) calls it before its first request."""
        from .graph import graph_view
        from .recall.pipeline import vector_input

        store = self.store
        graph_view(store).sync()
        emb = self.embedder
        vecs = self.embed_texts(["warm up"], query=True) if emb is not None else None
        if emb is not None and vecs is not None:
            vector_input(store, emb.name, vecs[0], emb.calibration)  # the ANN index, else the matrix

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def resolve_id(self, id: str, field: str = "id") -> str:
        """The insight id a caller means: `id` itself, or the one active insight whose id starts with it when it
        is shorter than an id and has at least ID_PREFIX_MIN characters (what `log` shows). A prefix of several
        insights is refused, naming them; one of none is returned as given (the caller says it is not found)."""
        validate_text(id, field)
        if not ID_PREFIX_MIN <= len(id) < ID_CHARS or not id.isascii():
            return id
        found = self.store.ids_starting(id, AMBIGUOUS_SHOWN + 1)
        if id in found or not found:
            return id
        if len(found) == 1:
            return found[0]
        many = f"at least {len(found)}" if len(found) > AMBIGUOUS_SHOWN else str(len(found))
        raise ValidationError(f'ambiguous id prefix "{id}": it starts {many} insights '
                              f'({", ".join(found[:AMBIGUOUS_SHOWN])}); give more of the id', field=field)

    def _writable(self, action: str) -> None:
        if self.settings.readonly:
            raise ReadOnlyError(action)

    def _warn(self, message: str) -> None:
        """One warning per call on stderr, never a traceback. A call is this process, or in the resident engine
        one served command (its request, `once.current()`), so every served call that degrades says so."""
        call = once.current()
        if self._warned_in is not call:
            self._warned_in = call
            print(f"mnemon: warning: {redact(message)}", file=console.err())

    def embed_texts(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray | None:
        """Vectors for texts, or None (with one warning) when the embedder is off or failing."""
        emb = self.embedder
        if emb is None or not texts:
            return None
        # One health probe per call (2 s for a remote provider that hangs): an embedder that was down is asked
        # again by the next served call, as the next process would ask it.
        call = once.current()
        if self._healthy is None or (not self._healthy and self._probed_in is not call):
            self._healthy, self._probed_in = emb.available(), call
        if not self._healthy:
            self._warn(f"embedder {emb.name} unavailable, using keyword and graph signals only")
            return None
        try:
            return emb.embed_batch(list(texts), query=query)
        except EmbedderError as e:
            self._warn(f"embedding unavailable, using keyword and graph signals only ({e})")
            return None

    def cosines(self, vector: np.ndarray | None, *, floor: float = SEMANTIC_REVIEW) -> dict[str, float]:
        """Calibrated cosine of `vector` with every embedded active insight of the same model, ≥ floor (from the
        store's ANN index when it keeps one: `write/similarity.py`)."""
        emb = self.embedder
        if vector is None or emb is None:
            return {}
        index = self.store.ann_index(emb.name, int(vector.shape[0]))
        return similarity.cosines(self.store, emb.name, emb.calibration, vector, index, floor=floor)

    def _fold_stale_index(self, dim: int) -> None:
        """Before a write (outside its transaction, so the file never holds rows that may roll back): fold the
        rows written since the store's ANN file was built into it once they are many. Each search scans
        those rows exactly, so without this a store grown by remember alone slows down until `embed --all`."""
        emb = self.embedder
        index = self.store.ann_index(emb.name, dim) if emb is not None else None
        if index is not None and index.stale():
            self.store.maintain_vector_index(emb.name, dim)

    def _maintain_index(self) -> None:
        """After a write: fold the graph index file when it is missing or far behind (`graph/fold.py`). Best
        effort: a write has succeeded whether or not the file could be written."""
        from .graph import fold_index

        try:
            fold_index(self.store)
        except (StoreError, OSError) as e:
            self._warn(f"graph index not written ({e})")

    def _now(self) -> tuple[str, float]:
        ts = time.time()
        return iso(ts), ts

    def _detail(self, content: str) -> str:
        """Oplog detail for content: the content itself, except through MCP where it is only fingerprinted."""
        if self.settings.origin == "mcp":
            digest = hashlib.sha256(content.encode()).hexdigest()[:16]
            return f"bytes={len(content.encode())} sha256={digest}"
        return content

    def _log(self, operation: str, insight_id: str | None, detail: str, now: str) -> None:
        """One oplog row; rows written through MCP say so."""
        self.store.log(operation, insight_id, self._logged(detail), now)

    def _logged(self, detail: str) -> str:
        return f"origin=mcp {detail}".rstrip() if self.settings.origin == "mcp" else detail

    def _context(self) -> Context:
        """What a pipeline gets of this Memory: its settings, its store and embedder (opened on first use), and
        the services that hold its state."""
        return Context(
            settings=self.settings, open_store=lambda: self.store, open_embedder=lambda: self.embedder,
            clock=self._now, log=self._log, detail=self._detail, writable=self._writable, warn=self._warn,
            embed_texts=self.embed_texts, cosines=self.cosines, fold_stale_index=self._fold_stale_index,
            fold_graph=self._maintain_index,
        )

    # ------------------------------------------------------------------ remember

    def remember(
        self,
        content: str,
        *,
        category: str | Category = "general",
        importance: int = 3,
        tags: str | Sequence[str] | None = None,
        entities: str | Sequence[str] | None = None,
        entity_mode: str | EntityMode = "merge",
        source: str = "user",
        no_diff: bool = False,
        session: str | None = None,
    ) -> RememberResult:
        """Store one memory. `session` (else the settings' `MNEMON_SESSION`): the conversation it continues;
        consecutive remembers of one session are linked by a conversation edge."""
        from .write.remember import remember

        self._writable("remember")
        inp = validate_remember(content, category, importance, tags, entities, entity_mode, source)
        session = validate_session(session) or validate_session(self.settings.session)
        return remember(self._context(), inp, session=session, no_diff=no_diff)

    # ------------------------------------------------------------------ recall

    def recall(
        self,
        query: str,
        *,
        limit: int = RECALL_LIMIT,
        intent: str | None = None,
        category: str | None = None,
        source: str | None = None,
        basic: bool = False,
        verbose: bool = False,
        brief: bool = False,
        excerpt_chars: int = EXCERPT_CHARS,
        recipe: str | None = None,
        max_tokens: int | None = None,
        asked_at: datetime | None = None,
    ) -> RecallResult | VerboseRecallResult | BriefRecallResult | BudgetRecallResult | list[Insight]:
        """Smart recall (spec 5.2) in the shape the CLI prints: `retrieve`, then a `RecallResult` (compact),
        the `VerboseRecallResult` itself (`verbose`) or a `BriefRecallResult` (`brief`, excerpts of at most
        `excerpt_chars`); for `basic` the LIKE matches as a list of `Insight` (or brief excerpts of them).
        `max_tokens`: a `BudgetRecallResult`, the best results in rank order whose printed JSON is at most that
        many tokens, a long memory as its best-matching passage (`recall/budget.py`).
        `category` / `source` scope every signal and the traversal. `recipe`: "hybrid" (the default) or
        "spec" (the documents' formulas; docs/recall.md). `asked_at`: when the query is asked, what "last week"
        or "two days ago" in it is read against (`recall/when.py`; default now, a naive time taken as UTC).
        Every returned insight gets +1 access (none when nothing matched: `no_match`).
        """
        from .recall.results import brief_basic

        def shape() -> None:
            if brief and (isinstance(excerpt_chars, bool) or not isinstance(excerpt_chars, int) or excerpt_chars <= 0):
                raise ValidationError("--excerpt-chars must be greater than 0", field="excerpt_chars")
            if brief and verbose:
                raise ValidationError("--brief and --verbose cannot be used together", field="brief")
            if max_tokens is not None:
                check_max_tokens(max_tokens)
                for name, given in (("verbose", verbose), ("brief", brief), ("basic", basic)):
                    if given:
                        raise ValidationError(f"max_tokens and {name} cannot be used together", field="max_tokens")

        config, scope = self._recall_scope(query, limit, intent, category, source, recipe, shape)
        if basic:
            rows = self.store.like_search(query, scope, limit)
            self._accessed([r.id for r in rows], "recall:basic", f"q={query} hits={len(rows)}")
            return brief_basic(rows, excerpt_chars) if brief else rows
        found = self._retrieve(query, limit, intent, scope, config, max_tokens, asked_at)
        if max_tokens is not None:
            return found.budgeted()
        return found if verbose else found.brief(excerpt_chars) if brief else found.compact()

    def retrieve(
        self,
        query: str,
        *,
        limit: int = RECALL_LIMIT,
        intent: str | None = None,
        category: str | None = None,
        source: str | None = None,
        recipe: str | None = None,
        max_tokens: int | None = None,
        asked_at: datetime | None = None,
    ) -> VerboseRecallResult:
        """Smart recall (spec 5.2): intent → RRF anchors → graph → rerank (→ WHY causal order), unshaped: the
        ranked hits with their insights, raw scores, labels and four signals, and the run's meta. `.compact()`
        and `.brief(n)` give the CLI's other shapes. `max_tokens`: only the hits `recall(max_tokens=...)`
        shows, a hit's `passage` set where it is shown as one (`.budgeted()` is that shape). Arguments and the
        +1 access as for `recall`."""

        def shape() -> None:
            if max_tokens is not None:
                check_max_tokens(max_tokens)

        config, scope = self._recall_scope(query, limit, intent, category, source, recipe, shape)
        return self._retrieve(query, limit, intent, scope, config, max_tokens, asked_at)

    def _recall_scope(
        self, query: str, limit: int, intent: str | None, category: str | None, source: str | None,
        recipe: str | None, shape: Callable[[], None] | None = None,
    ) -> tuple[RecallConfig, Filters]:
        """Every recall argument checked, in the order the CLI reports them (`shape`: the output flags')."""
        from .recall.config import recipe as recipe_named
        from .recall.pipeline import scope_of

        if not validate_text(query, "query").strip():  # as for remember: nothing to look for is a mistake
            raise ValidationError("query must not be empty", field="query")
        if intent is not None:
            validate_text(intent, "intent")
        check_limit(limit)
        config = recipe_named(recipe)
        if shape is not None:
            shape()
        if category:  # one check for every face: an unknown category is a mistake, not an empty scope
            category = validate_category(category).value
        if source is not None:
            validate_text(source, "source")
        return config, scope_of(category, source)

    def _retrieve(
        self, query: str, limit: int, intent: str | None, scope: Filters, config: RecallConfig,
        max_tokens: int | None = None, asked_at: datetime | None = None,
    ) -> VerboseRecallResult:
        # The pipeline lives in recall/ (one module a step); imported here so `import mnemon_core` stays light.
        from .recall import output
        from .recall.intent import detect_intent, parse_intent
        from .recall.pipeline import smart_recall, vector_input, vector_text
        from .recall.when import asked_time

        asked = asked_time(asked_at)  # checked before anything is embedded or read
        store = self.store
        if intent is not None and intent.strip():
            chosen, intent_source = parse_intent(str(intent)), "override"
        else:
            chosen, intent_source = detect_intent(query), "auto"
        vectors = None
        emb = self.embedder
        qvecs = self.embed_texts([vector_text(store, query, config)], query=True) if emb is not None else None
        if emb is not None and qvecs is not None:  # the store's ANN index above its threshold, else the matrix
            vectors = vector_input(store, emb.name, qvecs[0], emb.calibration)
        found = smart_recall(
            store, query, intent=chosen, intent_source=intent_source, limit=limit, scope=scope, vectors=vectors,
            config=config, asked_at=asked,
        )
        if emb is not None:  # ranked without the vectors a large import has still to fill in: say so
            found.meta.vectors_pending = store.count_queued()
        insights = store.get_insights([r.id for r in found.results])
        results = [r for r in found.results if r.id in insights]
        labels = [found.labels[r.id] for r in results] if found.labels is not None else None
        out = output.verbose(results, insights, chosen, found.meta, labels)
        if max_tokens is not None:  # what an agent reads within the budget, and only that counts as returned
            from .recall.budget import fit

            out = fit(out, query, max_tokens)
        # What a recall that matched nothing offers (recency, the graph) was not used: no access is counted.
        used = [] if found.meta.no_match else [h.insight.id for h in out.results]
        self._accessed(used, "recall", f"q={query} hits={len(out.results)}")
        return out

    # ------------------------------------------------------------------ import / embed

    def import_draft(
        self, draft: ImportDraft | dict[str, Any] | str | Path, *, dry_run: bool = False, no_diff: bool = False,
        vectors: str = "auto",
    ) -> ImportResult | DryRun:
        """Import a memory draft (schema v1): a path, a JSON string, a dict or an ImportDraft. Returns an
        `ImportResult`, or with `dry_run` a `DryRun`: the text `Dry run: N insights, M explicit edges — validation
        passed.` The whole draft is validated before anything is written (`ValidationError` names index and
        field). `vectors`: "auto" (a large import writes its insights first and queues their vectors: the
        result's `vectors_pending`; `fill_vectors` or the resident engine fills them in), "now" (wait for
        them), "later" (always queue them)."""
        from .draft import DryRun, load_draft
        from .write import importer

        if vectors not in importer.VECTORS:
            raise ValidationError(f'invalid vectors "{vectors}"; valid: {", ".join(importer.VECTORS)}',
                                  field="vectors")
        if not dry_run:
            self._writable("import")
        d = load_draft(draft)
        if dry_run:
            return DryRun.of(d)
        result = importer.import_draft(self._context(), d, no_diff=no_diff, vectors=vectors)
        self._maintain_index()
        return result

    def fill_vectors(self, *, batches: int | None = None, stop: Callable[[], bool] | None = None) -> int:
        """Embed what large imports queued (`import_draft`'s `vectors_pending`), oldest first, at most `batches`
        import batches (None: all), with the semantic edges the imports would have made; returns the vectors
        written. `stop()`, asked every few texts: True leaves the batch at hand queued and returns.
        `embed(all=True)` does this first, with a progress bar."""
        from .write import importer

        self._writable("embed")
        written = importer.fill_queued(self._context(), batches=batches, stop=stop)
        if written:
            self._maintain_index()
        return written

    def embed(self, id: str | None = None, *, all: bool = False, status: bool = False) -> EmbedResult:
        """Report coverage (`status`), embed one insight (`id`), or backfill every un-embedded insight (`all`),
        checked in that order. Results are the models of `mnemon_core.embed_ops`."""
        from . import embed_ops

        if status:
            return embed_ops.status(self._context())
        if id:
            return embed_ops.embed_one(self._context(), self.resolve_id(id))
        if all:
            return embed_ops.backfill(self._context())
        raise ValidationError("specify --all to backfill, --status to check coverage, or provide an insight ID")

    # ------------------------------------------------------------------ link / forget / show

    def link(
        self,
        source_id: str,
        target_id: str,
        *,
        type: str | EdgeType = "semantic",
        weight: float = LINK_WEIGHT,
        metadata: dict[str, str] | str | None = None,
        created_by: str | None = None,
    ) -> LinkResult:
        from .write.link import link

        self._writable("link")
        source_id = self.resolve_id(source_id, "source_id")
        target_id = self.resolve_id(target_id, "target_id")
        return link(self._context(), source_id, target_id, type=type, weight=weight, metadata=metadata,
                    created_by=created_by)

    def forget(self, id: str) -> ForgetResult:
        self._writable("forget")
        id = self.resolve_id(id)
        store = self.store
        if store.get_insight(id) is None:
            raise NotFoundError(f"forget: insight {id} not found or already deleted", id=id)
        now, _ = self._now()
        with once.writing(self.store, now):
            store.soft_delete([id], now)
            self._log("forget", id, "", now)
        self._maintain_index()
        return ForgetResult(id=id)

    def show(self, id: str) -> Insight:
        id = self.resolve_id(id)
        store = self.store
        ins = store.get_insight(id)
        if ins is None:
            raise NotFoundError(f"insight {id} not found", id=id)
        if not self.settings.readonly:
            self._accessed([id], "show", "full insight", insight_id=id)
            ins = store.get_insight(id) or ins
        return ins

    # ------------------------------------------------------------------ search / related

    def search(self, query: str, *, limit: int = SEARCH_LIMIT) -> list[SearchHit]:
        """Keyword search with recall's keyword signal (`recall/search.py`): BM25 over the query's stemmed terms,
        score = BM25 / this query's best; ties by importance, newer, id. Every hit gets +1 access."""
        from .recall.search import keyword_search

        validate_text(query, "query")
        check_limit(limit)
        out = keyword_search(self.store, query, limit)
        self._accessed([h.id for h in out], "search", f"q={query} hits={len(out)}")
        return out

    def _accessed(self, ids: list[str], op: str, detail: str, insight_id: str | None = None) -> None:
        """Every returned insight gets +1 access and `last_accessed_at`; one oplog row (not when readonly). A
        read never waits for the write lock: when a writer holds it, the store keeps the access for its next
        write transaction (`Store.record_access`). Counted once, also when the engine's answer was lost and
        the call runs again (the request id is the access's key). Only an access that can be neither applied
        nor kept is lost, with one warning."""
        if self.settings.readonly:
            return
        now, _ = self._now()
        request = once.current()
        access = Access(key=request.id if request is not None else None, ids=tuple(ids), at=now, operation=op,
                        insight_id=insight_id, detail=self._logged(detail))
        try:
            self.store.record_access(access)
        except StoreError as e:
            self._warn(f"access not recorded: {e}")

    def related(self, id: str, *, edge_type: str | None = None, depth: int = RELATED_DEPTH) -> list[RelatedHit]:
        """Breadth-first over edges (both directions), up to `depth` hops; no access bump."""
        id = self.resolve_id(id)
        check_limit(depth, "--depth")
        etype = parse_edge_type(validate_text(edge_type, "edge_type"), "edge_type") if edge_type else None
        store = self.store
        if store.get_insight(id) is None:
            raise NotFoundError(f"insight {id} not found", id=id)
        return related.walk(store, id, edge_type=etype, depth=depth)

    # ------------------------------------------------------------------ status / log / gc

    def status(self) -> StatusResult:
        from .graph import status as graph_status

        store = self.store
        rows, keep = store.count_log(), self.settings.oplog_retention
        retention = OplogRetentionInfo(max_age_days=round(keep.max_age_s / 86400.0, 4), max_rows=keep.max_rows)
        oplog = OplogStatus(rows=rows, oldest=store.oplog_oldest(), retention=retention)
        return StatusResult(
            by_category=store.count_by_category(), db_path=shown_path(store.location),
            db_size_bytes=store.size_bytes(),
            deleted_insights=store.count_deleted(), edge_count=store.count_edges(),
            graph_index=graph_status(store), oplog=oplog, oplog_count=rows,
            top_entities=[EntityCount(entity=e, count=n) for e, n in store.top_entities(TOP_ENTITIES)],
            total_insights=store.count_active(), vectors_pending=store.count_queued(),
        )

    def log(self, *, limit: int = LOG_LIMIT) -> list[OplogEntry]:
        check_limit(limit)
        return self.store.read_log(limit)

    def gc(self, *, threshold: float = lifecycle.GC_THRESHOLD, limit: int = lifecycle.GC_LIMIT) -> GcResult:
        """Suggest what to forget: non-immune insights with EI below the threshold, lowest first. Recomputes
        and stores EI for every active insight."""
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
            raise ValidationError(f"--threshold must be a finite number, got {threshold}", field="threshold")
        if threshold < 0:
            raise ValidationError(f"--threshold must be non-negative, got {threshold}", field="threshold")
        check_limit(limit)
        store = self.store
        now, ts = self._now()
        scan = lifecycle.gc_scan(store, threshold=threshold, limit=limit, now_ts=ts)
        if not self.settings.readonly:
            with once.writing(self.store, now):
                store.set_effective_importance(scan.ei)
                self._log("gc", None, f"threshold={threshold:.2f} found={scan.found} total={scan.total}", now)
        return GcResult(candidates=scan.candidates or None, candidates_found=scan.found,
                        max_insights=self.settings.max_insights, threshold=threshold, total_insights=scan.total)

    def gc_keep(self, id: str) -> GcKeepResult:
        """Retain an insight: +3 access and a fresh `last_accessed_at`, EI recomputed."""
        self._writable("gc --keep")
        id = self.resolve_id(id)
        store = self.store
        ins = store.get_insight(id)
        if ins is None:
            raise NotFoundError(f"insight {id} not found", id=id)
        now, ts = self._now()
        with once.writing(self.store, now):
            store.touch([id], now, inc=lifecycle.GC_KEEP_BOOST)
            ei = lifecycle.refresh_ei(store, [id], ts)[id]
            self._log("gc_keep", id, self._detail(ins.content), now)
        ins = store.get_insight(id) or ins
        return GcKeepResult(content=ins.content, effective_importance=round(ei, 4), id=id,
                            immune=lifecycle.is_immune(ins), new_access=ins.access_count)

    # ------------------------------------------------------------------ link judge (mnemon_extractor)
    # Read-only helpers for judging links of insights that already exist: no access bump, no oplog row.

    def get(self, id: str) -> Insight:
        """The active insight `id`, read without counting an access (unlike `show`)."""
        id = self.resolve_id(id)
        ins = self.store.get_insight(id)
        if ins is None:
            raise NotFoundError(f"insight {id} not found", id=id)
        return ins

    def recent(self, limit: int = 10) -> list[Insight]:
        """The `limit` newest active insights (by created_at), newest first."""
        check_limit(limit)
        return self.store.latest(limit=limit)

    def candidates(self, id: str) -> tuple[list[SemanticCandidate], list[CausalCandidate]]:
        """The semantic and causal candidates `remember` returns, computed now for an existing insight."""
        ins = self.get(id)
        emb = self.embedder
        vector = self.store.get_vector(id, emb.name) if emb is not None else None
        if vector is None and emb is not None:
            vecs = self.embed_texts([ins.content])
            vector = vecs[0] if vecs is not None else None
        return (candidates.semantic_candidates(self.store, ins, token_set(ins.content), self.cosines(vector)),
                candidates.causal_candidates(self.store, ins))
