#!/usr/bin/env python3
"""Which slow requests came while the machine itself did not run (D-254): joins a timeline of
requests (`backoffice.py --timeline`: the time of day each was answered, seconds UTC, its ms,
and its method and path) with `bench/disk-cpu-sample.py`'s samples taken beside it, and marks each request whose
window saw the sampler wake late (nothing ran it: the host froze the VM or the kernel held
both cores) or the host steal a share of the cores. Prints the slow requests one by one, then
the p99 of all and of those the machine ran through.

    python3 bench/host-stalls.py [--only TEXT] TIMELINE SAMPLES [SLOW_MS] [LATE_MS] [STEAL_SHARE]
    # defaults: 100 ms, a sample 50 ms late, a tenth of the cores' ticks stolen;
    # --only keeps the requests whose method and path hold TEXT (e.g. /v1/reconciliation/link)
"""
import re
import sys


def requests(path, only=None):
    """(answered at, ms, method and path) per line of a timeline, those holding `only` if given."""
    for line in open(path):
        at, ms, *what = line.split(maxsplit=2)
        what = what[0].strip() if what else ""
        if only is None or only in what:
            yield float(at), float(ms), what


def samples(path):
    """(start, end, late ms, stolen ticks, all ticks, kdamond ticks) per sample, in time order;
    a sample covers the time since the one before it."""
    before = None
    for line in open(path):
        fields = dict(re.findall(r"(\w+)=\s*(-?\d+)", line))
        if "late" not in fields:
            continue
        end = float(line.split()[0])
        ticks = sum(int(fields[k]) for k in ("busy", "idle", "iow", "steal"))
        if before is not None:
            yield (before, end, int(fields["late"]), int(fields["steal"]), ticks,
                   int(fields["kdamond"]))
        before = end


def p99(values):
    """As `backoffice.py`'s percentile, so the two agree."""
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))] if values else float("nan")


def main():
    args = sys.argv[1:]
    only = None
    if args[:1] == ["--only"] and len(args) > 1:
        only, args = args[1], args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    slow_ms = float(args[2]) if len(args) > 2 else 100.0
    late_ms = float(args[3]) if len(args) > 3 else 50.0
    steal_share = float(args[4]) if len(args) > 4 else 0.1
    sampled = list(samples(args[1]))
    if not sampled:
        sys.exit(f"no samples with late= in {args[1]} (bench/disk-cpu-sample.py's)")
    timeline = list(requests(args[0], only))
    if not timeline:
        sys.exit(f"no requests in {args[0]}" + (f" holding {only}" if only else ""))
    ran, stalled, slow = [], [], []
    for answered, ms, what in timeline:
        sent = answered - ms / 1000
        beside = [s for s in sampled if s[1] > sent and s[0] < answered]
        late = max((s[2] for s in beside), default=0)
        stolen = sum(s[3] for s in beside)
        ticks = sum(s[4] for s in beside) or 1
        damon = sum(s[5] for s in beside)
        host = late >= late_ms or stolen / ticks >= steal_share
        (stalled if host else ran).append(ms)
        if ms > slow_ms:
            slow.append((answered, ms, what, late, stolen, ticks, damon, host))
    print("| answered (s UTC) | ms | request | sampler late, ms | stolen ticks / all | kdamond ticks | the machine stalled |")
    print("|--:|--:|---|--:|--:|--:|---|")
    for answered, ms, what, late, stolen, ticks, damon, host in slow:
        print(f"| {answered:.2f} | {ms:.1f} | {what} | {late} | {stolen} / {ticks} | {damon} | {'yes' if host else 'no'} |")
    everyone = ran + stalled
    print(f"\n{len(everyone)} requests, p99 {p99(everyone):.1f} ms; {len(slow)} over {slow_ms:.0f} ms, "
          f"{sum(1 for s in slow if s[7])} of them while the machine stalled; "
          f"{len(stalled)} requests in such windows in all; "
          f"the {len(ran)} the machine ran through: p99 {p99(ran):.1f} ms")


if __name__ == "__main__":
    main()
