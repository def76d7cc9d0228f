"""Speed at scale: synthetic stores of 1k, 10k, 100k and 1M insights (`synth.py`: 12-36 words, 0-2 entities,
remember-shaped edges, clustered 384-d vectors from a fixed seed), built through the store's batched write
calls. Per size: build time, DB size, in-process warm `Memory.recall` p50/p95 (the query vector is preset, so
no embedding is timed) beside a plain numpy brute-force top-20 over the same matrix in the same process, where
recall's time goes (vector scan, keyword/entity postings, beam search, rerank), remember p50 (on a copy), peak
RSS of a fresh recall process against the raw vector bytes, and the cold `mnemon recall` process time.

    python benchmarks/scale.py --sizes 1000,10000,100000,1000000     # prints the Markdown rows
    python benchmarks/scale.py --sizes 10000 --queries 50
    python benchmarks/scale.py --plot results.json                   # the latency plot from saved rows
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth

ROOT = synth.ROOT
OPTS = synth.Options(seed=7, words=(12, 36), topics=1000, batch=5000)
RESULTS = ROOT / "benchmarks" / "results"


def data_dir(n: int) -> Path:
    return synth.store_for(n, OPTS, name="scale", progress=True).parent.parent.parent


def preset(emb: synth.PresetEmbedder, n: int, count: int, seed: int) -> list[str]:
    """Query texts whose vectors are noisy copies of one insight's vector each."""
    qs = synth.queries(n, count, seed=seed, build_seed=OPTS.seed)
    rng = np.random.default_rng(seed)
    for text, target in qs:
        emb.preset[text] = synth.query_vector(synth.vectors(n, OPTS, target, target + 1)[0], rng)
    return [t for t, _ in qs]


class Stages:
    """Wall time spent inside named functions (patched onto their modules for the run)."""

    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = defaultdict(list)
        self._cur: dict[str, float] = defaultdict(float)
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        fn = getattr(owner, attr)

        def timed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self._cur[name] += (time.perf_counter() - t) * 1000

        setattr(owner, attr, timed)
        self._undo.append(lambda: setattr(owner, attr, fn))

    def end_query(self) -> None:
        for k, v in self._cur.items():
            self.ms[k].append(v)
        self._cur.clear()

    def restore(self) -> None:
        for u in reversed(self._undo):
            u()


def brute_top20(mat: np.ndarray, q: np.ndarray) -> np.ndarray:
    sims = mat @ q
    top = np.argpartition(sims, -20)[-20:]
    return top[np.argsort(-sims[top])]


def measure(n: int, count: int, warmup: int, preload: bool) -> dict[str, Any]:
    from mnemon_core import Memory
    from mnemon_core.recall import pipeline
    from mnemon_core.recall.graph import GraphView, graph_view
    from mnemon_core.store.sqlite import SQLiteStore

    d = data_dir(n)
    db = d / "data" / "default" / "mnemon.db"
    info = synth.build_info(db)
    emb = synth.PresetEmbedder()
    texts = preset(emb, n, warmup + 2 * count, seed=n)
    mem = Memory(data_dir=d, store="default", embedder=emb)
    t = time.perf_counter()
    mem.recall(texts[0])
    first = (time.perf_counter() - t) * 1000
    for q in texts[1:warmup]:
        mem.recall(q)
    lazy = []
    for q in texts[warmup : warmup + count]:  # the memo still fills as these queries touch new nodes
        t = time.perf_counter()
        mem.recall(q)
        lazy.append((time.perf_counter() - t) * 1000)
    preload_s = None
    if preload:  # what a long-lived server can do at start: the whole graph memo in memory
        t = time.perf_counter()
        graph_view(mem.store).preload()
        preload_s = time.perf_counter() - t
        for q in texts[1:warmup]:  # postings of these queries' words load on first use
            mem.recall(q)
    st = Stages()
    st.wrap(SQLiteStore, "vector_matrix", "vector matrix (refresh + snapshot)")
    st.wrap(pipeline, "_signals", "anchors (all four signals)")
    st.wrap(pipeline, "vector_ranking", "vector top-k selection")
    st.wrap(GraphView, "postings", "keyword/entity postings")
    st.wrap(pipeline, "_shares", "keyword/entity shares")
    st.wrap(pipeline, "_top", "keyword/entity top-k")
    st.wrap(pipeline, "beam_search_arrays", "beam search")
    st.wrap(pipeline, "rerank_arrays", "rerank")
    st.wrap(pipeline, "top_arrays", "final top-k")
    _, mat = mem.store.vector_matrix(synth.MODEL, synth.DIM)
    lat, cpu, brute = [], [], []
    for q in texts[warmup + count :]:
        c, t = time.process_time(), time.perf_counter()
        mem.recall(q)
        lat.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        st.end_query()
        t = time.perf_counter()
        brute_top20(mat, emb.preset[q])
        brute.append((time.perf_counter() - t) * 1000)
    st.restore()
    mem.close()
    stages = {k: synth.pct(v, 50) for k, v in st.ms.items()}
    return {
        "n": n, "build_s": info["build_s"], "build_rss_mb": info.get("peak_rss_mb"),
        "db_mb": sum(p.stat().st_size for p in db.parent.glob("mnemon.*") if p.suffix != ".json") / 1e6,
        "first_ms": first, "p50": synth.pct(lat, 50), "p95": synth.pct(lat, 95), "cpu_p50": synth.pct(cpu, 50),
        "brute_p50": synth.pct(brute, 50), "brute_p95": synth.pct(brute, 95), "stages_p50": stages,
        "queries": count, "lazy_p50": synth.pct(lazy, 50), "lazy_p95": synth.pct(lazy, 95),
        "preload_s": preload_s,
    }


