"""The benchmarks' one synthetic store generator (recall speed, write speed, Postgres scale, scale).

An insight: Zipf-distributed words from a 3,000-word vocabulary (`words` per insight, 8-20 by default), 0-2
entities from a Zipf pool of 400 names, one insight every 30 minutes from two sources (60 % `user`). Edges are
shaped like the write pipeline's: temporal backbone (same source, weight 1) and proximity (the 10 previous within
24 h, weight 1/(1+h)), entity (the 5 previous insights naming each entity, weight 1), semantic (30 % of insights
get 1-3 links at 0.80-0.95) and causal (15 % get one directed link from one of the 10 previous, weight
0.15-0.6); all but causal both ways, as remember writes them. Vectors: 384-d unit vectors from a fixed seed —
plain random (`topics=0`, recall_speed's store) or clustered round Zipf-drawn topic centroids (cosine 0.6 with
the centroid, ≈ 0.36 between two insights of one topic), so that nearest neighbours mean something.

`build` writes through the store's own calls, in committed batches like the importer (`insert_insight`,
`set_vector`; edges as batched rows since remember's per-edge upsert would dominate a million-row build).
Every random choice comes from `seed`, so a store of a given (n, options) is the same on every machine.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mnemon_core.embed.base import IDENTITY, BaseEmbedder

DIM = 384
MODEL = "bench/random-384"
CACHE = Path(tempfile.gettempdir()) / "mnemon-bench"
CUES = ["", "", "why ", "when did ", "what is ", "tell me about "]
EDGE_FLUSH = 200_000  # edge rows buffered before an executemany


class Options(NamedTuple):
    """What shapes a store besides its size. The defaults are recall_speed's store (layout 3)."""

    seed: int = 7
    words: tuple[int, int] = (8, 20)  # words per insight (inclusive range)
    topics: int = 0  # 0: plain random vectors; > 0: clustered round this many Zipf-drawn topic centroids
    batch: int = 0  # insights per committed transaction; 0 = one transaction for the whole store

    def tag(self) -> str:
        """A short name for the cache directory."""
        return f"s{self.seed}-w{self.words[0]}_{self.words[1]}-t{self.topics}"


DEFAULT = Options()


class PresetEmbedder(BaseEmbedder):
    """Query vectors chosen by the benchmark (text → vector); anything else gets a hash-seeded random vector."""

    def __init__(self) -> None:
        super().__init__(MODEL, dimensions=DIM, calibration=IDENTITY)
        self.preset: dict[str, np.ndarray] = {}

    def _embed_batch(self, texts: list[str], *, query: bool) -> np.ndarray:
        out = []
        for t in texts:
            v = self.preset.get(t)
            if v is None:
                seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
                v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
            out.append(v)
        return np.stack(out)

    def available(self) -> bool:
        return True


def vocabulary(rng: random.Random, n: int = 3000) -> list[str]:
    syll = ["ka", "lo", "mi", "ter", "van", "dus", "pre", "os", "quin", "ra", "bel", "sto", "nu", "fex", "gal"]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choices(syll, k=rng.randint(2, 4))))
    return sorted(words)


def zipf_weights(n: int, s: float = 1.1) -> list[float]:
    return [1.0 / (r + 1) ** s for r in range(n)]


def entity_pool(seed: int) -> list[str]:
    return [f"Proj{w.capitalize()}" for w in vocabulary(random.Random(seed + 1), 400)]


# ---------------------------------------------------------------------------------------------- vectors

VEC_CHUNK = 65_536  # vectors are drawn per chunk of rows, so any row can be regenerated without the rest


