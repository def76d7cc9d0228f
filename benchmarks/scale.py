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

from mnemon_core.graph import fold, index_file
from mnemon_core.store.base import ANN_MIN_ROWS

ROOT = synth.ROOT
OPTS = synth.Options(seed=7, words=(12, 36), topics=1000, batch=5000)
RESULTS = ROOT / "benchmarks" / "results"


class SynthEmbedder(synth.PresetEmbedder):
    """The store's vectors for the import: a draft insight's text → its row's synthetic vector (`synth.vectors`,
    drawn a chunk at a time as the import embeds batches in order); other texts as `PresetEmbedder`."""

    def __init__(self, n: int, rows: dict[str, int]) -> None:
        super().__init__()
        self._n, self._rows = n, rows
        self._chunk: tuple[int, np.ndarray] | None = None

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        out = []
        for t in texts:
            r = self._rows.get(t)
            if r is None:
                out.append(super()._embed_batch([t], query=query)[0])
                continue
            c = r // synth.VEC_CHUNK
            if self._chunk is None or self._chunk[0] != c:
                lo = c * synth.VEC_CHUNK
                self._chunk = (c, synth.vectors(self._n, OPTS, lo, min(self._n, lo + synth.VEC_CHUNK)))
            out.append(self._chunk[1][r - c * synth.VEC_CHUNK])
        return np.stack(out)


def build_by_import(n: int, path: Path) -> dict[str, float]:
    """The store at `path` (a data dir) through `Memory.import_draft` of `synth`'s insights with their vectors:
    what `mnemon import` of such a draft gives a user (the importer's own graph builders, no synthetic edges)."""
    from mnemon_core import Memory

    items, rows = [], {}
    for r, _ in synth.rows(n, OPTS):
        items.append({"content": r.content, "category": r.category, "importance": r.importance,
                      "entities": r.entities, "created_at": r.created_at, "source": r.source})
        rows.setdefault(r.content, r.index)
    draft = {"schema_version": "1", "source": "synth", "insights": items, "edges": []}
    mem = Memory(data_dir=path, store="default", embedder=SynthEmbedder(n, rows))
    t, c = time.perf_counter(), time.process_time()
    res = mem.import_draft(draft, vectors="now")
    info = {"build_s": time.perf_counter() - t, "build_cpu_s": time.process_time() - c, "imported": res.imported}
    gx = index_file(mem.store)
    info["index_mb"] = gx.nbytes() / 1e6 if gx is not None else 0.0
    mem.close()
    return info


def data_dir(n: int) -> Path:
    """The cached store of n insights, built through `import` on first use."""
    d = synth.CACHE / f"scale-import-{n}-{OPTS.tag()}"
    db = d / "data" / "default" / "mnemon.db"
    meta = db.with_suffix(".json")
    if not meta.exists():
        if d.exists():
            shutil.rmtree(d)
        info = build_by_import(n, d)
        meta.write_text(json.dumps({"n": n, "options": OPTS._asdict(), **info}))
        print(f"imported {n:,} insights in {info['build_s']:.0f}s: {db}", file=sys.stderr)
    return d


def preset(emb: synth.PresetEmbedder, n: int, count: int, seed: int) -> list[str]:
    """Query texts whose vectors are noisy copies of one insight's vector each."""
    qs = synth.queries(n, count, seed=seed, build_seed=OPTS.seed)
    rng = np.random.default_rng(seed)
    for text, target in qs:
        emb.preset[text] = synth.query_vector(synth.vectors(n, OPTS, target, target + 1)[0], rng)
    return [t for t, _ in qs]


