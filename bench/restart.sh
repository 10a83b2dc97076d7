#!/usr/bin/env bash
# Ready after a restart: the time from starting `watch-catalogue serve` on a data dir to the
# first 200 from `/readyz`, N times with the page cache warm and N times cold. Each run is
# stopped with SIGTERM (a clean shutdown: requests finished, store flushed) before the next.
#
#   bench/restart.sh DATA_DIR [N] [BINARY]
#
# "Cold" without a writable /proc/sys/vm/drop_caches: every file of the data dir (and the
# binary, unless EVICT_BINARY=0) is dropped from the page cache one by one with
# posix_fadvise(DONTNEED) (GNU dd's iflag=nocache), and `fincore` checks that what stays
# cached is under 1 MiB before the timed start. Knobs (environment): PORT=18987,
# EVICT_BINARY=1, RUST_LOG (default warn; the server's log goes to WORK/serve-*.log),
# LOCK=/tmp/bench.lock
# (every timed start holds it, so no other benchmark overlaps it), PHASES=1 (the server logs
# sled's and tantivy's debug lines, and each start is split into: process start to sled's first
# line (the snapshot file read and decoded), log replay, the segment accountant, the page table
# load (`load_snapshot`, with its page count), then the indexes opened until the port opens).
# COLD_FIRST=1 (no untimed warm-up start, cold starts first: the first start after a batch job,
# which replays the log the job wrote). AFTER=SECONDS (default 0): the server is kept up that
# long after it is ready, and the line also says how long sled's first flush took (its walk of
# the segments, D-219) and the slowest store commit's flush after the start (a write the walk
# held up shows here).
# Prints one line per start: mode, seconds to ready, load average at the start, resident memory
# at ready (VmHWM).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${1:?usage: bench/restart.sh DATA_DIR [N] [BINARY]}
N=${2:-5}
BIN=${3:-${CARGO_TARGET_DIR:-$ROOT/target}/release/watch-catalogue}
PORT=${PORT:-18987}
LOCK=${LOCK:-/tmp/bench.lock}
EVICT_BINARY=${EVICT_BINARY:-1}
WORK=$(mktemp -d /tmp/catalogue-bench-restart.XXXXXX)
[[ -x $BIN ]] || { echo "no binary at $BIN" >&2; exit 1; }
[[ -d $DATA ]] || { echo "no data dir at $DATA" >&2; exit 1; }

# Drops every file under the data dir (and the binary) from the page cache.
evict() {
  # Dirty pages are not dropped: written back first.
  find "$DATA" -type f -exec sync {} +
  sync "$BIN"
  find "$DATA" -type f -exec dd if={} iflag=nocache count=0 status=none \;
  [[ $EVICT_BINARY == 1 ]] && dd if="$BIN" iflag=nocache count=0 status=none
  return 0
}

# Bytes of the data dir (and binary) in the page cache.
cached_bytes() {
  local files=()
  mapfile -d '' files < <(find "$DATA" -type f -print0)
  [[ $EVICT_BINARY == 1 ]] && files+=("$BIN")
  fincore -b -n -o RES "${files[@]}" | awk '{ sum += $1 } END { print sum + 0 }'
}

# Starts the server, returns the seconds until /readyz answers 200, then stops it cleanly.
timed_start() {
  local mode=$1 run=$2 log="$WORK/serve-$1-$2.log"
  local cmd=("$BIN" --data-dir "$DATA" serve --addr "127.0.0.1:$PORT" --rate-limit 1000000000)
  local start end pid filter=${RUST_LOG:-warn}
  [[ ${PHASES:-0} == 1 ]] && filter=sled=debug,tantivy=debug,watch_catalogue=info
  [[ ${AFTER:-0} != 0 ]] && filter=$filter,watch_catalogue::server=info,watch_catalogue::store=debug
  start=$(date +%s.%N)
  RUST_LOG=$filter "${cmd[@]}" > "$log" 2>&1 &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$PORT/readyz"; do
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "the server exited before it was ready; its log:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.01
  done
  end=$(date +%s.%N)
  grep VmHWM "/proc/$pid/status" | tr -s ' \t' ' ' > "$WORK/hwm-$mode-$run"
  sleep "${AFTER:-0}"
  kill -TERM "$pid"
  wait "$pid" || true
  echo "$start" > "$WORK/start-$mode-$run"
  echo "$end - $start" | bc
}

