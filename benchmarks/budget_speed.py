"""What a token budget costs a recall: CPU time of `recall --max-tokens N` against the same recall without a
budget, in one process, on a LoCoMo conversation (short turns) and a BEAM chat (long messages), no embedder.

Each question is asked at `--limit 100` without a budget and with each budget, in that order, CPU time per call
(`time.process_time`); the table gives the medians and their ratio to the unbudgeted call. The first pass
over a chat counts each distinct word once (`count_tokens` keeps them per process); the second pass is what a
warm engine does.

    python -m benchmarks.budget_speed
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import beam as B
from benchmarks import locomo as L


def timed(conv: L.Conversation, budgets: Sequence[int], passes: int = 2) -> list[tuple[str, float, float]]:
    """(what, median CPU ms on the last pass, × the unbudgeted call) per budget, the unbudgeted call first."""
    with tempfile.TemporaryDirectory(prefix="mnemon-budget-") as tmp:
        ranker = L.MnemonRanker(conv, Path(tmp), None)
        try:
            for _ in range(passes):
                times: dict[int | None, list[float]] = {b: [] for b in (None, *budgets)}
                for q in conv.questions:
                    for b in times:
                        t0 = time.process_time()
                        ranker.memory.recall(q.question, limit=L.BUDGET_LIMIT, max_tokens=b)
                        times[b].append(1000 * (time.process_time() - t0))
        finally:
            ranker.close()
    base = statistics.median(times[None])
    return [("no budget" if b is None else f"--max-tokens {b:,}", statistics.median(t), statistics.median(t) / base)
            for b, t in times.items()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.budget_speed", description=__doc__.split("\n\n")[0])
    p.add_argument("--conversation", default="conv-26", help="LoCoMo sample id (default %(default)s)")
    p.add_argument("--chat", default="100K-1", help="BEAM chat id (default %(default)s)")
    args = p.parse_args(argv)
    runs = [("LoCoMo " + args.conversation, L.load_conversations(L.DEFAULT_DATA, [args.conversation])[0]),
            ("BEAM " + args.chat, B.load_chats(B.DEFAULT_DATA, [args.chat])[0])]
    lines = ["| data | questions | recall (limit 100) | CPU ms, median | × no budget |",
             "| --- | ---: | --- | ---: | ---: |"]
    for name, conv in runs:
        print(f"{name}: {len(conv.turns)} turns, {len(conv.questions)} questions", file=sys.stderr)
        for what, ms, ratio in timed(conv, L.BUDGETS):
            lines.append(f"| {name} | {len(conv.questions)} | {what} | {ms:.1f} | {ratio:.2f} |")
    given = argv if argv is not None else sys.argv[1:]
    command = "python -m benchmarks.budget_speed" + (" " + " ".join(given)).rstrip()
    print("\n".join(lines) + f"\n\nCommand:\n\n    {command}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
