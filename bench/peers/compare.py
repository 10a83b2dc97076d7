#!/usr/bin/env python3
"""Ours against the peers, per query kind: markdown tables of p50, p99 and req/s, with the
speedup (peer p50 / our p50) and the throughput ratio (our req/s / peer req/s), each marked
against the issue's target for the kind (text search: 10x PostgreSQL, 5x SQLite; every other
kind: 2x).

  bench/peers/compare.py FILE... [--out REPORT.md]

FILEs are JSON reports, told apart by content:
- ours over HTTP: `catalogue-bench load --json` (run-ours.sh writes one per kind and
  concurrency; figures of a kind run alone are preferred over those of a mix);
- ours in-process: `catalogue-bench replay --json` (its `base` starts with `in-process:`);
- the peers': run-peers.sh's postgresql-cN.json and sqlite-cN.json.
Reports are matched by concurrency. Like for like: ours over HTTP against PostgreSQL over its
wire protocol, ours in-process against SQLite in-process; the summary judges those pairs (or
whatever ours there is when only one side was measured): latency (the p50 speedup) at
concurrency 1, capacity (the req/s ratio) above it. Under load the p50 of in-process clients
leaves out most of the wait for a core (README.md), so it is shown, not judged.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

# The kinds and their order are peers.py's (this script's directory is on sys.path).
from peers import KINDS as ORDER, TEXT_KINDS  # noqa: E402

HTTP, IN_PROCESS = "over HTTP", "in-process"


def target(kind: str, engine: str) -> float:
    if kind in TEXT_KINDS:
        return 10.0 if engine.startswith("postgresql") else 5.0
    return 2.0


def like_for_like(engine: str) -> str:
    return IN_PROCESS if engine.startswith("sqlite") else HTTP


def ms(us: int) -> str:
    return f"{us / 1000:.2f}"


def ratio(a: float, b: float) -> float | None:
    """a over b; unbounded when only b is zero (a peer that completed nothing in the measured
    window, while ours did), unknown when both are."""
    if b > 0:
        return a / b
    return math.inf if a > 0 else None


def mark(value: float | None, goal: float) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "unbounded ✅"
    return f"{value:.1f}x {'✅' if value >= goal else '❌'}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+")
    p.add_argument("--out", help="also write the report here")
    args = p.parse_args()

    # (variant, concurrency, kind) -> (measured alone, figures)
    ours: dict[tuple[str, int, str], tuple[bool, dict]] = {}
    peers: dict[tuple[str, int], dict[str, dict]] = {}  # (engine, concurrency) -> kind -> figures
    clients: dict[tuple[str, int], str] = {}
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        if "engine" in report:
            key = (report["engine"], report["concurrency"])
            peers.setdefault(key, {}).update({k["kind"]: k for k in report["kinds"]})
            clients[key] = report.get("client", "")
        elif "mix" in report and "kinds" in report:
            variant = IN_PROCESS if str(report.get("base", "")).startswith("in-process") else HTTP
            for k in report["kinds"]:
                alone = (
                    report["mix"] in (f"only {k['kind']}", "each kind alone, in-process")
                    or len(report["kinds"]) == 1
                )
                key = (variant, report["concurrency"], k["kind"])
                if key not in ours or (alone and not ours[key][0]):
                    ours[key] = (alone, k)
        else:
            sys.exit(f"{path}: neither a LoadReport nor a peer report")
    variants = [v for v in (HTTP, IN_PROCESS) if any(key[0] == v for key in ours)]

    out: list[str] = []
    verdicts: list[str] = []
    for (engine, concurrency), figures in sorted(peers.items(), key=lambda e: (e[0][1], e[0][0])):
        judged = like_for_like(engine) if like_for_like(engine) in variants else (variants or [HTTP])[0]
        for variant in variants:
            like = " (like for like)" if variant == like_for_like(engine) else ""
            out.append(f"\n### Ours {variant} against {engine}, concurrency {concurrency}{like}\n")
            out.append(f"Peer client: {clients[(engine, concurrency)]}. Latency in ms; ratios are ours over the peer.\n")
            if concurrency > 1 and IN_PROCESS in (variant, like_for_like(engine)):
                out.append("Under load, the p50 of an in-process client leaves out most of its wait for a core: compare req/s.\n")
            out.append(
                "| kind | ours p50 | peer p50 | speedup p50 | ours p99 | peer p99 | ours req/s "
                "| peer req/s | req/s ratio | target |"
            )
            out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
            for kind in ORDER + sorted(set(figures) - set(ORDER)):
                if kind not in figures:
                    continue
                peer = figures[kind]
                goal = target(kind, engine)
                found = ours.get((variant, concurrency, kind))
                if found is None:
                    out.append(
                        f"| {kind} | – | {ms(peer['p50_us'])} | – | – | {ms(peer['p99_us'])} | – "
                        f"| {peer['ok_rps']:.0f} | – | {goal:.0f}x |"
                    )
                    continue
                mine = found[1]
                if peer.get("count", 1) == 0:
                    # Not one peer answer inside warm-up + measured time: slower than the window.
                    out.append(
                        f"| {kind} | {ms(mine['p50_us'])} | > window | n/a | {ms(mine['p99_us'])} "
                        f"| > window | {mine['ok_rps']:.0f} | 0 | n/a | {goal:.0f}x |"
                    )
                    if variant == judged:
                        verdicts.append(
                            f"| {kind} | {engine.split(' (')[0]} | {concurrency} | {variant} | – | "
                            f"no peer answer within the window | {goal:.0f}x | met |"
                        )
                    continue
                speedup = ratio(peer["p50_us"], mine["p50_us"])
                throughput = ratio(mine["ok_rps"], peer["ok_rps"])
                out.append(
                    f"| {kind} | {ms(mine['p50_us'])} | {ms(peer['p50_us'])} | {mark(speedup, goal)} "
                    f"| {ms(mine['p99_us'])} | {ms(peer['p99_us'])} | {mine['ok_rps']:.0f} "
                    f"| {peer['ok_rps']:.0f} | {mark(throughput, goal)} | {goal:.0f}x |"
                )
                if variant != judged:
                    continue
                errors = mine.get("errors", 0) + peer.get("errors", 0)
                metric, value = ("p50", speedup) if concurrency == 1 else ("req/s", throughput)
                met = value is not None and value >= goal and not errors
                verdicts.append(
                    f"| {kind} | {engine.split(' (')[0]} | {concurrency} | {variant} | {metric} | "
                    f"{mark(value, goal)} | {goal:.0f}x | "
                    f"{'met' if met else 'missed'}{f' ({errors} errors)' if errors else ''} |"
                )
    if verdicts:
        out.append("\n### Targets, like for like\n")
        out.append("| kind | peer | concurrency | ours | judged on | ratio | target | verdict |")
        out.append("|---|---|--:|---|---|--:|--:|---|")
        out.extend(verdicts)
    text = "\n".join(out).lstrip("\n") + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