# sled's first flush and the slowest store commit's flush of one start, from its log (AFTER).
flushes() {
  python3 - "$WORK/serve-$1-$2.log" << 'PY'
import re, sys
units = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
text = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1]).read())
first = re.search(r"store's first flush done took=([0-9.]+)(ns|µs|ms|s)\b", text)
commits = [float(v) * units[u] for v, u in re.findall(r"store commit .*flushed=([0-9.]+)(ns|µs|ms|s)\b", text)]
print(f"    first_flush_s={float(first.group(1)) * units[first.group(2)]:.3f}" if first else "    first_flush_s=not-done",
      f"slowest_commit_flush_s={max(commits):.3f} commits={len(commits)}" if commits else "commits=0")
PY
}

# The phases of one start, from its log (PHASES=1).
phases() {
  python3 - "$WORK/serve-$1-$2.log" "$(cat "$WORK/start-$1-$2")" << 'PY'
import datetime, re, sys
lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in open(sys.argv[1])]
def at(pattern):
    for line in lines:
        if pattern in line:
            return datetime.datetime.fromisoformat(line[:26].rstrip("Z")).replace(tzinfo=datetime.timezone.utc).timestamp()
    return float("nan")
start = float(sys.argv[2])
first, replayed, table, indexes, port = (at(p) for p in ("DEBUG sled", "gc_blobs", "load_snapshot loading", "tantivy", "serving the watch"))
pages = re.search(r"loading pages from 0\.\.(\d+)", "".join(lines))
print(f"    snapshot_read={first - start:.3f} log_replay={replayed - first:.3f} segments={table - replayed:.3f} "
      f"page_table={indexes - table:.3f} pages={pages.group(1) if pages else '?'} indexes_to_port={port - indexes:.3f}")
PY
}

run() {
  local mode=$1 run=$2 seconds load before=""
  if [[ $mode == cold ]]; then
    evict
    before=$(cached_bytes)
    if ((before > 1048576)); then
      echo "eviction left $before bytes cached: not a cold start" >&2
      exit 1
    fi
    before=" cached_before=${before}B"
  fi
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  seconds=$(timed_start "$mode" "$run")
  printf '%s %d ready_s=%.3f load=%s %s%s\n' "$mode" "$run" "$seconds" "$load" "$(cat "$WORK/hwm-$mode-$run")" "$before"
  if [[ ${PHASES:-0} == 1 ]]; then phases "$mode" "$run"; fi
  if [[ ${AFTER:-0} != 0 ]]; then flushes "$mode" "$run"; fi
}

export -f evict cached_bytes timed_start phases flushes run
export DATA BIN PORT WORK EVICT_BINARY AFTER
echo ">> $BIN on $DATA ($(du -sh "$DATA" | cut -f1); store $(du -sh "$DATA/store" | cut -f1), sled snapshot $(du -cb "$DATA"/store/snap.* | tail -1 | cut -f1) bytes), $N warm and $N cold; logs in $WORK" >&2
if [[ ${COLD_FIRST:-0} == 1 ]]; then
  for i in $(seq 1 "$N"); do flock "$LOCK" bash -c "run cold $i"; done
  for i in $(seq 1 "$N"); do flock "$LOCK" bash -c "run warm $i"; done
else
  # One untimed start first: it warms the cache and leaves a cleanly stopped store.
  flock "$LOCK" bash -c 'timed_start warmup 0 > /dev/null'
  for i in $(seq 1 "$N"); do flock "$LOCK" bash -c "run warm $i"; done
  for i in $(seq 1 "$N"); do flock "$LOCK" bash -c "run cold $i"; done
fi
