"""What a pipeline gets from the engine that runs it, passed explicitly rather than as the `Memory` itself: the
settings, the store and the embedder (opened on first use, as `Memory` opens them), the clock, the oplog writer
(which tags rows written through MCP), the writability check, and the embedding calls whose health probe and
one warning are `Memory`'s state, and the graph index fold after a write. `Memory._context()` builds one for each
pipeline call (`write/remember.py`, `write/link.py`, `write/importer.py`, `embed_ops.py`), so no pipeline
imports `memory.py` or calls its privates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from .config import Settings
    from .embed import Embedder
    from .store import Store

__all__ = ["Context"]


class Cosines(Protocol):
    def __call__(self, vector: np.ndarray | None, *, floor: float = ...) -> dict[str, float]: ...


@dataclass(frozen=True)
class Context:
    settings: Settings
    open_store: Callable[[], Store]
    open_embedder: Callable[[], Embedder | None]
    clock: Callable[[], tuple[str, float]]  # now as RFC 3339 UTC and as a Unix timestamp
    log: Callable[[str, str | None, str, str], None]  # one oplog row (operation, insight id, detail, now)
    detail: Callable[[str], str]  # a content's oplog detail: through MCP only its fingerprint
    writable: Callable[[str], None]  # raises ReadOnlyError(action) on a read-only Memory
    warn: Callable[[str], None]  # one warning per call on stderr
    embed_texts: Callable[[Sequence[str]], np.ndarray | None]  # vectors, or None (one warning) when off or failing
    cosines: Cosines  # calibrated cosine ≥ floor with every embedded active insight
    fold_stale_index: Callable[[int], None]  # before a write: fold new vectors into a stale ANN file
    fold_graph: Callable[[], None]  # after a write: fold the graph index file when it is far behind (best effort)

    @property
    def store(self) -> Store:
        return self.open_store()

    @property
    def embedder(self) -> Embedder | None:
        return self.open_embedder()
