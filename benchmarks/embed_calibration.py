"""Calibrate an embedder's cosine onto the spec's scale, and measure the local embedder's speed.

The spec's cosine rules were set for nomic-embed-text: semantic auto-link at >= 0.80, review candidates in
[0.40, 0.80), vector anchors at > 0.1. multilingual-e5 compresses cosines (unrelated memories score about 0.8),
so each embedder carries a `Calibration(low, high)`: calibrated = clip((raw - low) / (high - low), -1, 1).

This script embeds memory-like sentence pairs in four groups and asks of each group what the rules mean:
  paraphrase, translation  -> the same memory said again: auto-linked (calibrated >= 0.80)
  same-topic               -> a different fact about the same subject: a review candidate, [0.40, 0.80)
  unrelated                -> below review (< 0.40), never auto-linked
It prints raw and calibrated distributions, the rates under the embedder's current calibration, and the
(low, high) fitted from the pairs (see `fit`).

    /work/venv/bin/python benchmarks/embed_calibration.py            # local e5 (default)
    /work/venv/bin/python benchmarks/embed_calibration.py --markdown # also the RESULTS.md tables
    MNEMON_EMBEDDER=ollama /work/venv/bin/python benchmarks/embed_calibration.py   # any configured embedder
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mnemon_core.config import Settings
from mnemon_core.embed import BaseEmbedder, Calibration, Embedder, get_embedder

AUTO_LINK = 0.80  # spec: semantic auto-link
REVIEW = 0.40  # spec: review candidates from here up to AUTO_LINK
ANCHOR = 0.1  # spec: vector anchors need cosine > 0.1

PARAPHRASE = [
    ("The user prefers dark mode in every editor.", "In all editors, the user likes to use a dark theme."),
    ("We chose Qdrant because its payload filtering is fast.", "Qdrant was picked for its fast filtering on payloads."),
    ("Deployments to production happen every Friday afternoon.", "Production releases go out on Friday afternoons."),
    ("Alice is allergic to peanuts.", "Alice has a peanut allergy."),
    ("The API rate limit is 100 requests per minute per key.", "Each key may make at most 100 API calls a minute."),
    ("The team switched from Jenkins to GitHub Actions for CI.", "CI moved off Jenkins and onto GitHub Actions."),
    ("Bob's birthday is on March 3rd.", "Bob was born on the third of March."),
    ("项目使用 PostgreSQL 作为主数据库。", "这个项目的主数据库是 PostgreSQL。"),
    ("用户喜欢简洁的回答，不要太长。", "用户偏好简短、不啰嗦的回复。"),
    ("会议改到每周二上午十点。", "每周例会调整为周二早上十点举行。"),
]

TRANSLATION = [
    ("The user prefers tea over coffee in the morning.", "用户早上更喜欢喝茶而不是咖啡。"),
    ("The staging server runs out of disk space every week.", "测试服务器每周都会磁盘空间不足。"),
    ("We decided to write the backend in Go.", "我们决定用 Go 编写后端。"),
    ("The user's daughter starts school in September.", "用户的女儿九月份开始上学。"),
    ("Never commit secrets to the repository.", "永远不要把密钥提交到代码仓库。"),
    ("The database backup runs every night at 2 a.m.", "数据库备份每天凌晨两点运行。"),
    ("The user is learning Japanese for a trip to Tokyo.", "用户正在为去东京旅行学习日语。"),
    ("Login fails when the token has expired.", "令牌过期时登录会失败。"),
    ("The user lives in Berlin and works remotely.", "用户住在柏林，远程工作。"),
    ("Use tabs, not spaces, in the Makefile.", "Makefile 里要用制表符，不要用空格。"),
]

SAME_TOPIC = [
    ("The user prefers dark mode in every editor.", "The user's editor font size is 14 points."),
    ("We chose Qdrant because its payload filtering is fast.", "The Qdrant collection stores 384-dimensional vectors."),
    ("Alice is allergic to peanuts.", "Alice is vegetarian and avoids all meat."),
    (
        "Deployments to production happen every Friday afternoon.",
        "A failed deployment is rolled back with one command.",
    ),
    ("We decided to write the backend in Go.", "The Go service exposes a gRPC API on port 9000."),
    ("The user runs every morning before work.", "The user is training for a half marathon in May."),
    ("数据库备份每天凌晨两点运行。", "备份文件保留三十天后自动删除。"),
    ("The user's cat is named Miso.", "The user takes the cat to the vet every spring."),
    ("Login fails when the token has expired.", "Access tokens are valid for fifteen minutes."),
    ("The user is learning Japanese for a trip to Tokyo.", "The user has booked a hotel in Shinjuku for April."),
]

UNRELATED = [
    ("The user prefers dark mode in every editor.", "Bob's birthday is on March 3rd."),
    ("We chose Qdrant because its payload filtering is fast.", "Alice is allergic to peanuts."),
    ("Deployments to production happen every Friday afternoon.", "The user is learning Japanese for a trip to Tokyo."),
    ("The API rate limit is 100 requests per minute per key.", "The user's cat is named Miso."),
    ("The user runs every morning before work.", "Never commit secrets to the repository."),
    ("The team switched from Jenkins to GitHub Actions for CI.", "The user lives in Berlin and works remotely."),
    ("The staging server runs out of disk space every week.", "The user prefers tea over coffee in the morning."),
    ("Use tabs, not spaces, in the Makefile.", "The user's daughter starts school in September."),
    ("The database backup runs every night at 2 a.m.", "Alice is vegetarian and avoids all meat."),
    ("Login fails when the token has expired.", "The user is training for a half marathon in May."),
    ("项目使用 PostgreSQL 作为主数据库。", "用户喜欢简洁的回答，不要太长。"),
    ("会议改到每周二上午十点。", "用户的女儿九月份开始上学。"),
    ("The user prefers tea over coffee in the morning.", "令牌过期时登录会失败。"),
    ("We decided to write the backend in Go.", "用户住在柏林，远程工作。"),
    ("The Qdrant collection stores 384-dimensional vectors.", "The user takes the cat to the vet every spring."),
    ("The user has booked a hotel in Shinjuku for April.", "A failed deployment is rolled back with one command."),
    ("Access tokens are valid for fifteen minutes.", "The user's editor font size is 14 points."),
    ("The Go service exposes a gRPC API on port 9000.", "Alice has a peanut allergy."),
    ("Bob was born on the third of March.", "CI moved off Jenkins and onto GitHub Actions."),
    ("备份文件保留三十天后自动删除。", "用户正在为去东京旅行学习日语。"),
    ("The user wants weekly summaries sent on Monday mornings.", "The printer on the third floor is broken."),
    ("The frontend uses React with TypeScript.", "The user's mother is visiting in December."),
    ("The user dislikes long meetings without an agenda.", "Redis is used as a cache for session data."),
    ("The user's favourite band is Radiohead.", "Unit tests must pass before merging a pull request."),
    ("The office wifi password changes every quarter.", "The user is saving money to buy a house."),
    ("Error logs are shipped to Elasticsearch.", "The user plays tennis on Sunday mornings."),
    ("The user speaks French and Spanish fluently.", "The invoice service retries failed payments three times."),
    ("The user's laptop is a 2021 MacBook Pro.", "Grandma's apple pie recipe uses cinnamon and nutmeg."),
    ("用户每天晚上十一点前睡觉。", "The Kubernetes cluster has three worker nodes."),
    ("The quarterly report is due on the fifteenth.", "The user keeps a vegetable garden on the balcony."),
]

# Not used by `fit`: a check of the fitted calibration on pairs it has not seen.
HELD_OUT_PARAPHRASE = [
    ("The user's dog is called Rex.", "Rex is the name of the user's dog."),
    ("The user prefers window seats on flights.", "On planes, the user always asks for a seat by the window."),
    ("用户每周五去游泳。", "用户每个星期五都会去游泳。"),
    (
        "Chose SQLite for the embedded store because it needs no server.",
        "SQLite was chosen as the embedded store since it runs without a server.",
    ),
]
HELD_OUT_UNRELATED = [
    ("The user's dog is called Rex.", "The production database runs on PostgreSQL 16."),
    ("The user prefers window seats on flights.", "Our staging cluster runs Kubernetes 1.29."),
    ("用户每周五去游泳。", "公司的年会定在十二月。"),
    ("Chose SQLite for the embedded store because it needs no server.", "The user drinks green tea in the afternoon."),
]

GROUPS: dict[str, list[tuple[str, str]]] = {
    "paraphrase": PARAPHRASE,
    "translation": TRANSLATION,
    "same-topic": SAME_TOPIC,
    "unrelated": UNRELATED,
}
# The band each group should land in after calibration: [lo, hi).
TARGET: dict[str, tuple[float, float]] = {
    "paraphrase": (AUTO_LINK, 9.0),
    "translation": (AUTO_LINK, 9.0),
    "same-topic": (REVIEW, AUTO_LINK),
    "unrelated": (-9.0, REVIEW),
}


def pair_cosines(emb: Embedder, pairs: list[tuple[str, str]], *, query: bool = False) -> np.ndarray:
    """Memory-to-memory cosines (both sides passages); with query=True the left side is embedded as a query."""
    a = emb.embed_batch([p[0] for p in pairs], query=query)
    b = emb.embed_batch([p[1] for p in pairs])
    return np.einsum("ij,ij->i", a, b)


def fits(cal: Calibration, raw: dict[str, np.ndarray]) -> tuple[int, float]:
    """(pairs inside their band, smallest distance of any pair to its band's edges — the margin)."""
    inside, margin = 0, np.inf
    for g, (lo, hi) in TARGET.items():
        c = cal(raw[g])
        ok = (c >= lo) & (c < hi)
        inside += int(ok.sum())
        edge = np.minimum(np.abs(c - lo), np.abs(hi - c))
        if ok.any():
            margin = min(margin, float(edge[ok].min()))
    return inside, margin


def best_split(lower: np.ndarray, upper: np.ndarray) -> float:
    """The raw threshold that best separates `lower` (should fall below) from `upper` (should reach it):
    fewest pairs on the wrong side, then the middle of the widest gap among the equally good ones."""
    points = np.unique(np.concatenate([lower, upper]))
    cuts = np.concatenate([[points[0] - 0.01], (points[:-1] + points[1:]) / 2, [points[-1] + 0.01]])
    errors = np.array([(lower >= c).sum() + (upper < c).sum() for c in cuts])
    ok = np.flatnonzero(errors == errors.min())
    # the widest gap between neighbouring points among the best cuts
    widths = [points[min(i, len(points) - 1)] - points[max(i - 1, 0)] for i in ok]
    return float(cuts[ok[int(np.argmax(widths))]])


def fit(raw: dict[str, np.ndarray]) -> Calibration:
    """Put each rule's raw threshold where the pairs say it belongs, then solve for (low, high):
    - auto-link (0.80): between the highest unrelated pair and the lowest paraphrase (a wrong auto-link
      pollutes the graph for good, so it must clear every unrelated pair, not just most);
    - review (0.40): the best split of unrelated pairs from same-topic and translation pairs.
    Rounded to 0.005."""
    t80 = (float(raw["unrelated"].max()) + float(raw["paraphrase"].min())) / 2
    t40 = best_split(raw["unrelated"], np.concatenate([raw["same-topic"], raw["translation"]]))
    if not t80 > t40:
        raise SystemExit(f"the review threshold ({t40:.3f}) is not below the auto-link one ({t80:.3f})")
    span = (t80 - t40) / (AUTO_LINK - REVIEW)
    low = t40 - REVIEW * span
    return Calibration(round(low * 200) / 200, round((low + span) * 200) / 200)


def describe(x: np.ndarray) -> str:
    return f"min {x.min():.3f}  mean {x.mean():.3f}  median {float(np.median(x)):.3f}  max {x.max():.3f}"


def rates(cal: Calibration, raw: dict[str, np.ndarray], qraw: dict[str, np.ndarray]) -> dict[str, float]:
    related = np.concatenate([raw["paraphrase"], raw["translation"], raw["same-topic"]])
    topic = cal(raw["same-topic"])
    return {
        "paraphrase >= 0.80 (auto-link)": float((cal(raw["paraphrase"]) >= AUTO_LINK).mean()),
        "translation >= 0.80 (auto-link)": float((cal(raw["translation"]) >= AUTO_LINK).mean()),
        "translation >= 0.40 (review or auto-link)": float((cal(raw["translation"]) >= REVIEW).mean()),
        "same-topic in [0.40, 0.80) (review)": float(((topic >= REVIEW) & (topic < AUTO_LINK)).mean()),
        "all 30 related >= 0.80": float((cal(related) >= AUTO_LINK).mean()),
        "all 30 related >= 0.40": float((cal(related) >= REVIEW).mean()),
        "unrelated >= 0.80 (wrongly auto-linked)": float((cal(raw["unrelated"]) >= AUTO_LINK).mean()),
        "unrelated >= 0.40 (wrongly offered for review)": float((cal(raw["unrelated"]) >= REVIEW).mean()),
        "related query->memory > 0.1 (vector anchor)": float(
            (cal(np.concatenate([qraw[g] for g in ("paraphrase", "translation", "same-topic")])) > ANCHOR).mean()
        ),
        "unrelated query->memory > 0.1 (vector anchor)": float((cal(qraw["unrelated"]) > ANCHOR).mean()),
    }


def throughput(emb: Embedder, n: int = 256, repeats: int = 3) -> tuple[float, float, float]:
    """Texts/s for one batch of `n` distinct memory-like texts, cold cache (best of `repeats`), and cached;
    and the median milliseconds for one new text (what one `remember` pays)."""
    base = [s for pairs in GROUPS.values() for p in pairs for s in p]
    texts = [f"{base[i % len(base)]} (note {i})" for i in range(n)]
    cold = []
    for _ in range(repeats):
        if isinstance(emb, BaseEmbedder):
            emb.cache_clear()
        t0 = time.perf_counter()
        emb.embed_batch(texts)
        cold.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    emb.embed_batch(texts)
    warm = time.perf_counter() - t0
    single = []
    for i in range(20):
        t0 = time.perf_counter()
        emb.embed(f"A single new memory about topic number {i}, as one remember call embeds it.")
        single.append(time.perf_counter() - t0)
    return n / min(cold), n / warm, float(np.median(single)) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", action="store_true", help="also print the tables for benchmarks/RESULTS.md")
    ap.add_argument("--no-speed", action="store_true", help="skip the throughput measurement")
    args = ap.parse_args()

    emb = get_embedder(Settings.resolve(data_dir="/tmp/mnemon-calibration"))
    if emb is None:
        sys.exit("MNEMON_EMBEDDER=none: nothing to calibrate")
    if not emb.available():
        sys.exit(f"{emb.name} is not available")
    raw = {g: pair_cosines(emb, pairs) for g, pairs in GROUPS.items()}
    qraw = {g: pair_cosines(emb, pairs, query=True) for g, pairs in GROUPS.items()}
    current = emb.calibration
    fitted = fit(raw)
    total = sum(len(p) for p in GROUPS.values())

    print(f"embedder {emb.name}  dims {emb.dimensions}  current {current}")
    print(f"{'group':<12} {'n':>3}  raw cosine (memory-memory)                          calibrated (current)")
    for g, x in raw.items():
        print(f"{g:<12} {len(x):>3}  {describe(x)}    {describe(current(x))}")
    print("query->memory (left side embedded as a query):")
    for g, x in qraw.items():
        print(f"{g:<12} {len(x):>3}  {describe(x)}    {describe(current(x))}")
    print(
        f"\nfitted: {fitted}  ({fits(fitted, raw)[0]}/{total} pairs in their band); "
        f"current: {current} ({fits(current, raw)[0]}/{total})"
    )
    for label, cal in (("raw (identity)", Calibration(0.0, 1.0)), ("current", current)):
        print(f"\nrates, {label} {cal}:")
        for k, v in rates(cal, raw, qraw).items():
            print(f"  {k:<44} {v:6.1%}")
    print("\nheld out (not used by the fit), calibrated with the current calibration:")
    held = {"paraphrase": HELD_OUT_PARAPHRASE, "unrelated": HELD_OUT_UNRELATED}
    held_raw = {g: pair_cosines(emb, pairs) for g, pairs in held.items()}
    for g, pairs in held.items():
        for (a, b), x in zip(pairs, held_raw[g]):
            print(f"  {g:<11} raw {x:.3f}  calibrated {float(current(x)):.2f}  {a} / {b}")
    if not args.no_speed:
        cold, warm, one_ms = throughput(emb)
        print(f"\nthroughput, batch of 256: {cold:.0f} texts/s (cold cache), {warm:.0f} texts/s (cached)")
        print(f"one new text: {one_ms:.1f} ms (median of 20)")
    if args.markdown:
        print("\n| group | n | raw min | raw mean | raw max | calibrated min | calibrated mean | calibrated max |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for g, x in raw.items():
            c = current(x)
            print(
                f"| {g} | {len(x)} | {x.min():.3f} | {x.mean():.3f} | {x.max():.3f} "
                f"| {c.min():.3f} | {c.mean():.3f} | {c.max():.3f} |"
            )
        print("\n| rate | raw cosine | calibrated |")
        print("| --- | ---: | ---: |")
        r0, r1 = rates(Calibration(0.0, 1.0), raw, qraw), rates(current, raw, qraw)
        for k in r0:
            print(f"| {k} | {r0[k]:.0%} | {r1[k]:.0%} |")
        print("\n| group | pair | raw | calibrated |")
        print("| --- | --- | ---: | ---: |")
        for g, pairs in GROUPS.items():
            for (a, b), x in zip(pairs, raw[g]):
                print(f"| {g} | {a} / {b} | {x:.3f} | {float(current(x)):.2f} |")
        for g, pairs in held.items():
            for (a, b), x in zip(pairs, held_raw[g]):
                print(f"| held-out {g} | {a} / {b} | {x:.3f} | {float(current(x)):.2f} |")


if __name__ == "__main__":
    main()
