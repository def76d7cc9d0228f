"""CLI speed as an agent pays it: one `mnemon` process per call, beside the original Go binary (v0.1.15,
`shared/anchors/`) on the same store contents, in the same run, interleaved call by call.

For each size (1k, 10k insights by default) one import draft (synth.py's generator: Zipf words, entities, two
sources; importance 4 so the Go binary's fixed 1,000-insight auto-prune never fires) is imported by each
implementation into its own data dir: mnemon with the `none` embedder and with the `local` one (its vectors
computed at import), Go with no embedding server. Then, per call kind, each implementation is run `--repeat`
times (default 9), in turns, and the medians of wall time and of CPU time are reported (the child's, plus for a
call served by the engine what the engine spent on it):

- `recall` warm: mnemon with its resident engine running (started and warmed first), `MNEMON_DAEMON` unset;
- `remember` warm: distinct texts per call, the engine running;
- with no engine running (each stopped first and its process gone), in pairs: `recall` cold, in-process
  (`MNEMON_DAEMON=off`, today's path), and the first call of a fresh engine (the call that starts it; it runs
  in-process, and the engine it starts is let finish its warm-up before the next timed call);
- `--version`, `--help` against `python -c pass`;
- with `--first-calls K`: the first K calls on a data dir with no engine, back to back, engine on against off.

The engine's resident memory (VmRSS) is read at the end of each size.

    python benchmarks/cli_speed.py                    # 1k and 10k; prints the Markdown for RESULTS.md
    python benchmarks/cli_speed.py --sizes 1000 --repeat 7
    python benchmarks/cli_speed.py --sizes conv-26 --repeat 15 --first-calls 4   # LoCoMo's conv-26 (419 turns)
    python benchmarks/cli_speed.py --sizes '' --repeat 15   # start-up only
    python benchmarks/cli_speed.py --keep /tmp/cli-speed-stores  # stores built once, copied for each run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # the benchmarks' one synthetic generator (same directory)

GO = ROOT.parent / "shared" / "anchors" / "mnemon-go-0.1.15"
# The installed console script, as an agent calls it (else the module).
_SCRIPT = Path(sys.executable).parent / "mnemon"
MNEMON = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "mnemon_core"]
QUERIES = 5  # distinct queries, cycled
GO_IMPORTANCE = 4
LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev.json"


def corpus(size: str) -> tuple[str, dict, list[str]]:
    """(label, import draft, queries) of a size: a number of synthetic insights, or a LoCoMo conversation
    (`conv-26`: one insight per turn, its first QUERIES questions)."""
    if size.startswith("conv-"):
        import locomo

        conv = locomo.load_conversations(LOCOMO, [size])[0]
        d = locomo.build_draft(conv)
        for item in d["insights"]:
            item["importance"] = GO_IMPORTANCE
        return f"{size} ({len(conv.turns)} turns)", d, [q.question for q in conv.questions[:QUERIES]]
    n = int(size)
    return f"{n:,}", draft(n), [q for q, _ in synth.queries(n, QUERIES, seed=n)]


def draft(n: int) -> dict:
    items = []
    for row, _edges in synth.rows(n):
        items.append({"content": row.content, "entities": row.entities, "source": row.source,
                      "created_at": row.created_at, "importance": GO_IMPORTANCE, "category": row.category})
    return {"schema_version": "1", "source": "bench", "insights": items}


def env_for(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
    env.update({"MNEMON_DATA_DIR": str(data_dir), "MNEMON_MAX_INSIGHTS": "0", "PYTHONPATH": str(ROOT),
                "MNEMON_EMBED_ENDPOINT": "http://127.0.0.1:1", **extra})
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms of the child) of one run, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
    return wall, cpu


class Impl:
    def __init__(self, name: str, cmd: list[str], data_dir: Path, env: dict[str, str]) -> None:
        self.name, self.cmd, self.data_dir, self.env = name, cmd, data_dir, env

    def run(self, *args: str, env: dict[str, str] | None = None) -> tuple[float, float]:
        return timed([*self.cmd, *args], env or self.env)

    def run_warm(self, *args: str) -> tuple[float, float, float]:
        """A call served by the running engine: (wall, the client's CPU, the engine's CPU for it). The engine's
        is read in clock ticks (10 ms), so it is averaged over the calls (`cpu`), not taken per call."""
        before = engine_cpu_ms(self.data_dir)
        wall, cpu = self.run(*args)
        after = engine_cpu_ms(self.data_dir)
        return wall, cpu, (after - before if before is not None and after is not None else 0.0)


def build(tmp: Path, n: str, d: dict, keep: Path | None = None) -> list[Impl]:
    """Each implementation's store of the same n-insight draft, in `tmp`. With `keep`, the stores are built
    once under `keep` and copied for each run (the 10k local import takes a quarter of an hour)."""
    built = (keep or tmp) / f"stores-{n}"
    if not (built / "done").exists():
        shutil.rmtree(built, ignore_errors=True)
        built.mkdir(parents=True)
        path = built / "draft.json"
        path.write_text(json.dumps(d), encoding="utf-8")
        for name, emb in (("mnemon none", "none"), ("mnemon local", "local")):
            env = env_for(built / name.replace(" ", "-"), MNEMON_EMBEDDER=emb)
            t = time.perf_counter()
            subprocess.run([*MNEMON, "import", str(path), "--no-diff", "--vectors", "now"],
                           env={**env, "MNEMON_DAEMON": "off"}, check=True, capture_output=True)
            print(f"{name}: imported {n} in {time.perf_counter() - t:.0f}s", file=sys.stderr)
        if GO.exists():
            subprocess.run([str(GO), "--data-dir", str(built / "go"), "import", str(path), "--no-diff"],
                           env=env_for(built / "go"), check=True, capture_output=True)
        (built / "done").touch()
    here = tmp / f"run-{n}"
    if keep is not None:
        shutil.copytree(built, here)
    else:
        here = built
    impls = [Impl(name, MNEMON, here / name.replace(" ", "-"),
                  env_for(here / name.replace(" ", "-"), MNEMON_EMBEDDER=emb))
             for name, emb in (("mnemon none", "none"), ("mnemon local", "local"))]
    if GO.exists():
        impls.append(Impl("go v0.1.15", [str(GO), "--data-dir", str(here / "go")], here / "go", env_for(here / "go")))
    return impls


def engine_state(data_dir: Path) -> Path | None:
    """The running engine's state file, `engine-<key>.json` (one engine per data dir here)."""
    return next(iter(sorted(data_dir.glob("engine-*.json"))), None)


