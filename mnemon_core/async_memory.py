"""`AsyncMemory`: `Memory`'s API as coroutines, beside it as `httpx.AsyncClient` is beside `Client`.

Each method is made once from `Memory`'s (`_twin`), so it has that method's signature, docstring and types
(`help()`, `inspect.signature` and type checkers read them) and nothing is written twice. A call runs the
`Memory` method of the same name in a worker thread, so the event loop never waits on the database or the
embedder. Calls take turns under one lock, as SQLite's single connection needs; a store that declares
`parallel_reads` (a Postgres store with a connection pool: each thread's statement borrows its own
connection) lets the methods that only read run beside each other, while writes still take turns.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from .config import Settings
from .memory import Memory

__all__ = ["AsyncMemory"]

P = ParamSpec("P")
R = TypeVar("R")


def _twin(method: Callable[Concatenate[Memory, P], R], *, read: bool = False) -> Callable[
    Concatenate[AsyncMemory, P], Awaitable[R]
]:
    """The coroutine twin of `Memory.<method>`. `read`: it writes nothing a concurrent write could disturb
    (an access bump is its own short transaction), so it may run beside other calls where the store allows."""
    name = method.__name__

    @functools.wraps(method)
    async def call(self: AsyncMemory, *args: P.args, **kwargs: P.kwargs) -> R:
        bound = getattr(self.sync, name)  # the instance's method, so a subclass's override runs
        if read and await self._parallel_reads():
            return await asyncio.to_thread(bound, *args, **kwargs)
        async with self._lock:
            return await asyncio.to_thread(bound, *args, **kwargs)

    return call


class AsyncMemory:
    """`Memory` with coroutine methods: `AsyncMemory(data_dir=..., ...)` takes `Memory`'s arguments, or
    `AsyncMemory(memory=mem)` wraps one (`.sync` is the `Memory` underneath)."""

    def __init__(self, *args: Any, memory: Memory | None = None, **kwargs: Any) -> None:
        self.sync = memory if memory is not None else Memory(*args, **kwargs)
        self._lock = asyncio.Lock()
        self._parallel: bool | None = None

    @property
    def settings(self) -> Settings:
        return self.sync.settings

    async def _parallel_reads(self) -> bool:
        """Whether reads may skip the lock: asked of the store once, opened under the lock (so two first
        calls never open it twice)."""
        if self._parallel is None:
            async with self._lock:
                if self._parallel is None:
                    store = await asyncio.to_thread(lambda: self.sync.store)
                    self._parallel = store.parallel_reads
        return self._parallel

    remember = _twin(Memory.remember)
    recall = _twin(Memory.recall, read=True)
    retrieve = _twin(Memory.retrieve, read=True)
    import_draft = _twin(Memory.import_draft)
    embed = _twin(Memory.embed)
    fill_vectors = _twin(Memory.fill_vectors)
    link = _twin(Memory.link)
    forget = _twin(Memory.forget)
    show = _twin(Memory.show, read=True)
    search = _twin(Memory.search, read=True)
    related = _twin(Memory.related, read=True)
    status = _twin(Memory.status, read=True)
    log = _twin(Memory.log, read=True)
    gc = _twin(Memory.gc)
    gc_keep = _twin(Memory.gc_keep)
    get = _twin(Memory.get, read=True)
    recent = _twin(Memory.recent, read=True)
    candidates = _twin(Memory.candidates, read=True)
    resolve_id = _twin(Memory.resolve_id, read=True)
    reopen_if_replaced = _twin(Memory.reopen_if_replaced)
    warm = _twin(Memory.warm, read=True)

    async def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.sync.close()