class Stages:
    """Time spent inside named functions (patched onto their modules for the run), by `clock` (wall time by
    default; `time.process_time` for CPU)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.ms: dict[str, list[float]] = defaultdict(list)
        self._cur: dict[str, float] = defaultdict(float)
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        fn = getattr(owner, attr)

        def timed(*a: Any, **k: Any) -> Any:
            t = self.clock()
            try:
                return fn(*a, **k)
            finally:
                self._cur[name] += (self.clock() - t) * 1000

        setattr(owner, attr, timed)
        self._undo.append(lambda: setattr(owner, attr, fn))

    def end_query(self) -> None:
        for k, v in self._cur.items():
            self.ms[k].append(v)
        self._cur.clear()

    def restore(self) -> None:
        for u in reversed(self._undo):
            u()


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM). Not ru_maxrss: on Linux it carries over fork + exec, so a
    child started by a big parent would report the parent's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def brute_top20(mat: np.ndarray, q: np.ndarray) -> np.ndarray:
    sims = mat @ q
    top = np.argpartition(sims, -20)[-20:]
    return top[np.argsort(-sims[top])]


def save_preset(n: int, count: int, seed: int) -> str:
    """Query texts and vectors in a file for a child process (drawing them there would put the generator's
    chunk of vectors into the child's peak RSS)."""
    emb = synth.PresetEmbedder()
    texts = preset(emb, n, count, seed)
    fd, path = tempfile.mkstemp(suffix=".npz", dir=synth.CACHE)
    os.close(fd)
    np.savez(path, texts=np.array(texts), vecs=np.stack([emb.preset[t] for t in texts]))
    return path


def load_preset(emb: synth.PresetEmbedder, path: str) -> list[str]:
    data = np.load(path)
    texts = [str(t) for t in data["texts"]]
    emb.preset.update(zip(texts, data["vecs"]))
    return texts


def exact_only(on: bool) -> None:
    """Hide the HNSW index from recall (the exact matrix scan at every size) or show it again."""
    from mnemon_core.store import base

    base.ANN_MIN_ROWS = 1 << 62 if on else ANN_MIN_ROWS


def measure(n: int, count: int, warmup: int, preload: bool) -> dict[str, Any]:
    from mnemon_core import Memory
    from mnemon_core.graph import GraphView, graph_view
    from mnemon_core.recall import pipeline
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
    st.wrap(pipeline, "_ann_signal", "vector signal via the HNSW index")
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
        "db_mb": sum(p.stat().st_size for p in db.parent.glob("mnemon.db*")) / 1e6,  # with -wal / -shm
        "first_ms": first, "p50": synth.pct(lat, 50), "p95": synth.pct(lat, 95), "cpu_p50": synth.pct(cpu, 50),
        "brute_p50": synth.pct(brute, 50), "brute_p95": synth.pct(brute, 95), "stages_p50": stages,
        "queries": count, "lazy_p50": synth.pct(lazy, 50), "lazy_p95": synth.pct(lazy, 95),
        "preload_s": preload_s,
    }


def no_index(mem: Any) -> Any:
    """`mem` reading everything from the store, as before the index file (the memo's own path)."""
    mem.store.graph_place = lambda: None  # before its first recall or write, which look for the file
    return mem


def remember_cmp(n: int, count: int, in_place: bool = False) -> dict[str, Any]:
    """remember CPU per call with the index file and without it: two scratch copies of the store, one Memory
    each, the calls alternated (the same texts). `in_place`: with the index file only, into the cached store
    itself (a copy of a 1M store costs more than the measurement; run last, it adds count + 1 insights). Below
    `fold.MIN_ROWS`: the store only."""
    from mnemon_core import Memory

    src = data_dir(n)
    out: dict[str, list[float]] = {"index": []} if in_place else {"index": [], "store": []}
    if n < fold.MIN_ROWS:
        out = {"store": []}
    with tempfile.TemporaryDirectory(dir=synth.CACHE) as tmp:
        mems = {}
        for k in out:
            dst = src if in_place else Path(tmp) / k
            if not in_place:
                shutil.copytree(src, dst)
            mems[k] = Memory(data_dir=dst, store="default", embedder=synth.PresetEmbedder())
        if "store" in mems:
            no_index(mems["store"])
        for m in mems.values():
            m.remember("warm up the vector matrix and the write path ProjKalo", category="fact")
        texts = [f"{t} note {i}" for i, (t, _) in enumerate(synth.queries(n, count, seed=n + 1))]
        for i, text in enumerate(texts):
            for k, m in mems.items():
                c = time.process_time()
                m.remember(text, category="fact", source="user" if i % 2 else "agent")
                out[k].append((time.process_time() - c) * 1000)
        for m in mems.values():
            m.close()
    return {k: {"cpu_p50": synth.pct(v, 50), "cpu_p95": synth.pct(v, 95)} for k, v in out.items()}