def remember_p50(n: int, count: int) -> float:
    """remember p50 (ms) on a scratch copy of the store (the cached one stays as built)."""
    from mnemon_core import Memory

    src = data_dir(n)
    with tempfile.TemporaryDirectory(dir=synth.CACHE) as tmp:
        dst = Path(tmp) / "copy"
        shutil.copytree(src, dst)
        emb = synth.PresetEmbedder()
        mem = Memory(data_dir=dst, store="default", embedder=emb)
        mem.remember("warm up the vector matrix and the write path ProjKalo", category="fact")
        texts = [f"{t} note {i}" for i, (t, _) in enumerate(synth.queries(n, count, seed=n + 1))]
        out = []
        for i, text in enumerate(texts):
            t = time.perf_counter()
            mem.remember(text, category="fact", source="user" if i % 2 else "agent")
            out.append((time.perf_counter() - t) * 1000)
        mem.close()
    return synth.pct(out, 50)


_RSS_CHILD = """
import json, resource, sys, time
sys.path.insert(0, {bench!r})
import numpy as np
import synth, scale
from mnemon_core import Memory
n = {n}
emb = synth.PresetEmbedder()
texts = scale.preset(emb, n, {count}, seed=n + 2)
t = time.perf_counter()
mem = Memory(data_dir={d!r}, store="default", embedder=emb)
mem.recall(texts[0])
first = time.perf_counter() - t
for q in texts[1:]:
    mem.recall(q)
print(json.dumps({{"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "first_s": first}}))
"""


def fresh_process(n: int, count: int = 20) -> dict[str, float]:
    """Peak RSS of a fresh process that runs `count` recalls with preset vectors (and its first query's time)."""
    d = data_dir(n)
    code = _RSS_CHILD.format(bench=str(Path(__file__).parent), n=n, count=count, d=str(d))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def cold_cli(n: int, runs: int = 5) -> float:
    """Median wall seconds of `python -m mnemon_core recall <query>` (embedder none: a cold process has no
    preset vectors, and the query's embedding is reported apart)."""
    d = data_dir(n)
    env = {**os.environ, "MNEMON_DATA_DIR": str(d), "MNEMON_EMBEDDER": "none", "PYTHONPATH": str(ROOT)}
    out = []
    for text, _ in synth.queries(n, runs, seed=n + 3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mnemon_core", "recall", text], env=env, check=True,
                       capture_output=True)
        out.append(time.perf_counter() - t)
    return synth.pct(out, 50)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(ns, [r["p50"] for r in rows], "o-", label="recall p50 (warm, in-process)")
    ax.plot(ns, [r["p95"] for r in rows], "o--", label="recall p95")
    ax.plot(ns, [r["brute_p50"] for r in rows], "s-", label="numpy brute-force top-20 p50")
    if all("remember_p50" in r for r in rows):
        ax.plot(ns, [r["remember_p50"] for r in rows], "^-", label="remember p50")
    ax.plot([1e4, 1e6], [5, 50], "k*", markersize=12, label="targets (5 ms @ 10k, 50 ms @ 1M)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("insights in the store")
    ax.set_ylabel("ms")
    ax.set_title("mnemon latency against store size (SQLite, 384-d vectors)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--preload-max", type=int, default=100_000, help="preload the graph memo up to this size")
    ap.add_argument("--remember", type=int, default=30, help="remember calls per size (0: skip)")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "mnemon-scale.json"))
    ap.add_argument("--plot", metavar="JSON", help="only draw the plot from saved rows")
    a = ap.parse_args()
    if a.plot:
        plot(json.loads(Path(a.plot).read_text()), RESULTS / "scale_latency.png")
        return
    saved = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else []
    rows = {r["n"]: r for r in saved}
    for s in a.sizes.split(","):
        n = int(s)
        r = measure(n, a.queries, a.warmup, preload=n <= a.preload_max)
        r.update(fresh_process(n))
        r["vec_mb"] = n * synth.DIM * 4 / 1e6
        if a.remember:
            r["remember_p50"] = remember_p50(n, a.remember)
        if n == 10_000:
            r["cold_cli_s"] = cold_cli(n)
        rows[n] = r
        print(json.dumps(r), file=sys.stderr, flush=True)
        Path(a.out).write_text(json.dumps(sorted(rows.values(), key=lambda x: x["n"]), indent=1))
    for r in sorted(rows.values(), key=lambda x: x["n"]):
        print(
            f"| {r['n']:,} | {r['build_s']:.0f} s | {r['db_mb']:,.0f} MB | {r['p50']:.1f} ms | {r['p95']:.1f} ms "
            f"| {r['brute_p50']:.2f} ms | {r.get('remember_p50', float('nan')):.1f} ms "
            f"| {r['rss_mb']:,.0f} MB / {r['vec_mb']:,.0f} MB |"
        )


if __name__ == "__main__":
    os.environ.setdefault("MNEMON_MAX_INSIGHTS", "0")
    main()
