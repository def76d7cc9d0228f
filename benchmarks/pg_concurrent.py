"""Many agent processes writing one store at once: throughput, and proof that no write was lost or doubled.

16 processes (by default) start at the same instant; each remembers 100 memories of its own and the same 20
shared memories (which every process tries to add: exactly one of each must be stored), with 384-d vectors
(hash-seeded, so the vector write and the HNSW insert are part of every remember), four sources shared
between processes and one shared entity. Afterwards the store is checked: every memory once, the oplog has one
row per attempt, every temporal backbone link points at the row a one-at-a-time writer would have seen,
and the entity edges are exactly what one-at-a-time writes produce.

    python benchmarks/pg_concurrent.py                       # Postgres (pgserver under /tmp, or --database-url)
    python benchmarks/pg_concurrent.py --backend sqlite      # the same against one SQLite file
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

SOURCES = 4

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[5])
import recall_speed as rs
from mnemon_core import Memory
proc, each, shared, start = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
m = Memory(embedder=rs.PresetEmbedder())
m.status()  # connect before the start line
texts = [f"process {proc} memory {i} about the rollout of service {i % 7}" for i in range(each)]
# the shared texts are spread through each process's own, at different points per process
step = max(1, each // max(1, shared))
for j in range(shared):
    texts.insert(min(len(texts), (j * step + proc) % (each + j + 1)), f"shared memory {j}: the deploy freeze starts Friday")
while time.time() < start:
    time.sleep(0.0005)
out = []
for t in texts:
    t0 = time.perf_counter()
    r = m.remember(t, source=f"s{proc % int(sys.argv[6])}", entities=["Rollout"], entity_mode="provided")
    out.append((r.action, (time.perf_counter() - t0) * 1000))
print(json.dumps({"results": out, "end": time.time()}))
"""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def check(mem, procs: int, each: int, shared: int) -> dict:
    store = mem.store
    rows = list(store.iter_active())
    contents = Counter(r.content for r in rows)
    expected = procs * each + shared
    edges = list(store.iter_edges())
    precedes = [(e.source_id, e.target_id) for e in edges if e.metadata.get("direction") == "precedes"]
    per_source = Counter(r.source for r in rows)
    # Each backbone link must point at the newest (created_at, insertion order) row of its source inserted
    # before it: what a writer holding the lock sees. created_at is taken before the lock, so the chain
    # itself may branch when a writer waited; a wrong link means a writer did not see an earlier commit.
    succeeds = {e.source_id: e.target_id for e in edges if e.metadata.get("direction") == "succeeds"}
    best: dict[str, tuple[str, int, str]] = {}
    wrong = 0
    for pos, r in enumerate(rows):
        want = best.get(r.source)
        wrong += succeeds.get(r.id) != (want[2] if want else None)
        if want is None or (r.created_at, pos) > want[:2]:
            best[r.source] = (r.created_at, pos, r.id)
    entity = sum(1 for e in edges if e.edge_type == "entity")
    log = store.read_log(5000)
    ops = Counter(e.operation for e in log)
    n = len(rows)
    return {
        "insights": n,
        "expected": expected,
        "duplicated_contents": sum(1 for c in contents.values() if c > 1),
        "lost": expected - len(contents),
        "oplog_remember": ops["remember"],
        "oplog_diff_skip": ops["diff-skip"],
        "backbone_edges": len(precedes),
        "backbone_expected": sum(c - 1 for c in per_source.values()),
        "backbone_wrong_links": wrong,
        "backbone_branches": len(precedes) - len({s for s, _ in precedes}),
        "entity_edges": entity,
        "entity_expected": 2 * (10 + 5 * (n - 5)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--each", type=int, default=100)
    ap.add_argument("--shared", type=int, default=20)
    ap.add_argument("--database-url", default=None)
    a = ap.parse_args()

    from mnemon_core import Memory

    work = Path(tempfile.mkdtemp(prefix="mnemon-bench-conc-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
    env.update(PYTHONPATH=str(ROOT), MNEMON_DATA_DIR=str(work), MNEMON_MAX_INSIGHTS="0")
    store = f"conc-{uuid.uuid4().hex[:8]}"
    env["MNEMON_STORE"] = store
    if a.backend == "postgres":
        from pg_scale import server_url

        env["MNEMON_DATABASE_URL"] = server_url(a.database_url)
    os.environ.update(env)
    Memory().status()  # create the store before the race

    start = time.time() + 5.0 + 0.3 * a.procs
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(p), str(a.each), str(a.shared), str(start), str(ROOT / "benchmarks"),
             str(SOURCES)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for p in range(a.procs)
    ]
    outs = [p.communicate(timeout=3600) for p in procs]
    bad = [o[1][-1500:] for p, o in zip(procs, outs, strict=True) if p.returncode != 0]
    if bad:
        sys.exit("worker failed:\n" + "\n".join(bad))
    results = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    lat = [ms for r in results for _, ms in r["results"]]
    actions = Counter(act for r in results for act, _ in r["results"])
    wall = max(r["end"] for r in results) - start
    mem = Memory()
    verdict = check(mem, a.procs, a.each, a.shared)
    mem.close()
    if a.backend == "postgres":
        from mnemon_core.store.postgres import drop_store

        drop_store(env["MNEMON_DATABASE_URL"], store)
    summary = {
        "backend": a.backend, "procs": a.procs, "attempts": len(lat), "actions": dict(actions),
        "wall_s": round(wall, 2), "remembers_per_s": round(len(lat) / wall, 1),
        "remember_p50_ms": round(pct(lat, 50), 1), "remember_p95_ms": round(pct(lat, 95), 1), **verdict,
    }
    print(json.dumps(summary, indent=1))
    ok = (verdict["lost"] == 0 and verdict["duplicated_contents"] == 0 and verdict["backbone_wrong_links"] == 0
          and verdict["backbone_edges"] == verdict["backbone_expected"]
          and verdict["entity_edges"] == verdict["entity_expected"]
          and verdict["oplog_remember"] == verdict["expected"]
          and verdict["oplog_diff_skip"] == a.procs * a.shared - a.shared)
    print("OK: no lost or duplicated writes" if ok else "FAILED: see the counts above")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
