"""Recall speed: in-process `Memory.recall` p50/p95 at 1k, 10k and 100k insights, next to a plain numpy
brute-force cosine top-20 over the same vectors in the same process.

Synthetic stores (built once, cached under the temp dir): Zipf-distributed words from a 3,000-word vocabulary,
0-2 entities from a Zipf pool of 400 names, one insight every 30 minutes from two sources, and edges shaped like
the write pipeline's: temporal backbone (same source, weight 1) and proximity (the 10 previous within 24 h,
weight 1/(1+h)), entity (the 5 previous insights naming each entity, weight 1), semantic (30 % of insights get
1-3 links at 0.80-0.95) and causal (15 % get one directed link from one of the 10 previous, weight 0.15-0.6);
all but causal both ways, as remember writes them. Vectors: 384-d random unit vectors (float32); each query's
vector is a noisy copy of one insight's vector (calibrated cosine ≈ 0.6 with it), so the vector signal has real
work to do.

    python benchmarks/recall_speed.py                 # 1k, 10k, 100k; prints the Markdown for RESULTS.md
    python benchmarks/recall_speed.py --sizes 1000 --queries 100

Both recipes (`hybrid`, the default, and `spec`) are timed in the same process on the same queries, alternating
query by query, so their ratio is not moved by the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # the benchmarks' one synthetic-store generator (same directory)
from synth import (  # noqa: F401
    CUES,
    DIM,
    MODEL,
    PresetEmbedder,
    pct,
    queries,
    vocabulary,
    zipf_weights,
)

LAYOUT = 4  # bump when the generator changes, so cached stores are rebuilt (4: synth.py's build)
CACHE = Path(tempfile.gettempdir()) / "mnemon-bench-recall"


def build(path: Path, n: int, seed: int = 7) -> None:
    """synth.py's store with its default options (this benchmark's original layout): one transaction."""
    info = synth.build(path, n, synth.Options(seed=seed))
    path.with_suffix(".json").write_text(json.dumps({"n": n, "layout": LAYOUT, **info}))


def store_for(n: int) -> Path:
    path = CACHE / f"recall-{n}-v{LAYOUT}" / "data" / "default" / "mnemon.db"
    if not path.exists() or not path.with_suffix(".json").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        for p in path.parent.glob("mnemon.db*"):
            p.unlink()
        t = time.perf_counter()
        build(path, n)
        print(f"built {n} insights in {time.perf_counter() - t:.0f}s: {path}", file=sys.stderr)
    synth.upgrade(path)
    return path


def brute_top20(mat: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The baseline: plain numpy brute-force cosine top-20 over the same unit-vector matrix."""
    sims = mat @ q
    top = np.argpartition(sims, -20)[-20:]
    return top[np.argsort(-sims[top])]


RECIPES = ("hybrid", "spec")


def timed(mem, texts: list[str], recipe: str | None = None) -> list[float]:
    """Wall-clock ms per query."""
    out = []
    for text in texts:
        t = time.perf_counter()
        mem.recall(text, recipe=recipe)
        out.append((time.perf_counter() - t) * 1000)
    return out


def timed_recipes(mem, texts: list[str], emb: PresetEmbedder) -> dict[str, dict[str, list[float]]]:
    """Per recipe: wall and CPU ms per query, the recipes alternating on each query (in turns, so neither
    always runs first); and the numpy baseline right after each query, under the same machine load."""
    out: dict[str, dict[str, list[float]]] = {r: {"wall": [], "cpu": []} for r in (*RECIPES, "numpy")}
    mat = mem.store.vector_matrix(MODEL, DIM)[1]
    for i, text in enumerate(texts):
        for recipe in RECIPES if i % 2 == 0 else RECIPES[::-1]:
            c = time.process_time()
            t = time.perf_counter()
            mem.recall(text, recipe=recipe)
            out[recipe]["wall"].append((time.perf_counter() - t) * 1000)
            out[recipe]["cpu"].append((time.process_time() - c) * 1000)
        t = time.perf_counter()
        brute_top20(mat, emb.preset[text])
        out["numpy"]["wall"].append((time.perf_counter() - t) * 1000)
    return out