def vectors(n: int, opts: Options, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Unit vectors of rows [start, stop) of an n-insight store (float32)."""
    stop = n if stop is None else stop
    if opts.topics == 0 and opts.batch == 0:
        # recall_speed's original draw: one standard-normal matrix for the whole store.
        v = np.random.default_rng(opts.seed).standard_normal((n, DIM)).astype(np.float32)[start:stop]
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    out = []
    for c in range(start // VEC_CHUNK, (stop - 1) // VEC_CHUNK + 1 if stop > start else start // VEC_CHUNK):
        lo, hi = c * VEC_CHUNK, min(n, (c + 1) * VEC_CHUNK)
        rng = np.random.default_rng([opts.seed, c])
        noise = rng.standard_normal((hi - lo, DIM)).astype(np.float32)
        if opts.topics:
            cent = _centroids(opts)
            topic = rng.choice(opts.topics, size=hi - lo, p=_topic_p(opts.topics))
            noise /= np.linalg.norm(noise, axis=1, keepdims=True)
            noise = 0.6 * cent[topic] + 0.8 * noise
        out.append(noise[max(start, lo) - lo : min(stop, hi) - lo])
    v = np.concatenate(out) if out else np.zeros((0, DIM), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _centroids(opts: Options) -> np.ndarray:
    c = np.random.default_rng([opts.seed, 1 << 30]).standard_normal((opts.topics, DIM)).astype(np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def _topic_p(k: int) -> np.ndarray:
    w = np.array(zipf_weights(k, 0.8))
    return w / w.sum()


# ---------------------------------------------------------------------------------------------- insights


class Row(NamedTuple):
    index: int
    id: str
    content: str
    entities: list[str]
    source: str
    category: str
    importance: int
    created_at: str


def rows(n: int, opts: Options = DEFAULT) -> Iterator[tuple[Row, list[tuple[int, int, str, float, str]]]]:
    """Each insight in creation order with the edges it brings: (from index, to index, type, weight, meta)."""
    from mnemon_core.timeutil import iso

    rng = random.Random(opts.seed)
    vocab = vocabulary(rng)
    vweights = zipf_weights(len(vocab))
    cum_v = list(np.cumsum(vweights))
    entities = entity_pool(opts.seed)
    cum_e = list(np.cumsum(zipf_weights(len(entities))))
    t0 = 1_700_000_000.0
    last_by_source: dict[str, int] = {}
    last_by_entity: dict[str, list[int]] = {}
    lo_w, hi_w = opts.words
    for i in range(n):
        now = iso(t0 + i * 1800)
        words = rng.choices(vocab, cum_weights=cum_v, k=rng.randint(lo_w, hi_w))
        ents = sorted(set(rng.choices(entities, cum_weights=cum_e, k=rng.randint(0, 2))))
        source = "user" if rng.random() < 0.6 else "agent"
        content = " ".join(words) + (" " + " ".join(ents) if ents else "")
        id_ = f"{i:08d}-{rng.getrandbits(64):016x}"
        importance = rng.randint(1, 5)
        category = rng.choice(["fact", "decision", "general", "insight", "preference", "context"])
        edges: list[tuple[int, int, str, float, str]] = []
        prev = last_by_source.get(source)
        if prev is not None:
            edges.append((prev, i, "temporal", 1.0, '{"direction":"precedes","sub_type":"backbone"}'))
            edges.append((i, prev, "temporal", 1.0, '{"direction":"succeeds","sub_type":"backbone"}'))
        for j in range(max(0, i - 10), i):  # proximity: previous 10 within 24 h (all, at 30-min spacing)
            if j != prev:
                h = (i - j) * 0.5
                meta = f'{{"hours_diff":"{h:.2f}","sub_type":"proximity"}}'
                edges.append((j, i, "temporal", 1.0 / (1.0 + h), meta))
                edges.append((i, j, "temporal", 1.0 / (1.0 + h), meta))
        last_by_source[source] = i
        linked = 0
        for e in ents:
            for j in last_by_entity.get(e, [])[-5:]:
                if linked < 50:
                    edges.append((j, i, "entity", 1.0, "{}"))
                    edges.append((i, j, "entity", 1.0, "{}"))
                    linked += 1
            seen = last_by_entity.setdefault(e, [])
            seen.append(i)
            del seen[:-5]
        if i > 20 and rng.random() < 0.3:
            for j in rng.sample(range(max(0, i - 2000), i), k=rng.randint(1, 3)):
                w = round(rng.uniform(0.80, 0.95), 4)
                edges.append((j, i, "semantic", w, "{}"))
                edges.append((i, j, "semantic", w, "{}"))
        if i > 10 and rng.random() < 0.15:
            j = rng.randrange(i - 10, i)
            edges.append((j, i, "causal", round(rng.uniform(0.15, 0.6), 4), "{}"))
        yield Row(i, id_, content, ents, source, category, importance, now), edges


# ---------------------------------------------------------------------------------------------- build


def build(path: Path, n: int, opts: Options = DEFAULT, progress: bool = False) -> dict[str, float]:
    """Write an n-insight store at `path` (which must not exist). Returns timings (seconds)."""
    from mnemon_core.models import Insight
    from mnemon_core.store.sqlite import SQLiteStore
    from mnemon_core.text import token_set

    t_start = time.perf_counter()
    store = SQLiteStore(path)
    store.db.execute("PRAGMA foreign_keys = OFF")  # every edge end is an insight this build wrote
    batch = opts.batch or n
    ids: list[str] = []
    edges: list[tuple[str, str, str, float, str, str]] = []
    t_vec = 0.0

    def flush() -> None:
        store.db.executemany("INSERT OR IGNORE INTO edges VALUES (?,?,?,?,?,?)", edges)
        edges.clear()

    gen = rows(n, opts)
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        with store.transaction():
            for _ in range(lo, hi):
                r, new_edges = next(gen)
                ins = Insight(
                    id=r.id, content=r.content, importance=r.importance, entities=r.entities, source=r.source,
                    created_at=r.created_at, updated_at=r.created_at, stored_at=r.created_at, category=r.category,
                )
                ids.append(r.id)
                store.insert_insight(ins, token_set(" ".join([r.content, *r.entities])))
                edges.extend((ids[a], ids[b], t, w, m, r.created_at) for a, b, t, w, m in new_edges)
                if len(edges) > EDGE_FLUSH:
                    flush()
            flush()
            t = time.perf_counter()
            for i, v in zip(range(lo, hi), vectors(n, opts, lo, hi)):
                store.set_vector(ids[i], v, MODEL)
            t_vec += time.perf_counter() - t
        if progress and (hi // batch) % max(1, n // batch // 20) == 0:
            print(f"  {hi:,}/{n:,} in {time.perf_counter() - t_start:.0f}s", file=sys.stderr, flush=True)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    import resource

    return {
        "build_s": time.perf_counter() - t_start, "vectors_s": t_vec,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # the whole process so far
    }


def store_for(n: int, opts: Options = DEFAULT, name: str = "synth", progress: bool = False) -> Path:
    """The cached store of n insights (built on first use); its data dir is `path.parent.parent.parent`."""
    path = CACHE / f"{name}-{n}-{opts.tag()}" / "data" / "default" / "mnemon.db"
    meta = path.with_suffix(".json")
    if not path.exists() or not meta.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        for p in path.parent.glob("mnemon.*"):
            p.unlink()
        info = build(path, n, opts, progress=progress)
        meta.write_text(json.dumps({"n": n, "options": opts._asdict(), **info}))
        print(f"built {n:,} insights in {info['build_s']:.0f}s: {path}", file=sys.stderr)
    upgrade(path)
    return path


def upgrade(path: Path) -> None:
    """Bring a cached store to this code's schema (its migrations), so benchmarks may open it read-only."""
    from mnemon_core.store.sqlite import SQLiteStore

    SQLiteStore(path).close()


def build_info(path: Path) -> dict:
    return json.loads(path.with_suffix(".json").read_text())


# ---------------------------------------------------------------------------------------------- queries


def queries(n: int, count: int, seed: int, build_seed: int = 7) -> list[tuple[str, int]]:
    """(query text, index of the insight its vector is close to). Words are drawn log-uniformly over the
    vocabulary's frequency ranks 10-3000 (a median word is in ~1 % of insights), 40 % of queries name an
    entity (log-uniform over the pool's ranks), and a third open with a WHY / WHEN / ENTITY cue."""
    rng = random.Random(seed)
    vocab = vocabulary(random.Random(build_seed))  # the generator's own lists, in frequency-rank order
    ents = entity_pool(build_seed)

    def rank(lo: int, hi: int) -> int:
        return min(hi - 1, int(lo * (hi / lo) ** rng.random()))

    out = []
    for _ in range(count):
        words = list(dict.fromkeys(vocab[rank(10, len(vocab))] for _ in range(rng.randint(2, 4))))
        if rng.random() < 0.4:
            words.append(ents[rank(1, len(ents)) - 1])
        out.append((f"{rng.choice(CUES)}{' '.join(words)}", rng.randrange(n)))
    return out


def query_vector(target: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A unit vector with cosine ≈ 0.6 to `target` (a noisy copy)."""
    v = target + rng.standard_normal(DIM).astype(np.float32) * np.float32(1.33 / np.sqrt(DIM))
    return (v / np.linalg.norm(v)).astype(np.float32)  # float32: a float64 query upcasts the whole matrix


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]