def measure_index(n: int, count: int, warmup: int) -> dict[str, Any]:
    """Warm recall CPU per query with the index file and without it (two Memory objects on the same store, the
    queries alternated), and whether the two give the same results (ids, order, scores, labels). Below
    `fold.MIN_ROWS` the store keeps no file: the memo from the store only."""
    from mnemon_core import Memory

    d = data_dir(n)
    emb = synth.PresetEmbedder()
    texts = preset(emb, n, warmup + count, seed=n)
    mems = {}
    if n >= fold.MIN_ROWS:
        mems["index"] = Memory(data_dir=d, store="default", embedder=emb)
        assert index_file(mems["index"].store) is not None, "no index file: the import should have written it"
    mems["store"] = no_index(Memory(data_dir=d, store="default", embedder=emb))
    for m in mems.values():
        for q in texts[:warmup]:
            m.recall(q)
    cpu: dict[str, list[float]] = {k: [] for k in mems}
    same = 0
    for q in texts[warmup:]:
        got = {}
        for k, m in mems.items():
            c = time.process_time()
            r = m.retrieve(q)
            cpu[k].append((time.process_time() - c) * 1000)
            got[k] = [(h.insight.id, h.score, h.via) for h in r.results]
        same += len(set(map(repr, got.values()))) == 1
    for m in mems.values():
        m.close()
    out: dict[str, Any] = {"n": n, "queries": count, "same": same}
    for k, v in cpu.items():
        out[k] = {"cpu_p50": synth.pct(v, 50), "cpu_p95": synth.pct(v, 95)}
    return out


def ann_vs_exact(n: int, count: int = 200, warmup: int = 100, ann_min: int = 50_000) -> dict[str, Any]:
    """Warm recall with the HNSW index serving the vector signal (`ANN_MIN_ROWS` lowered to `ann_min`, the file
    built first: `ann_measure`) against the exact scan, two Memory objects on one store, the queries alternated:
    CPU p50/p95 of each, and how many result lists are identical (ids and order) or overlap in their top 10."""
    from mnemon_core import Memory
    from mnemon_core.store import base

    d = data_dir(n)
    emb = synth.PresetEmbedder()
    texts = preset(emb, n, warmup + count, seed=n)
    mems = {"exact": Memory(data_dir=d, store="default", embedder=emb),
            "ann": Memory(data_dir=d, store="default", embedder=emb)}

    def run(k: str, q: str) -> tuple[float, list[str]]:
        base.ANN_MIN_ROWS = ann_min if k == "ann" else ANN_MIN_ROWS
        try:
            c = time.process_time()
            r = mems[k].retrieve(q)
            return (time.process_time() - c) * 1000, [h.insight.id for h in r.results]
        finally:
            base.ANN_MIN_ROWS = ANN_MIN_ROWS

    for q in texts[:warmup]:
        for k in mems:
            run(k, q)
    cpu: dict[str, list[float]] = {k: [] for k in mems}
    same, overlap = 0, []
    for q in texts[warmup:]:
        got = {}
        for k in mems:
            ms, got[k] = run(k, q)
            cpu[k].append(ms)
        same += got["exact"] == got["ann"]
        top = got["exact"][:10]
        overlap.append(len(set(top) & set(got["ann"][:10])) / max(1, len(top)))
    for m in mems.values():
        m.close()
    return {"n": n, "queries": count, "identical": same, "overlap_at_10": float(np.mean(overlap)),
            **{f"{k}_cpu_p50": synth.pct(v, 50) for k, v in cpu.items()},
            **{f"{k}_cpu_p95": synth.pct(v, 95) for k, v in cpu.items()}}