def engine_pid(data_dir: Path) -> int | None:
    try:
        return int(json.loads(engine_state(data_dir).read_text())["pid"])  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError, KeyError):
        return None


def engine_rss_kb(data_dir: Path) -> int | None:
    try:
        for line in Path(f"/proc/{engine_pid(data_dir)}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def engine_cpu_ms(data_dir: Path) -> float | None:
    """The engine's user + system CPU so far (0 for Go, which has none)."""
    if engine_state(data_dir) is None:
        return 0.0
    try:  # fields after the command name, which may hold spaces: utime, stime are the 12th and 13th
        fields = Path(f"/proc/{engine_pid(data_dir)}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def warmed(impl: Impl, timeout: float = 120.0) -> None:
    """Wait until the engine a first call started has finished its warm-up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = subprocess.run([*impl.cmd, "daemon", "status"], env=impl.env, capture_output=True, text=True)
        if p.returncode == 0 and json.loads(p.stdout).get("warm"):
            return
        time.sleep(0.1)


def stop(impl: Impl) -> None:
    """Stop the engine and wait until its process is gone (a dying engine closing its store would compete with
    the next call, which an engine that exited when idle long ago does not)."""
    if not impl.name.startswith("mnemon"):
        return
    pid = engine_pid(impl.data_dir)
    subprocess.run([*impl.cmd, "daemon", "stop"], env=impl.env, capture_output=True)
    deadline = time.monotonic() + 30
    while pid is not None and time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return
        except OSError:
            return
        time.sleep(0.01)


def measure(impls: list[Impl], qs: list[str], repeat: int) -> dict:
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}

    def record(kind: str, name: str, value: tuple[float, float]) -> None:
        results.setdefault(kind, {}).setdefault(name, []).append(value)

    mn = [i for i in impls if i.name.startswith("mnemon")]
    for impl in mn:  # engines up and warm before the warm rounds
        impl.run("daemon", "start")
        for q in qs:
            impl.run("recall", q)
    for r in range(repeat):
        q = qs[r % len(qs)]
        for impl in impls if r % 2 == 0 else impls[::-1]:
            record("recall warm", impl.name, impl.run_warm("recall", q))
            text = f"benchmark note {r} about {q} from {impl.name}"
            record("remember warm", impl.name, impl.run_warm("remember", text, "--imp", str(GO_IMPORTANCE)))
    rss = {impl.name: engine_rss_kb(impl.data_dir) for impl in mn}
    for r in range(repeat):  # no engine running: today's cold call, and the first call of a fresh engine
        for impl in mn:
            stop(impl)
            q = qs[r % len(qs)]
            record("recall cold (in-process, no engine)", impl.name,
                   impl.run("recall", q, env={**impl.env, "MNEMON_DAEMON": "off"}))
            record("first call of a fresh engine", impl.name, impl.run("recall", q))
            warmed(impl)  # the engine it started warms up now: let it finish before the next timed call
        for impl in impls:
            if not impl.name.startswith("mnemon"):  # Go has no engine: every call of it is this one
                record("recall cold (in-process, no engine)", impl.name, impl.run("recall", qs[r % len(qs)]))
    for impl in mn:
        stop(impl)
    return {"results": results, "rss_kb": rss}


def first_calls(impls: list[Impl], qs: list[str], repeat: int, k: int) -> dict:
    """The first `k` calls on a data dir with no engine, back to back as an agent's turns come: with the engine
    on (the first starts it, the next run in-process while it warms up, then it serves) and with
    MNEMON_DAEMON=off, the two sequences alternating. Wall time is what the agent waits; CPU the call's own."""
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for r in range(repeat):
        for impl in (i for i in impls if i.name.startswith("mnemon")):
            for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
                stop(impl)
                env = impl.env if mode == "on" else {**impl.env, "MNEMON_DAEMON": "off"}
                for i in range(k):
                    value = impl.run("recall", qs[(r + i) % len(qs)], env=env)
                    results.setdefault(f"call {i + 1} of {k}, engine {mode}", {}).setdefault(impl.name, []).append(value)
                if mode == "on":
                    warmed(impl)
        for impl in impls:
            stop(impl)
    return results


def startup(repeat: int, tmp: Path) -> dict[str, list[tuple[float, float]]]:
    env = env_for(tmp / "startup")
    out: dict[str, list[tuple[float, float]]] = {}
    for _ in range(repeat):
        for name, cmd in (("python -c pass", [sys.executable, "-c", "pass"]), ("mnemon --version", [*MNEMON, "--version"]),
                          ("mnemon --help", [*MNEMON, "--help"]), ("go --version", [str(GO), "--version"])):
            if name.startswith("go") and not GO.exists():
                continue
            out.setdefault(name, []).append(timed(cmd, env))
    return out


def med(values: list[tuple[float, ...]], i: int) -> float:
    return statistics.median(v[i] for v in values)


def cpu(values: list[tuple[float, ...]]) -> float:
    """The CPU p50 of a call: the child's median, plus the engine's mean for a served call."""
    return med(values, 1) + (statistics.mean(v[2] for v in values) if len(values[0]) > 2 else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--keep", type=Path, help="build the stores once in this directory and reuse them")
    ap.add_argument("--first-calls", type=int, default=0, metavar="K",
                    help="also time the first K calls on a data dir with no engine, engine on against off")
    ap.add_argument("--first-repeat", type=int, default=5, help="rounds of --first-calls (each is K calls twice)")
    a = ap.parse_args()
    # Byte-compiled as `pip install` leaves a package (an editable install under PYTHONDONTWRITEBYTECODE would
    # otherwise compile every module on every call).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mnemon_core")], check=True,
                   capture_output=True)
    load = [os.getloadavg()[0]]
    tmp = Path(tempfile.mkdtemp(prefix="mnemon-cli-speed-"))
    try:
        print(f"load average (1 min) at start: {load[0]:.1f}")
        print("\n| insights | call | implementation | wall p50 | CPU p50 | wall / Go's | CPU / Go's |")
        print("| ---: | --- | --- | ---: | ---: | ---: | ---: |")
        for size in (s for s in a.sizes.split(",") if s):
            n, d, qs = corpus(size)
            impls = build(tmp, size, d, a.keep)
            got = measure(impls, qs, a.repeat)
            for kind, by in got["results"].items():
                go = by.get("go v0.1.15")
                for name, values in by.items():
                    ratio = f"{med(values, 0) / med(go, 0):.2f} | {cpu(values) / cpu(go):.2f}" if go else " |"
                    print(f"| {n} | {kind} | {name} | {med(values, 0):.0f} ms | {cpu(values):.0f} ms | {ratio} |")
            for name, kb in got["rss_kb"].items():
                print(f"| {n} | engine resident memory | {name} | {kb / 1024:.0f} MiB | | | |" if kb else "")
            if a.first_calls:
                firsts = first_calls(impls, qs, a.first_repeat, a.first_calls)
                print("\n| insights | call | implementation | wall p50 | CPU p50 | wall / engine off |")
                print("| ---: | --- | --- | ---: | ---: | ---: |")
                for kind, by in firsts.items():
                    for name, values in by.items():
                        off = firsts[kind.replace("engine on", "engine off")][name]
                        print(f"| {n} | {kind} | {name} | {med(values, 0):.0f} ms | {med(values, 1):.0f} ms | "
                              f"{med(values, 0) / med(off, 0):.2f} |")
                for name in firsts[f"call 1 of {a.first_calls}, engine on"]:
                    total = {m: statistics.median(sum(firsts[f"call {i + 1} of {a.first_calls}, engine {m}"][name][r][0]
                                                      for i in range(a.first_calls)) for r in range(a.first_repeat))
                             for m in ("on", "off")}
                    print(f"| {n} | all {a.first_calls} calls (median of the sums) | {name} | {total['on']:.0f} ms | | "
                          f"{total['on'] / total['off']:.2f} |")
        su = startup(a.repeat, tmp)
        base, base_cpu = med(su["python -c pass"], 0), med(su["python -c pass"], 1)
        print("\n| call | wall p50 | CPU p50 | wall − python -c pass | CPU − python -c pass |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, values in su.items():
            print(f"| {name} | {med(values, 0):.0f} ms | {med(values, 1):.0f} ms | {med(values, 0) - base:+.0f} ms | "
                  f"{med(values, 1) - base_cpu:+.1f} ms |")
        print(f"\nload average (1 min) at the end: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
