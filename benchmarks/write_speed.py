"""Write-path benchmark: in-process remember throughput (all four graphs, no embeddings) at store sizes of
1k and 10k insights, and the cold-process wall time of `mnemon --version` and `mnemon remember` against a
`python -c pass` baseline measured in the same run.

    python benchmarks/write_speed.py            # prints a Markdown table for benchmarks/RESULTS.md
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # the benchmarks' one synthetic generator (same directory)

# Zipf-distributed words from synth.py's 3,000-word vocabulary (a few common words, a long tail, like prose),
# 8-22 words a memory, 0-2 entities from a pool of 400 names.
VOCAB = synth.vocabulary(random.Random(7))
VOCAB_W = synth.zipf_weights(len(VOCAB), 1.0)
NAMES = [f"Service{n}" for n in range(400)]
NAMES_W = [1 / (r + 1) for r in range(len(NAMES))]


def sentence(rng: random.Random, i: int) -> tuple[str, list[str]]:
    words = rng.choices(VOCAB, weights=VOCAB_W, k=rng.randint(8, 22))
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), "because")
    ents = sorted(set(rng.choices(NAMES, weights=NAMES_W, k=rng.randint(0, 2))))
    return f"{' '.join(words)} {' '.join(ents)} #{i}", ents


def fill(mem, n: int, rng: random.Random, start: int = 0) -> None:
    for i in range(start, start + n):
        text, ents = sentence(rng, i)
        mem.remember(text, source=rng.choice(["user", "agent", "ci"]), importance=rng.randint(1, 5), entities=ents)


def throughput(size: int, measured: int = 500) -> float:
    from mnemon_core import Memory

    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as d:
        mem = Memory(data_dir=d, embedder=None)
        mem.settings.max_insights = 0  # a 10k store needs the cap raised; pruning is measured apart
        fill(mem, size, rng)
        t0 = time.perf_counter()
        fill(mem, measured, rng, start=size)
        dt = time.perf_counter() - t0
        mem.close()
    return measured / dt


def cold(args: list[str], env: dict[str, str], runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(args, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MNEMON_EMBEDDER="none")
    with tempfile.TemporaryDirectory() as d:
        env["MNEMON_DATA_DIR"] = d
        py = cold([sys.executable, "-c", "pass"], env)
        version = cold([sys.executable, "-m", "mnemon_core", "--version"], env)
        subprocess.run([sys.executable, "-m", "mnemon_core", "remember", "warm up"], env=env, check=True,
                       capture_output=True)
        counter = iter(range(10**6))
        remember_times = []
        for _ in range(15):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "mnemon_core", "remember", f"cold note {next(counter)}"], env=env,
                           check=True, capture_output=True)
            remember_times.append(time.perf_counter() - t0)
        remember = statistics.median(remember_times) * 1000
    rows = [(n, throughput(n)) for n in (1_000, 10_000)]
    print("| measure | value |")
    print("| --- | --- |")
    for n, r in rows:
        print(f"| remember/s in-process, store of {n:,} (4 graphs, no vectors) | {r:,.0f} |")
    print(f"| `python -c pass` (baseline, median of 15) | {py:.1f} ms |")
    print(f"| `mnemon --version` | {version:.1f} ms (CLI overhead {version - py:.1f} ms) |")
    print(f"| `mnemon remember` (MNEMON_EMBEDDER=none) | {remember:.1f} ms (overhead {remember - py:.1f} ms) |")


if __name__ == "__main__":
    main()
