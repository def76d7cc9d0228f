"""Two source trees, alternated in one session, each on a store it builds itself: the CPU of importing 10,000
synthetic insights with a random unit vector each (`embed_speed.store_10k`), and the median CPU of a warm recall
without an embedder and with the local one (its query cache warmed, so only recall's own work is timed). Each
measurement runs in a child process with PYTHONPATH set to its tree; a tree needs no cached store, so two trees
whose file formats differ never meet each other's files (what `scale_ab.py`, on one shared store, cannot avoid).

    git archive BASE | tar -x -C /tmp/before; git archive HEAD | tar -x -C /tmp/after
    MNEMON_DAEMON=off OPENBLAS_NUM_THREADS=1 python -m benchmarks.tree_ab /tmp/before /tmp/after --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = """
import json, shutil, statistics, tempfile, time
from pathlib import Path
from benchmarks.embed_speed import store_10k
from benchmarks.import_speed import make_draft
from mnemon_core import Memory
tmp = Path(tempfile.mkdtemp(prefix="tree-ab-"))
try:
    c = time.process_time()
    data = store_10k(tmp, {n})
    out = {{"import": time.process_time() - c}}
    queries = [i["content"][:80] for i in make_draft(4 * {queries})["insights"][::4]]
    for name, embedder in (("none", None), ("local", "local")):
        mem = Memory(data_dir=data, embedder=embedder)
        for q in queries:
            mem.recall(q)
        cpu = []
        for _ in range(3):
            for q in queries:
                c = time.process_time()
                mem.recall(q)
                cpu.append((time.process_time() - c) * 1000)
        mem.close()
        out[name] = statistics.median(cpu)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print(json.dumps(out))
"""
MEASURES = (("import", "import 10k CPU s"), ("none", "recall CPU ms, no embedder"),
            ("local", "recall CPU ms, local embedder"))


def measure(tree: str, n: int, queries: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=tree, MNEMON_DAEMON="off")
    done = subprocess.run([sys.executable, "-c", _CHILD.format(n=n, queries=queries)], env=env, cwd=tree,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args()
    got: dict[str, list[dict[str, float]]] = {args.before: [], args.after: []}
    for r in range(args.rounds):
        order = (args.before, args.after) if r % 2 == 0 else (args.after, args.before)
        for tree in order:
            got[tree].append(measure(tree, args.n, args.queries))
            print(f"round {r + 1} {tree}: {got[tree][-1]}", file=sys.stderr)
    print(f"| measure | before (median of {args.rounds}) | after | after / before |")
    print("| --- | ---: | ---: | ---: |")
    for key, label in MEASURES:
        b = statistics.median(x[key] for x in got[args.before])
        a = statistics.median(x[key] for x in got[args.after])
        print(f"| {label} | {b:.2f} | {a:.2f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
