#!/usr/bin/env python3
"""The back office as one admin uses it, timed against a running server (bench/backoffice.sh
starts and stops it): every read and write, p50/p99 over REPEAT requests each (a read's first
request timed apart), and a merge and a link while a provider's snapshot job runs; apart, large
merges with links sent while the listing mover moves their listings. Prints a markdown table;
loopback only.

    backoffice.py BASE USER PASSWORD [--repeat 50] [--json OUT] [--first KIND] [--first-text WORD]
                  [--snapshot FEED --provider SLUG] [--writes-only] [--path PATH]...
                  [--large-merges N [--least 3000] [--pages 400]]
"""
import argparse
import http.client
import itertools
import json
import sys
import time
import urllib.parse


class Admin:
    """One keep-alive connection with an admin session cookie."""

    def __init__(self, base, user, password):
        url = urllib.parse.urlparse(base)
        self.host, self.port = url.hostname, url.port
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        self.cookie = None
        # An open file: `timed` adds a line per request for `bench/host-stalls.py`.
        self.timeline = None
        status, _, headers = self.call("POST", "/v1/auth/login", {"username": user, "password": password}, headers=True)
        if status != 200:
            sys.exit(f"login failed: {status}")
        self.cookie = headers.get("set-cookie", "").split(";")[0]

    def call(self, method, path, body=None, headers=False, raw=None):
        head = {"content-type": "application/json"}
        if self.cookie:
            head["cookie"] = self.cookie
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        self.conn.request(method, path, body=data, headers=head)
        response = self.conn.getresponse()
        payload = response.read()
        value = json.loads(payload) if payload[:1] in (b"{", b"[") else None
        if headers:
            return response.status, value, {k.lower(): v for k, v in response.getheaders()}
        return response.status, value

    def timed(self, method, path, body=None):
        """How long a request took (ms), its status and body; with a timeline, a line for it:
        the time of day it was answered (seconds, UTC), its ms, its method and path."""
        started = time.perf_counter()
        status, value = self.call(method, path, body)
        ms = (time.perf_counter() - started) * 1000
        if self.timeline:
            print(f"{time.time() % 86400:.3f} {ms:.1f} {method} {path}", file=self.timeline, flush=True)
        return ms, status, value


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


READS = {
    "reconciliation page 1": "/v1/reconciliation?pageSize=50",
    "reconciliation page 1000": "/v1/reconciliation?pageSize=50&page=1000",
    "reconciliation reason=unknownBrand": "/v1/reconciliation?pageSize=50&reason=unknownBrand",
    "reconciliation provider": "/v1/reconciliation?pageSize=50&provider={provider}",
    "reconciliation brand": "/v1/reconciliation?pageSize=50&brand={brand}",
    "reconciliation provider+reason": "/v1/reconciliation?pageSize=50&provider={provider}&reason=unknownReference",
    "reconciliation q=reference prefix": "/v1/reconciliation?pageSize=50&q={reference}",
    "reconciliation q=brand text": "/v1/reconciliation?pageSize=50&q={brand_text}",
    "unmatched listings page 1": "/v1/admin/unmatched-listings?pageSize=50",
    "duplicate-models page 1": "/v1/duplicate-models?pageSize=50",
    "duplicate-models page 100": "/v1/duplicate-models?pageSize=50&page=100",
    "audit page 1": "/v1/admin/audit?pageSize=50",
    "audit by user": "/v1/admin/audit?pageSize=50&user={user}",
    "audit by action": "/v1/admin/audit?pageSize=50&action=reconciliation.link",
    "stats": "/v1/admin/stats",
    "jobs": "/v1/admin/jobs?pageSize=50",
}


def context(admin, user):
    """Values the reads are filled with, taken from the data itself."""
    _, page = admin.call("GET", "/v1/reconciliation?pageSize=50&page=200")
    groups = page["data"]
    known = next(g for g in groups if isinstance(g.get("brand"), dict))
    _, texts = admin.call("GET", "/v1/reconciliation?pageSize=50&reason=unknownBrand")
    text = next(g["brand"] for g in texts["data"] if isinstance(g.get("brand"), str))
    reference = next(g["reference"] for g in groups if g.get("reference"))
    return {
        "provider": known["providers"][0]["slug"],
        "brand": known["brand"]["slug"],
        "reference": reference[: max(4, len(reference) - 2)],
        "brand_text": urllib.parse.quote(text.split()[0]),
        "user": user,
    }


