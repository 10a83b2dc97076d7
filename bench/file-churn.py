#!/usr/bin/env python3
"""What making a file costs while files are made and deleted around it, as an index's commits
do (D-250): in DIR, ROUNDS rounds of 40 small files made, then the previous round's 40 deleted;
prints the time to make a file at six points of the run. On ext4 without a journal the time
grows with the inodes deleted in the last minutes; with one it stays flat.

    python3 bench/file-churn.py DIR [ROUNDS]

ROUNDS defaults to 2,000. DIR is made if absent and left empty.
"""
import os
import sys
import time

FILES_A_ROUND = 40


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench/file-churn.py DIR [ROUNDS]")
    folder = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    if rounds < 1:
        sys.exit("ROUNDS must be at least 1")
    os.makedirs(folder, exist_ok=True)
    started, previous = time.time(), []
    report_every = max(1, rounds // 6)
    for round_ in range(rounds):
        names = [os.path.join(folder, f"r{round_}_{i}") for i in range(FILES_A_ROUND)]
        made = time.perf_counter()
        for name in names:
            fd = os.open(name, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
            os.write(fd, b"x" * 100)
            os.close(fd)
        took = time.perf_counter() - made
        for name in previous:
            os.unlink(name)
        previous = names
        if round_ % report_every == 0 or round_ == rounds - 1:
            print(f"round {round_} at {time.time() - started:.1f} s: "
                  f"{took / FILES_A_ROUND * 1e6:.0f} µs a file", flush=True)
    for name in previous:
        os.unlink(name)


if __name__ == "__main__":
    main()
