"""The importer behind `mnemon import` / `Memory.import_draft` (spec 003, reference §6 "import"): a second way into
the write pipeline, for a whole validated draft (`draft.py`) at once.

Insights are written in batches, each batch embedded (outside the transaction) and committed as one
transaction, so an import killed midway leaves whole batches and no half-written insight, and running it
again skips what is already there (exact duplicates map to the existing id). Ctrl-C is acted on between two
calls of the model (short ones: `embed/local.py`) or two statements: the batch it arrives in rolls back and
the import stops with one line saying how many insights are in (`Interrupted`). A final transaction adds the
conversation steps (between consecutive items of one `session`) and the explicit edges, rebuilds the temporal backbone through the imported items,
refreshes EI and runs auto-prune once.

A large import is usable at once: when embedding its insights would take long (more than IMPORT_DEFER_TOKENS,
estimated), it writes them without their vectors, everything else as usual (entity, causal and conversation
edges, the backbone, keyword indexes, EI), and queues them (`Store.queue_vectors`, one queue batch per import
batch). `fill_queued` embeds them later, batch by batch (the resident engine when idle, `embed --all`), and writes
what the import deferred: each vector and the semantic edges the import would have made, from the same
comparisons (the store's vectors as they stood before that batch, then the batch's earlier insights), so the
store ends as it would have. Recall meanwhile ranks by the other signals, and says how many wait
(`vectors_pending`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Sequence

import numpy as np

from .. import lifecycle
from ..context import Context
from .. import once
from ..draft import ImportDraft, ImportItem, ImportResult
from ..errors import Interrupted
from ..models import Edge, EntityMode, Insight
from ..progress import Advance, progress_bar
from ..store import NO_FILTERS, Filters, Store
from .constants import CAUSAL_LOOKBACK, ENTITY_LINKS_PER_ENTITY, SEMANTIC_AUTO_LINK
from . import ivf, similarity
from .pipeline import new_insight, words_of, write_insight
from .semantic import create_semantic_edges
from .temporal import conversation_steps, repair_backbone

__all__ = ["IMPORT_BATCH", "IMPORT_DEFER_TOKENS", "VECTORS", "BatchView", "defers", "fill_queued", "import_draft"]

# Insights per committed transaction and per embedding call: small enough that a killed import loses
# little, large enough that commits (an fsync each) do not dominate.
IMPORT_BATCH = 500
# An import whose texts hold more tokens than this (estimated, `_tokens`) fills its vectors in behind: about
# 60 s of two cores for multilingual-e5-small here (~1.2 ms a token on one core, measured), so an import of a
# few chats waits for its vectors and a year of them (60,000 turns: ~20 minutes) is recallable within a minute.
IMPORT_DEFER_TOKENS = 100_000
# e5 reads at most one window of a text (`embed/local.py`); a token is about 4 bytes of English.
_WINDOW_TOKENS, _BYTES_PER_TOKEN = 512, 4
# Texts a fill embeds between two looks at whether to stop (`fill_queued`).
FILL_SLICE = 32
# `vectors`: "auto" (defer past IMPORT_DEFER_TOKENS), "now" (wait for them), "later" (always defer).
VECTORS = ("auto", "now", "later")


def import_draft(
    ctx: Context, draft: ImportDraft, *, no_diff: bool = False, quantizer: ivf.ImportQuantizer | None = None,
    vectors: str = "auto",
) -> ImportResult:
    """Write a validated draft (the caller has checked that it may write). `quantizer`: the batches' coarse
    quantizer (`ivf.py`; a fresh one with the default thresholds when None). `vectors`: one of VECTORS."""
    return _Importer(ctx, draft, no_diff, quantizer if quantizer is not None else ivf.ImportQuantizer(),
                     defers(ctx, draft, vectors)).run()


def defers(ctx: Context, draft: ImportDraft, vectors: str) -> bool:
    """Whether this import writes its insights first and queues their vectors: asked for, or (auto) its texts
    would take long to embed; never without an embedder, nor on a store that keeps no queue."""
    if ctx.embedder is None or not ctx.store.queues_vectors or vectors == "now":
        return False
    return vectors == "later" or sum(_tokens(i.content) for i in draft.insights) > IMPORT_DEFER_TOKENS


def _tokens(text: str) -> int:
    return min(len(text.encode("utf-8", "surrogatepass")) // _BYTES_PER_TOKEN + 2, _WINDOW_TOKENS)


class _Importer:
    def __init__(
        self, ctx: Context, draft: ImportDraft, no_diff: bool, quantizer: ivf.ImportQuantizer, defer: bool
    ) -> None:
        self.ctx = ctx
        self.store: Store = ctx.store
        self.draft = draft
        self.no_diff = no_diff
        self.defer = defer  # write now, queue the vectors
        self.queued = 0
        n = len(draft.insights)
        self.ids: list[str | None] = [None] * n  # draft index → the insight it became (or duplicates)
        self.results: list[ImportItem | None] = [None] * n
        self.added: dict[str, str] = {}  # id → source, of insights this run wrote
        self.skipped: list[str] = []  # existing ids that draft items duplicated
        self._cos: similarity.BatchCosines | None = None  # the batch's semantic cosines
        self.quantizer = quantizer  # kept across batches: later batches search the lists earlier ones joined

    def run(self) -> ImportResult:
        n = len(self.draft.insights)
        planned: set[str] = set()  # contents this run will write, so a repeat inside the draft is not embedded
        try:
            with progress_bar(n, "importing") as advance:
                for start in range(0, n, IMPORT_BATCH):
                    batch = range(start, min(n, start + IMPORT_BATCH))
                    self._batch(batch, planned)
                    advance(len(batch))
            edges_inserted, pruned = self._finish()
        except KeyboardInterrupt:
            done = sum(r is not None and r.action != "error" for r in self.results)
            raise Interrupted(f"interrupted: {done} of {n} insights imported; run the import again to finish "
                              "it") from None
        results = [r for r in self.results if r is not None]
        return ImportResult(
            imported=sum(r.action == "added" for r in results),
            skipped=sum(r.action == "skipped" for r in results),
            errors=sum(r.error is not None for r in results),
            edges_inserted=edges_inserted, auto_pruned=len(pruned), auto_pruned_ids=pruned, results=results,
            vectors_pending=self.queued,
        )

    def _batch(self, batch: range, planned: set[str]) -> None:
        store, ctx = self.store, self.ctx
        # Embed (outside the transaction, in one call) only what will be written; without an embedder there
        # is nothing to embed, so no look-up either.
        todo: list[int] = []
        for i in batch if ctx.embedder is not None and not self.defer else ():
            c = self.draft.insights[i].content
            if self.no_diff or (c not in planned and store.find_by_content(c) is None):
                todo.append(i)
                planned.add(c)
        vectors: dict[int, np.ndarray] = {}
        vecs = ctx.embed_texts([self.draft.insights[i].content for i in todo])
        emb = ctx.embedder
        model = emb.name if vecs is not None and emb is not None else None
        if vecs is not None:
            vectors = dict(zip(todo, vecs))
            ctx.fold_stale_index(int(vecs.shape[1]))
        now, ts = ctx.clock()
        self._cos = similarity.BatchCosines(
            store, model, emb.calibration, vectors, floor=SEMANTIC_AUTO_LINK, quantizer=self.quantizer,
            left=len(self.draft.insights) - batch.start,  # at most: a repeat or a skip is not embedded
        ) if vectors and emb is not None and model is not None else None
        try:
            with store.transaction():  # the fast path: the whole batch, no per-item savepoints
                view = BatchView(store)
                # The known-entity path's question for every word of the batch, in one statement per 900
                # words instead of one per insight (inserted() keeps the answers true as the batch writes).
                view.known_entities([w for i in batch for w in words_of(self.draft.insights[i].content)])
                done = [self._wrote(self._one(view, i, vectors.get(i), model, now, ts)) for i in batch]
                _refresh_ei(view, done, ts)
                self._queue(done)
        except Exception:  # noqa: BLE001 — rolled back; redo one by one so only the failing items fail
            done = []
            if self._cos is not None:
                self._cos.forget_written()  # they were rolled back
            with store.transaction():
                view = BatchView(store)
                for i in batch:
                    try:
                        with store.transaction():  # a savepoint: a failing insight leaves nothing behind
                            row = self._one(view, i, vectors.get(i), model, now, ts)
                            _refresh_ei(view, [row], ts)
                        done.append(self._wrote(row))
                    except Exception as e:  # noqa: BLE001 — partial success: reported per item
                        view = BatchView(store)  # it may remember what the savepoint undid
                        err = f"{type(e).__name__}: {e}"
                        done.append((ImportItem(index=i, id="", content=self.draft.insights[i].content,
                                                action="error", error=err), None))
                self._queue(done)
        for item, source in done:  # only now committed
            self.results[item.index] = item
            if item.action == "error":
                continue
            self.ids[item.index] = item.id
            if source is None:
                self.skipped.append(item.id)
            else:
                self.added[item.id] = source

    def _queue(self, done: list[tuple[ImportItem, str | None]]) -> None:
        """A deferring import queues the batch's written insights, in the batch's transaction."""
        if self.defer:
            ids = [item.id for item, source in done if source is not None]
            self.store.queue_vectors(ids)
            self.queued += len(ids)

    def _wrote(self, row: tuple[ImportItem, str | None]) -> tuple[ImportItem, str | None]:
        """Later insights of the batch compare their vectors with this one, once it is written."""
        item, source = row
        if source is not None and self._cos is not None:
            self._cos.wrote(item.index, item.id)
        return row

    def _one(
        self, view: BatchView, i: int, vector: np.ndarray | None, model: str | None, now: str, ts: float
    ) -> tuple[ImportItem, str | None]:
        """Write draft insight i (or find its exact duplicate); returns its result row and, when written,
        its source."""
        store, ctx, di = self.store, self.ctx, self.draft.insights[i]
        if not self.no_diff:
            # Under the write lock, so it also sees earlier items of this draft and other writers.
            existing = store.find_by_content(di.content)
            if existing is not None:
                ctx.log("import-skip", existing, f"duplicate of {existing}", now)
                return ImportItem(index=i, id=existing, content=di.content, action="skipped"), None
        new_id = str(uuid.uuid4())
        source = self.draft.source_of(i)
        ins, tokens = new_insight(
            view, new_id, di.content, category=di.category, importance=di.importance, tags=di.tags,
            entities=di.entities, entity_mode=EntityMode.merge, source=source, created_at=di.created_at or now,
            now=now,
        )
        cos = self._cos.of(i) if vector is not None and self._cos is not None else {}
        # The temporal backbone is rebuilt once at the end, in created_at order (dates are backdated).
        write_insight(view, ins, tokens, vector, model, cos, temporal=False, now=now, now_ts=ts, ei=False)
        view.inserted(ins, tokens)
        ctx.log("import", new_id, ctx.detail(di.content), now)
        return ImportItem(index=i, id=new_id, content=di.content, action="added"), source

    def _finish(self) -> tuple[int, list[str]]:
        """One transaction: temporal backbone, explicit edges, EI of everything touched, auto-prune."""
        store, settings = self.store, self.ctx.settings
        now, ts = self.ctx.clock()
        with store.transaction():
            # Skipped items join the chain too: a re-run after a kill then finishes the backbone the killed
            # run never reached.
            chained = dict(self.added)
            for id_, ins in store.get_insights([s for s in self.skipped if s not in chained]).items():
                chained[id_] = ins.source
            # Conversation steps before the backbone repair, so that a pair that is both keeps its backbone edge.
            conversation = conversation_steps(store, self._steps(), now)
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
            store.upsert_edges(list(explicit.values()))
            for src, dst, _ in explicit:
                touched.update((src, dst))
            touched.update(self.added)
            lifecycle.refresh_ei(store, sorted(touched), ts)
            pruned = lifecycle.auto_prune(
                store, max_insights=settings.max_insights, min_age_s=settings.prune_min_age_s,
                exclude=None, now=now, trigger=None,
            )
        return edges_inserted, pruned

    def _steps(self) -> list[tuple[str, str]]:
        """The conversation's steps: consecutive items of one session, in draft order, at least one of them
        written by this import. An item without a session belongs to no conversation: a draft of unrelated
        facts gains no conversation edges."""
        items, steps = self.draft.insights, []
        for i in range(1, len(items)):
            a, b = self.ids[i - 1], self.ids[i]
            session = items[i].session
            if a is None or b is None or a == b or session is None or items[i - 1].session != session:
                continue
            if a not in self.added and b not in self.added:  # both were there before this import
                continue
            steps.append((a, b))
        return steps


def fill_queued(ctx: Context, *, batches: int | None = None, advance: Advance | None = None,
                stop: Callable[[], bool] | None = None) -> int:
    """Embed the insights deferring imports queued, oldest batch first, and write what each import deferred:
    their vectors and semantic edges (from the same comparisons the import would have made: `BatchCosines`
    over the store's vectors as they stand, the earlier batches' included, then the batch's earlier insights),
    and the EI of both ends of every new edge. One transaction per batch, which takes it off the queue (a batch
    another process filled meanwhile is not written twice). At most `batches` batches (None: all). Returns the
    vectors written. Raises EmbedderError (the batch stays queued) when the embedder fails. `stop`, asked
    between slices of FILL_SLICE texts: True leaves the batch queued and returns (an engine that stops)."""
    store, emb = ctx.store, ctx.embedder
    if emb is None:
        return 0
    quantizer = ivf.ImportQuantizer()  # kept across batches, as one import keeps it
    written = 0
    while batches is None or batches > 0:
        batch, rows = store.queued_vectors()
        if not rows:
            break
        parts = []
        for at in range(0, len(rows), FILL_SLICE):  # the vectors are the same however the batch is cut
            if stop is not None and stop():
                return written
            parts.append(emb.embed_batch([r.content for r in rows[at : at + FILL_SLICE]]))
        vecs = np.concatenate(parts)
        ctx.fold_stale_index(int(vecs.shape[1]))
        cos = similarity.BatchCosines(store, emb.name, emb.calibration, dict(enumerate(vecs)),
                                      floor=SEMANTIC_AUTO_LINK, quantizer=quantizer, left=store.count_queued())
        now, ts = ctx.clock()
        with store.transaction():
            if store.unqueue_vectors(batch):
                once.claim(store, now)
                touched: set[str] = set()
                for i, ins in enumerate(rows):
                    store.set_vector(ins.id, vecs[i], emb.name)
                    touched.update(create_semantic_edges(store, ins, cos.of(i), now))
                    touched.add(ins.id)
                    cos.wrote(i, ins.id)
                lifecycle.refresh_ei(store, sorted(touched), ts)
                ctx.log("embed:fill", None, f"vectors={len(rows)} model={emb.name}", now)
                written += len(rows)
        if advance is not None:
            advance(len(rows))
        if batches is not None:
            batches -= 1
    return written


def _refresh_ei(view: BatchView, done: list[tuple[ImportItem, str | None]], ts: float) -> None:
    """The EI of the insights just written, once for the batch (each insight's edges are all written by then);
    sends the held edges."""
    lifecycle.refresh_ei(view, [item.id for item, source in done if source is not None], ts)
    view.flush()


class BatchView:
    """The store as the write pipeline sees it inside one import batch (a `write.target.WriteTarget`).

    For every insight the builders ask three things that cost a scan of every row sharing the entity or the
    source: the entity graph's most recent holders of each entity, the causal graph's look-back over the
    source, and the known-entity path's "is this word a stored entity". Here each question is asked of the
    store once per batch and the answer is kept up to date in memory as the batch inserts (`inserted`), so the
    answers are the store's own: inside the batch transaction nobody else writes and nothing is deleted. The
    edges are held and sent in one statement (`flush`: at the end of the batch, or before a look-up the view
    cannot answer); the other writes and look-ups go to the store. The batch's EI refresh asks only about
    insights this view inserted: their rows are the ones it wrote and their edges (fresh ids) are all among
    the ones it sent, so both are answered from memory. A fresh view per batch (and after a rolled-back
    savepoint) sees other writers.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._edges: list[Edge] = []
        self._new: dict[str, Insight] = {}  # inserted through this view
        self._keys: set[tuple[str, str, str]] = set()  # every edge key sent or held by this view
        self._entity: dict[str, list[tuple[str, str]]] = {}  # entity → [(created_at, id)], most recent first
        self._source: dict[str, list[Insight]] = {}  # source → insights, most recent first
        self._tokens: dict[str, frozenset[str]] = {}
        self._known: dict[str, str | None] = {}

    # -- answered from the batch's memory

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

    # -- passed to the store

    def insert_insight(self, ins: Insight, tokens: Collection[str]) -> None:
        self._store.insert_insight(ins, tokens)
        self._new[ins.id] = ins

    def set_vector(self, id: str, vector: np.ndarray, model: str) -> None:
        self._store.set_vector(id, vector, model)

    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        self._edges += edges
        self._keys.update((e.source_id, e.target_id, str(e.edge_type)) for e in edges)

    def flush(self) -> None:
        """Send the held edges to the store."""
        edges, self._edges = self._edges, []
        self._store.upsert_edges(edges)

    def set_effective_importance(self, values: dict[str, float]) -> None:
        self._store.set_effective_importance(values)

    def session_tail(self, session: str) -> str | None:
        return self._store.session_tail(session)

    def set_session_tail(self, session: str, insight_id: str) -> None:
        self._store.set_session_tail(session, insight_id)

    def get_insights(self, ids: Sequence[str]) -> dict[str, Insight]:
        if all(i in self._new for i in ids):
            return {i: self._new[i] for i in ids}
        return self._store.get_insights(ids)

    def edge_counts(self, ids: Sequence[str]) -> dict[str, int]:
        if not all(i in self._new for i in ids):
            self.flush()
            return self._store.edge_counts(ids)
        # As the store counts: once as source, once as target.
        out = dict.fromkeys(ids, 0)
        for s, t, _ in self._keys:
            if s in out:
                out[s] += 1
            if t in out:
                out[t] += 1
        return out
