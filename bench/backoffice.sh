#!/usr/bin/env bash
# The back office at scale (issue 47): on the data dir of a scale run (bench/run-scale.sh, kept
# in WORK/data), one admin's every read and write, p50/p99 over REPEAT requests each (begun once
# the start's own work is done; each read's first request timed apart); the first request of six
# reads right after a start; merges of duplicates with LEAST listings or more, a link every
# 100 ms while the listing mover relinks them (LARGE_MERGES merges, more until REPEAT links were
# sent); and a link and a merge while a snapshot job runs. Last, the requests over 50 ms (the
# reads' target; writes' is 100, a first request after a start's 200), each marked where the
# machine itself did not run while it waited (`bench/host-stalls.py`, from
# `disk-cpu-sample.py` run beside the whole bench; D-254, D-255).
#
#   bench/backoffice.sh [--work-dir /tmp/watch-scale] [--repeat 50] [--port 18432] [--no-first]
#                       [--cold] [--serve-flag FLAG]... [--first-text WORD]... [--bin PATH]
#                       [--large-merges 3] [--least 1500]
#
# --no-first leaves out the first request after a start (six restarts); --first-text adds a
# start whose first request is `/reconciliation?q=WORD` (a word many groups share, such as a
# brand sellers write: the dataset's own, e.g. Maison at the scale run); --cold drops the page
# cache before every start, as after a reboot (root only); --serve-flag passes a flag to every
# `serve` (e.g. --serve-flag --no-picture-worker); --bin runs that build instead of building the
# tree's (to alternate two builds on the same data dir); --large-merges 0 leaves the large
# merges out (each run merges away the largest duplicates it finds among the first groups).
#
# The data dir is used as it is and written to (links, models made, merges): run it on a copy
# when the scale run's figures are still wanted. Everything listens on 127.0.0.1 only; the
# server is stopped on exit. Figures land in WORK/backoffice.md; the requests' timeline and the
# machine's samples in WORK/backoffice.timeline and WORK/backoffice.samples (the disk `vda`
# unless DEVICE names another).
# The server's public and admin budgets are lifted (server-lib.sh's UNLIMITED): at --repeat 500
# one admin sends about 10,000 requests in its busiest minute, past the 6,000 a minute allows.
set -euo pipefail

WORK=/tmp/watch-scale
BIN=
REPEAT=50
PORT=18432
FIRST=1
COLD=0
LARGE_MERGES=3
LEAST=1500
SERVE_FLAGS=()
FIRST_TEXTS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work-dir) WORK=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --no-first) FIRST=0; shift ;;
    --cold) COLD=1; shift ;;
    --serve-flag) SERVE_FLAGS+=("$2"); shift 2 ;;
    --first-text) FIRST_TEXTS+=("$2"); shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --large-merges) LARGE_MERGES=$2; shift 2 ;;
    --least) LEAST=$2; shift 2 ;;
    *) echo "unknown option $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=$WORK/data
OUT=$WORK/backoffice.md
BASE=http://127.0.0.1:$PORT
USER_NAME=bench-admin
PASSWORD="bench $(date +%s) $RANDOM"
[[ -d $DATA/store ]] || { echo "no data dir at $DATA: run bench/run-scale.sh first" >&2; exit 2; }

# shellcheck source=bench/server-lib.sh
source "$ROOT/bench/server-lib.sh"

start_server() {
  LOG_LINES=$(wc -l < "$WORK/backoffice-server.log")
  if [[ $COLD == 1 ]]; then
    sync
    echo 3 > /proc/sys/vm/drop_caches || { echo "--cold needs root (/proc/sys/vm/drop_caches)" >&2; exit 2; }
  fi
  "$BIN" --data-dir "$DATA" serve --addr "127.0.0.1:$PORT" "${UNLIMITED[@]}" "${SERVE_FLAGS[@]}" >> "$WORK/backoffice-server.log" 2>&1 &
  SERVER_PID=$!
  wait_ready "$BASE" 600 "$WORK/backoffice-server.log"
}

# The warm reads wait for the work a start does beside requests (the duplicate groups read, the
# large models' prices kept, the indexes read ahead, sled's first flush: one to three seconds at
# the scale run), which the first requests after a start are timed against on their own.
wait_start_up_work() {
  local log
  for _ in $(seq 1 600); do
    log=$(tail -n "+$((LOG_LINES + 1))" "$WORK/backoffice-server.log")
    if grep -q "large models' prices kept" <<< "$log" \
      && grep -q "search indexes read ahead" <<< "$log" \
      && grep -q "store's first flush" <<< "$log" \
      && grep -q "duplicate groups read as kept\|duplicate groups joined" <<< "$log"; then
      return
    fi
    sleep 0.1
  done
  echo "the start-up work did not end within 60 s" >&2; exit 1
}

if [[ -z $BIN ]]; then
  (cd "$ROOT" && cargo build --release -q -p watch-catalogue)
  BIN=$ROOT/target/release/watch-catalogue
fi
# A store of an older schema is migrated by `migrate` (the server would do it at start, timed
# into its first start).
/usr/bin/time -f 'migrate: %e s wall, %M KiB peak' "$BIN" --data-dir "$DATA" migrate 2>&1 | tail -3
"$BIN" --data-dir "$DATA" user remove "$USER_NAME" > /dev/null 2>&1 || true
printf '%s\n%s\n' "$PASSWORD" "$PASSWORD" | "$BIN" --data-dir "$DATA" user add "$USER_NAME" --role admin > /dev/null
: > "$WORK/backoffice-server.log"
TIMELINE=$WORK/backoffice.timeline
SAMPLES=$WORK/backoffice.samples
: > "$TIMELINE"
start_sampler "$SAMPLES"
bench() { python3 "$ROOT/bench/backoffice.py" "$BASE" "$USER_NAME" "$PASSWORD" --timeline "$TIMELINE" "$@"; }

{
  echo "# The back office at scale"
  echo
  echo "$(nproc) cores, $(date -u +%Y-%m-%d), $(git -C "$ROOT" rev-parse --short HEAD), build $BIN; \`bench/backoffice.sh --repeat $REPEAT\`$([[ $COLD == 1 ]] && echo ', page cache dropped before each start')"
  echo
  echo "| read | first request after a start, ms | status |"
  echo "|---|--:|--:|"
} > "$OUT"
for kind in "reconciliation page 1" "duplicate-models page 1" "audit page 1" "unmatched listings page 1" "stats" "jobs"; do
  [[ $FIRST == 1 ]] || break
  start_server
  bench --first "$kind" >> "$OUT"
  stop_server
done
for word in "${FIRST_TEXTS[@]}"; do
  [[ $FIRST == 1 ]] || break
  start_server
  bench --first-text "$word" >> "$OUT"
  stop_server
done
echo >> "$OUT"

start_server
wait_start_up_work
bench --repeat "$REPEAT" --json "$WORK/backoffice.json" >> "$OUT"
echo >> "$OUT"
if [[ $LARGE_MERGES -gt 0 ]]; then
  bench --large-merges "$LARGE_MERGES" --least "$LEAST" --pages 6000 --repeat "$REPEAT" >> "$OUT"
  echo >> "$OUT"
fi
feed=$(ls "$WORK"/feeds/*.jsonl | tail -1)
bench --snapshot "$feed" --provider "$(basename "$feed" .jsonl)" >> "$OUT"
stop_server
stop_sampler
{ echo; python3 "$ROOT/bench/host-stalls.py" "$TIMELINE" "$SAMPLES" 50 || true; } >> "$OUT"
cat "$OUT"
