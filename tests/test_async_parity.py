"""`AsyncMemory` gives what `Memory` gives: one script through both, compared model by model."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mnemon_core import AsyncMemory, Memory
from mnemon_core.memory import iso

SCRIPT = [
    ("remember", ("We chose SQLite because the team lacks Redis experience",), {"category": "decision", "importance": 5}),
    ("remember", ("SQLite in WAL mode lets several agents write at once",), {"source": "agent"}),
    ("remember", ("We chose SQLite because the team lacks Redis experience",), {}),
    ("search", ("sqlite",), {}),
    ("recall", ("why SQLite?",), {"verbose": True}),
    ("status", (), {}),
]

VOLATILE = {"id", "created_at", "updated_at", "oldest", "replaced_id", "db_path", "db_size_bytes"}  # timestamps, paths


def scrub(value):
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, float):
        # The two stores are written milliseconds apart: proximity edges (weight 1 / (1 + hours)) differ in
        # the fifth decimal, and so do the graph terms that flow over them.
        return round(value, 3)
    return value


def dump(result):
    if isinstance(result, list):
        return [r.model_dump(mode="json") for r in result]
    return result.model_dump(mode="json")


async def test_sync_and_async_give_the_same_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One clock for both stores: run apart, their writes can fall either side of a second, and the hybrid
    # recipe puts a newer insight that says the same first (`newer_first`), so the order would differ.
    now = time.time()
    monkeypatch.setattr(Memory, "_now", lambda self: (iso(now), now))
    sync = Memory(data_dir=tmp_path / "s", embedder=None)
    amem = AsyncMemory(data_dir=tmp_path / "a", embedder=None)
    for name, args, kwargs in SCRIPT:
        expected = scrub(dump(getattr(sync, name)(*args, **kwargs)))
        got = scrub(dump(await getattr(amem, name)(*args, **kwargs)))
        assert got == expected, name
    sync.close()
    await amem.close()


# ---------------------------------------------------------------- a typed twin


PLUMBING = {"close", "embed_texts", "cosines"}  # Memory's helpers for its pipelines, not API calls


def test_every_memory_method_has_a_coroutine_twin_with_its_signature_and_doc() -> None:
    import inspect
    import pydoc

    public = {n for n, v in vars(Memory).items() if callable(v) and not n.startswith("_")} - PLUMBING
    assert "remember" in public and "recall" in public
    for name in public:
        twin = getattr(AsyncMemory, name)  # on the class: help() and type checkers see it
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(getattr(Memory, name)), name
        assert twin.__doc__ == getattr(Memory, name).__doc__, name
    page = pydoc.plain(pydoc.render_doc(AsyncMemory))
    assert "async remember(self, content: 'str', *, category:" in page


class Gated(Memory):
    """`search` waits at a gate the test opens, and counts how many searches are inside at once."""

    def __init__(self, *args, **kwargs) -> None:
        import threading

        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.entered = threading.Semaphore(0)
        self.inside = 0
        self.most = 0
        self.count_lock = threading.Lock()

    def search(self, *args, **kwargs):
        with self.count_lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        self.entered.release()
        try:
            if not self.gate.wait(timeout=10):
                raise AssertionError("the gate was never opened")
            return super().search(*args, **kwargs)
        finally:
            with self.count_lock:
                self.inside -= 1


async def _two_searches(gated: Gated) -> int:
    """Start two searches; once the first is inside, give the second the chance to enter; then open the gate.
    Returns how many were inside at once."""
    import asyncio

    amem = AsyncMemory(memory=gated)
    first = asyncio.create_task(amem.search("alpha"))
    await asyncio.to_thread(gated.entered.acquire, timeout=10)
    second = asyncio.create_task(amem.search("beta"))
    await asyncio.to_thread(gated.entered.acquire, timeout=0.5)  # enters only if reads run in parallel
    gated.gate.set()
    await asyncio.gather(first, second)
    return gated.most


async def test_calls_take_turns_on_sqlite(data_dir: Path) -> None:
    gated = Gated(embedder=None)
    assert await _two_searches(gated) == 1
    gated.close()


@pytest.mark.integration
async def test_reads_run_beside_each_other_on_a_pooled_postgres_store(pg_url: str, pg_store_name: str) -> None:
    gated = Gated(database_url=pg_url, store=pg_store_name, embedder=None)  # a library process: pooled
    assert gated.store.parallel_reads is True
    assert await _two_searches(gated) == 2
    gated.close()
