"""The driver of `remember` (spec 5.1): embed, diff against what the store holds, then one write transaction
(the insight, its vector, the four graph builders, EI, auto-prune, the oplog row), the graph index fold, and
the candidates the agent may link by hand. `Memory.remember` checks the input and calls `remember` here; the
importer shares the per-insight step (`pipeline.new_insight`, `pipeline.write_insight`)."""

from __future__ import annotations

import uuid

from .. import lifecycle, once
from ..context import Context
from ..models import RememberResult
from ..text import token_set
from . import candidates, diff
from .constants import DIFF_CANDIDATES, SEMANTIC_TOKEN_POOL
from .pipeline import new_insight, write_insight
from .validate import RememberInput

__all__ = ["remember"]


def remember(ctx: Context, inp: RememberInput, *, session: str | None, no_diff: bool) -> RememberResult:
    """Store one checked memory (the caller has checked that it may write). `session`: the conversation it
    continues (a conversation edge to the session's previous insight); `no_diff`: write even an exact repeat."""
    vecs = ctx.embed_texts([inp.content])
    vector = vecs[0] if vecs is not None else None
    store = ctx.store
    new_id = str(uuid.uuid4())
    now, ts = ctx.clock()
    if vector is not None:
        ctx.fold_stale_index(int(vector.shape[0]))
    cos = ctx.cosines(vector)
    base_tokens = token_set(inp.content)
    suggestion = "ADD"
    if not no_diff:
        existing = store.find_by_content(inp.content)
        if existing is not None:
            return _skip(ctx, inp.content, existing, now)
    # One pass over the token postings ranks what the diff label and the token-overlap candidates need.
    by_coverage, by_overlap = candidates.token_tops(store, base_tokens, max(DIFF_CANDIDATES, SEMANTIC_TOKEN_POOL))
    if not no_diff:
        suggestion, _ = diff.suggest(store, inp.content, base_tokens, by_coverage, cos)
    with once.writing(store, now):
        # Timestamps from under the write lock, so concurrent writers' temporal chains stay linear.
        now, ts = ctx.clock()
        if not no_diff:
            # Checked again under the write lock: two agents remembering the same text at once.
            existing = store.find_by_content(inp.content)
            if existing is not None:
                return _skip(ctx, inp.content, existing, now)
        ins, tokens = new_insight(
            store, new_id, inp.content, category=inp.category, importance=inp.importance, tags=inp.tags,
            entities=inp.entities, entity_mode=inp.entity_mode, source=inp.source, created_at=now, now=now,
        )
        emb = ctx.embedder
        edges, ei = write_insight(
            store, ins, tokens, vector, emb.name if vector is not None and emb else None, cos, session=session,
            now=now, now_ts=ts,
        )
        settings = ctx.settings
        pruned = lifecycle.auto_prune(
            store, max_insights=settings.max_insights, min_age_s=settings.prune_min_age_s, exclude=new_id, now=now,
            trigger=new_id,
        )
        ctx.log("remember", new_id, ctx.detail(inp.content), now)
    ctx.fold_graph()
    return RememberResult(
        id=new_id, content=ins.content, category=ins.category, importance=ins.importance, tags=ins.tags,
        entities=ins.entities, action="added", diff_suggestion="ADD" if no_diff else suggestion, created_at=now,
        edges_created=edges,
        semantic_candidates=candidates.semantic_candidates(store, ins, base_tokens, cos, by_overlap),
        causal_candidates=candidates.causal_candidates(store, ins), embedded=vector is not None,
        effective_importance=round(ei, 4), auto_pruned=len(pruned), auto_pruned_ids=pruned,
    )


def _skip(ctx: Context, content: str, existing: str, now: str) -> RememberResult:
    """An exact repeat writes nothing; it answers with the insight that holds the text (`id`, and
    `replaced_id` as the spec has it), so `show <id>` finds it."""
    store = ctx.store
    with once.writing(store, now):
        ctx.log("diff-skip", existing, f"exact duplicate of {existing}", now)
        held = store.get_insight(existing)
    # What the holder is (None: forgotten by another process since it was found); zeros for what was not done.
    about = {} if held is None else {
        "category": held.category, "importance": held.importance, "tags": held.tags, "entities": held.entities,
        "created_at": held.created_at, "effective_importance": round(held.effective_importance, 4),
    }
    return RememberResult(id=existing, content=content, action="skipped", diff_suggestion="DUPLICATE",
                          replaced_id=existing, **about)
