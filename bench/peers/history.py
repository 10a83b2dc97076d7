#!/usr/bin/env python3
"""A model's weekly price series asked of PostgreSQL, beside ours (issue 51 point 5): the
observations `bench/history-dataset.py` wrote (what our store keeps for the history provider),
among filler rows for the rest of a store of the scale run's size, and the series computed per
request in SQL, as `GET /listings/stats/history` defines it. bench/peers/history.sh drives it.

    history.py load HISTORY_DIR --filler N          SQL (with its COPY data) on standard output
    history.py sql --from DAY --to DAY [--kept]     the series' query, for pgbench or psql (--kept:
                                                    read from the table `materialize` keeps)
    history.py materialize --from DAY --to DAY      SQL keeping the series in a table
    history.py check HISTORY_DIR --base URL --from DAY --to DAY
                                                    PostgreSQL's series against ours, period by period
    history.py figures LOG_PREFIX                   p50, p99 and max of a pgbench --log run

Python 3.11 standard library; PostgreSQL through psql (PGHOST, PGPORT, PGUSER set).
"""
import argparse
import json
import os
import subprocess
import sys
import urllib.request

# The history model's id in PostgreSQL; filler rows belong to other models.
MODEL = 1

# Every listing's observations; `seq` keeps a listing's own order at one instant.
SCHEMA = """
DROP TABLE IF EXISTS observations;
CREATE TABLE observations (
  listing integer NOT NULL,
  seq integer NOT NULL,
  model integer NOT NULL,
  at timestamptz NOT NULL,
  event text NOT NULL,
  price integer
);
"""

# The indexes a competent engineer would add for this question: by model, then by listing and
# time (the window function's order), so a model's rows are one range.
INDEXES = """
CREATE INDEX observations_by_model ON observations (model, listing, at, seq) INCLUDE (event, price);
ANALYZE observations;
"""


def cmd_load(args):
    out = sys.stdout
    out.write(SCHEMA)
    # One observation per listing of every other model (first seen this week), as the scale
    # run's store holds 10M listings beside the history model's.
    out.write(
        "INSERT INTO observations SELECT g, 0, 2 + g % 999999, timestamptz '2026-11-30 00:00:00+00',"
        f" 'listed', 1000 + g % 50000 FROM generate_series(1, {args.filler}) g;\n"
    )
    out.write("COPY observations (listing, seq, model, at, event, price) FROM stdin;\n")
    seqs = {}
    with open(os.path.join(args.history, "observations.tsv")) as f:
        for line in f:
            code, at, event, price = line.rstrip("\n").split("\t")
            listing = 100_000_000 + int(code.split("-")[1])
            seq = seqs.get(listing, 0)
            seqs[listing] = seq + 1
            out.write(f"{listing}\t{seq}\t{MODEL}\t{at}\t{event}\t{price}\n")
    out.write("\\.\n")
    out.write(INDEXES)


def series_sql(day_from, day_to):
    """No `::` nor `:name` in it: pgbench would read those as its variables. The weekly series of model MODEL from the week of `day_from` to the week of `day_to`
    (ISO weeks, Monday to Sunday, UTC), as D-209 defines it: a listing is active in a week when
    it is active at any instant of it (one delisted at the week's first instant counts, as the
    fold counts it: D-214), priced at its last observation before the week ends;
    `listed` counts first listings, `delisted` listings delisted in the week."""
    return f"""WITH obs AS (
  SELECT listing, seq, at, event, price,
         lead(at) OVER (PARTITION BY listing ORDER BY at, seq) AS until
  FROM observations WHERE model = {MODEL}
), weeks AS (
  SELECT start, start + interval '7 days' AS ends
  FROM generate_series(date_trunc('week', CAST(date '{day_from}' AS timestamp) AT TIME ZONE 'UTC'),
                       date_trunc('week', CAST(date '{day_to}' AS timestamp) AT TIME ZONE 'UTC'),
                       interval '7 days') AS start
), members AS (
  SELECT week AS start, listing, bool_or(event <> 'delisted') AS active,
         (array_agg(price ORDER BY at DESC, seq DESC))[1] AS price
  FROM obs, generate_series(date_trunc('week', at),
                            date_trunc('week', coalesce(until, (SELECT max(ends) FROM weeks))),
                            interval '7 days') AS week
  WHERE week >= (SELECT min(start) FROM weeks) AND week <= (SELECT max(start) FROM weeks)
    AND (until IS NULL OR until >= week)
  GROUP BY week, listing
), figures AS (
  SELECT start, count(*) AS active, count(price) AS priced, min(price) AS low,
         CAST(floor(percentile_cont(0.5) WITHIN GROUP (ORDER BY price) + 0.5) AS bigint) AS median,
         max(price) AS high
  FROM members WHERE active GROUP BY start
), events AS (
  SELECT w.start, count(*) FILTER (WHERE o.event = 'listed') AS listed,
         count(DISTINCT o.listing) FILTER (WHERE o.event = 'delisted') AS delisted
  FROM weeks w JOIN obs o ON date_trunc('week', o.at) = w.start
  GROUP BY w.start
)
SELECT to_char(w.start, 'YYYY-MM-DD'), coalesce(f.active, 0), coalesce(f.priced, 0),
       f.low, f.median, f.high, coalesce(e.listed, 0), coalesce(e.delisted, 0)
FROM weeks w LEFT JOIN figures f USING (start) LEFT JOIN events e USING (start)
ORDER BY w.start;
"""


