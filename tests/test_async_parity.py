"""`AsyncMemory` gives what `Memory` gives: one script through both, compared model by model."""

from __future__ import annotations

from pathlib import Path

from mnemon_core import AsyncMemory, Memory

SCRIPT = [
    ("remember", ("We chose SQLite because the team lacks Redis experience",), {"category": "decision", "importance": 5}),
    ("remember", ("SQLite in WAL mode lets several agents write at once",), {"source": "agent"}),
    ("remember", ("We chose SQLite because the team lacks Redis experience",), {}),
    ("search", ("sqlite",), {}),
    ("recall", ("why SQLite?",), {"verbose": True}),
    ("status", (), {}),
]

VOLATILE = {"id", "created_at", "updated_at", "replaced_id", "db_path", "db_size_bytes"}


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


async def test_sync_and_async_give_the_same_results(tmp_path: Path) -> None:
    sync = Memory(data_dir=tmp_path / "s", embedder=None)
    amem = AsyncMemory(data_dir=tmp_path / "a", embedder=None)
    for name, args, kwargs in SCRIPT:
        expected = scrub(dump(getattr(sync, name)(*args, **kwargs)))
        got = scrub(dump(await getattr(amem, name)(*args, **kwargs)))
        assert got == expected, name
    sync.close()
    await amem.close()