def cells(times):
    return f"{len(times)} | {percentile(times, 50):.1f} | {percentile(times, 99):.1f} | {max(times):.1f}"


def row(name, times, extra=""):
    return f"| {name} | {cells(times)} |{extra}"


def reads(admin, paths, repeat):
    """Each read of `paths` (name to path): its first request, timed apart (what its cold pages
    cost once after a start), then `repeat` more."""
    rows, figures = [], {}
    for name, path in paths.items():
        times = []
        for _ in range(repeat + 1):
            ms, status, _ = admin.timed("GET", path)
            if status != 200:
                sys.exit(f"{name}: {path} answered {status}")
            times.append(ms)
        first, warm = times[0], times[1:]
        figures[name] = {"first": first, "warm": warm}
        rows.append(f"| {name} | {first:.1f} | {cells(warm)} |")
    return rows, figures


def groups_with_candidates(admin, page_from, reason=None):
    """Groups of a known brand with a candidate, page after page from pages deep in the list
    (typical groups), until the list ends; of one reason when given (a model is made only for
    a reference no model has)."""
    page = page_from
    only = f"&reason={reason}" if reason else ""
    while True:
        _, body = admin.call("GET", f"/v1/reconciliation?pageSize=50&page={page}{only}")
        if not body["data"]:
            return
        yield from (g for g in body["data"] if isinstance(g.get("brand"), dict) and g["candidates"])
        page += 1


def groups_to_write(admin, count, page_from, reason=None):
    found = list(itertools.islice(groups_with_candidates(admin, page_from, reason), count))
    if len(found) < count:
        sys.exit(f"only {len(found)} groups to write to from page {page_from}, not {count}")
    return found


def duplicate_groups(admin, count, page_from):
    found, page = [], page_from
    while len(found) < count:
        _, body = admin.call("GET", f"/v1/duplicate-models?pageSize=50&page={page}")
        if not body["data"]:
            break
        found += [g for g in body["data"] if len(g["models"]) >= 2]
        page += 1
    return found[:count]


def series_slug(admin, model_id):
    _, page = admin.call("GET", f"/v1/models?id={model_id}")
    return page["data"][0]["series"]["slug"]


def writes(admin, repeat):
    rows, figures = [], {}
    groups = groups_to_write(admin, repeat * 2, 300)
    link, update = groups[:repeat], groups[repeat:]
    create = groups_to_write(admin, repeat, 300, reason="unknownReference")
    plans = {
        "reconciliation link (a group)": [
            ("/v1/reconciliation/link", {"group": g["id"], "model": g["candidates"][0]["id"]}) for g in link],
        "reconciliation create model": [
            ("/v1/reconciliation/models", {"group": g["id"], "fields": {
                "series": series_slug(admin, g["candidates"][0]["id"]), "name": f"Bench {g['id']}"}})
            for g in create],
        "reconciliation update model": [
            ("/v1/reconciliation/models/update", {"group": g["id"], "model": g["candidates"][0]["id"], "fields": {}})
            for g in update],
    }
    duplicates = duplicate_groups(admin, repeat * 2, 50)
    plans["duplicate-models dismiss"] = [
        ("/v1/duplicate-models/dismiss", {"modelIds": [m["id"] for m in g["models"][:2]]}) for g in duplicates[:repeat]]
    plans["duplicate-models merge"] = [
        ("/v1/duplicate-models/merge", {"keeperId": g["models"][0]["id"], "duplicateIds": [g["models"][1]["id"]]})
        for g in duplicates[repeat:]]
    for name, plan in plans.items():
        times, refused, moved = [], 0, []
        for path, body in plan:
            ms, status, value = admin.timed("POST", path, body)
            if status == 200:
                times.append(ms)
                moved.extend(moved_listings(value))
            elif status in (400, 404, 409):
                refused += 1  # a reference another model has, a pair already gone: timed apart
            else:
                sys.exit(f"{name}: {status} {value}")
        if times:
            figures[name] = times
            notes = ([f"{refused} refused"] if refused else []) + moved_note(moved)
            rows.append(row(name, times, f" {'; '.join(notes)} |"))
    return rows, figures


