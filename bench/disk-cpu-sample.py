#!/usr/bin/env python3
"""Samples a block device's counters and the machine's CPU time every INTERVAL seconds until
stopped, one line a sample: the time of day in seconds (UTC), reads and writes completed,
requests in flight, CPU ticks busy, idle, in IO wait and stolen by the host, how many ms the
sample woke later than asked (`late`: nothing on the machine ran it, as when the host freezes the
VM), and the ticks of the kernel's DAMON threads (`kdamond`: this VM's kernel pages out file
pages unused for a minute, D-254). Run beside a bench (`bench/index-updates.sh --cold`, which
does so itself with SAMPLES=FILE) to tell a disk that stalls (nothing completed with requests
in flight) from cores that are short (busy, stolen) or a machine that did not run (D-252, D-254).

    python3 bench/disk-cpu-sample.py [DEVICE] [INTERVAL] > samples.log   # vda, 0.05
"""
import os
import sys
import time


def disk(device):
    for line in open("/proc/diskstats"):
        fields = line.split()
        if fields[2] == device:
            return [int(x) for x in fields[3:]]
    sys.exit(f"no device {device} in /proc/diskstats")


def cpu():
    return [int(x) for x in open("/proc/stat").readline().split()[1:]]


def kdamond_ticks():
    """CPU ticks (user + system) of the kernel's DAMON threads so far; 0 where there are none."""
    ticks = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        name_end = stat.rfind(")")
        if stat[stat.find("(") + 1:name_end].startswith("kdamond"):
            fields = stat[name_end + 2:].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "vda"
    try:
        interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    except ValueError:
        sys.exit(f"INTERVAL is seconds, e.g. 0.05, not {sys.argv[2]!r}")
    last_disk, last_cpu, last_damon = disk(device), cpu(), kdamond_ticks()
    while True:
        asleep = time.monotonic()
        time.sleep(interval)
        late = (time.monotonic() - asleep - interval) * 1000
        now_disk, now_cpu, now_damon = disk(device), cpu(), kdamond_ticks()
        d = [a - b for a, b in zip(now_disk, last_disk)]
        c = [a - b for a, b in zip(now_cpu, last_cpu)]
        # /proc/stat: user nice system idle iowait irq softirq steal; diskstats from field 4:
        # reads completed ... writes completed at 4, in flight at 8 (a level, not a count).
        busy = c[0] + c[1] + c[2] + c[5] + c[6]
        print(f"{time.time() % 86400:9.2f} r={d[0]:5d} w={d[4]:4d} inflight={now_disk[8]:3d} "
              f"busy={busy:3d} idle={c[3]:3d} iow={c[4]:3d} steal={c[7]:3d} late={late:5.0f} "
              f"kdamond={now_damon - last_damon:3d}", flush=True)
        last_disk, last_cpu, last_damon = now_disk, now_cpu, now_damon


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
