"""Digest of a store as `import` leaves it, to check that a change to the import path writes the same store.

Imports `import_speed.make_draft(n)` (plus sessions on three items in seven and one repeated text, so the
conversation steps and the duplicate skip run too) into a fresh SQLite store, `MNEMON_EMBEDDER=none`, with
seeded insight ids and a frozen clock, then prints one SHA-256 per table (rows sorted; the store's random uid
left out) and one over the graph index file's sections (dtype, length, digest; its build time left out).
Run it from each tree with the same `PYTHONHASHSEED` (the FTS rows are joined from a set) and compare:

    PYTHONHASHSEED=0 python benchmarks/import_digest.py 10000
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

TABLES = {
    "insights": "SELECT * FROM insights",
    "edges": "SELECT * FROM edges",
    "insight_entities": "SELECT * FROM insight_entities",
    "conversation_tails": "SELECT * FROM conversation_tails",
    "mnemon_meta": "SELECT * FROM mnemon_meta WHERE key <> 'store_uid'",
    "insights_fts": "SELECT rowid, terms FROM insights_fts",
    "insights_bm25": "SELECT rowid, terms FROM insights_bm25",
}


def digests(n: int) -> dict[str, str]:
    from import_speed import make_draft

    from mnemon_core import Memory
    from mnemon_core.write import importer

    rng = random.Random(0)
    importer.uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[attr-defined]
    draft = make_draft(n)
    for k, item in enumerate(draft["insights"]):
        if k % 7 < 3:
            item["session"] = f"s{k // 50}"
    draft["insights"][-1] = dict(draft["insights"][5])
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as d:
        mem = Memory(data_dir=d, embedder="none")
        mem.settings.max_insights = 0
        mem._now = lambda: ("2026-12-02T00:00:00Z", 1796169600.0)  # type: ignore[method-assign]
        r = mem.import_draft(draft, vectors="now")
        db_path = mem.store.path
        mem.close()
        out["result"] = f"imported {r.imported}, skipped {r.skipped}, errors {r.errors}, edges {r.edges_inserted}"
        db = sqlite3.connect(db_path)
        for name, sql in TABLES.items():
            rows = sorted(repr(row) for row in db.execute(sql))
            out[name] = f"{len(rows)} rows {hashlib.sha256(''.join(rows).encode()).hexdigest()[:16]}"
        db.close()
        raw = Path(f"{db_path}.gidx").read_bytes()
        head = json.loads(raw[24 : 24 + int.from_bytes(raw[8:16], "little")])
        sections = sorted((k, v[0], v[1], v[4]) for k, v in head["sections"].items())
        out["graph index file"] = hashlib.sha256(repr(sections).encode()).hexdigest()[:16]
    return out


if __name__ == "__main__":
    os.environ.setdefault("MNEMON_DAEMON", "off")
    for k, v in digests(int(sys.argv[1]) if len(sys.argv) > 1 else 10000).items():
        print(f"{k}: {v}")