def moved_listings(answer):
    """The listings a merge moved (its time grows with them), as a list of none or one."""
    return [answer["movedListings"]] if isinstance(answer, dict) and "movedListings" in answer else []


def moved_note(moved):
    return [f"moved {max(moved):,} listings at most, {sorted(moved)[len(moved) // 2]:,} at the median"] if moved else []


def during_job(admin, feed, provider, tries):
    """Submits the snapshot job, then times merges and links while it runs."""
    with open(feed, "rb") as f:
        body = f.read()
    status, job = admin.call("POST", f"/v1/admin/providers/{provider}/snapshot?allowMassDelist=true",
                             raw=body)
    if status not in (200, 202):
        sys.exit(f"snapshot job refused: {status} {job}")
    job_id = job["id"]
    # Wait until the job has committed a chunk: it is then writing.
    while True:
        _, state = admin.call("GET", f"/v1/admin/jobs/{job_id}")
        if state["state"] != "queued" and (state.get("progress") or {}).get("done", 0) > 0:
            break
        if state["state"] in ("succeeded", "failed"):
            sys.exit("the job ended before it could be measured")
        time.sleep(0.2)
    groups = groups_to_write(admin, tries, 900)
    duplicates = duplicate_groups(admin, tries, 150)
    merges, links, moved = [], [], []
    for group, dup in zip(groups, duplicates):
        ms, status, _ = admin.timed("POST", "/v1/reconciliation/link",
                                    {"group": group["id"], "model": group["candidates"][0]["id"]})
        if status == 200:
            links.append(ms)
        ms, status, value = admin.timed("POST", "/v1/duplicate-models/merge",
                                        {"keeperId": dup["models"][0]["id"], "duplicateIds": [dup["models"][1]["id"]]})
        if status == 200:
            merges.append(ms)
            moved.extend(moved_listings(value))
    _, state = admin.call("GET", f"/v1/admin/jobs/{job_id}")
    still = state["state"] == "running"
    merge_name = "; ".join(["merge during a snapshot job"] + moved_note(moved))
    return [row("link during a snapshot job", links), row(merge_name, merges)], still