_FIRST_CHILD = """
import json, sys, time
sys.path.insert(0, {bench!r})
import synth, scale
from mnemon_core import Memory
emb = synth.PresetEmbedder()
texts = scale.load_preset(emb, {qfile!r})
t, c = time.perf_counter(), time.process_time()
mem = Memory(data_dir={d!r}, store="default", embedder=emb)
if not {index}:
    scale.no_index(mem)
mem.recall(texts[0])
print(json.dumps({{"first_s": time.perf_counter() - t, "first_cpu_s": time.process_time() - c,
                  "rss_mb": scale.peak_rss_mb()}}))
"""


def first_recall(n: int, index: bool, runs: int = 3) -> dict[str, float]:
    """A fresh process's first recall (store open, index mapped and checked or memo from the store, vectors
    loaded), median of `runs`."""
    d = data_dir(n)
    out = []
    for k in range(runs):
        qfile = save_preset(n, 1, seed=n + 10 + k)
        code = _FIRST_CHILD.format(bench=str(Path(__file__).parent), d=str(d), index=index, qfile=qfile)
        try:
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
        finally:
            os.unlink(qfile)
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return {k: synth.pct([o[k] for o in out], 50) for k in out[0]}


def remember_p50(n: int, count: int, in_place: bool = False) -> float:
    """remember p50 (ms) on a scratch copy of the store (the cached one stays as built), or with `in_place` on
    the store itself (a 12 GB copy costs more than the measurement; run last, it adds count + 1 insights)."""
    from mnemon_core import Memory

    src = data_dir(n)
    with tempfile.TemporaryDirectory(dir=synth.CACHE) as tmp:
        dst = src if in_place else Path(tmp) / "copy"
        if not in_place:
            shutil.copytree(src, dst)
        emb = synth.PresetEmbedder()
        mem = Memory(data_dir=dst, store="default", embedder=emb)
        mem.remember("warm up the vector matrix and the write path ProjKalo", category="fact")
        out = remember_each(mem, n, count)
        mem.close()
    return synth.pct(out, 50)


def remember_each(mem: Any, n: int, count: int, clock: Callable[[], float] = time.perf_counter,
                  after: Callable[[], None] = lambda: None) -> list[float]:
    """`count` remembers of new texts into the store of size n, each one's ms by `clock` (`after` runs after
    each)."""
    out = []
    for i, (text, _) in enumerate(synth.queries(n, count, seed=n + 1)):
        t = clock()
        mem.remember(f"{text} note {i}", category="fact", source="user" if i % 2 else "agent")
        out.append((clock() - t) * 1000)
        after()
    return out


_RSS_CHILD = """
import json, resource, sys, time
sys.path.insert(0, {bench!r})
import numpy as np
import synth, scale
from mnemon_core import Memory
from mnemon_core.store import base
if {exact}:
    base.ANN_MIN_ROWS = 1 << 62
n = {n}
emb = synth.PresetEmbedder()
texts = scale.load_preset(emb, {qfile!r})
t = time.perf_counter()
mem = Memory(data_dir={d!r}, store="default", embedder=emb)
mem.recall(texts[0])
first = time.perf_counter() - t
for q in texts[1:]:
    mem.recall(q)
print(json.dumps({{"rss_mb": scale.peak_rss_mb(), "first_s": first}}))
"""


def fresh_process(n: int, exact: bool, count: int = 20) -> dict[str, float]:
    """Peak RSS of a fresh process that runs `count` recalls with preset vectors (and its first query's time)."""
    d = data_dir(n)
    qfile = save_preset(n, count, seed=n + 2)
    code = _RSS_CHILD.format(bench=str(Path(__file__).parent), n=n, count=count, d=str(d), exact=exact, qfile=qfile)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.unlink(qfile)
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


