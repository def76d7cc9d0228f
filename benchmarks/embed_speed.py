"""The default embedder at the speed of its model (issue 38): each figure is a ratio against the model's own time
for the same texts, measured in the same process and run, quiet and with a CPU-bound neighbour process (a
`while True: pass` on one of the two cores).

1. threads for one text: wall and CPU of the model alone on a query and a remember, 1 and 2 OpenMP threads (how
   `embed/local.py` came to leave every call on every core);
2. warm in-process recall at 10k insights: p50 with the default embedder against p50 without one + 1.2 × the
   model's p50 for those queries (target: within);
3. import with vectors (`--vectors now`): insights/s against the model's own batch throughput on the same
   texts with both cores (target ≥ 0.9);
4. a chat draft of `--chat` insights (60,000: a year of chats): the first recall answered after the import
   started (target ≤ 120 s), and the fill of its vectors against the model's own time for them (target
   ≤ 1.1; measured on the first `--fill` of them, the whole at 60,000 takes the machine an hour);
5. `remember` through the resident engine: the round trip against the model's time for the content
   (target ≤ model + 15 ms).

    nice -n 10 python -m benchmarks.embed_speed                 # prints the Markdown section
    nice -n 10 python -m benchmarks.embed_speed --write         # also replaces its section in RESULTS.md

Texts are LoCoMo dev turns and questions (`/work/shared/data/locomo-dev.json`), numbered apart where they repeat.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.locomo import load_conversations  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
SECTION = "## The default embedder at the speed of its model (issue 38)"
NEIGHBOUR = "while True: pass"


@contextlib.contextmanager
def neighbour(on: bool) -> Iterator[None]:
    """A CPU-bound process beside the measurement (one core's worth), or nothing."""
    proc = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if on else None
    try:
        time.sleep(0.5 if on else 0)
        yield
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()


def texts() -> tuple[list[tuple[str, str, str]], list[str]]:
    """(content, speaker, created_at) of every LoCoMo dev turn, and every question."""
    convs = load_conversations(DATA)
    turns = [(t.content, t.speaker, t.created_at) for c in convs for t in c.turns]
    questions = list(dict.fromkeys(q.question for c in convs for q in c.questions))
    return turns, questions


def numbered(turns: list[tuple[str, str, str]], n: int) -> list[tuple[str, str, str]]:
    """n turns, cycling the corpus; a repeat is numbered apart (a new text, as a year of chats would be)."""
    out = []
    for i in range(n):
        content, speaker, at = turns[i % len(turns)]
        lap = i // len(turns)
        out.append((f"{content} (#{lap})" if lap else content, speaker, at))
    return out


def chat_draft(rows: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {"schema_version": "1", "source": "chat-export", "insights": [
        {"content": c, "source": s, "created_at": at, "session": f"s{i // 20}"} for i, (c, s, at) in enumerate(rows)]}


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def model_one(text: str, *, query: bool) -> tuple[float, float]:
    """Wall and CPU seconds of the model alone on one text (its call as the embedder makes it)."""
    from mnemon_core.embed.local import LocalEmbedder

    return timed(lambda: LocalEmbedder._call([text], query=query))[:2]


def model_batch(batch: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of the model alone on a batch: one call, every core."""
    from mnemon_core.embed import local

    def run() -> Any:
        with local._model_lock:
            return local._load().passage(batch)

    return timed(run)[:2]


# ---------------------------------------------------------------------------------------------- 1. threads


def threads_table(questions: list[str], turns: list[str], busy: bool, calls: int) -> list[str]:
    from mnemon_core.embed import local

    model = local._load()
    set_threads = model._lib.omp_set_num_threads  # OpenMP's count is the calling thread's
    rows = []
    for kind, pool, query in (("query", questions, True), ("remember", turns, False)):
        for threads in (1, 2):
            walls, cpus = [], []
            for t in pool[:calls]:
                set_threads(threads)
                w, c, _ = timed(lambda: model.query([t]) if query else model.passage([t]))
                walls.append(w)
                cpus.append(c)
            rows.append(f"| {'busy' if busy else 'quiet'} | {kind} | {threads} | {p50(walls) * 1000:.1f} | "
                        f"{statistics.mean(cpus) * 1000:.1f} |")
    set_threads(len(os.sched_getaffinity(0)))  # back to OpenMP's default for the rest of the run
    return rows


# ---------------------------------------------------------------------------------------------- 2. recall at 10k


def store_10k(tmp: Path, n: int) -> Path:
    """A store of n insights (import_speed.py's synthetic draft) with a unit vector each under the local model's
    name (random: the scan's cost does not depend on what the vectors say), no embedding spent on building it."""
    import numpy as np

    from benchmarks.import_speed import make_draft
    from mnemon_core import Memory
    from mnemon_core.embed.local import E5_DIMENSIONS, E5_NAME
    from mnemon_core.graph import fold_index

    data = tmp / "recall10k"
    with Memory(data_dir=data, embedder=None) as mem:
        mem.import_draft(make_draft(n))
        rng = np.random.default_rng(7)
        ids = [i.id for i in mem.store.iter_active()]
        vecs = rng.standard_normal((len(ids), E5_DIMENSIONS)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        with mem.store.transaction():
            for id_, v in zip(ids, vecs):
                mem.store.set_vector(id_, v, E5_NAME)
        fold_index(mem.store, force=True)
    return data


def recall_rows(data: Path, questions: list[str], busy: bool) -> tuple[list[str], bool]:
    from mnemon_core import Memory

    local, none = Memory(data_dir=data, embedder="local"), Memory(data_dir=data, embedder=None)
    for m in (local, none):
        m.recall("warm up the memo and the model")
    t_local, t_none, t_model = [], [], []  # (wall, CPU) per query
    for q in questions:
        t_model.append(model_one(q, query=True))
        t_none.append(timed(lambda: none.recall(q))[:2])
        t_local.append(timed(lambda: local.recall(q))[:2])
    local.close()
    none.close()
    (wn, cn), (wm, cm), (wl, cl) = ((p50([x[0] for x in t]), p50([x[1] for x in t]))
                                    for t in (t_none, t_model, t_local))
    bound = wn + 1.2 * wm
    met = wl <= bound
    return [f"| {'busy' if busy else 'quiet'} | {len(questions)} | {wn * 1000:.1f} | {wm * 1000:.1f} | "
            f"{wl * 1000:.1f} | {bound * 1000:.1f} | {(wl - wn) / wm:.2f} | {'met' if met else 'not met'} | "
            f"{cn * 1000:.1f} | {cm * 1000:.1f} | {cl * 1000:.1f} | {(cl - cn) / cm:.2f} |"], met


# ---------------------------------------------------------------------------------------------- 3. import


def import_rows(tmp: Path, rows: list[tuple[str, str, str]], busy: bool, rounds: int = 4) -> list[str]:
    """In rounds (the model on a round's texts, then the import of those texts into the same store), so a load
    that drifts weighs on both sides alike; wall and CPU (every thread of this process)."""
    from mnemon_core import Memory

    model_w = model_c = import_w = import_c = 0.0
    per = -(-len(rows) // rounds)
    with Memory(data_dir=tmp / f"import-{busy}", embedder="local") as mem:
        mem.embedder.embed("load the model")
        for r in range(rounds):
            part = rows[r * per : (r + 1) * per]
            w, c = model_batch([t for t, _, _ in part])
            model_w, model_c = model_w + w, model_c + c
            w, c, got = timed(lambda: mem.import_draft(chat_draft(part), vectors="now"))
            assert got.imported == len(part) and not got.vectors_pending
            import_w, import_c = import_w + w, import_c + c
    n = len(rows)
    ratio, cpu_ratio = model_w / import_w, model_c / import_c
    return [f"| {'busy' if busy else 'quiet'} | {n} | {n / model_w:.1f} | {n / import_w:.1f} | {ratio:.2f} | "
            f"{'met' if ratio >= 0.9 else 'not met'} | {n / model_c:.1f} | {n / import_c:.1f} | {cpu_ratio:.2f} |"]


# ---------------------------------------------------------------------------------------------- 4. a year of chats


def chat_rows(tmp: Path, rows: list[tuple[str, str, str]], fill: int, question: str, busy: bool) -> list[str]:
    from mnemon_core import Memory
    from mnemon_core.write.importer import IMPORT_BATCH

    data = tmp / f"chat-{busy}"
    path = tmp / "chat.json"
    path.write_text(json.dumps(chat_draft(rows)), encoding="utf-8")
    env = {**os.environ, "MNEMON_DATA_DIR": str(data), "MNEMON_DAEMON": "off", "MNEMON_EMBEDDER": "local",
           "PYTHONPATH": str(ROOT)}
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    imp = subprocess.run([sys.executable, "-m", "mnemon_core", "import", str(path)], env=env, capture_output=True,
                         text=True, check=True)
    imported_s = time.perf_counter() - start
    rec = subprocess.run([sys.executable, "-m", "mnemon_core", "recall", question], env=env, capture_output=True,
                         text=True, check=True)
    first_recall_s = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime  # the import's and the recall's
    pending = json.loads(imp.stdout).get("vectors_pending", 0)
    assert json.loads(rec.stdout)["results"], rec.stderr
    batches = max(1, fill // IMPORT_BATCH)
    sample = [c for c, _, _ in rows[: batches * IMPORT_BATCH]]
    t_model, c_model = model_batch(sample)
    with Memory(data_dir=data, embedder="local") as mem:
        mem.embedder.embed("load the model")  # loaded before the clock starts, as t_model's was
        t_fill, c_fill, written = timed(lambda: mem.fill_vectors(batches=batches))
    ratio = t_fill / t_model
    whole = t_fill / written * pending if written else float("nan")
    return [f"| {'busy' if busy else 'quiet'} | {len(rows):,} | {pending:,} | {imported_s:.1f} | "
            f"{first_recall_s:.1f} | {cpu_s:.1f} | {'met' if first_recall_s <= 120 else 'not met'} | {written:,} | "
            f"{t_model:.1f} | {t_fill:.1f} | {ratio:.2f} | {'met' if ratio <= 1.1 else 'not met'} | "
            f"{c_fill / c_model:.2f} | {whole / 60:.0f} min |"]


# ---------------------------------------------------------------------------------------------- 5. remember


def engine_rows(tmp: Path, contents: list[str], busy: bool) -> tuple[list[str], bool]:
    from mnemon_core.daemon import client, resident

    data = tmp / f"engine-{busy}"
    data.mkdir(mode=0o700)
    env = {**os.environ, "MNEMON_DATA_DIR": str(data), "MNEMON_EMBEDDER": "local", "MNEMON_DAEMON": "on",
           "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "mnemon_core", "remember", "the engine starts after this"], env=env,
                   check=True, capture_output=True)
    try:
        deadline = time.monotonic() + 120
        while resident.ask(data, {"op": "status"}) is None:
            assert time.monotonic() < deadline, "the engine did not start"
            time.sleep(0.1)
        sent = {k: v for k, v in env.items() if k in client.ENGINE_VARIABLES}
        t_eng, t_model = [], []
        for n, content in enumerate(contents):
            t_model.append(model_one(content + " ", query=False)[0])  # not the same text: no cache either side
            w, _, reply = timed(lambda: resident.ask(data, {"op": "run", "id": f"{n:032x}", "stdin": None,
                                                            "argv": ["remember", content], "env": sent}))
            assert reply and reply["code"] == 0, reply
            t_eng.append(w)
    finally:
        subprocess.run([sys.executable, "-m", "mnemon_core", "daemon", "stop"], env=env, capture_output=True)
    over = p50(t_eng) - p50(t_model)
    met = over <= 0.015
    return [f"| {'busy' if busy else 'quiet'} | {len(contents)} | {p50(t_model) * 1000:.1f} | "
            f"{p50(t_eng) * 1000:.1f} | {over * 1000:.1f} | {'met' if met else 'not met'} |"], met


# ---------------------------------------------------------------------------------------------- report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help=f'replace "{SECTION}" in RESULTS.md')
    ap.add_argument("--recall-n", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--import-n", type=int, default=1_000)
    ap.add_argument("--chat", type=int, default=60_000)
    ap.add_argument("--fill", type=int, default=3_000, help="vectors of the chat draft filled and timed")
    ap.add_argument("--remembers", type=int, default=40)
    ap.add_argument("--conditions", default="quiet,busy")
    ap.add_argument("--parts", default="threads,recall,import,chat,remember")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    turns, questions = texts()
    contents = [c for c, _, _ in turns]
    out: dict[str, list[str]] = {p: [] for p in parts}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="embed-speed-") as t:
        tmp = Path(t)
        recall_data = store_10k(tmp, args.recall_n) if "recall" in parts else None
        for cond in args.conditions.split(","):
            busy = cond == "busy"
            with neighbour(busy):
                if "threads" in parts:
                    out["threads"] += threads_table(questions[200:], contents[500:], busy, 40)
                if "recall" in parts:
                    out["recall"] += recall_rows(recall_data, questions[: args.queries], busy)[0]
                if "import" in parts:
                    start = 1000 if busy else 0  # other texts: the embedder's cache never answers
                    out["import"] += import_rows(tmp, turns[start : start + args.import_n], busy)
                if "chat" in parts:
                    out["chat"] += chat_rows(tmp, numbered(turns, args.chat), args.fill, questions[0], busy)
                if "remember" in parts:
                    first = 100 if busy else 1500
                    out["remember"] += engine_rows(tmp, contents[first : first + args.remembers], busy)[0]
    text = report(out, args, load)
    print(text)
    if args.write:
        path = ROOT / "benchmarks" / "RESULTS.md"
        body = path.read_text(encoding="utf-8")
        pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
        found = pattern.search(body)
        body = pattern.sub(lambda _: text + "\n", body) if found else body.rstrip() + "\n\n" + text + "\n"
        path.write_text(body, encoding="utf-8")


def report(out: dict[str, list[str]], args: argparse.Namespace, load: tuple[float, float, float]) -> str:
    lines = [SECTION, "", f"Machine: {os.cpu_count()} cores shared with other jobs (load average "
             f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the start). \"busy\": a CPU-bound neighbour "
             f"process (`{NEIGHBOUR}`) runs beside the measurement.", "",
             f"    nice -n 10 python -m benchmarks.embed_speed --conditions {args.conditions} --parts "
             f"{','.join(sorted(out))} --chat {args.chat} --fill {args.fill}", ""]
    if out.get("threads"):
        lines += ["One text, the model alone (p50 wall, mean CPU, ms), by OpenMP threads (passive wait):", "",
                  "| machine | text | threads | wall p50 | CPU mean |", "| --- | --- | ---: | ---: | ---: |",
                  *out["threads"], ""]
    if out.get("recall"):
        lines += [f"Warm in-process recall at {args.recall_n:,} insights (ms; target: local ≤ none + 1.2 × model):",
                  "", "| machine | queries | none p50 | model p50 | local p50 | bound | (local − none) / model | | "
                  "CPU: none | model | local | (local − none) / model |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |", *out["recall"],
                  ""]
    if out.get("import"):
        lines += ["Import with vectors (`--vectors now`) against the model's own batch throughput on the same texts,"
                  " both cores, in four rounds (texts per wall s, target ≥ 0.9; and per CPU s of the process):", "",
                  "| machine | texts | model | import | ratio | | model / CPU s | import / CPU s | CPU ratio |",
                  "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |", *out["import"], ""]
    if out.get("chat"):
        lines += ["A chat draft (LoCoMo turns, cycled and numbered): import (auto: its vectors filled in behind), the "
                  "first recall from a new process (s after the import started; target ≤ 120), then the fill of the "
                  "first vectors against the model's own time for them (s; target ≤ 1.1):", "",
                  "| machine | insights | pending | imported at | first recall at | their CPU s | | filled | model | "
                  "fill | ratio | | CPU ratio | all vectors (est.) |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
                  *out["chat"], ""]
    if out.get("remember"):
        lines += ["`remember` through the resident engine (round trip from this process) against the model's time "
                  "for the content (ms; target: ≤ model + 15):", "",
                  "| machine | calls | model p50 | engine p50 | over the model | |",
                  "| --- | ---: | ---: | ---: | ---: | --- |", *out["remember"], ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    main()
