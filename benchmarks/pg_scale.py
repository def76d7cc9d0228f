"""Postgres beside SQLite at scale: recall p50/p95 and remember p50 on the same synthetic store, each recalling
through its graph index file (`graph/index.py`; the Postgres client's is written first, from the database).

The store is `scale.py`'s (`synth.py` with its options: 12-36 words, 0-2 entities, remember-shaped edges,
clustered 384-d vectors), built as SQLite and copied into Postgres with `mnemon migrate` (so the copy is timed
too). Both are then queried in one long-lived process each (`Memory` with a preset query embedder, as scale.py
does), and 100 new memories are remembered into each: SQLite into a scratch copy of the file below 1M (in place
at 1M, where the copy costs more than the measurement), Postgres into the store; the new rows are soft-deleted
again afterwards.

    python benchmarks/pg_scale.py                          # 100k; a pgserver under /tmp (or --database-url)
    python benchmarks/pg_scale.py --sizes 100000,1000000   # 1M: builds take a long while (see RESULTS.md)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import scale  # noqa: E402
import synth  # noqa: E402

WORK = Path(tempfile.gettempdir()) / "mnemon-bench-pg"
REMEMBERS = 100
IN_PLACE = 1_000_000  # from this size SQLite's remembers go into the cached store itself (soft-deleted after)


def server_url(given: str | None) -> str:
    if given:
        return given
    import pgserver

    srv = pgserver.get_server(WORK / "pgdata", cleanup_mode="stop")  # its data kept between runs; stopped at exit
    return srv.get_uri()


def pg_store_for(url: str, n: int, sqlite_path: Path) -> tuple[str, float | None]:
    """The Postgres copy of the SQLite store (made once with `mnemon migrate`); seconds the copy took."""
    from mnemon_core.config import Settings
    from mnemon_core.migrate import migrate
    from mnemon_core.store.postgres import drop_store, list_stores

    name = f"bench-{n}-{scale.OPTS.tag()}"
    marker = WORK / f"{name}.done"
    if name in list_stores(url) and marker.exists():
        return name, None
    drop_store(url, name)
    settings = Settings.resolve(data_dir=WORK, store=name, embedder="none")
    t = time.perf_counter()
    out = migrate(f"sqlite:{sqlite_path}", url, settings)
    took = time.perf_counter() - t
    print(f"migrated {n}: {json.dumps(out)}", file=sys.stderr)
    marker.write_text(json.dumps(out))
    return name, took


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    t = time.perf_counter()
    r = fn(*args, **kwargs)
    return (time.perf_counter() - t) * 1000, r


def summary(xs: list[float]) -> dict[str, float]:
    return {"p50": synth.pct(xs, 50), "p95": synth.pct(xs, 95)}


def recall_both(mems: dict, qs: list[str], warmup: int) -> dict[str, dict[str, float]]:
    """Each query on every store in turn, so load from other jobs on the machine falls on all alike."""
    out: dict[str, dict[str, float]] = {b: {} for b in mems}
    for b, m in mems.items():
        out[b]["first"] = timed(m.recall, qs[0])[0]  # a fresh process: vectors and memo start empty
    for text in qs[1:warmup]:
        for m in mems.values():
            m.recall(text)
    times: dict[str, list[float]] = {b: [] for b in mems}
    for text in qs[warmup:]:
        for b, m in mems.items():
            times[b].append(timed(m.recall, text)[0])
    for b in mems:
        out[b].update(summary(times[b]))
    return out


def remember_both(mems: dict, n: int) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, list[str]]]:
    """REMEMBERS new memories into each store in turn, p50/p95 per kind: every other one names the store's
    commonest entity (one insight in five; its token's postings are what the write path's token-overlap pass
    reads), the rest a rare one."""
    times: dict[str, dict[str, list[float]]] = {b: {"rare": [], "common": []} for b in mems}
    ids: dict[str, list[str]] = {b: [] for b in mems}
    common = next(iter(mems.values())).store.top_entities(1)[0][0]
    for i in range(REMEMBERS):
        kind, ent = ("common", common) if i % 2 else ("rare", "ProjKalo")
        for b, m in mems.items():
            ms, r = timed(m.remember, f"benchmark note {i} from {b} about kavan lostra and {ent} at scale {n}",
                          source="bench", entities=[ent], entity_mode="provided")
            assert r.action == "added", r  # distinct texts per store: no exact-duplicate skip is timed
            times[b][kind].append(ms)
            ids[b].append(r.id)
    return {b: {k: summary(v) for k, v in t.items()} for b, t in times.items()}, ids


def nearest_times(store, qvecs: list[np.ndarray]) -> dict[str, float]:
    times = []
    for q in qvecs:
        t = time.perf_counter()
        store.nearest(synth.MODEL, q, 20)
        times.append((time.perf_counter() - t) * 1000)
    return summary(times)


def measure(url: str, n: int, count: int, warmup: int) -> dict:
    from mnemon_core import Memory
    from mnemon_core.graph import fold_index, index_file

    data_dir = scale.data_dir(n)
    sqlite_path = data_dir / "data" / "default" / "mnemon.db"
    name, copy_s = pg_store_for(url, n, sqlite_path)
    emb = synth.PresetEmbedder()
    qs = scale.preset(emb, n, warmup + count, seed=n)  # query vectors close to one insight each (cos ≈ 0.6)
    out: dict = {"n": n, "migrate_s": copy_s}

    # The Postgres client's graph index file (beside it, under its data dir): a migrated store has none until
    # the client's first write; here it is written from the database's two bulk reads and timed.
    shutil.rmtree(WORK / "client", ignore_errors=True)  # a file of an earlier run would not be written again
    pg = Memory(data_dir=WORK / "client", database_url=url, store=name, embedder=emb)
    out["pg_index_s"] = timed(fold_index, pg.store, force=True)[0] / 1000
    pg.close()
    sq = Memory(data_dir=data_dir, store="default", embedder=emb, readonly=True)
    pg = Memory(data_dir=WORK / "client", database_url=url, store=name, embedder=emb, readonly=True)
    out["index_file"] = {"sqlite": index_file(sq.store) is not None, "postgres": index_file(pg.store) is not None}
    res = recall_both({"sqlite": sq, "postgres": pg}, qs, warmup)
    out["sqlite"], out["postgres"] = res["sqlite"], res["postgres"]
    out["postgres_nearest"] = nearest_times(pg.store, [emb.preset[t] for t in qs[warmup:]])
    sq.close()
    pg.close()

    # remember: SQLite into a scratch copy of the file (in place from IN_PLACE); Postgres into the store
    scratch = WORK / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    if n < IN_PLACE:
        shutil.copytree(data_dir, scratch)
    sq = Memory(data_dir=data_dir if n >= IN_PLACE else scratch, store="default", embedder=emb)
    pg = Memory(data_dir=WORK / "client", database_url=url, store=name, embedder=emb)
    # SQLite's WAL + synchronous=NORMAL does not fsync at commit; Postgres does unless told otherwise.
    nosync = Memory(data_dir=WORK / "client", database_url=url + ("&" if "?" in url else "?")
                    + "options=-c%20synchronous_commit%3Doff",
                    store=name, embedder=emb)
    for m in (sq, pg):  # rows a killed earlier run left active (the runs soft-delete theirs at the end)
        left = [r.id for r in m.store.latest(source="bench", limit=10 * REMEMBERS)]
        if left:
            with m.store.transaction():
                m.store.soft_delete(left, "2026-01-01T00:00:00Z")
    rem, ids = remember_both({"sqlite": sq, "postgres": pg, "nosync": nosync}, n)
    out["sqlite"]["remember"], out["postgres"]["remember"] = rem["sqlite"], rem["postgres"]
    out["postgres_nosync_remember"] = rem["nosync"]
    for m, new in ((pg, ids["postgres"] + ids["nosync"]), (sq, ids["sqlite"])):
        with m.store.transaction():  # a later run adds its rows as soft-deleted ones beside the store's own
            m.store.soft_delete(new, "2026-01-01T00:00:00Z")
    sq.close()
    pg.close()
    nosync.close()
    shutil.rmtree(scratch, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--database-url", default=None, help="an existing Postgres with pgvector (default: pgserver)")
    a = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    url = server_url(a.database_url)
    rows = [measure(url, int(s), a.queries, a.warmup) for s in a.sizes.split(",")]
    print(json.dumps(rows, indent=1), file=sys.stderr)
    print("| insights | store | recall p50 | recall p95 | first recall | remember p50 / p95, rare entity "
          "| remember p50 / p95, common entity |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")

    def rem(x: dict) -> str:
        return " | ".join(f"{x[k]['p50']:.0f} / {x[k]['p95']:.0f} ms" for k in ("rare", "common"))

    for r in rows:
        for b in ("sqlite", "postgres"):
            x = r[b]
            print(f"| {r['n']:,} | {b} | {x['p50']:.0f} ms | {x['p95']:.0f} ms | {x['first']:.0f} ms | "
                  f"{rem(x['remember'])} |")
    for r in rows:
        print(f"| {r['n']:,} | postgres, synchronous_commit=off | | | | {rem(r['postgres_nosync_remember'])} |")
    for r in rows:
        near = r["postgres_nearest"]
        copy = f"{r['migrate_s']:.0f} s" if r["migrate_s"] else "(cached)"
        print(f"\n{r['n']:,}: HNSW top-20 (`PostgresStore.nearest`) p50 {near['p50']:.2f} ms, p95 {near['p95']:.2f} ms; "
              f"`mnemon migrate` SQLite → Postgres {copy}; the Postgres client's graph index file written in "
              f"{r['pg_index_s']:.1f} s; recall through an index file: {r['index_file']}")


if __name__ == "__main__":
    os.environ.setdefault("MNEMON_MAX_INSIGHTS", "0")
    main()
