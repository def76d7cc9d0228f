"""`mnemon embed` (reference §1.2, §6): coverage status, one insight, or a backfill of every un-embedded insight.

Vectors are stored with the embedder's name; cosine only compares vectors of the current model and dimension,
so vectors of another model count as un-embedded here and `--all` re-embeds them. Neither a single embed nor a
backfill creates semantic edges (the original's docs claimed it; its code never did), except for what a large
import queued: `--all` fills that in first, with the semantic edges the import deferred (`write/importer.py`).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from . import once
from .config import DEFAULT_OLLAMA_MODEL, MAX_CONSECUTIVE_TIMEOUTS
from .context import Context
from .embed import Embedder, EmbedderTimeoutError, resolve_protocol
from .errors import EmbedderError, Interrupted, NotFoundError
from .progress import progress_bar
from .redact import redact

__all__ = ["EmbedBackfillResult", "EmbedCompleteResult", "EmbedOneResult", "EmbedResult", "EmbedStatus",
           "backfill", "embed_one", "status"]

# Texts per embedder call and per committed transaction: a killed backfill keeps every finished batch.
EMBED_BATCH = 256
# A failed batch is retried text by text to find the texts the provider refuses; that search is bounded.
# The backfill gives up on an endpoint after MAX_CONSECUTIVE_TIMEOUTS timeouts in a row (config.py; each costs
# MNEMON_EMBED_TIMEOUT), and on one that has embedded nothing after the failed batch and this many texts alone
# (a wrong key, a wrong model, a server that fails everything).
MAX_FAILURES_BEFORE_SUCCESS = 3


class EmbedStatus(BaseModel):
    """`embed --status`. Keys sorted, as the original prints a Go map."""

    checked: str = Field(description="what `embedding_available` comes from: the health check that was made")
    coverage: str = Field(description='share of active insights with a vector of the current model, e.g. "67%"')
    embedded: int = Field(description="active insights with a vector of the current model")
    embedding_available: bool
    model: str
    ollama_available: bool = Field(description="the original's key: Ollama answered, asked only when the embedder "
                                   "speaks to Ollama (false for the others, which need no Ollama)")
    protocol: str = Field(description="local, ollama, openai or none")
    total_insights: int
    vectors_by_model: dict[str, int] = Field(
        description='active vectors per "model:dimension"; those of another model or dimension are ignored by '
        "cosine until `embed --all` replaces them"
    )


class EmbedOneResult(BaseModel):
    dimension: int
    id: str
    model: str
    status: str = "embedded"


class EmbedBackfillResult(BaseModel):
    failed: int
    model: str
    status: str = "backfill_complete"
    succeeded: int


class EmbedCompleteResult(BaseModel):
    message: str = "all insights already have embeddings"
    status: str = "complete"


EmbedResult = EmbedStatus | EmbedOneResult | EmbedBackfillResult | EmbedCompleteResult  # what `Memory.embed` returns


def _protocol(ctx: Context, emb: Embedder | None) -> str:
    kind = ctx.settings.embedder
    if kind in ("ollama", "openai"):
        return resolve_protocol(ctx.settings)
    if kind == "none" and emb is not None:
        return "custom"  # an Embedder instance handed to Memory(embedder=...)
    return kind


def _checked(ctx: Context, emb: Embedder | None, protocol: str) -> str:
    """What the health check of `embed --status` asked, in words (a URL as every message shows one)."""
    endpoint = redact(getattr(emb, "endpoint", ctx.settings.embed_endpoint))
    if emb is None:
        return "nothing: no embedder is configured (MNEMON_EMBEDDER=none)"
    if protocol == "ollama":
        return f"Ollama at {endpoint} (GET /api/tags)"
    if protocol == "openai":
        return f"the OpenAI-compatible endpoint {endpoint} (GET /models)"
    if protocol == "local":
        return f"the local model {emb.name} can be loaded in this process (no server)"
    return f"the embedder {emb.name} handed to Memory (its available())"


def _current_count(counts: dict[str, int], model: str, dim: int | None) -> int:
    """Vectors of `model` (and of `dim`, when known) in `vector_counts()` keys "model:dim"."""
    total = 0
    for key, n in counts.items():
        name, _, d = key.rpartition(":")
        if name == model and (dim is None or d == str(dim)):
            total += n
    return total


def status(ctx: Context) -> EmbedStatus:
    emb = ctx.embedder
    store = ctx.store
    total = store.count_active()
    counts = store.vector_counts()
    model = emb.name if emb is not None else "none"
    embedded = _current_count(counts, model, emb.dimensions) if emb is not None else 0
    available = bool(emb is not None and emb.available())
    protocol = _protocol(ctx, emb)
    return EmbedStatus(
        checked=_checked(ctx, emb, protocol), coverage=f"{embedded / max(total, 1) * 100:.0f}%", embedded=embedded,
        embedding_available=available, model=model, ollama_available=available and protocol == "ollama",
        protocol=protocol, total_insights=total,
        vectors_by_model=dict(sorted(counts.items())),
    )


def _require(ctx: Context) -> Embedder:
    """The embedder, answering its health check, or an error that says what to do."""
    emb = ctx.embedder
    if emb is None:
        raise EmbedderError("no embedder configured (MNEMON_EMBEDDER=none); set MNEMON_EMBEDDER to local, "
                            "ollama or openai to embed")
    if not emb.available():
        protocol = _protocol(ctx, emb)
        endpoint = redact(ctx.settings.embed_endpoint)
        if protocol == "ollama":
            model = ctx.settings.embed_model or DEFAULT_OLLAMA_MODEL
            raise EmbedderError(
                f"Ollama not available at {endpoint} — install with: brew install ollama && ollama pull {model}"
            )
        if protocol == "openai":
            raise EmbedderError(f"embedding provider not available at {endpoint} ({emb.name})")
        raise EmbedderError(f"embedder {emb.name} not available")
    return emb


def embed_one(ctx: Context, id: str) -> EmbedOneResult:
    ctx.writable("embed")
    emb = _require(ctx)
    store = ctx.store
    ins = store.get_insight(id)
    if ins is None:
        raise NotFoundError(f"insight {id} not found", id=id)
    vec = emb.embed(ins.content)
    now, _ = ctx.clock()
    with store.transaction():
        once.claim(store, now)
        store.set_vector(id, vec, emb.name)
        ctx.log("embed", id, f"dim={vec.shape[0]} model={emb.name}", now)
    return EmbedOneResult(dimension=int(vec.shape[0]), id=id, model=emb.name)


def backfill(ctx: Context) -> EmbedBackfillResult | EmbedCompleteResult:
    """Embed every active insight without a vector of the current model: first what large imports queued (with
    their semantic edges, `importer.fill_queued`), then the rest, importance first, newest first.
    Unlike the original (at most 100 per run) this goes through all of them, in batches of EMBED_BATCH, each
    committed on its own. A text the provider refuses counts as failed. The backfill gives up on the provider
    when it keeps timing out, has embedded nothing after a few tries, or fails a whole batch text by text; the
    rest count as failed. Raises EmbedderError (and writes nothing) when no text at all was embedded. Ctrl-C
    stops it between two commits (`Interrupted`: how many are in)."""
    done = [0]
    try:
        return _backfill(ctx, done)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: {done[0]} vectors embedded; run `mnemon embed --all` again to finish"
                          ) from None


def _backfill(ctx: Context, done_so_far: list[int]) -> EmbedBackfillResult | EmbedCompleteResult:
    from .write.importer import fill_queued

    ctx.writable("embed --all")
    emb = _require(ctx)
    store = ctx.store
    model = emb.name
    missing = store.count_active() - _current_count(store.vector_counts(), model, None)
    if missing <= 0 or not store.unembedded(model, 1):
        if emb.dimensions:
            store.maintain_vector_index(model, emb.dimensions)  # still worth it: remember adds vectors one by one
        return EmbedCompleteResult()
    succeeded = 0
    failed: set[str] = set()
    calls = timeouts = 0  # embedder calls made; of the latest ones, how many timed out in a row
    last_error = ""

    def attempt(texts: list[str]) -> np.ndarray | None:
        nonlocal calls, timeouts, last_error
        calls += 1
        try:
            vecs = emb.embed_batch(texts)
        except EmbedderError as e:
            timeouts = timeouts + 1 if isinstance(e, EmbedderTimeoutError) else 0
            last_error = str(e)
            return None
        timeouts = 0
        return vecs

    def hopeless(embedded: int) -> str | None:
        """Why to give up on the provider now, or None to go on."""
        if timeouts >= MAX_CONSECUTIVE_TIMEOUTS:
            return f"gave up after {timeouts} timeouts in a row ({last_error})"
        if not embedded and len(failed) >= MAX_FAILURES_BEFORE_SUCCESS:
            return f"gave up after {calls} failed requests ({last_error})"
        return None

    gave_up: str | None = None
    with progress_bar(missing, "embedding") as advance:
        def filled(n: int) -> None:  # a queued batch committed
            done_so_far[0] += n
            advance(n)

        succeeded = fill_queued(ctx, advance=filled)
        while not gave_up:
            rows = [r for r in store.unembedded(model, EMBED_BATCH + len(failed)) if r.id not in failed]
            rows = rows[:EMBED_BATCH]
            if not rows:
                break
            vecs = attempt([r.content for r in rows])
            done: list[tuple[str, np.ndarray]] = [] if vecs is None else [(r.id, v) for r, v in zip(rows, vecs)]
            if vecs is None and len(rows) == 1:
                failed.add(rows[0].id)
            elif vecs is None:
                for r in rows:  # which texts fail?
                    gave_up = hopeless(succeeded + len(done))
                    if gave_up:
                        break
                    one = attempt([r.content])
                    if one is None:
                        failed.add(r.id)
                    else:
                        done.append((r.id, one[0]))
            if done:
                with store.transaction():
                    once.claim(store, ctx.clock()[0])
                    for id_, vec in done:
                        store.set_vector(id_, vec, model)
                succeeded += len(done)
                done_so_far[0] = succeeded
            advance(len(rows))
            gave_up = gave_up or hopeless(succeeded)
            if not done and len(rows) > 1 and not gave_up:
                gave_up = f"stopped: all {len(rows)} texts of a batch failed ({last_error})"
    n_failed = max(missing - succeeded, len(failed)) if gave_up else len(failed)
    if not succeeded:
        raise EmbedderError(f"embed --all: nothing embedded ({n_failed} failed): {gave_up or last_error}")
    if gave_up:
        ctx.warn(f"embed --all {gave_up}; {n_failed} insights not embedded, run it again later")
    now, _ = ctx.clock()
    with store.transaction():
        once.claim(store, now)
        ctx.log("embed:backfill", None, f"succeeded={succeeded} failed={n_failed} model={model}", now)
    if emb.dimensions:
        store.maintain_vector_index(model, emb.dimensions)  # large stores: fold the new vectors into the ANN file
    return EmbedBackfillResult(failed=n_failed, model=model, succeeded=succeeded)
