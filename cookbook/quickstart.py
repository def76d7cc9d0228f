"""Quickstart: remember a few related decisions, link a cause, and recall them — on the embedded default
(SQLite + the local multilingual-e5-small model: no server, no API key).

    pip install -e . && python cookbook/quickstart.py

Uses a throw-away data dir unless MNEMON_DATA_DIR is set.
"""

from __future__ import annotations

import json
import os
import tempfile

from mnemon_core import Memory


def main() -> None:
    data_dir = os.environ.get("MNEMON_DATA_DIR") or tempfile.mkdtemp(prefix="mnemon-quickstart-")
    mem = Memory(data_dir=data_dir, store="quickstart")

    lacks = mem.remember("The team has no Redis operations experience", category="context", importance=4,
                         source="agent")
    chose = mem.remember(
        "We chose SQLite as the memory store because the team lacks Redis experience",
        category="decision", importance=5, source="agent",
    )
    wal = mem.remember("SQLite runs in WAL mode so several agent processes can write at once",
                       category="fact", source="agent")
    mem.remember("The user prefers short answers without extra explanation", category="preference",
                 importance=4, source="user")

    print("remember →", json.dumps(chose.model_dump(mode="json")["edges_created"]), "edges for the decision")
    mem.link(lacks.id, chose.id, type="causal", weight=0.9, metadata={"sub_type": "causes"})
    mem.link(chose.id, wal.id, type="causal", weight=0.7, metadata={"sub_type": "enables"})

    for query in ("why did we pick SQLite?", "what does the user prefer?"):
        result = mem.recall(query, limit=3)
        print(f"\nrecall {query!r}")
        for hit in result.results:
            print(f"  {hit.score:.3f} {hit.confidence:<6} [{hit.intent}/{hit.matched_via}] {hit.content}")
        scores = [hit.score for hit in result.results]
        if scores != sorted(scores, reverse=True):  # a WHY answer: cause-first order inside a causal chain
            print("  (a WHY question: within a causal chain the cause is listed before what it explains, even\n"
                  "   with a lower score; matched_via \"causal\" marks a result found as a cause or an effect)")
    print(f"\ndata dir: {data_dir}")
    mem.close()


if __name__ == "__main__":
    main()
