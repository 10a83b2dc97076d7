#!/usr/bin/env python3
"""Samples a block device's counters and the machine's CPU time every INTERVAL seconds until
stopped, one line a sample: the time of day in seconds (UTC), reads and writes completed,
requests in flight, and CPU ticks busy, idle, in IO wait and stolen by the host. Run beside a
bench (`bench/index-updates.sh --cold`) to tell a disk that stalls (nothing completed with
requests in flight) from cores that are short (busy, stolen), as D-252 did.

    python3 bench/disk-cpu-sample.py [DEVICE] [INTERVAL] > samples.log   # vda, 0.05
"""
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


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "vda"
    try:
        interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    except ValueError:
        sys.exit(f"INTERVAL is seconds, e.g. 0.05, not {sys.argv[2]!r}")
    last_disk, last_cpu = disk(device), cpu()
    while True:
        time.sleep(interval)
        now_disk, now_cpu = disk(device), cpu()
        d = [a - b for a, b in zip(now_disk, last_disk)]
        c = [a - b for a, b in zip(now_cpu, last_cpu)]
        # /proc/stat: user nice system idle iowait irq softirq steal; diskstats from field 4:
        # reads completed ... writes completed at 4, in flight at 8 (a level, not a count).
        busy = c[0] + c[1] + c[2] + c[5] + c[6]
        print(f"{time.time() % 86400:9.2f} r={d[0]:5d} w={d[4]:4d} inflight={now_disk[8]:3d} "
              f"busy={busy:3d} idle={c[3]:3d} iow={c[4]:3d} steal={c[7]:3d}", flush=True)
        last_disk, last_cpu = now_disk, now_cpu


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
