#!/usr/bin/env bash
# Ingest rate of the real Submariner feed (../shared/data/listings, 3,226 listings whose
# reference is only in the title) through the real binary: the feed is turned into a provider
# snapshot, the evaluation catalogue of tests/data/real-listings is imported into a fresh data
# dir, and `watch-catalogue ingest` is timed, RUNS times, each in a new data dir.
#
#   bench/real-feed.sh [BINARY] [RUNS] [COPIES] [PICTURES]
#       (default: target/release/watch-catalogue, 5, 1, no)
#
# COPIES > 1 repeats the feed under new source ids, so that process start-up weighs less.
# PICTURES=yes gives each listing the feed's picture URL (each copy its own URL), so the ingest
# also records every picture for the image worker; nothing is fetched.
# Prints each run's wall time and the ingest's own report, then the median per listing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/watch-catalogue}
RUNS=${2:-5}
COPIES=${3:-1}
PICTURES=${4:-no}
FEED=$ROOT/../shared/data/listings/chrono24-rolex-submariner-titles.csv
[[ -f $FEED ]] || { echo "no $FEED: the real listings are not part of the project" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$WORK/dataset"
cp "$ROOT"/tests/data/real-listings/catalogue/*.jsonl "$WORK/dataset/"
echo '{"slug":"chrono24","name":"Chrono24","url":"https://www.chrono24.com"}' > "$WORK/dataset/providers.jsonl"
python3 - "$FEED" "$WORK/snapshot.jsonl" "$COPIES" "$PICTURES" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
with open(sys.argv[2], "w") as out:
  for copy in range(int(sys.argv[3])):
    for row in rows:
        line = {"sourceId": f"{row['id']}-{copy}", "url": row["url"], "title": row["name"].strip()}
        if sys.argv[4] == "yes" and row["image.contentUrl"]:
            line["pictures"] = [f"{row['image.contentUrl']}?copy={copy}"]
        if row["price"]:
            line.update(price=int(float(row["price"])), currency="AUD")
        if row["Year"].isdigit():
            line["year"] = int(row["Year"])
        out.write(json.dumps(line) + "\n")
PY
LISTINGS=$(wc -l < "$WORK/snapshot.jsonl")
times=()
for run in $(seq "$RUNS"); do
  data=$WORK/data-$run
  "$BIN" --data-dir "$data" import "$WORK/dataset" > /dev/null 2>&1
  start=$(date +%s.%N)
  report=$("$BIN" --data-dir "$data" ingest --provider chrono24 "$WORK/snapshot.jsonl" 2>/dev/null)
  end=$(date +%s.%N)
  took=$(echo "$end - $start" | bc)
  times+=("$took")
  echo "run $run: ${took}s  $(echo "$report" | head -1)"
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
echo "median ${median}s for $LISTINGS listings: $(echo "scale=1; $median * 1000000 / $LISTINGS" | bc) µs per listing"