_ANN_CHILD = """
import json, resource, sys, time
sys.path.insert(0, {bench!r})
import numpy as np
import synth, scale
from mnemon_core.store import ann
from mnemon_core.store.sqlite import SQLiteStore
n = {n}
emb = synth.PresetEmbedder()
texts = scale.load_preset(emb, {qfile!r})
store = SQLiteStore({db!r}, readonly=True)
idx = ann.AnnIndex(store.db, store.path, synth.MODEL, synth.DIM)
t = time.perf_counter()
idx.search(emb.preset[texts[0]], 20)
first = time.perf_counter() - t
lat, found = [], []
for q in texts:
    t = time.perf_counter()
    keys, cos = idx.search(emb.preset[q], 20)
    ids = idx.ids(keys)
    lat.append((time.perf_counter() - t) * 1000)
    found.append(ids)
print(json.dumps({{"rss_mb": scale.peak_rss_mb(), "first_ms": first * 1000,
                  "lat": lat, "found": found}}))
"""


def ann_measure(n: int, count: int = 200) -> dict[str, float]:
    """The HNSW index (store/ann.py) against the exact scan: build time, file size, top-20 search p50/p95 and
    peak RSS in a fresh process (memory-mapped file), recall@20 against the exact top-20 of the same vectors."""
    from mnemon_core.store import ann
    from mnemon_core.store.sqlite import SQLiteStore

    db = data_dir(n) / "data" / "default" / "mnemon.db"
    store = SQLiteStore(db, readonly=True)
    idx = ann.AnnIndex(store.db, db, synth.MODEL, synth.DIM)
    build_s = None
    if not idx.exists():
        t = time.perf_counter()
        idx.build(threads=1)  # a second thread only waits on a shared 2-core machine
        build_s = time.perf_counter() - t
        Path(str(idx.path) + ".build_s").write_text(f"{build_s}")
    else:
        build_s = float(Path(str(idx.path) + ".build_s").read_text())
    store.close()
    qfile = save_preset(n, count, seed=n + 4)
    code = _ANN_CHILD.format(bench=str(Path(__file__).parent), n=n, count=count, db=str(db), qfile=qfile)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.unlink(qfile)
    child = json.loads(out.stdout.strip().splitlines()[-1])
    emb = synth.PresetEmbedder()
    texts = preset(emb, n, count, seed=n + 4)
    hits, exact_ms = [], []
    store = SQLiteStore(db, readonly=True)
    ids, mat = store.vector_matrix(synth.MODEL, synth.DIM)  # the store's own rows (import-built ids are uuids)
    for q, found in zip(texts, child["found"]):
        t = time.perf_counter()
        top = brute_top20(mat, emb.preset[q])
        exact_ms.append((time.perf_counter() - t) * 1000)
        got = {i for i in found if i is not None}
        hits.append(len(got & {ids[r] for r in top.tolist()}) / 20)
    store.close()
    return {
        "ann_build_s": build_s, "ann_file_mb": idx.path.stat().st_size / 1e6, "ann_p50": synth.pct(child["lat"], 50),
        "ann_p95": synth.pct(child["lat"], 95), "ann_first_ms": child["first_ms"], "ann_rss_mb": child["rss_mb"],
        "ann_recall20": float(np.mean(hits)), "exact_p50": synth.pct(exact_ms, 50),
    }


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(ns, [r["p50"] for r in rows], "o-", color="C0", label="recall p50 (warm, in-process, exact scan)")
    ax.plot(ns, [r["p95"] for r in rows], "o--", color="C1", label="recall p95 (exact scan)")
    ann = [r for r in rows if "via_ann" in r]
    if ann:
        ax.plot([r["n"] for r in ann], [r["via_ann"]["p50"] for r in ann], "D", color="C0", markersize=9,
                label="recall p50 through the HNSW index")
        ax.plot([r["n"] for r in ann], [r["via_ann"]["p95"] for r in ann], "d", color="C1", markersize=9,
                label="recall p95 through the HNSW index")
    ax.plot(ns, [r["brute_p50"] for r in rows], "s-", label="numpy brute-force top-20 p50")
    hnsw = [r for r in rows if "ann_p50" in r]
    if hnsw:
        ax.plot([r["n"] for r in hnsw], [r["ann_p50"] for r in hnsw], "v:", label="HNSW top-20 search p50 (alone)")
    rem = [r for r in rows if "remember_p50" in r]
    if rem:
        ax.plot([r["n"] for r in rem], [r["remember_p50"] for r in rem], "^-", label="remember p50")
    ax.plot([1e4, 1e6], [5, 50], "k*", markersize=12, label="targets (5 ms @ 10k, 50 ms @ 1M)")
    _log_axes(fig, ax, path, "insights in the store", "mnemon latency against store size (SQLite, 384-d vectors)", 8)


