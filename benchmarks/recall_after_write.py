"""Recall right after a `remember`, in one long-lived process (the resident engine, an MCP server, a LangChain
agent): an agent's turn writes and reads. Measured in the same process beside warm recall with no write
between queries, so the ratio says what a write costs the next query.

The store is `recall_speed.py`'s synthetic one (copied for each run: the runs write to it), opened with no
embedder and with the benchmarks' preset embedder (384-d vectors; each remember adds one). Each run: 100 warm-up
queries with the memo preloaded, then 100 recalls with no write, then 100 pairs of remember + recall; CPU time
per call, with one BLAS thread (OPENBLAS_NUM_THREADS=1 unless set).

    python benchmarks/recall_after_write.py                          # this checkout, 10k insights
    python benchmarks/recall_after_write.py --code /tmp/old --rounds 3 --sizes 1000,10000

With `--code DIR` (another checkout, e.g. a `git worktree` of an older commit) each run is a fresh process
importing `mnemon_core` from there, the checkouts alternating round by round on the same stores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent


def one_run(store: Path, n: int, vectors: bool) -> dict[str, Any]:
    """In a child process: the three phases on a copy of store; medians of CPU ms."""
    # mnemon_core first, from PYTHONPATH (the checkout under test): synth.py puts this checkout on sys.path.
    from mnemon_core import Memory
    from mnemon_core.graph import graph_view

    sys.path.insert(0, str(HERE))
    from synth import PresetEmbedder, queries

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "dd"
        shutil.copytree(store.parent.parent.parent, data_dir)
        qs = [t for t, _ in queries(n, 400, seed=3)]
        with Memory(data_dir=data_dir, store="default", embedder=PresetEmbedder() if vectors else None) as mem:
            for q in qs[:50]:
                mem.recall(q)
            graph_view(mem.store).preload()
            for q in qs[50:100]:
                mem.recall(q)
            calm, after, remember = [], [], []
            for q in qs[100:200]:
                c = time.process_time()
                mem.recall(q)
                calm.append(time.process_time() - c)
            for i, q in enumerate(qs[200:300]):
                c = time.process_time()
                mem.remember(f"note {i}: {qs[300 + i]}", source="agent")
                remember.append(time.process_time() - c)
                c = time.process_time()
                mem.recall(q)
                after.append(time.process_time() - c)
    out: dict[str, Any] = {k: statistics.median(v) * 1000 for k, v in
                           (("warm", calm), ("after_remember", after), ("remember", remember))}
    out["code"] = str(Path(sys.modules["mnemon_core"].__file__ or "").parent.parent)
    return out


def spawn(code: Path, store: Path, n: int, vectors: bool) -> dict[str, float]:
    # One BLAS thread, as recall_speed.py: OpenBLAS threads spin-wait and double the CPU time of a matrix product.
    env = {"OPENBLAS_NUM_THREADS": "1", **os.environ, "PYTHONPATH": str(code), "MNEMON_DAEMON": "off"}
    cmd = [sys.executable, __file__, "--child", str(store), str(n), "1" if vectors else "0"]
    out = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
    if Path(out.pop("code")) != code:
        raise SystemExit(f"the run imported mnemon_core from elsewhere than {code}")
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        store, n, vectors = Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
        print(json.dumps(one_run(store, n, vectors)))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--code", action="append", default=[], help="another checkout to run beside this one")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    import recall_speed

    codes = [ROOT, *(Path(c).resolve() for c in args.code)]
    rows: dict[tuple[int, bool, Path], list[dict[str, float]]] = {}
    for n in (int(s) for s in args.sizes.split(",")):
        store = recall_speed.store_for(n)
        for r in range(args.rounds):
            for vectors in (False, True):
                for code in codes if r % 2 == 0 else codes[::-1]:
                    rows.setdefault((n, vectors, code), []).append(spawn(code, store, n, vectors))
    print("| insights | embedder | code | warm recall | recall after a remember | after / warm | remember |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: |")
    for (n, vectors, code), runs in rows.items():
        med = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
        label = "this checkout" if code == ROOT else code.name
        print(f"| {n:,} | {'preset 384-d' if vectors else 'none'} | {label} | {med['warm']:.1f} ms | "
              f"{med['after_remember']:.1f} ms | {med['after_remember'] / med['warm']:.1f}× | {med['remember']:.1f} ms |")


if __name__ == "__main__":
    main()
