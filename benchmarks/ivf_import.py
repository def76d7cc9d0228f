"""The import's neighbour search at scale (issue 23): the exact product (every batch × every stored vector) against
the coarse quantizer (`mnemon_core/write/ivf.py`), on `scale.py`'s synthetic 384-d vectors.

    # insights per CPU s of `Memory.import_draft` (scale.build_by_import, a fresh store each), exact and IVF
    # alternated in one process, plus the CPU spent inside BatchCosines:
    OPENBLAS_NUM_THREADS=1 python benchmarks/ivf_import.py import --sizes 100000,300000 --rounds 1
    OPENBLAS_NUM_THREADS=1 python benchmarks/ivf_import.py import --sizes 1000000 --modes ivf

    # recall of the approximate search: the store's vectors and, as queries, perturbed copies of some of them
    # (cosine with their original drawn uniformly in [floor, 1]: the synthetic store itself has no pair that
    # close), the share of the exact product's rows ≥ floor (and of its top 5) that the lists find, and the
    # CPU per 500-query batch both ways:
    OPENBLAS_NUM_THREADS=1 python benchmarks/ivf_import.py recall --sizes 100000,300000
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale
import synth

from mnemon_core.write import importer, ivf, similarity
from mnemon_core.write.constants import IVF_NPROBE, SEMANTIC_AUTO_LINK

EXACT = 1 << 62  # an ImportQuantizer min_rows no store reaches: the exact product throughout


def _timed_batches() -> dict[str, float]:
    """Patch BatchCosines.__init__ to add its CPU seconds to the returned dict (key "cpu")."""
    spent = {"cpu": 0.0, "batches": 0}
    orig = similarity.BatchCosines.__init__

    @functools.wraps(orig)
    def init(self: Any, *a: Any, **k: Any) -> None:
        c = time.process_time()
        orig(self, *a, **k)
        spent["cpu"] += time.process_time() - c
        spent["batches"] += 1

    similarity.BatchCosines.__init__ = init  # type: ignore[method-assign]
    spent["_orig"] = orig  # type: ignore[assignment]
    return spent


def import_once(n: int, mode: str) -> dict[str, Any]:
    """One fresh store of n synthetic insights through `Memory.import_draft`, the quantizer on or off."""
    q = ivf.ImportQuantizer() if mode == "ivf" else ivf.ImportQuantizer(min_rows=EXACT)
    orig_import = importer.import_draft
    importer.import_draft = functools.partial(orig_import, quantizer=q)  # type: ignore[assignment]
    spent = _timed_batches()
    d = Path(tempfile.mkdtemp(prefix=f"ivf-import-{mode}-{n}-"))
    try:
        info = scale.build_by_import(n, d)
    finally:
        importer.import_draft = orig_import  # type: ignore[assignment]
        similarity.BatchCosines.__init__ = spent.pop("_orig")  # type: ignore[method-assign,assignment]
        shutil.rmtree(d, ignore_errors=True)
    return {"n": n, "mode": mode, "cpu_s": info["build_cpu_s"], "wall_s": info["build_s"],
            "per_cpu_s": info["imported"] / info["build_cpu_s"], "imported": info["imported"],
            "cosines_cpu_s": spent["cpu"], "trainings": q.builds}


def _queries(mat: np.ndarray, count: int, floor: float, rng: np.random.Generator) -> np.ndarray:
    """Perturbed copies of `count` random rows, each at a cosine drawn uniformly in [floor, 1] from its row."""
    src = rng.choice(mat.shape[0], size=count, replace=False)
    base = mat[src]
    cos = rng.uniform(floor, 1.0, count).astype(np.float32)
    g = rng.standard_normal(base.shape).astype(np.float32)
    g -= (g * base).sum(1, keepdims=True) * base
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    q = cos[:, None] * base + np.sqrt(1.0 - cos**2)[:, None] * g
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def recall(n: int, nprobes: list[int], count: int = 2000, batch: int = 500) -> list[dict[str, Any]]:
    rng = np.random.default_rng(n)
    mat = synth.vectors(n, scale.OPTS)
    ids = [str(i) for i in range(n)]
    floor = SEMANTIC_AUTO_LINK  # the import's floor; the synthetic embedder's calibration is the identity
    least = floor - 1e-4
    q = _queries(mat, count, floor, rng)
    c0 = time.process_time()
    exact: set[tuple[int, int]] = set()
    top5: set[tuple[int, int]] = set()
    hard: set[tuple[int, int]] = set()  # the pairs nearest the floor, under 0.85: the lists miss these first
    for lo in range(0, count, batch):
        raw = mat @ q[lo : lo + batch].T
        r, c = np.nonzero(raw >= least)
        exact |= set(zip((c + lo).tolist(), r.tolist()))
        h = raw[r, c] < 0.85
        hard |= set(zip((c[h] + lo).tolist(), r[h].tolist()))
        for j in range(raw.shape[1]):
            col = raw[:, j]
            best = np.flatnonzero(col >= least)
            best = best[np.argsort(-col[best], kind="stable")[:5]]
            top5 |= {(lo + j, int(b)) for b in best}
    exact_cpu = (time.process_time() - c0) / (count / batch)
    c0 = time.process_time()
    idx = ivf.CoarseIndex("synth", ids, mat)
    build_cpu = time.process_time() - c0
    out = []
    for npb in nprobes:
        c0 = time.process_time()
        got: set[tuple[int, int]] = set()
        for lo in range(0, count, batch):
            qq, rr, _ = idx.search(q[lo : lo + batch], least, npb)
            got |= set(zip((qq + lo).tolist(), rr.tolist()))
        cpu = (time.process_time() - c0) / (count / batch)
        row = {"n": n, "lists": idx.lists, "nprobe": npb, "pairs": len(exact), "recall": len(got & exact) / len(exact),
               "recall_top5": len(got & top5) / len(top5), "extra": len(got - exact),
               "hard": len(hard), "recall_hard": len(got & hard) / max(1, len(hard)),
               "ivf_batch_ms": 1000 * cpu, "exact_batch_ms": 1000 * exact_cpu, "build_cpu_s": build_cpu}
        print(json.dumps(row), file=sys.stderr, flush=True)
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["import", "recall"])
    ap.add_argument("--sizes", default="100000,300000")
    ap.add_argument("--modes", default="exact,ivf", help="import: the order within a round (alternated)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--nprobe", default=f"4,8,{IVF_NPROBE},32", help="recall: nprobe values")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "mnemon-ivf-import.json"))
    a = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for s in a.sizes.split(","):
        n = int(s)
        if a.what == "recall":
            rows += recall(n, [int(x) for x in a.nprobe.split(",")])
            continue
        modes = a.modes.split(",")
        for r in range(a.rounds):
            for m in modes if r % 2 == 0 else modes[::-1]:
                row = import_once(n, m) | {"round": r}
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
        Path(a.out).write_text(json.dumps(rows, indent=1))
    Path(a.out).write_text(json.dumps(rows, indent=1))
    if a.what == "import":
        print("| insights | mode | CPU s | insights per CPU s | of which BatchCosines CPU s | trainings |")
        for r in rows:
            print(f"| {r['n']:,} | {r['mode']} | {r['cpu_s']:.0f} | {r['per_cpu_s']:,.0f} | {r['cosines_cpu_s']:.1f} "
                  f"| {r['trainings']} |")
    else:
        print("| insights | lists | nprobe | recall ≥ floor | of the top 5 | of those < 0.85 | CPU per 500-query batch, "
              "exact / IVF |")
        for r in rows:
            print(f"| {r['n']:,} | {r['lists']} | {r['nprobe']} | {r['recall']:.4f} | {r['recall_top5']:.4f} "
                  f"| {r['recall_hard']:.4f} ({r['hard']}) "
                  f"| {r['exact_batch_ms']:.0f} / {r['ivf_batch_ms']:.0f} ms |")


if __name__ == "__main__":
    import os

    os.environ.setdefault("MNEMON_MAX_INSIGHTS", "0")
    main()
