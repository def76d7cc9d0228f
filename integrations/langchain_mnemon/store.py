"""`MnemonStore`: a LangGraph `BaseStore` over mnemon, so `create_agent(store=MnemonStore())` works.

Each LangGraph namespace is its own mnemon store under one data dir: `("memories", "user-1")` lives in
`data/langgraph-memories-user_2d_1/mnemon.db`. One store per namespace keeps users apart all the way down:
recall's graph walk never crosses into another user's memories, auto-prune's ceiling counts per namespace,
and listing the namespaces is listing the stores. (A tag per namespace in one shared store would need a
tag filter that recall does not have, mix users in one graph, and could not list namespaces.)

An item is one insight. Its key is kept in a tag `lgkey:<key>` and found again through a second tag, a
hash token `lgk<24 hex>`, that keyword search matches exactly. A value `{"content": "text"}` is stored as that
text; any other value as its JSON (tagged `lgjson`), so `get` gives back exactly what `put` was given.
Writing a key again replaces its insight (the new one is remembered, then the old one forgotten).

Reads by key and listings go through a read-only twin of each store, so they do not count as accesses in
mnemon's lifecycle (an access-count boost would make every listed item immune to pruning); a search with a
`query` is a real recall and counts, as any recall does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from mnemon_core import Insight, Memory, NotFoundError, Settings, StoreCatalog

from mnemon_core.faces.kit import recall_hits

KEY_TAG = "lgkey:"  # its token `lgkey` is also what every item shares, for listing
HASH_TAG = "lgk"
JSON_TAG = "lgjson"
MAX_KEY_BYTES = 100 - len(KEY_TAG)  # mnemon's tag limit is 100 bytes
EVERY_ITEM = sys.maxsize  # search limit meaning "all of them"
_PLAIN = re.compile(r"[a-z0-9]")
_ESCAPED = re.compile(r"_([0-9a-f]+)_")


class MnemonStore(BaseStore):
    """LangGraph store over mnemon stores named `<prefix>-<namespace labels>` in `data_dir`.

    ```python
    store = MnemonStore(data_dir="~/.mnemon")            # default: $MNEMON_DATA_DIR, else ~/.mnemon
    store.put(("memories", "u1"), "food", {"content": "Likes spicy ramen"})
    store.search(("memories", "u1"), query="what food?")  # mnemon's smart recall, scores included
    agent = create_agent(model, tools, store=store)
    ```
    """

    supports_ttl = False

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        prefix: str = "langgraph",
        embedder: str | None = None,
        text_field: str = "content",
        category: str = "general",
        importance: int = 3,
        source: str = "langgraph",
    ) -> None:
        if not re.fullmatch(r"[a-zA-Z0-9]+", prefix):
            raise ValueError(f"prefix must be letters and digits, got {prefix!r}")
        settings = Settings.resolve(data_dir=data_dir or None, store="default")
        if settings.database_url:
            # Namespaces are found by listing the stores under data_dir; Postgres stores have no such listing yet.
            raise ValueError("MnemonStore keeps namespaces as SQLite stores under a data dir; "
                             "unset MNEMON_DATABASE_URL to use it")
        self.data_dir = settings.data_dir
        self._stores = StoreCatalog(settings=settings)
        self.prefix = prefix
        self.embedder = embedder
        self.text_field = text_field
        self.category = category
        self.importance = importance
        self.source = source
        self._open: dict[str, tuple[Memory, Memory]] = {}
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ stores

    def store_name(self, namespace: tuple[str, ...]) -> str:
        """The mnemon store of a namespace: letters a-z and digits kept, every other character `_<hex>_`."""
        if not namespace:
            raise InvalidNamespaceError("namespace must not be empty")
        labels = ["".join(c if _PLAIN.match(c) else f"_{ord(c):x}_" for c in label) for label in namespace]
        return "-".join([self.prefix, *labels])

    def namespace_of(self, store: str) -> tuple[str, ...] | None:
        """The namespace a store name encodes, or None when it is not one of this store's."""
        head, _, rest = store.partition("-")
        if head != self.prefix or not rest:
            return None
        return tuple(_ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), label) for label in rest.split("-"))

    def _memories(self, namespace: tuple[str, ...], *, create: bool) -> tuple[Memory, Memory] | None:
        """(writable, read-only) memories of a namespace; None when it has no store and `create` is false."""
        name = self.store_name(namespace)
        if name not in self._open:
            if not create and not self._stores.exists(name):
                return None
            kwargs: dict[str, Any] = {"data_dir": self.data_dir, "store": name}
            if self.embedder is not None:
                kwargs["embedder"] = self.embedder
            mem = Memory(**kwargs)
            mem.store  # noqa: B018 — opening creates the database the read-only twin attaches to
            self._open[name] = (mem, Memory(data_dir=self.data_dir, store=name, readonly=True, embedder="none"))
        return self._open[name]

    def _namespaces(self) -> list[tuple[str, ...]]:
        found = (self.namespace_of(name) for name in self._stores.names())
        return sorted(ns for ns in found if ns is not None)

    def close(self) -> None:
        with self._lock:
            for mem, ro in self._open.values():
                mem.close()
                ro.close()
            self._open.clear()

    # ------------------------------------------------------------------ items ↔ insights

    def _encode(self, key: str, value: Mapping[str, Any]) -> tuple[str, list[str]]:
        raw = key.encode("utf-8")
        if len(raw) > MAX_KEY_BYTES or key != key.strip() or not key:
            raise ValueError(
                f"MnemonStore keys must be 1-{MAX_KEY_BYTES} bytes without surrounding spaces, got {key!r}"
            )
        tags = [KEY_TAG + key, key_token(key)]
        text = value.get(self.text_field) if len(value) == 1 else None
        if isinstance(text, str) and text.strip() == text and text:
            return text, tags
        return json.dumps(dict(value), ensure_ascii=False), [*tags, JSON_TAG]

    def _decode(self, content: str, tags: Iterable[str]) -> tuple[str, dict[str, Any]] | None:
        """(key, value) of an insight this store wrote; None for insights written by other faces."""
        tags = list(tags)
        key = next((t[len(KEY_TAG):] for t in tags if t.startswith(KEY_TAG)), None)
        if key is None:
            return None
        if JSON_TAG in tags:
            return key, json.loads(content)
        return key, {self.text_field: content}

    def _ids_of(self, ro: Memory, key: str) -> list[str]:
        """Active insights holding `key` (normally one)."""
        want = KEY_TAG + key
        return [h.id for h in ro.search(key_token(key), limit=EVERY_ITEM) if want in h.tags]

    def _item(self, namespace: tuple[str, ...], ins: Insight | Mapping[str, Any],
              score: float | None = None) -> SearchItem | None:
        """The item an insight holds (a model, or its JSON from a recall); None for other faces' insights."""
        data = ins.model_dump(mode="json") if isinstance(ins, Insight) else ins
        decoded = self._decode(data["content"], data.get("tags") or [])
        if decoded is None:
            return None
        key, value = decoded
        created, updated = _time(data["created_at"]), _time(data.get("updated_at") or data["created_at"])
        return SearchItem(namespace, key, value, created, updated, score)

    # ------------------------------------------------------------------ operations

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Reads are answered in order from the state before the batch; then the writes are applied, the last
        one per (namespace, key) winning (as LangGraph's in-memory store does)."""
        with self._lock:
            ops = list(ops)
            results: list[Result] = []
            writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                elif isinstance(op, PutOp):
                    writes[(tuple(op.namespace), op.key)] = op
                    results.append(None)
                else:
                    raise TypeError(f"unknown store operation: {op!r}")
            for op in writes.values():
                self._put(op)
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # Same work in a worker thread, like AsyncMemory: the event loop never waits on SQLite.
        return await asyncio.to_thread(self.batch, list(ops))

    def _get(self, op: GetOp) -> Item | None:
        mems = self._memories(tuple(op.namespace), create=False)
        if mems is None:
            return None
        for id in self._ids_of(mems[1], op.key):
            try:
                found = self._item(tuple(op.namespace), mems[1].get(id))
            except NotFoundError:  # forgotten between the search and the read
                continue
            if found is not None:
                return Item(value=found.value, key=found.key, namespace=found.namespace,
                            created_at=found.created_at, updated_at=found.updated_at)
        return None

    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        if op.value is None:
            mems = self._memories(namespace, create=False)
            if mems is not None:
                for id in self._ids_of(mems[1], op.key):
                    mems[0].forget(id)
            return
        content, tags = self._encode(op.key, op.value)
        mem, ro = self._memories(namespace, create=True)  # type: ignore[misc]
        old = self._ids_of(ro, op.key)
        mem.remember(content, category=self.category, importance=self.importance, tags=tags, source=self.source,
                     no_diff=True)  # two keys may hold the same value; mnemon would skip the second
        for id in old:
            mem.forget(id)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        spaces = [ns for ns in self._namespaces() if ns[: len(prefix)] == prefix]
        want = op.offset + op.limit
        found: list[SearchItem] = []
        for ns in spaces:
            mems = self._memories(ns, create=False)
            if mems is None:
                continue
            found.extend(self._recall(mems[0], ns, op, want) if op.query else self._listing(mems[1], ns, op))
        if op.query:
            found.sort(key=lambda it: -(it.score or 0.0))  # stable: namespace order breaks ties
        else:  # newest first, as LangGraph's Postgres store lists; then by key
            found.sort(key=lambda it: it.key)
            found.sort(key=lambda it: it.updated_at, reverse=True)
        return found[op.offset : want]

    def _recall(self, mem: Memory, ns: tuple[str, ...], op: SearchOp, want: int) -> list[SearchItem]:
        limit = max(want, 1)
        while True:
            hits = recall_hits(mem.retrieve(op.query or "", limit=limit))
            items = []
            for hit in hits:
                item = self._item(ns, hit["insight"], score=hit.get("score"))
                if item is not None and matches(item.value, op.filter):
                    items.append(item)
            # A filter can drop hits: ask recall for more until enough pass or recall has no more.
            if len(items) >= want or len(hits) < limit or not op.filter:
                return items
            limit *= 4

    def _listing(self, ro: Memory, ns: tuple[str, ...], op: SearchOp) -> list[SearchItem]:
        items = (self._item(ns, ins) for ins in ro.recent(limit=EVERY_ITEM))
        return [it for it in items if it is not None and matches(it.value, op.filter)]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for ns in self._namespaces():
            if not all(condition_matches(c, ns) for c in op.match_conditions or ()):
                continue
            mems = self._memories(ns, create=False)
            if mems is None or not mems[1].search(KEY_TAG, limit=1):
                continue  # a namespace whose items were all deleted is gone, as in LangGraph's stores
            out.append(ns[: op.max_depth] if op.max_depth is not None else ns)
        unique = sorted(set(out))
        return unique[op.offset : op.offset + op.limit]


def key_token(key: str) -> str:
    """The one keyword-search token that finds a key's insight."""
    return HASH_TAG + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)  # RFC 3339 with "Z": Python 3.11 reads it as UTC


def condition_matches(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    part = ns[: len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


OPERATORS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: float(a) > float(b),
    "$gte": lambda a, b: float(a) >= float(b),
    "$lt": lambda a, b: float(a) < float(b),
    "$lte": lambda a, b: float(a) <= float(b),
}


def matches(value: Any, filter: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter: exact match per key (nested dicts and lists compared as JSON), or `$eq`, `$ne`,
    `$gt`, `$gte`, `$lt`, `$lte`."""
    if not filter:
        return True
    if not isinstance(value, Mapping):
        return False
    return all(_compare(value.get(k), want) for k, want in filter.items())


def _compare(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            for name, operand in want.items():
                if name not in OPERATORS:
                    raise ValueError(f"unsupported filter operator: {name}")
                try:
                    if not OPERATORS[name](have, operand):
                        return False
                except (TypeError, ValueError):
                    return False
            return True
        return isinstance(have, Mapping) and all(_compare(have.get(k), v) for k, v in want.items())
    return have == want
