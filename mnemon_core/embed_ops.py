"""`mnemon embed` (reference §1.2, §6): coverage status, one insight, or a backfill of every un-embedded insight.

Vectors are stored with the embedder's name; cosine only compares vectors of the current model and dimension,
so vectors of another model count as un-embedded here and `--all` re-embeds them. Neither a single embed nor a
backfill creates semantic edges (the original's docs claimed it; its code never did).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field

from .config import DEFAULT_OLLAMA_MODEL
from .draft import progress_bar
from .embed import Embedder, resolve_protocol
from .errors import EmbedderError, NotFoundError

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["EmbedBackfillResult", "EmbedCompleteResult", "EmbedOneResult", "EmbedStatus", "backfill",
           "embed_one", "status"]

# Texts per embedder call and per committed transaction: a killed backfill keeps every finished batch.
EMBED_BATCH = 256


class EmbedStatus(BaseModel):
    """`embed --status`. Keys sorted, as the original prints a Go map."""

    coverage: str = Field(description='share of active insights with a vector of the current model, e.g. "67%"')
    embedded: int = Field(description="active insights with a vector of the current model")
    embedding_available: bool
    model: str
    ollama_available: bool = Field(description="the original's name for embedding_available, kept as an alias")
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


def _protocol(mem: Memory, emb: Embedder | None) -> str:
    kind = mem.settings.embedder
    if kind in ("ollama", "openai"):
        return resolve_protocol(mem.settings)
    if kind == "none" and emb is not None:
        return "custom"  # an Embedder instance handed to Memory(embedder=...)
    return kind


def _current_count(counts: dict[str, int], model: str, dim: int | None) -> int:
    """Vectors of `model` (and of `dim`, when known) in `vector_counts()` keys "model:dim"."""
    total = 0
    for key, n in counts.items():
        name, _, d = key.rpartition(":")
        if name == model and (dim is None or d == str(dim)):
            total += n
    return total


def status(mem: Memory) -> EmbedStatus:
    emb = mem.embedder
    store = mem.store
    total = store.count_active()
    counts = store.vector_counts()
    model = emb.name if emb is not None else "none"
    embedded = _current_count(counts, model, emb.dimensions) if emb is not None else 0
    available = bool(emb is not None and emb.available())
    return EmbedStatus(
        coverage=f"{embedded / max(total, 1) * 100:.0f}%", embedded=embedded, embedding_available=available,
        model=model, ollama_available=available, protocol=_protocol(mem, emb), total_insights=total,
        vectors_by_model=dict(sorted(counts.items())),
    )


def _require(mem: Memory) -> Embedder:
    """The embedder, answering its health check, or an error that says what to do."""
    emb = mem.embedder
    if emb is None:
        raise EmbedderError("no embedder configured (MNEMON_EMBEDDER=none); set MNEMON_EMBEDDER to local, "
                            "ollama or openai to embed")
    if not emb.available():
        protocol = _protocol(mem, emb)
        endpoint = mem.settings.embed_endpoint
        if protocol == "ollama":
            model = mem.settings.embed_model or DEFAULT_OLLAMA_MODEL
            raise EmbedderError(
                f"Ollama not available at {endpoint} — install with: brew install ollama && ollama pull {model}"
            )
        if protocol == "openai":
            raise EmbedderError(f"embedding provider not available at {endpoint} ({emb.name})")
        raise EmbedderError(f"embedder {emb.name} not available")
    return emb


def embed_one(mem: Memory, id: str) -> EmbedOneResult:
    mem._writable("embed")
    emb = _require(mem)
    store = mem.store
    ins = store.get_insight(id)
    if ins is None:
        raise NotFoundError(f"insight {id} not found", id=id)
    vec = emb.embed(ins.content)
    now, _ = mem._now()
    with store.transaction():
        store.set_vector(id, vec, emb.name)
        store.log("embed", id, f"dim={vec.shape[0]} model={emb.name}", now)
    return EmbedOneResult(dimension=int(vec.shape[0]), id=id, model=emb.name)


def backfill(mem: Memory) -> EmbedBackfillResult | EmbedCompleteResult:
    """Embed every active insight without a vector of the current model, importance first, newest first.
    Unlike the original (at most 100 per run) this goes through all of them, in batches of EMBED_BATCH, each
    committed on its own. A text the provider refuses counts as failed; if a whole batch fails text by text,
    the provider is taken to be down and the rest count as failed too."""
    mem._writable("embed --all")
    emb = _require(mem)
    store = mem.store
    model = emb.name
    missing = store.count_active() - _current_count(store.vector_counts(), model, None)
    if missing <= 0 or not store.unembedded(model, 1):
        if emb.dimensions:
            store.maintain_vector_index(model, emb.dimensions)  # still worth it: remember adds vectors one by one
        return EmbedCompleteResult()
    succeeded = 0
    failed: set[str] = set()
    down = False
    with progress_bar(missing, "embedding") as advance:
        while True:
            rows = [r for r in store.unembedded(model, EMBED_BATCH + len(failed)) if r.id not in failed]
            rows = rows[:EMBED_BATCH]
            if not rows:
                break
            done: list[tuple[str, np.ndarray]] = []
            try:
                vecs = emb.embed_batch([r.content for r in rows])
                done = [(r.id, v) for r, v in zip(rows, vecs)]
            except EmbedderError:
                for r in rows:  # which texts fail?
                    try:
                        done.append((r.id, emb.embed(r.content)))
                    except EmbedderError:
                        failed.add(r.id)
            if done:
                with store.transaction():
                    for id_, vec in done:
                        store.set_vector(id_, vec, model)
                succeeded += len(done)
            advance(len(rows))
            if not done:
                down = True
                break
    n_failed = max(missing - succeeded, len(failed)) if down else len(failed)
    now, _ = mem._now()
    with store.transaction():
        store.log("embed:backfill", None, f"succeeded={succeeded} failed={n_failed} model={model}", now)
    if emb.dimensions:
        store.maintain_vector_index(model, emb.dimensions)  # large stores: fold the new vectors into the ANN file
    return EmbedBackfillResult(failed=n_failed, model=model, succeeded=succeeded)
