#!/usr/bin/env python3
"""The console's pages as one signed-in user reads them, timed against a running server: each
page's first request (cold after a start), then REPEAT more, p50 and the slowest. Prints a
markdown table; loopback only.

    console.py BASE USER PASSWORD [--repeat 20]
"""
import argparse

from backoffice import Admin, percentile

PAGES = [
    "/console/",
    "/console/duplicates",
    "/console/duplicates?page=100",
    "/console/reconciliation",
    "/console/reconciliation?page=1000",
    "/console/unmatched",
    "/console/pictures",
    "/console/jobs",
    "/console/audit",
    "/console/users",
]


def pages(user):
    """The console's pages, with the form that makes a model from the largest group."""
    _, status, groups = user.timed("GET", "/v1/reconciliation?pageSize=1")
    if status != 200 or not groups["data"]:
        return PAGES
    group = groups["data"][0]["id"]
    return PAGES + [f"/console/reconciliation/new-model?group={group}"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("user")
    parser.add_argument("password")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    user = Admin(args.base, args.user, args.password)
    print("| page | first ms | p50 ms | slowest ms |\n|---|--:|--:|--:|")
    for path in pages(user):
        times = []
        for _ in range(args.repeat + 1):
            ms, status, _ = user.timed("GET", path)
            if status != 200:
                raise SystemExit(f"{path} answered {status}")
            times.append(ms)
        first, warm = times[0], times[1:]
        print(f"| `{path}` | {first:.1f} | {percentile(warm, 50):.1f} | {max(warm):.1f} |")


if __name__ == "__main__":
    main()
