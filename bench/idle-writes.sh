#!/usr/bin/env bash
# What an idle server writes to disk (D-245): starts `serve` on DATA_DIR, waits until it is
# ready, sends it nothing, and every INTERVAL seconds prints the bytes the process wrote in that
# interval (/proc/PID/io's write_bytes), its CPU over the interval and sled's file size. A
# store whose sled keeps relocating the same pages shows here as writes that never stop; the
# work a start does (the store's first flush, what a stopped process left) shows first.
#
#   bench/idle-writes.sh DATA_DIR [BIN] [SAMPLES] [INTERVAL]
#
# BIN defaults to target/release/watch-catalogue; 12 samples of 10 s. The data dir is written
# to (sled's own cleaning): run it on a copy when the store's state is still wanted. Listens on
# 127.0.0.1 only; the server is stopped on exit, its output left in /tmp/idle-writes-server.*.log.
set -euo pipefail
DATA=${1:?usage: bench/idle-writes.sh DATA_DIR [BIN] [SAMPLES] [INTERVAL]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${2:-$ROOT/target/release/watch-catalogue}
SAMPLES=${3:-12}
INTERVAL=${4:-10}
PORT=${PORT:-18433}
[[ -d $DATA/store ]] || { echo "no data dir at $DATA" >&2; exit 2; }

# shellcheck source=bench/server-lib.sh
source "$ROOT/bench/server-lib.sh"
LOG=$(mktemp /tmp/idle-writes-server.XXXXXX.log)
"$BIN" --data-dir "$DATA" serve --addr "127.0.0.1:$PORT" --no-picture-worker > "$LOG" 2>&1 &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$PORT" 600 "$LOG"

written() { awk '/^write_bytes/ { print $2 }' "/proc/$SERVER_PID/io"; }
# utime + stime of the process, in clock ticks (fields 14 and 15 of /proc/PID/stat).
ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }
hz=$(getconf CLK_TCK)
echo "seconds  MiB written  CPU %  sled MiB"
before=$(written); cpu_before=$(ticks)
for i in $(seq "$SAMPLES"); do
  sleep "$INTERVAL"
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "the server exited; see $LOG" >&2; exit 1; }
  now=$(written); cpu_now=$(ticks)
  awk -v t=$((i * INTERVAL)) -v b=$((now - before)) -v c=$((cpu_now - cpu_before)) -v hz="$hz" \
      -v n="$INTERVAL" -v s="$(du -sm "$DATA/store" | cut -f1)" \
    'BEGIN { printf "%7d  %11.1f  %5.0f  %8d\n", t, b / 1048576, 100 * c / hz / n, s }'
  before=$now; cpu_before=$cpu_now
done
