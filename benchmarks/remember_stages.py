"""Where a warm `remember` spends its CPU, stage by stage, without a profiler: each step of `Memory.remember`
wrapped with a process-CPU timer, on a scratch copy of `scale.py`'s import-built store (its index file on,
384-d preset vectors, auto-prune off). Prints the CPU p50 / p95 / mean of the whole call, then each stage's mean
per call and share (nested stages: `sync` is inside `token_tops`, the builders inside `write_insight`).

    OPENBLAS_NUM_THREADS=1 python benchmarks/remember_stages.py                 # 10k, 300 calls
    OPENBLAS_NUM_THREADS=1 python benchmarks/remember_stages.py --n 100000 --calls 100

Two trees alternated (before / after a change): `--tree DIR` times the engine of another checkout, e.g.
`git worktree add --detach /tmp/base 1d31d05`, then `--tree /tmp/base` and without it, in turn.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
# --tree DIR: time the engine of another checkout (before / after a change), put first before anything imports it
TREE = sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv[:-1] else None
if TREE:
    sys.path.insert(0, str(Path(TREE).resolve()))

import scale  # noqa: E402
import synth  # noqa: E402


def timed_stages() -> scale.Stages:
    """The stages of `remember` wrapped with CPU timers (`scale.Stages`)."""
    from mnemon_core import Memory
    from mnemon_core import memory as memory_mod
    from mnemon_core import graph
    from mnemon_core.write import candidates, diff, pipeline

    stages = scale.Stages(clock=time.process_time)
    for owner, attr, name in (
        (graph.GraphView, "sync", "memo sync (inside token_tops)"), (candidates, "token_tops", "token_tops"),
        (diff, "suggest", "diff label"), (memory_mod, "resolve", "entities"),
        (memory_mod, "write_insight", "write_insight"), (pipeline, "create_temporal_edges", "  temporal builder"),
        (pipeline, "create_entity_edges", "  entity builder"), (pipeline, "create_causal_edges", "  causal builder"),
        (pipeline, "create_semantic_edges", "  semantic builder"), (pipeline, "refresh_ei", "  EI"),
        (candidates, "semantic_candidates", "semantic candidates"),
        (candidates, "causal_candidates", "causal candidates"), (Memory, "_maintain_index", "index file upkeep"),
        (Memory, "embed_texts", "embedding (preset)"), (Memory, "cosines", "cosines"), (Memory, "_log", "oplog"),
    ):
        stages.wrap(owner, attr, name)
    return stages


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000, help="store size (scale.py's cached store)")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--tree", help="a checkout whose mnemon_core to time (default: this one)")
    a = ap.parse_args()
    from mnemon_core import Memory

    src = scale.data_dir(a.n)
    stages = timed_stages()
    with tempfile.TemporaryDirectory(dir=synth.CACHE) as tmp:
        dst = Path(tmp) / "copy"
        shutil.copytree(src, dst)
        mem = Memory(data_dir=dst, store="default", embedder=synth.PresetEmbedder())
        mem.remember("warm up the vector matrix and the write path ProjKalo", category="fact")
        stages.end_query()
        stages.ms.clear()
        cpu = scale.remember_each(mem, a.n, a.calls, clock=time.process_time, after=stages.end_query)
        mem.close()
    total = sum(cpu)
    print(f"engine: {Path(sys.modules['mnemon_core'].__file__).parent.parent}")
    print(f"remember at {a.n:,}: CPU p50 {synth.pct(cpu, 50):.2f} ms, p95 {synth.pct(cpu, 95):.2f} ms, "
          f"mean {total / len(cpu):.2f} ms")
    for name, ms in sorted(stages.ms.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {name:32s} {sum(ms) / len(cpu):6.2f} ms  {100 * sum(ms) / total:5.1f} %")


if __name__ == "__main__":
    os.environ["MNEMON_MAX_INSIGHTS"] = "0"  # the store is larger than the default cap: no pruning timed
    main()
