#!/usr/bin/env bash
# Issue 51's check at the scale run's size: a two-year history replayed into a store of that
# size, then a model's weekly series timed over HTTP and asked of PostgreSQL beside it.
#
#   bench/history-scale.sh DATA_DIR DATASET [WORK] [--no-peers]
#
# DATA_DIR is a data dir of the scale run (bench/ingest-scale.sh with KEEP=1 leaves one), DATASET
# the `catalogue-bench generate` dataset it came from. bench/history-dataset.py writes a provider
# of its own (`history-1`) and its 100,000-listing stock of one model over 104 weeks, a snapshot
# every 4 weeks; each is ingested with `--observed-at` its date (D-214), timed. Then `serve`
# folds the series and bench/history.py times 104 weeks of it (500 requests), and
# bench/peers/history.sh asks PostgreSQL the same (its answers checked against ours). WORK
# (default /tmp/history-scale) keeps the snapshots, the logs and history.txt, the figures.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/target/release/watch-catalogue}
[[ $# -ge 2 ]] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
DATA=$(realpath "$1"); DATASET=$(realpath "$2"); shift 2
WORK=/tmp/history-scale PEERS=1
for arg in "$@"; do
  case $arg in
    --no-peers) PEERS=0 ;;
    -*) echo "unknown option $arg" >&2; exit 2 ;;
    *) WORK=$arg ;;
  esac
done
PORT=18531 BASE=http://127.0.0.1:18531
FROM=2024-12-02 TO=2026-11-23
mkdir -p "$WORK"; : > "$WORK/history.txt"
note() { echo "$*" | tee -a "$WORK/history.txt" >&2; }

python3 "$ROOT/bench/history-dataset.py" "$DATASET" "$WORK/history" ${HISTORY_ARGS:-} | tee -a "$WORK/history.txt"
read -r BRAND MODEL < "$WORK/history/model.txt"
# The provider, from a dataset of its providers.jsonl alone.
mkdir -p "$WORK/provider"; cp "$WORK/history/providers.jsonl" "$WORK/provider/"
"$BIN" --data-dir "$DATA" import "$WORK/provider" > "$WORK/import.log" 2>&1
while read -r name at; do
  /usr/bin/time -f "%e s wall, %U+%S s CPU, %M KiB" -o "$WORK/time-$name" \
    "$BIN" --data-dir "$DATA" ingest --provider history-1 --observed-at "$at" \
    "$WORK/history/snapshots/$name.jsonl" > "$WORK/ingest-$name.log" 2>&1
  note "snapshot $name taken $at: $(grep -m1 "^ingested" "$WORK/ingest-$name.log" | cut -c1-150); $(cat "$WORK/time-$name")"
done < "$WORK/history/dates.txt"

"$BIN" --data-dir "$DATA" serve --addr "127.0.0.1:$PORT" --rate-limit 1000000000 > "$WORK/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 600); do curl -fs -o /dev/null "$BASE/readyz" && break; sleep 1; done
# The series are folded in the background: wait for the log to be drained.
for _ in $(seq 1200); do grep -q "price series folded" "$WORK/serve.log" && break; sleep 1; done
note "$(grep "price series folded" "$WORK/serve.log" | tail -1 | sed 's/\x1b\[[0-9;]*m//g')"
sleep 5
Q="/v1/listings/stats/history?brand=$BRAND&model=$MODEL&currency=EUR"
note "104 weeks: $(python3 "$ROOT/bench/history.py" "$BASE" "$Q&interval=week&from=$FROM&to=$TO" 500 | tail -1)"
note "24 months: $(python3 "$ROOT/bench/history.py" "$BASE" "$Q&interval=month&from=$FROM&to=$TO" 500 | tail -1)"
note "13 weeks (default): $(python3 "$ROOT/bench/history.py" "$BASE" "$Q" 500 | tail -1)"
curl -s "$BASE$Q&interval=week&from=$FROM&to=$TO" > "$WORK/series.json"
if [[ $PEERS -eq 1 ]]; then
  bash "$ROOT/bench/peers/history.sh" "$WORK/history" "$WORK/peers" --from "$FROM" --to "$TO" --base "$BASE"
  cat "$WORK/peers/history.txt" >> "$WORK/history.txt"
fi