def _log_axes(fig: Any, ax: Any, path: Path, xlabel: str, title: str, legend_size: int) -> None:
    """Both axes logarithmic, in ms against store size; the figure saved."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ms")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_index(rows: list[dict[str, Any]], path: Path) -> None:
    """Recall CPU p50 with the graph index file and without it, a fresh process's first recall, and remember
    p50, against store size (the `--index` rows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "index_cmp" in r]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, style, label in (("index", "o-", "recall CPU p50, graph index file"),
                              ("store", "s--", "recall CPU p50, memo from the store (before)")):
        has = [r for r in rows if key in r["index_cmp"]]
        ax.plot([r["n"] for r in has], [r["index_cmp"][key]["cpu_p50"] for r in has], style, label=label)
    for key, style, label in (("index", "D-", "first recall of a fresh process (CPU), index"),
                              ("store", "d--", "first recall of a fresh process (CPU), store")):
        has = [r for r in rows if key in r["first"]]
        ax.plot([r["n"] for r in has], [r["first"][key]["first_cpu_s"] * 1000 for r in has], style, label=label)
    for key, style, label in (("index", "^-", "remember CPU p50, index"), ("store", "v--", "remember CPU p50, store")):
        rem = [r for r in rows if key in r.get("remember_cmp", {})]
        ax.plot([r["n"] for r in rem], [r["remember_cmp"][key]["cpu_p50"] for r in rem], style, label=label)
    ax.plot([1e4, 1e5, 1e6], [5, 15, 50], "k*", markersize=12, label="recall targets (5 / 15 / 50 ms)")
    _log_axes(fig, ax, path, "insights in the store (built by import)",
              "mnemon with the graph index file (SQLite, 384-d vectors)", 7)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--preload-max", type=int, default=100_000, help="preload the graph memo up to this size")
    ap.add_argument("--ann-min", type=int, default=100_000, help="measure the HNSW index from this size")
    ap.add_argument("--ann-only", action="store_true", help="only the HNSW measurement (merged into --out)")
    ap.add_argument("--via-ann-only", action="store_true", help="only recall through the index (merged)")
    ap.add_argument("--rss-only", action="store_true", help="only the fresh-process peak RSS (merged)")
    ap.add_argument("--no-ann", action="store_true", help="skip the HNSW measurements")
    ap.add_argument("--remember-in-place", type=int, default=1_000_000, help="from this size remember runs on "
                    "the cached store itself, last")
    ap.add_argument("--remember", type=int, default=30, help="remember calls per size (0: skip)")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "mnemon-scale.json"))
    ap.add_argument("--plot", metavar="JSON", help="only draw the plot from saved rows")
    ap.add_argument("--index", action="store_true", help="recall with the graph index file against without it, "
                    "first recall of a fresh process both ways, remember p50 (merged into --out)")
    a = ap.parse_args()
    if a.plot:  # one or more saved JSON files, comma-separated
        merged = {r["n"]: r for f in a.plot.split(",") for r in json.loads(Path(f).read_text())}
        rows_ = sorted(merged.values(), key=lambda r: r["n"])
        if a.index:
            plot_index(rows_, RESULTS / "scale_index.png")
        else:
            plot(rows_, RESULTS / "scale_latency.png")
        return
    saved = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else []
    rows = {r["n"]: r for r in saved}
    for s in a.sizes.split(","):
        n = int(s)
        if a.index:
            row = rows.setdefault(n, {"n": n})
            data_dir(n)
            row["build"] = synth.build_info(data_dir(n) / "data" / "default" / "mnemon.db")
            row["index_cmp"] = measure_index(n, a.queries, a.warmup)  # below fold.MIN_ROWS: the store only
            row["first"] = {"store": first_recall(n, False)}
            if n >= fold.MIN_ROWS:
                row["first"]["index"] = first_recall(n, True)
            if a.remember:
                row["remember_cmp"] = remember_cmp(n, a.remember, in_place=n >= a.remember_in_place)
            print(json.dumps(row), file=sys.stderr, flush=True)
            Path(a.out).write_text(json.dumps(sorted(rows.values(), key=lambda x: x["n"]), indent=1))
            continue
        if a.rss_only:  # peak RSS of fresh processes only (exact scan; and through the index when it is used)
            row = rows.setdefault(n, {"n": n})
            row["rss_mb"] = fresh_process(n, exact=True)["rss_mb"]
            if n >= ANN_MIN_ROWS and "via_ann" in row:
                row["via_ann"].update(fresh_process(n, exact=False))
            Path(a.out).write_text(json.dumps(sorted(rows.values(), key=lambda x: x["n"]), indent=1))
            continue
        if a.via_ann_only:
            via = measure(n, a.queries, a.warmup, preload=False)
            via.update(fresh_process(n, exact=False))
            rows.setdefault(n, {"n": n})["via_ann"] = {
                k: via[k] for k in ("p50", "p95", "cpu_p50", "lazy_p50", "first_ms", "stages_p50", "rss_mb",
                                    "first_s", "brute_p50")}
            Path(a.out).write_text(json.dumps(sorted(rows.values(), key=lambda x: x["n"]), indent=1))
            continue
        if a.ann_only:
            rows.setdefault(n, {"n": n}).update(ann_measure(n))
            print(json.dumps(rows[n]), file=sys.stderr, flush=True)
            Path(a.out).write_text(json.dumps(sorted(rows.values(), key=lambda x: x["n"]), indent=1))
            continue
        exact_only(True)
        r = measure(n, a.queries, a.warmup, preload=n <= a.preload_max)
        r.update(fresh_process(n, exact=True))
        exact_only(False)
        r["vec_mb"] = n * synth.DIM * 4 / 1e6
        if a.remember and n < a.remember_in_place:
            r["remember_p50"] = remember_p50(n, a.remember)
        if n == 10_000:
            r["cold_cli_s"] = cold_cli(n)
        rows[n] = r
        Path(a.out).write_text(json.dumps(sorted(rows.values(), key=lambda x: x["n"]), indent=1))
        if n >= a.ann_min and not a.no_ann:
            r.update(ann_measure(n))
        if n >= ANN_MIN_ROWS and not a.no_ann:  # recall through the index (what the engine does at this size with usearch)
            via = measure(n, a.queries, a.warmup, preload=False)
            via.update(fresh_process(n, exact=False))
            r["via_ann"] = {k: via[k] for k in ("p50", "p95", "cpu_p50", "lazy_p50", "first_ms", "stages_p50",
                                                "rss_mb", "first_s", "brute_p50")}
        if a.remember and n >= a.remember_in_place:
            r["remember_p50"] = remember_p50(n, a.remember, in_place=True)
            r["remember_in_place"] = True
        rows[n] = r
        print(json.dumps(r), file=sys.stderr, flush=True)
        Path(a.out).write_text(json.dumps(sorted(rows.values(), key=lambda x: x["n"]), indent=1))
    for r in sorted(rows.values(), key=lambda x: x["n"]):
        if "p50" not in r:
            continue
        print(
            f"| {r['n']:,} | {r['build_s']:.0f} s | {r['db_mb']:,.0f} MB | {r['p50']:.1f} ms | {r['p95']:.1f} ms "
            f"| {r['brute_p50']:.2f} ms | {r.get('remember_p50', float('nan')):.1f} ms "
            f"| {r['rss_mb']:,.0f} MB / {r['vec_mb']:,.0f} MB |"
        )


if __name__ == "__main__":
    os.environ.setdefault("MNEMON_MAX_INSIGHTS", "0")
    main()
