#!/usr/bin/env bash
# Offline `watch-catalogue ingest` of one large snapshot into a data dir holding only the
# catalogue, timed with /usr/bin/time -v, with the writer's debug log (where the time goes).
# The dataset is bench/jobs.sh's: its four provider snapshots concatenated into one.
#
#   bench/ingest.sh [BINARY] [BENCH_BINARY]
#
# Knobs (environment): MODELS=100000 LISTINGS=1000000 SEED=42, CACHE (the dataset, shared with
# bench/jobs.sh), BASE (the imported catalogue, kept between runs; default CACHE.base),
# AGAIN=1 (ingest the same snapshot a second time: all refreshed), PERF=1 (under perf record -g,
# into WORK/perf.data, kept). The data dir is removed on exit unless KEEP=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/watch-catalogue}
BENCH=${2:-$(dirname "$BIN")/catalogue-bench}
: "${MODELS:=100000}" "${LISTINGS:=1000000}" "${SEED:=42}"
CACHE=${CACHE:-/tmp/catalogue-bench-jobs-$MODELS-$LISTINGS-$SEED}
BASE=${BASE:-$CACHE.base}
# shellcheck source=bench/jobs-dataset.sh
source "$ROOT/bench/jobs-dataset.sh"
imported_catalogue "$BASE"
WORK=$(mktemp -d /tmp/catalogue-bench-ingest.XXXXXX)
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$WORK/data"' EXIT
cp -a "$BASE" "$WORK/data"
# A base imported by an older binary is brought to this one's schema first (nothing when current).
"$BIN" --data-dir "$WORK/data" migrate >&2
run() {
  local what=$1
  local cmd=("$BIN" --data-dir "$WORK/data" ingest --provider provider-1 "$CACHE/snapshot.jsonl")
  [[ ${PERF:-0} == 1 ]] && cmd=(perf record -g -F 499 -o "$WORK/perf-$what.data" -- "${cmd[@]}")
  echo ">> $what: ${cmd[*]}" >&2
  RUST_LOG=watch_catalogue=debug,catalogue_index=debug /usr/bin/time -v "${cmd[@]}" > "$WORK/$what.out" 2> "$WORK/$what.err"
  cat "$WORK/$what.out"
  grep -E "write done|indexes updated|index committed|index load|loaded" "$WORK/$what.err" | sed 's/\x1b\[[0-9;]*m//g' | tail -12
  grep -E "Elapsed|Maximum resident|Percent of CPU|User time|System time" "$WORK/$what.err"
}
run first
[[ ${AGAIN:-0} == 1 ]] && run again
du -sh "$WORK/data"/* | sed 's/^/   /'
echo "work dir: $WORK"