def measure(n: int, count: int, warmup: int) -> dict[str, float]:
    from mnemon_core import Memory
    from mnemon_core.graph import graph_view

    path = store_for(n)
    data_dir = path.parent.parent.parent
    emb = PresetEmbedder()
    qs = queries(n, 2 * count + warmup + 1, seed=n)
    with Memory(data_dir=data_dir, store="default", embedder=emb, readonly=True) as probe:
        _, mat = probe.store.vector_matrix(MODEL, DIM)
        rng = np.random.default_rng(n)
        for text, target in qs:  # a query vector close to one insight: cos ≈ 0.6
            v = mat[target] + rng.standard_normal(DIM) * (1.33 / np.sqrt(DIM))
            emb.preset[text] = (v / np.linalg.norm(v)).astype(np.float32)  # float32, as an embedder returns
    texts = [t for t, _ in qs]
    first_q, warm_qs, lazy_qs, pre_qs = texts[0], texts[1 : warmup + 1], texts[warmup + 1 : warmup + 1 + count], texts[
        warmup + 1 + count :
    ]

    # Long-lived processes, memo filled lazily by the queries themselves: one Memory (own connection, own memo)
    # per recipe, the two asked the same queries in turns.
    mems = {r: Memory(data_dir=data_dir, store="default", embedder=emb) for r in RECIPES}
    first: dict[str, float] = {}
    lazy: dict[str, list[float]] = {r: [] for r in RECIPES}
    for recipe, m in mems.items():
        t = time.perf_counter()
        m.recall(first_q, recipe=recipe)  # the first query of a process: vector matrix and memo start empty
        first[recipe] = (time.perf_counter() - t) * 1000
    for i, text in enumerate(warm_qs + lazy_qs):
        for recipe in RECIPES if i % 2 == 0 else RECIPES[::-1]:
            t = time.perf_counter()
            mems[recipe].recall(text, recipe=recipe)
            if i >= len(warm_qs):
                lazy[recipe].append((time.perf_counter() - t) * 1000)
    mems.pop(RECIPES[1]).close()
    mem = mems.pop(RECIPES[0])
    # The same process after preloading the memo for every insight (what a server can do at start).
    t = time.perf_counter()
    graph_view(mem.store).preload()
    preload_s = time.perf_counter() - t
    for recipe in RECIPES:  # postings of new query words still load on first use
        timed(mem, pre_qs[: max(1, count // 10)], recipe)
    pre = timed_recipes(mem, pre_qs, emb)
    out: dict[str, float] = {"n": n, "preload_s": preload_s, "brute_p50": pct(pre["numpy"]["wall"], 50),
                             "brute_p95": pct(pre["numpy"]["wall"], 95)}
    for recipe in RECIPES:
        r = mem.recall(pre_qs[-1], verbose=True, recipe=recipe)
        out.update({f"{recipe}_p50": pct(pre[recipe]["wall"], 50), f"{recipe}_p95": pct(pre[recipe]["wall"], 95),
                    f"{recipe}_cpu_p50": pct(pre[recipe]["cpu"], 50), f"{recipe}_traversed": r.meta.traversed,
                    f"{recipe}_anchors": r.meta.anchor_count, f"{recipe}_first": first[recipe],
                    f"{recipe}_lazy_p50": pct(lazy[recipe], 50), f"{recipe}_lazy_p95": pct(lazy[recipe], 95)})
    mem.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=100)
    a = ap.parse_args()
    load = [os.getloadavg()[0]]
    rows = []
    for size in a.sizes.split(","):
        rows.append(measure(int(size), a.queries, a.warmup))
        load.append(os.getloadavg()[0])
    print(f"load average (1 min) at start and after each size: {', '.join(f'{x:.1f}' for x in load)}")
    print(
        "| insights | recipe | recall p50 (warm) | recall p95 (warm) | CPU p50 | CPU p50 / spec's | numpy top-20 p50 "
        "| p50 / p95 lazy memo | first query | preload | anchors | traversed |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        for recipe in RECIPES:
            lazy = (f"{r[recipe + '_lazy_p50']:.1f} / {r[recipe + '_lazy_p95']:.1f} ms | {r[recipe + '_first']:.0f} ms "
                    f"| {r['preload_s']:.1f} s" if recipe == RECIPES[0] else
                    f"{r[recipe + '_lazy_p50']:.1f} / {r[recipe + '_lazy_p95']:.1f} ms | {r[recipe + '_first']:.0f} ms |")
            print(
                f"| {r['n']:,} | {recipe} | {r[recipe + '_p50']:.1f} ms | {r[recipe + '_p95']:.1f} ms "
                f"| {r[recipe + '_cpu_p50']:.1f} ms | {r[recipe + '_cpu_p50'] / r['spec_cpu_p50']:.2f} "
                f"| {r['brute_p50']:.2f} ms | {lazy} | {r[recipe + '_anchors']} | {r[recipe + '_traversed']:,} |"
            )


if __name__ == "__main__":
    os.environ.setdefault("MNEMON_MAX_INSIGHTS", "0")
    main()