def kept_sql(day_from, day_to):
    """The same series read from a table of it kept beforehand (`materialize`): what
    PostgreSQL answers when it, like our folder, keeps the aggregates rather than the question."""
    return (f"SELECT week, active, priced, low, median, high, listed, delisted FROM series_weekly"
            f" WHERE model = {MODEL} AND week BETWEEN date '{day_from}' AND date '{day_to}' ORDER BY week;")


def cmd_sql(args):
    if args.kept:
        print(kept_sql(args.day_from, args.day_to))
    else:
        print(series_sql(args.day_from, args.day_to))


def cmd_materialize(args):
    query = series_sql(args.day_from, args.day_to).rstrip().rstrip(";")
    print("DROP TABLE IF EXISTS series_weekly;")
    print(f"CREATE TABLE series_weekly AS SELECT {MODEL} AS model, CAST(week AS date) AS week, active, priced,"
          f" low, median, high, listed, delisted FROM ({query}) AS s (week, active, priced, low, median,"
          " high, listed, delisted);")
    print("ALTER TABLE series_weekly ADD PRIMARY KEY (model, week);")


def cmd_check(args):
    brand, model = open(os.path.join(args.history, "model.txt")).read().split()
    url = (f"{args.base}/v1/listings/stats/history?brand={brand}&model={model}&currency=EUR"
           f"&interval=week&from={args.day_from}&to={args.day_to}")
    with urllib.request.urlopen(url) as response:
        ours = json.load(response)["periods"]
    rows = subprocess.run(
        ["psql", "-X", "-At", "-F", "\t", "-d", args.db, "-c", series_sql(args.day_from, args.day_to)],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    theirs = [row.split("\t") for row in rows]
    fields = ["activeCount", "pricedCount", "low", "median", "high", "listedCount", "delistedCount"]
    differ = 0
    for period, row in zip(ours, theirs):
        mine = [period["start"]] + [period[f] for f in fields]
        peer = [row[0]] + [None if v == "" else int(v) for v in row[1:]]
        if mine != peer:
            differ += 1
            if differ <= 5:
                print(f"differs: ours {mine}\n         postgresql {peer}")
    print(f"{len(ours)} periods ours, {len(theirs)} PostgreSQL's, {differ} differ")
    sys.exit(1 if differ or len(ours) != len(theirs) else 0)


def cmd_figures(args):
    """One client's latencies from its pgbench log (`client txn time script epoch us`): each
    transaction's `time`, or the interval since the one before it ended when that is longer
    (pgbench 15 logs 0 for many sub-millisecond transactions; one client's transactions run
    back to back, so the interval is its latency with the client's own turn-around)."""
    directory, base = os.path.split(args.prefix)
    latencies = []
    for name in sorted(os.listdir(directory or ".")):
        suffix = name[len(base) + 1:]
        if not (name.startswith(base + ".") and suffix.replace(".", "").isdigit()):
            continue
        ended = None
        with open(os.path.join(directory, name)) as f:
            for line in f:
                fields = line.split()
                if len(fields) < 6 or not fields[2].isdigit():
                    continue
                at = int(fields[4]) * 1_000_000 + int(fields[5])
                since = at - ended if ended is not None else 0
                latencies.append(max(int(fields[2]), since))
                ended = at
    latencies.sort()

    def pick(p):
        return latencies[min(len(latencies) - 1, int(round(p / 100 * (len(latencies) - 1))))] / 1000

    print(f"n={len(latencies)} p50={pick(50):.2f} p99={pick(99):.2f} max={latencies[-1] / 1000:.2f} ms")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    load = sub.add_parser("load")
    load.add_argument("history")
    load.add_argument("--filler", type=int, default=10_000_000)
    load.set_defaults(run=cmd_load)
    for name, run in [("sql", cmd_sql), ("check", cmd_check), ("materialize", cmd_materialize)]:
        command = sub.add_parser(name)
        if name == "sql":
            command.add_argument("--kept", action="store_true", help="read the kept table instead")
        if name == "check":
            command.add_argument("history")
            command.add_argument("--base", required=True)
            command.add_argument("--db", default="history")
        command.add_argument("--from", dest="day_from", required=True)
        command.add_argument("--to", dest="day_to", required=True)
        command.set_defaults(run=run)
    figures = sub.add_parser("figures")
    figures.add_argument("prefix")
    figures.set_defaults(run=cmd_figures)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