def large_merges(admin, count, least, pages, links_wanted):
    """Merges of duplicates with at least `least` listings into the other model of their group,
    each followed by a link every 100 ms until the keeper holds every listing (the listing
    mover relinks all but the merge's first 250 after it answers, D-231): `count` merges, and
    more while fewer than `links_wanted` links were sent and duplicates are found, so that the
    links' p99 is over that many requests (a merge of a few thousand listings moves them in
    under a second: 4-8 links). The merges' answers, the links' times, and how long each
    keeper took to hold them all."""
    found, page = [], 1
    # Enough for the links wanted at a few a merge; the scan stops at the first `pages` pages.
    wanted = max(count, links_wanted // 2)
    while len(found) < wanted and page <= pages:
        _, body = admin.call("GET", f"/v1/duplicate-models?pageSize=50&page={page}")
        if not body["data"]:
            break
        found += [g for g in body["data"]
                  if len(g["models"]) >= 2 and g["models"][1]["listingCount"] >= least]
        page += 1
    if not found:
        return [f"| no duplicate with {least:,} listings or more in the first {pages} pages of groups | 0 | | | |"]
    groups = groups_with_candidates(admin, 900)
    merges, links, moved, took = [], [], [], []
    for merged, group in enumerate(found):
        if merged >= count and len(links) >= links_wanted:
            break
        keeper, duplicate = group["models"][0], group["models"][1]
        listed = (f"/v1/listings?brand={keeper['brandSlug']}&model={keeper['slug']}"
                  "&includeDelisted=true&pageSize=1")
        before = admin.call("GET", listed)[1]["total"]
        ms, status, value = admin.timed("POST", "/v1/duplicate-models/merge",
                                        {"keeperId": keeper["id"], "duplicateIds": [duplicate["id"]]})
        if status != 200:
            sys.exit(f"merge refused: {status} {value}")
        started = time.perf_counter()
        merges.append(ms)
        moved.extend(moved_listings(value))
        want = before + value["movedListings"]
        while admin.call("GET", listed)[1]["total"] < want:
            if time.perf_counter() - started > 120:
                sys.exit(f"the keeper {keeper['slug']} did not hold its {want} listings in 120 s")
            link = next(groups, None)
            if link is None:
                sys.exit("no group left to link")
            ms, status, _ = admin.timed("POST", "/v1/reconciliation/link",
                                        {"group": link["id"], "model": link["candidates"][0]["id"]})
            if status == 200:
                links.append(ms)
            time.sleep(0.1)
        took.append((time.perf_counter() - started) * 1000)
    rows = [row("; ".join(["large merge"] + moved_note(moved)), merges),
            row("merge answered to keeper holding them all", took)]
    # None when the mover was done before the first check.
    if links:
        rows.insert(1, row("link while a merge's listings move", links))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("user")
    parser.add_argument("password")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--json")
    parser.add_argument("--first", help="time only the first request of this read kind")
    parser.add_argument("--first-text", help="time only a first /reconciliation?q= of this word")
    parser.add_argument("--snapshot")
    parser.add_argument("--provider")
    parser.add_argument("--writes-only", action="store_true")
    parser.add_argument("--large-merges", type=int, metavar="N",
                        help="merge N duplicates of --least listings or more, links sent while they "
                        "move, and more merges until --repeat links were sent")
    parser.add_argument("--least", type=int, default=3000)
    parser.add_argument("--timeline", type=argparse.FileType("a"),
                        help="add a line per timed request (answered at, ms, method, path) to this "
                        "file, for bench/host-stalls.py")
    parser.add_argument("--pages", type=int, default=400,
                        help="pages of duplicate groups searched for --large-merges")
    parser.add_argument("--path", action="append", help="time only this read (repeatable), e.g. "
                        "'/v1/reconciliation?pageSize=50&q=Classic'")
    args = parser.parse_args()
    admin = Admin(args.base, args.user, args.password)
    admin.timeline = args.timeline
    if args.first or args.first_text:
        if args.first_text:
            kind = f"reconciliation q={args.first_text}"
            path = f"/v1/reconciliation?pageSize=50&q={urllib.parse.quote(args.first_text)}"
        else:
            kind = args.first
            path = READS[kind].format(**{"provider": "provider-1", "brand": "x", "reference": "1",
                                         "brand_text": "a", "user": args.user})
        ms, status, _ = admin.timed("GET", path)
        print(f"| {kind} (first after a start) | {ms:.1f} | {status} |")
        return
    if args.snapshot:
        rows, still = during_job(admin, args.snapshot, args.provider, 5)
        print("| while a snapshot job runs | n | p50 ms | p99 ms | max ms |\n|---|--:|--:|--:|--:|")
        print("\n".join(rows))
        print(f"\nthe job was {'still running' if still else 'over'} after the last request")
        return
    if args.path:
        read_rows, _ = reads(admin, {path: path for path in args.path}, args.repeat)
        print("| request | first of its kind ms | n | p50 ms | p99 ms | max ms |")
        print("|---|--:|--:|--:|--:|--:|")
        print("\n".join(read_rows))
        return
    if args.large_merges:
        rows = large_merges(admin, args.large_merges, args.least, args.pages, args.repeat)
        print("| large merges | n | p50 ms | p99 ms | max ms |\n|---|--:|--:|--:|--:|")
        print("\n".join(rows))
        return
    if args.writes_only:
        write_rows, _ = writes(admin, args.repeat)
        print("| write | n | p50 ms | p99 ms | max ms | |\n|---|--:|--:|--:|--:|---|")
        print("\n".join(write_rows))
        return
    ctx = context(admin, args.user)
    paths = {name: path.format(**ctx) for name, path in READS.items()}
    read_rows, read_figures = reads(admin, paths, args.repeat)
    print("| request | first of its kind ms | n | p50 ms | p99 ms | max ms |")
    print("|---|--:|--:|--:|--:|--:|")
    print("\n".join(read_rows), flush=True)
    write_rows, write_figures = writes(admin, args.repeat)
    print("\n| write | n | p50 ms | p99 ms | max ms | |\n|---|--:|--:|--:|--:|---|")
    print("\n".join(write_rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"reads": read_figures, "writes": write_figures, "context": ctx}, f)


if __name__ == "__main__":
    main()
