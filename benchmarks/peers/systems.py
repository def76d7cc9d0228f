"""Adapters: each peer's own retrieval code, fed the same memory units of one haystack, asked the same questions.

An adapter is built per haystack (one LoCoMo conversation, one BEAM chat) and called per question; it returns
unit ids, best first, at most `LIMIT`. What each adapter runs, and where it departs from the peer's headline
setup, is said in its docstring and in benchmarks/peers/README.md. The peers' packages are imported only here,
inside the adapters, so the scoring code and mnemon's own rows need none of them.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_core.embed.base import BaseEmbedder

LIMIT = 20  # every system returns this many units per question


@dataclass(frozen=True)
class Haystack:
    """One store's worth of units, and the questions asked of it (`protocols.Ranked` minus the ranking).

    `turns` are benchmarks/locomo.py `Turn`s (or BEAM's `Message`s, a subclass): `dia_id`, `content`, `speaker`,
    `created_at`, `session`, the attributes its FTS5, dense and mnemon rankers read, so those run unchanged."""

    sample_id: str
    turns: tuple[Any, ...]
    questions: tuple[tuple[str, int | str, tuple[str, ...], tuple[str, ...]], ...]  # text, label, evidence, raw
    asked_at: tuple[Any, ...] = ()  # each question's asking time (LongMemEval's question date); none: now

    def session_of(self) -> dict[str, str]:
        return {u.dia_id: u.session for u in self.turns}

    def conversation(self) -> Any:
        """The haystack as benchmarks/locomo.py's MnemonRanker reads a `Conversation`: its questions as
        `Question`s, each with the time it is asked (what "last week" is read against)."""
        from ..locomo import Conversation, Question

        asked = self.asked_at or (None,) * len(self.questions)
        return Conversation(self.sample_id, self.turns, tuple(Question(q, label, ev, asked_at=when)
                                                              for (q, label, ev, _), when in zip(self.questions, asked)))


@dataclass
class Context:
    """What every adapter of a run shares: MiniLM (cached vectors), e5 for mnemon's default, a scratch dir."""

    minilm: BaseEmbedder | None
    e5: BaseEmbedder | None
    workdir: Path
    seed: int = 0


System = Callable[[str], list[str]]


# ---------------------------------------------------------------------------------------------------- MemPalace

# MemPalace benchmarks/locomo_bench.py, hybrid v5 (the mode behind its LoCoMo "hybrid" rows): over the dense
# candidates, distance x (1 - 0.5 x predicate-keyword overlap), x (1 - 0.6 x quoted-phrase hit share),
# x (1 - 0.2 x person-name hit share). Their stop words and not-a-name list, re-typed from that script.
MP_STOP = frozenset(
    "what when where who how which did do was were have has had is are the a an my me i you your their it its in "
    "on at to for of with by from ago last that this there about get got give gave buy bought made make said".split()
)
MP_NOT_NAMES = frozenset(
    "What When Where Who How Which Did Do Was Were Have Has Had Is Are The My Our Their Can Could Would Should "
    "Will Shall May Might Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April "
    "June July August September October November December In On At For To Of With By From And But I It Its This "
    "That These Those Previously Recently Also Just Very More Said Speaker Person Time Date Year Day".split()
)
MP_POOL = 3  # hybrid reranks top_k x 3 dense candidates


def _mp_share(needles: Sequence[str], doc: str) -> float:
    low = doc.lower()
    return min(sum(n.lower() in low for n in needles) / len(needles), 1.0) if needles else 0.0


def mempalace_hybrid_order(question: str, docs: Sequence[str], distances: Sequence[float]) -> list[int]:
    """Indices of `docs` (dense candidates) in hybrid-v5 order, best first (stable on ties)."""
    names = list({w for w in re.findall(r"\b[A-Z][a-z]{2,15}\b", question) if w not in MP_NOT_NAMES})
    lowered = {n.lower() for n in names}
    predicate = [w for w in re.findall(r"\b[a-z]{3,}\b", question.lower()) if w not in MP_STOP and w not in lowered]
    quoted = [p.strip() for pat in (r"'([^']{3,60})'", r'"([^"]{3,60})"') for p in re.findall(pat, question)
              if len(p.strip()) >= 3]
    fused = []
    for dist, doc in zip(distances, docs):
        score = dist * (1.0 - 0.50 * _mp_share(predicate, doc))
        if (q := _mp_share(quoted, doc)) > 0:
            score *= 1.0 - 0.60 * q
        if (n := _mp_share(names, doc)) > 0:
            score *= 1.0 - 0.20 * n
        fused.append(score)
    return sorted(range(len(docs)), key=lambda i: fused[i])


class MemPalace:
    """MemPalace's LoCoMo retrieval: a ChromaDB collection (chromadb as MemPalace 3.11.0 pins it, default
    space) holding one document per unit with MiniLM vectors, queried with the question's vector. `raw` is
    the dense order; `hybrid` reranks the top 3 x 20 by hybrid v5. Vectors are passed in, as the script's
    `--embed-model` path does, because Chroma's built-in MiniLM would download its ONNX file."""

    def __init__(self, hay: Haystack, ctx: Context, *, hybrid: bool) -> None:
        import chromadb

        self.hay, self.ctx, self.hybrid = hay, ctx, hybrid
        self.tmp = tempfile.TemporaryDirectory(prefix="peers-mempalace-", dir=ctx.workdir)
        client = chromadb.PersistentClient(path=self.tmp.name)
        self.col = client.create_collection("mempal_drawers")
        docs = [u.content for u in hay.turns]
        vecs = ctx.minilm.embed_batch(docs)
        for start in range(0, len(docs), 1000):
            self.col.add(ids=[f"doc_{i}" for i in range(start, min(start + 1000, len(docs)))],
                         documents=docs[start : start + 1000], embeddings=vecs[start : start + 1000].tolist(),
                         metadatas=[{"corpus_id": u.dia_id} for u in hay.turns[start : start + 1000]])

    def __call__(self, question: str) -> list[str]:
        n = min(LIMIT * MP_POOL if self.hybrid else LIMIT, len(self.hay.turns))
        q = self.ctx.minilm.embed(question, query=True)
        res = self.col.query(query_embeddings=[q.tolist()], n_results=n, include=["distances", "metadatas", "documents"])
        ids = [m["corpus_id"] for m in res["metadatas"][0]]
        if not self.hybrid:
            return ids[:LIMIT]
        order = mempalace_hybrid_order(question, res["documents"][0], res["distances"][0])
        return [ids[i] for i in order[:LIMIT]]

    def close(self) -> None:
        self.tmp.cleanup()


class MemPalaceSearch:
    """MemPalace 3.11.0's own search (`mempalace.searcher.search_memories`, what its CLI and MCP server call):
    one drawer per unit (its id as the drawer's `source_file`, the session as its room) in a palace made with
    `mempalace.palace.get_collection`, embedded by MemPalace's embedding function (Chroma's ONNX MiniLM, pointed
    at the int8 model: it embeds each query; the drawers get the same model's cached vectors, which only saves
    time), then a pool of 4 x 20 vector candidates re-ranked by 0.6 x similarity + 0.4 x BM25.
    No closets (the miner builds those from files; there are none here), so their boost does not apply."""

    def __init__(self, hay: Haystack, ctx: Context) -> None:
        import os

        from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

        from .minilm import chroma_model_root

        os.environ["MEMPALACE_CONFIG_DIR"] = str(ctx.workdir / "mempalace-config")  # never the user's ~/.mempalace
        ONNXMiniLM_L6_V2.DOWNLOAD_PATH = chroma_model_root()
        from mempalace.palace import get_collection

        self.tmp = tempfile.TemporaryDirectory(prefix="peers-mempalace-search-", dir=ctx.workdir)
        col = get_collection(self.tmp.name, create=True)
        vecs = ctx.minilm.embed_batch([u.content for u in hay.turns])
        for start in range(0, len(hay.turns), 500):
            chunk = hay.turns[start : start + 500]
            col.add(ids=[f"drawer_{start + i}" for i in range(len(chunk))], documents=[u.content for u in chunk],
                    embeddings=vecs[start : start + 500].tolist(),
                    metadatas=[{"wing": hay.sample_id, "room": u.session, "source_file": u.dia_id} for u in chunk])

    def __call__(self, question: str) -> list[str]:
        from mempalace.searcher import search_memories

        found = search_memories(question, self.tmp.name, n_results=LIMIT)
        if "error" in found:
            raise RuntimeError(f"mempalace search: {found['error']}")
        return [h["source_path"] for h in found["results"]]

    def close(self) -> None:
        self.tmp.cleanup()


# ---------------------------------------------------------------------------------------------------- taOSmd


def _quiet_bm25s() -> None:
    """bm25s draws a progress bar per query (`show_progress=True` by default, past TQDM_DISABLE): off, which
    changes nothing but the log."""
    import functools

    import bm25s

    if not getattr(bm25s, "_peers_quiet", False):
        bm25s.tokenize = functools.partial(bm25s.tokenize, show_progress=False)
        for method in ("index", "retrieve"):
            setattr(bm25s.BM25, method, functools.partialmethod(getattr(bm25s.BM25, method), show_progress=False))
        bm25s._peers_quiet = True


class TaOSmd:
    """taosmd 0.4.0 `VectorMemory` in its ONNX mode on the MiniLM folder (minilm.model_dir: the layout its
    setup script fetches), every unit `add`ed, `search(q, limit=20, hybrid=True, fusion="mem0_additive")`:
    dense cosine + sigmoid-normalised BM25 (bm25s), averaged. `late_interaction=True` stores each unit's token
    matrix and scores by MaxSim instead of pooled cosine. It embeds with its own code (first 512 characters,
    the tokenizer's 512-token limit). Without spaCy's en_core_web_sm (not on PyPI) its BM25 lemmatiser falls
    back to the raw text, as the package does."""

    def __init__(self, hay: Haystack, ctx: Context, *, late: bool) -> None:
        from taosmd.vector_memory import VectorMemory

        from .minilm import model_dir

        _quiet_bm25s()

        self.loop = asyncio.new_event_loop()
        self.tmp = tempfile.TemporaryDirectory(prefix="peers-taosmd-", dir=ctx.workdir)
        self.vm = VectorMemory(db_path=Path(self.tmp.name) / "vm.db", embed_mode="onnx", onnx_path=str(model_dir()),
                               late_interaction=late)
        self.loop.run_until_complete(self.vm.init())
        if self.vm._embed_mode != "onnx":  # it falls back to a remote server with a warning: fail instead
            raise RuntimeError("taosmd could not load the MiniLM ONNX folder")
        self.row_unit: dict[int, str] = {}
        for u in hay.turns:
            row = self.loop.run_until_complete(self.vm.add(u.content, metadata={"unit": u.dia_id}))
            self.row_unit[row] = u.dia_id

    def __call__(self, question: str) -> list[str]:
        hits = self.loop.run_until_complete(self.vm.search(question, limit=LIMIT, hybrid=True, fusion="mem0_additive"))
        return [h["metadata"]["unit"] for h in hits]

    def close(self) -> None:
        self.loop.run_until_complete(self.vm.close())
        self.loop.close()
        self.tmp.cleanup()


# ---------------------------------------------------------------------------------------------------- engram


class _EngramMiniLM:
    """engram's embedder interface (`encode_query`, `encode_documents`) over the shared cached MiniLM."""

    def __init__(self, emb: BaseEmbedder) -> None:
        self.emb = emb

    def encode_query(self, text: str) -> np.ndarray:
        return self.emb.embed(text, query=True)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.emb.embed_batch(list(texts))


class Engram:
    """engram-search 0.1.7 `RetrievalPipeline(use_reranker=False)`: RRF (k 60) of dense cosine, its pure-Python
    BM25, and its person-name / quoted-phrase boost rankings, over one document per unit. Handicapped against
    its headline: MiniLM instead of bge-large-en-v1.5, no bge-reranker-v2-m3 (neither ships on PyPI), no
    temporal boost (LoCoMo questions carry no date), and units instead of its 6-turn session chunks."""

    def __init__(self, hay: Haystack, ctx: Context) -> None:
        from engram.backends.base import Document
        from engram.retrieval.pipeline import RetrievalPipeline

        emb = _EngramMiniLM(ctx.minilm)
        self.pipeline = RetrievalPipeline(embedder=emb, use_reranker=False)
        vecs = emb.encode_documents([u.content for u in hay.turns])
        self.docs = [Document(id=u.dia_id, text=u.content, embedding=v.tolist(), metadata={"session": u.session})
                     for u, v in zip(hay.turns, vecs)]

    def __call__(self, question: str) -> list[str]:
        return [d.id for d in self.pipeline.search(question, self.docs, top_k=LIMIT)]

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------------- Synapse


class Synapse:
    """geny-memory-adaptor 1.11.1 `SynapseMemory`: each unit `index`ed with its speaker and session as tags
    and a link to the previous unit of its session (the typed LINK/TAG edges its PageRank walks), then
    `search(q, top_k=20)`. Its vectors are its own hashed sub-word embeddings; `distilled` also stores each
    unit's MiniLM vector as the teacher and runs `distill()` before the questions (its only way to use an
    outside model). The online ranker gets no feedback here, so it ranks with its heuristic floor."""

    def __init__(self, hay: Haystack, ctx: Context, *, distilled: bool) -> None:
        from geny_memory_adaptor import SynapseMemory

        from .minilm import NAME

        self.tmp = tempfile.TemporaryDirectory(prefix="peers-synapse-", dir=ctx.workdir)
        self.mem = SynapseMemory.open(str(Path(self.tmp.name) / "synapse.db"))
        vecs = ctx.minilm.embed_batch([u.content for u in hay.turns]) if distilled else None
        items: list[dict[str, Any]] = []
        previous: dict[str, str] = {}
        for i, u in enumerate(hay.turns):
            item: dict[str, Any] = {"node_id": u.dia_id, "text": u.content, "tags": [u.speaker, u.session],
                                    "links": [previous[u.session]] if u.session in previous else []}
            if vecs is not None:
                item.update(teacher_vec=vecs[i].tolist(), teacher_model=NAME)
            items.append(item)
            previous[u.session] = u.dia_id
        self.mem.index_many(items)
        self.distill = self.mem.distill() if distilled else None

    def __call__(self, question: str) -> list[str]:
        return [h.id for h in self.mem.search(question, top_k=LIMIT, timeout=None)]

    def close(self) -> None:
        self.mem.close()
        self.tmp.cleanup()
