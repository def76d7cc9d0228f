"""What a read's access count costs (issue 37, item 1): `search` and `show` (each counts an access) and
`remember` (each write transaction first applies the accesses reads kept), CPU per call, on a fresh SQLite store
in this process; then, with another connection holding the write lock, how long a read takes (before the fix:
the 60 s busy timeout) and what the next write pays to apply the kept accesses.

    python -m benchmarks.read_access                          # this checkout
    PYTHONPATH=/tmp/base python -m benchmarks.read_access     # another (git archive of the base commit)

The code measured is the `mnemon_core` Python imports (printed first). Run both in one shell line for a ratio;
the held-lock part runs only where reads do not wait (`--held`)."""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time

import mnemon_core
from mnemon_core import Memory

WORDS = "queue cache index shard replica broker worker schema migration latency".split()


def per_call(fn, n: int) -> tuple[float, float]:
    """(median CPU ms, median wall ms) of n calls."""
    cpu, wall = [], []
    for i in range(n):
        c, w = time.process_time(), time.perf_counter()
        fn(i)
        cpu.append((time.process_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--insights", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--held", action="store_true", help="also read while another connection holds the lock")
    a = ap.parse_args()
    print(f"mnemon_core from {mnemon_core.__file__}")
    with tempfile.TemporaryDirectory() as d, Memory(data_dir=d, embedder=None) as mem:
        mem.import_draft({"schema_version": "1", "insights": [
            {"content": f"note {i}: the {WORDS[i % 10]} of service {i % 37} uses {WORDS[(i * 7) % 10]}"}
            for i in range(a.insights)]})
        ids = [i.id for i in mem.recent(a.insights)]
        rows = {
            "search": per_call(lambda i: mem.search(WORDS[i % 10], limit=5), a.calls),
            "show": per_call(lambda i: mem.show(ids[i % len(ids)]), a.calls),
            "remember": per_call(lambda i: mem.remember(f"written {i}: the {WORDS[i % 10]} moved", no_diff=True),
                                 a.calls // 3),
        }
        for name, (cpu, wall) in rows.items():
            print(f"{name:10} {cpu:7.3f} ms CPU  {wall:7.3f} ms wall (median of the calls)")
        if a.held:
            lock = sqlite3.connect(mem.settings.db_path, isolation_level=None)
            lock.execute("BEGIN EXCLUSIVE")
            held = per_call(lambda i: mem.search(WORDS[i % 10], limit=5), a.calls)
            lock.execute("ROLLBACK")
            c, w = time.process_time(), time.perf_counter()
            mem.remember("the write after the lock", no_diff=True)
            print(f"{'search held':10} {held[0]:7.3f} ms CPU  {held[1]:7.3f} ms wall (the lock held: kept)")
            print(f"{'next write':10} {(time.process_time() - c) * 1000:7.3f} ms CPU  "
                  f"{(time.perf_counter() - w) * 1000:7.3f} ms wall (applies {a.calls} kept accesses)")


if __name__ == "__main__":
    main()
