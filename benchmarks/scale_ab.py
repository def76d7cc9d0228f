"""Two source trees on the same cached `scale.py` store, alternated in one session: warm recall CPU p50/p95
(the same queries, after the same warm-up), a digest of the results (ids, scores, via) to show they are the
same, and the first recall of a fresh process (`scale.first_recall`). Each measurement runs in a child
process with PYTHONPATH set to its tree, so the "before" tree is a `git worktree` of the base commit.
`--remember N`: instead, remember CPU p50/p95 over N calls, each tree on its own copy of the data dir
`--remember-from` (default the cached store; give a copy made before the after-tree opened it when the
after-tree migrates the schema, so the before-tree runs on its own schema), the trees alternated per round.

    OPENBLAS_NUM_THREADS=1 python benchmarks/scale_ab.py --sizes 10000,100000 BEFORE_TREE AFTER_TREE
    OPENBLAS_NUM_THREADS=1 python benchmarks/scale_ab.py --sizes 10000 --remember 100 --rounds 3 \
        --remember-from COPY_OF_THE_STORE BEFORE_TREE AFTER_TREE
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_WARM = """
import hashlib, json, sys, time
sys.path.insert(0, {bench!r})
import synth, scale
from mnemon_core import Memory
emb = synth.PresetEmbedder()
texts = scale.preset(emb, {n}, {warmup} + {count}, seed={n})
mem = Memory(data_dir=scale.data_dir({n}), store="default", embedder=emb)
for q in texts[:{warmup}]:
    mem.recall(q)
cpu, got = [], []
for q in texts[{warmup}:]:
    c = time.process_time()
    r = mem.retrieve(q)
    cpu.append((time.process_time() - c) * 1000)
    got.append([(h.insight.id, h.score, h.via) for h in r.results])
mem.close()
print(json.dumps({{"cpu_p50": synth.pct(cpu, 50), "cpu_p95": synth.pct(cpu, 95),
                  "results": hashlib.sha1(json.dumps(got).encode()).hexdigest()}}))
"""

_REMEMBER = """
import json, shutil, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {bench!r})
import synth, scale
from mnemon_core import Memory
with tempfile.TemporaryDirectory(dir=synth.CACHE) as tmp:
    dst = Path(tmp) / "copy"
    shutil.copytree({src!r} or scale.data_dir({n}), dst)
    mem = Memory(data_dir=dst, store="default", embedder=synth.PresetEmbedder())
    mem.remember("warm up the vector matrix and the write path ProjKalo", category="fact")
    texts = [f"{{t}} note {{i}}" for i, (t, _) in enumerate(synth.queries({n}, {count}, seed={n} + 1))]
    cpu = []
    for i, text in enumerate(texts):
        c = time.process_time()
        mem.remember(text, category="fact", source="user" if i % 2 else "agent")
        cpu.append((time.process_time() - c) * 1000)
    mem.close()
print(json.dumps({{"remember_p50": synth.pct(cpu, 50), "remember_p95": synth.pct(cpu, 95)}}))
"""

_FIRST = "import json, scale; print(json.dumps(scale.first_recall({n}, True, runs={runs})))"


def child(tree: str, code: str) -> dict:
    env = {**os.environ, "PYTHONPATH": tree, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=os.path.join(tree, "benchmarks"))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--first-runs", type=int, default=3)
    ap.add_argument("--remember", type=int, default=0)
    ap.add_argument("--remember-from", default=None)
    a = ap.parse_args()
    for n in (int(s) for s in a.sizes.split(",")):
        for _ in range(a.rounds):
            for tree in a.trees:
                bench = os.path.join(tree, "benchmarks")
                if a.remember:
                    row = child(tree, _REMEMBER.format(bench=bench, src=a.remember_from, n=n, count=a.remember))
                    print(json.dumps({"tree": tree, "n": n, **row}), flush=True)
                    continue
                row = {"tree": tree, "n": n,
                       **child(tree, _WARM.format(bench=bench, n=n, warmup=a.warmup, count=a.queries)),
                       "first": child(tree, _FIRST.format(n=n, runs=a.first_runs))}
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
