"""MnemonStore: LangGraph's BaseStore over mnemon, one mnemon store per namespace, on real temporary stores."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import GetOp, InvalidNamespaceError, Item, PutOp, SearchItem, SearchOp

from langchain_mnemon import MnemonStore
from langchain_mnemon.store import key_token
from mnemon_core import Memory
from mnemon_core import StoreCatalog

NS = ("memories", "user-1")


@pytest.fixture
def store(data_dir: Path) -> MnemonStore:
    s = MnemonStore(data_dir)
    yield s
    s.close()


def insights_of(data_dir: Path, store_name: str) -> tuple[int, int]:
    """(active, deleted) insights of one mnemon store."""
    with Memory(data_dir=data_dir, store=store_name, readonly=True) as m:
        st = m.status()
        return st.total_insights, st.deleted_insights


def test_namespaces_map_to_store_names(store: MnemonStore) -> None:
    assert store.store_name(NS) == "langgraph-memories-user_2d_1"
    assert store.store_name(("a",)) == "langgraph-a"
    assert store.store_name(("Ab C", "x_y@z")) == "langgraph-_41_b_20__43_-x_5f_y_40_z"
    for ns in [NS, ("Ab C", "x_y@z"), ("日本", "ü", "-", "_", "_41_"), ("a", "b", "c", "d")]:
        name = store.store_name(ns)
        assert store.namespace_of(name) == ns
        Memory(data_dir=store.data_dir, store=name)  # a valid mnemon store name
    assert store.namespace_of("default") is None
    assert store.namespace_of("langgraph") is None
    assert MnemonStore(store.data_dir, prefix="lg2").store_name(NS) == "lg2-memories-user_2d_1"
    with pytest.raises(ValueError, match="prefix"):
        MnemonStore(store.data_dir, prefix="lg-x")


def test_put_get_text_and_json_values(store: MnemonStore, data_dir: Path) -> None:
    store.put(NS, "food", {"content": "Likes spicy ramen"})
    store.put(NS, "profile", {"name": "Ada", "langs": ["en", "fr"], "age": 36, "nested": {"a": None}})
    store.put(NS, "padded", {"content": " spaces kept "})
    food = store.get(NS, "food")
    assert isinstance(food, Item)
    assert (food.namespace, food.key, food.value) == (NS, "food", {"content": "Likes spicy ramen"})
    assert food.created_at == food.updated_at and food.created_at.tzinfo is not None
    assert store.get(NS, "profile").value == {"name": "Ada", "langs": ["en", "fr"], "age": 36, "nested": {"a": None}}
    assert store.get(NS, "padded").value == {"content": " spaces kept "}
    assert store.get(NS, "missing") is None
    # Each item is one insight in the namespace's own mnemon store; the plain text is the insight itself.
    assert StoreCatalog(data_dir).names() == ["langgraph-memories-user_2d_1"]
    assert insights_of(data_dir, "langgraph-memories-user_2d_1") == (3, 0)
    with Memory(data_dir=data_dir, store="langgraph-memories-user_2d_1") as m:
        (hit,) = m.search("ramen")
        assert (hit.content, hit.tags) == ("Likes spicy ramen", ["lgkey:food", key_token("food")])
        assert m.get(hit.id).source == "langgraph"


def test_reads_do_not_create_stores(store: MnemonStore, data_dir: Path) -> None:
    assert store.get(("nobody",), "k") is None
    assert store.search(("nobody",)) == []
    assert store.list_namespaces() == []
    store.delete(("nobody",), "k")
    assert StoreCatalog(data_dir).names() == []


def test_put_again_replaces_and_delete_forgets(store: MnemonStore, data_dir: Path) -> None:
    name = store.store_name(NS)
    store.put(NS, "food", {"content": "Likes spicy ramen"})
    store.put(NS, "food", {"content": "Likes sushi now"})
    assert store.get(NS, "food").value == {"content": "Likes sushi now"}
    assert insights_of(data_dir, name) == (1, 1)
    store.delete(NS, "food")
    assert store.get(NS, "food") is None
    assert insights_of(data_dir, name) == (0, 2)
    assert store.list_namespaces() == []  # emptied namespaces are gone, as in LangGraph's own stores


def test_same_value_under_two_keys(store: MnemonStore) -> None:
    store.put(NS, "a", {"content": "Same words"})
    store.put(NS, "b", {"content": "Same words"})  # mnemon would skip an exact duplicate; the store must not
    assert [store.get(NS, k).value for k in ("a", "b")] == [{"content": "Same words"}] * 2


def test_keys_are_checked(store: MnemonStore) -> None:
    store.put(NS, "k" * 94, {"content": "longest key"})
    assert store.get(NS, "k" * 94).value == {"content": "longest key"}
    for bad in ["k" * 95, " padded", ""]:
        with pytest.raises(ValueError, match="keys must be 1-94 bytes"):
            store.put(NS, bad, {"content": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"content": "x"})
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(NS, "k", {"content": "x"}, ttl=5)


def test_namespaces_are_isolated(store: MnemonStore, data_dir: Path) -> None:
    store.put(("memories", "u1"), "pet", {"content": "Has a cat named Miso"})
    store.put(("memories", "u2"), "pet", {"content": "Has a dog named Rex"})
    assert store.get(("memories", "u1"), "pet").value == {"content": "Has a cat named Miso"}
    assert store.get(("memories", "u2"), "pet").value == {"content": "Has a dog named Rex"}
    assert [i.value["content"] for i in store.search(("memories", "u1"), query="named")] == ["Has a cat named Miso"]
    assert StoreCatalog(data_dir).names() == ["langgraph-memories-u1", "langgraph-memories-u2"]


def test_search_with_a_query_is_recall(store: MnemonStore, data_dir: Path) -> None:
    store.put(NS, "db", {"content": "We chose Qdrant for filtering speed"})
    store.put(NS, "ops", {"content": "Qdrant snapshots run nightly", "team": "ops"})
    store.put(NS, "lunch", {"content": "Lunch is at noon"})
    got = store.search(("memories",), query="Qdrant filtering speed", limit=2)
    assert all(isinstance(i, SearchItem) for i in got)
    with Memory(data_dir=data_dir, store=store.store_name(NS), readonly=True) as m:
        want = m.recall("Qdrant filtering speed", limit=2, verbose=True).results
    assert [(i.key, i.score) for i in got] == [("db", want[0].score), ("ops", want[1].score)]
    assert got[0].score > got[1].score
    filtered = store.search(NS, query="Qdrant", filter={"team": "ops"})
    assert [(i.key, i.value) for i in filtered] == [("ops", {"content": "Qdrant snapshots run nightly", "team": "ops"})]
    assert [i.key for i in store.search(NS, query="Qdrant filtering speed", limit=1, offset=1)] == ["ops"]
    assert store.search(("other",), query="Qdrant") == []


def test_search_across_namespaces_by_prefix(store: MnemonStore) -> None:
    store.put(("memories", "u1"), "a", {"content": "Prefers green tea"})
    store.put(("memories", "u2"), "b", {"content": "Prefers black tea with milk"})
    store.put(("notes",), "c", {"content": "Tea tasting on Friday"})
    got = store.search(("memories",), query="tea")
    assert sorted((i.namespace, i.key) for i in got) == [(("memories", "u1"), "a"), (("memories", "u2"), "b")]
    assert [i.score for i in got] == sorted((i.score for i in got), reverse=True)
    assert len(store.search((), query="tea")) == 3


def test_search_without_a_query_lists_newest_first(store: MnemonStore) -> None:
    for key in ["b", "a", "c"]:
        store.put(NS, key, {"content": f"note {key}", "n": ord(key)})
    listed = store.search(NS)
    # Newest first (times have one-second precision), then by key: ["a", "b", "c"] within one second.
    assert [i.key for i in listed] == [i.key for i in sorted(listed, key=lambda i: (-i.updated_at.timestamp(), i.key))]
    assert sorted(i.key for i in listed) == ["a", "b", "c"]
    assert all(i.score is None for i in listed)
    assert sorted(i.key for i in store.search(NS, filter={"n": {"$gte": ord("b")}})) == ["b", "c"]
    assert [i.key for i in store.search(NS, filter={"n": {"$ne": ord("b")}, "content": "note c"})] == ["c"]
    assert store.search(NS, limit=2, offset=1) == listed[1:3]


def test_reads_are_not_accesses(store: MnemonStore, data_dir: Path) -> None:
    store.put(NS, "k", {"content": "Read me often"})
    for _ in range(5):
        store.get(NS, "k")
        store.search(NS)
        store.list_namespaces()
    with Memory(data_dir=data_dir, store=store.store_name(NS), readonly=True) as m:
        (ins,) = m.recent(limit=5)
        assert ins.access_count == 0  # five accesses would make it immune to pruning


def test_list_namespaces(store: MnemonStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f")]:
        store.put(ns, "k", {"content": f"in {'/'.join(ns)}"})
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]


def test_batch_reads_see_the_state_before_its_writes(store: MnemonStore) -> None:
    store.put(NS, "k", {"content": "old"})
    results = store.batch([
        PutOp(NS, "k", {"content": "first"}),
        GetOp(NS, "k"),
        PutOp(NS, "k", {"content": "last"}),
        SearchOp(NS),
    ])
    assert results[0] is None and results[2] is None
    assert results[1].value == {"content": "old"}
    assert [i.value for i in results[3]] == [{"content": "old"}]
    assert store.get(NS, "k").value == {"content": "last"}


async def test_async_methods(store: MnemonStore) -> None:
    await store.aput(NS, "k", {"content": "Async put"})
    assert (await store.aget(NS, "k")).value == {"content": "Async put"}
    assert [i.key for i in await store.asearch(NS, query="async")] == ["k"]
    assert await store.alist_namespaces() == [NS]
    await store.adelete(NS, "k")
    assert await store.aget(NS, "k") is None
    # Concurrent calls share the stores safely.
    await asyncio.gather(*(store.aput(NS, f"k{i}", {"content": f"note {i}"}) for i in range(8)))
    assert len(await store.asearch(NS, limit=20)) == 8


def test_a_new_store_object_sees_persisted_items(store: MnemonStore, data_dir: Path) -> None:
    store.put(NS, "k", {"content": "Persisted"})
    store.close()
    again = MnemonStore(data_dir)
    assert again.get(NS, "k").value == {"content": "Persisted"}
    assert again.list_namespaces() == [NS]
    again.close()


def test_default_data_dir_comes_from_the_environment(data_dir: Path) -> None:
    assert MnemonStore().data_dir == data_dir


def test_postgres_is_refused_clearly(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_DATABASE_URL", "postgresql://localhost/x")
    with pytest.raises(ValueError, match="unset MNEMON_DATABASE_URL"):
        MnemonStore(data_dir)
