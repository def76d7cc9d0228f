"""The write transaction's body (spec 5.1 step three), shared by `remember` and `import`: the new insight
(`new_insight`: its entities and keyword tokens), then insert, vector, the four graph builders, persisted
entities, EI (`write_insight`). The caller owns the transaction, auto-prune and the oplog."""

from __future__ import annotations

import re

import numpy as np

from ..entities import resolve_entities
from ..lifecycle import refresh_ei
from ..models import Category, EdgesCreated, EntityMode, Insight
from ..text import tokens_of
from .causal import create_causal_edges
from .entity_edges import create_entity_edges
from .semantic import create_semantic_edges
from .target import WriteTarget
from .temporal import create_temporal_edges

_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def words_of(content: str) -> list[str]:
    """The words the known-entity path asks the store about."""
    return _ASCII_WORD.findall(content)


def resolve(store: WriteTarget, content: str, provided: list[str], mode: EntityMode) -> list[str]:
    """Entities of a new insight. The known-entity path asks the store only about this text's words."""
    known: set[str] = set()
    if mode != EntityMode.provided:
        known = set(store.known_entities(words_of(content)))
    return resolve_entities(content, provided, mode, known)


def new_insight(
    store: WriteTarget, id: str, content: str, *, category: Category, importance: int, tags: list[str],
    entities: list[str], entity_mode: EntityMode, source: str, created_at: str, now: str,
) -> tuple[Insight, frozenset[str]]:
    """The insight a checked input becomes (its entities resolved against the store) and its keyword tokens.
    `created_at`: when it happened (an import may backdate it); `now`: when it is stored."""
    ents = resolve(store, content, entities, entity_mode)
    ins = Insight(
        id=id, content=content, category=category, importance=importance, tags=tags, entities=ents, source=source,
        created_at=created_at, updated_at=created_at, stored_at=now,
    )
    return ins, tokens_of(content, tags, ents)


def write_insight(
    store: WriteTarget,
    ins: Insight,
    tokens: frozenset[str],
    vector: np.ndarray | None,
    vector_model: str | None,
    cosines: dict[str, float] | None,
    *,
    temporal: bool = True,
    session: str | None = None,
    now: str,
    now_ts: float | None = None,
    ei: bool = True,
) -> tuple[EdgesCreated, float]:
    """Insert one insight with its edges; returns the edges created and its effective importance (0 with
    `ei=False`: the importer refreshes the EI of everything it touched once, at its end). `session`: the
    remember session it continues (conversation edge, temporal builder)."""
    store.insert_insight(ins, tokens)
    if vector is not None and vector_model:
        store.set_vector(ins.id, vector, vector_model)
    created = EdgesCreated(
        temporal=create_temporal_edges(store, ins, now, session) if temporal else 0,
        entity=create_entity_edges(store, ins, now),
        causal=create_causal_edges(store, ins, tokens, now),
        semantic=2 * len(create_semantic_edges(store, ins, cosines or {}, now)),
    )
    if not ei:
        return created, 0.0
    return created, refresh_ei(store, [ins.id], now_ts).get(ins.id, 0.0)
