#!/usr/bin/env bash
# The scale run of bench/RESULTS.md: generate a dataset, time every batch step of the real binary
# (wall, CPU, cores, peak RSS, sizes on disk) and, after `match`, the floor of issue 50 on the
# same data dir (bench/floor.sh), restart the server and time it to ready, drive it
# over HTTP with the load driver (each kind alone, then the default mix, then once with the
# default rate limiter), and run the same requests against PostgreSQL and SQLite (bench/peers/).
#
#   bench/run-scale.sh [--models N] [--listings M] [--work-dir DIR] [--duration 8s]
#                      [--concurrency 32] [--latency-concurrency 4] [--port 18431] [--no-peers]
#
# Defaults: 1,000,000 models, 10,000,000 listings, /tmp/watch-scale. Needs ~50 GB of free disk at
# the defaults (~30 GB ours, ~20 GB the peers' databases and export; measured 2026-11-28), checked
# before anything runs. Everything listens on 127.0.0.1 only; every server started is stopped on exit.
# The figures land in WORK_DIR/results.md (markdown) and WORK_DIR/*.json.
set -euo pipefail

MODELS=1000000
LISTINGS=10000000
WORK=/tmp/watch-scale
DURATION=8s
CONCURRENCY=32
LATENCY_CONCURRENCY=4
PEERS=1
PORT=18431
SETTLE=90
while [[ $# -gt 0 ]]; do
  case "$1" in
    --models) MODELS=$2; shift 2 ;;
    --listings) LISTINGS=$2; shift 2 ;;
    --work-dir) WORK=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --latency-concurrency) LATENCY_CONCURRENCY=$2; shift 2 ;;
    --no-peers) PEERS=0; shift ;;
    --port) PORT=$2; shift 2 ;;
    *) echo "unknown option $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release/watch-catalogue
BENCH=$ROOT/target/release/catalogue-bench
DATASET=$WORK/dataset
FEEDS=$WORK/feeds
DATA=$WORK/data
RESULTS=$WORK/results.md
BASE=http://127.0.0.1:$PORT

command -v /usr/bin/time >/dev/null || { apt-get update -qq && apt-get install -y -qq time; }
command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf; }

# shellcheck source=bench/server-lib.sh
source "$ROOT/bench/server-lib.sh"

say() { echo "$@" | tee -a "$RESULTS"; }

# Runs a command under /usr/bin/time and adds a table row: wall, CPU, cores, peak RSS.
STEP_ROWS=()
timed() {
  local name=$1; shift
  local log=$WORK/step-${name// /-}.time
  echo ">> $name: $*" >&2
  /usr/bin/time -f '%e %U %S %M' -o "$log" "$@" > "$WORK/step-${name// /-}.out" 2>&1 || {
    echo "step '$name' failed; see $WORK/step-${name// /-}.out" >&2; tail -20 "$WORK/step-${name// /-}.out" >&2; exit 1; }
  read -r wall user sys rss_kib < <(tail -1 "$log")
  STEP_ROWS+=("$(awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss_kib" \
    'BEGIN { printf "| %s | %.1f s | %.1f s | %.2f | %d MiB |", n, w, u + s, (u + s) / w, r / 1024 }')")
}

mib() { du -sm "$1" | cut -f1; }

# Starts the server with the given options and waits for /readyz; READY_SECS says how long.
READY_SECS=
start_server() {
  local limiter=("$@")
  local started
  started=$(date +%s.%N)
  if curl -fs -o /dev/null "$BASE/readyz"; then
    echo "something already answers on $BASE; stop it first" >&2; exit 1
  fi
  # Without the image worker: the generated feeds' picture URLs cannot be fetched here, so it
  # would fail through millions of them at full speed, committing as it goes, and the reads
  # measured would share the machine with that (text search p50 0.87 ms with it, 0.34 without).
  "$BIN" --data-dir "$DATA" serve --addr "127.0.0.1:$PORT" --no-picture-worker "${limiter[@]}" \
    > "$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 6000); do
    if curl -fs -o /dev/null "$BASE/readyz"; then
      READY_SECS=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
      return
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "server died; see $WORK/server.log" >&2; exit 1; }
    sleep 0.02
  done
  echo "server not ready after 120 s" >&2; exit 1
}

# The server joins every duplicate group and reads the large models' prices in the background
# after it is ready (seconds at 1M models, on every core): a load started before that is done
# measures both. Waits for it, then says how long it took after ready.
wait_for_startup_work() {
  local started
  started=$(date +%s.%N)
  for _ in $(seq 1 3000); do
    if grep -q "duplicate groups joined\|duplicate groups read as kept\|joining the duplicate groups at start-up" "$WORK/server.log"; then
      echo "start-up work done $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after ready" >&2
      # What a start leaves warming (sled's cache, the index pages) still slows a load begun
      # at once: at 32 clients the mix ran at 2,148 req/s right after, 2,982 after 90 s.
      sleep "$SETTLE"
      return
    fi
    sleep 0.1
  done
  echo "start-up work not done after 300 s; measuring anyway" >&2
}

server_rss() { awk '/VmHWM|VmRSS/ { printf "%s %d MiB  ", $1, $2 / 1024 }' "/proc/$SERVER_PID/status"; }

rm -rf "$WORK"; mkdir -p "$WORK"
# A run that fills the disk fails an hour in (the peers load last): refuse at once instead.
need_gb=$(awk -v l="$LISTINGS" -v p="$PEERS" 'BEGIN { g = (30 + 20 * p) * l / 10000000; print (g < 1 ? 1 : int(g + 0.999)) }')
free_gb=$(df --output=avail -BG "$WORK" | tail -1 | tr -dc '0-9')
if (( free_gb < need_gb )); then
  echo "$WORK has ${free_gb} GB free; a run of $LISTINGS listings needs about ${need_gb} GB" >&2
  exit 2
fi
: > "$RESULTS"
(cd "$ROOT" && cargo build --release -q -p watch-catalogue -p catalogue-bench --bins --example sled_floor)

say "# Scale run: $MODELS models, $LISTINGS listings"
say ""
say "$(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr), $(date -u +%Y-%m-%d); \`bench/run-scale.sh --models $MODELS --listings $LISTINGS\`"
say ""

# --- Batch steps, each a separate process of the real binary ---------------------------------
timed "generate" "$BENCH" generate --models "$MODELS" --listings "$LISTINGS" --out "$DATASET"
# The catalogue alone first, then each provider's snapshot through `ingest`.
mv "$DATASET/listings" "$FEEDS"
timed "import (catalogue)" "$BIN" --data-dir "$DATA" import "$DATASET"
for feed in "$FEEDS"/*.jsonl; do
  provider=$(basename "$feed" .jsonl)
  timed "ingest $provider" "$BIN" --data-dir "$DATA" ingest --provider "$provider" "$feed"
done
timed "match" "$BIN" --data-dir "$DATA" match
# The floor the same hour (issue 50): sled alone and the listings index alone, on this data dir.
ingest_and_match=$(for t in "$WORK"/step-ingest-*.time "$WORK/step-match.time"; do tail -1 "$t"; done |
  awk '{ s += $1 } END { printf "%.1f", s }')
INGEST_SECONDS=$ingest_and_match bash "$ROOT/bench/floor.sh" "$DATA" "$ROOT/target/release" "$LISTINGS" \
  > "$WORK/floor.out"
timed "reindex (both indexes)" "$BIN" --data-dir "$DATA" reindex
timed "re-ingest provider-4 (a revisit)" "$BIN" --data-dir "$DATA" ingest --provider provider-4 "$FEEDS/provider-4.jsonl"

say "| step | wall | CPU | cores | peak RSS |"
say "|---|--:|--:|--:|--:|"
for row in "${STEP_ROWS[@]}"; do say "$row"; done
say ""
for out in "$WORK"/step-ingest-*.out "$WORK/step-match.out" "$WORK"/step-reindex*.out; do
  say "    $(basename "$out" .out): $(grep -v '^\s*$' "$out" | tail -1)"
done
say ""
raw=$(( $(mib "$DATASET") + $(mib "$FEEDS") ))
store=$(mib "$DATA/store"); index=$(mib "$DATA/index"); listings_index=$(mib "$DATA/listings-index")
say "The floor measured after \`match\` (bench/floor.sh):"
sed 's/^/    /' "$WORK/floor.out" | tee -a "$RESULTS"
say ""
say "Raw dataset ${raw} MiB (listings $(mib "$FEEDS") MiB); store ${store} MiB, catalogue index ${index} MiB, listings index ${listings_index} MiB: $(awk -v a=$((store + index + listings_index)) -v b="$raw" 'BEGIN { printf "%.2f", a / b }')x the raw dataset (target < 2.5x)."
say ""

# --- Ready after a restart -------------------------------------------------------------------
ready=()
for _ in 1 2 3; do
  start_server "${UNLIMITED[@]}"
  ready+=("$READY_SECS s")
  stop_server
done
say "Ready after a restart (process start to the first 200 from /readyz): ${ready[*]} (target < 2 s)."
say ""

# --- HTTP load, rate limit lifted --------------------------------------------------------------
start_server "${UNLIMITED[@]}"
wait_for_startup_work
"$BENCH" load --base "$BASE" --dump-requests "$WORK/requests.jsonl" --dump-only > /dev/null
# Each kind alone: one client (latency alone), LATENCY_CONCURRENCY (the targets' latency under
# load) and CONCURRENCY (capacity).
bash "$ROOT/bench/peers/run-ours.sh" "$BASE" "$WORK/requests.jsonl" "$WORK/ours" \
  --concurrency "1,$LATENCY_CONCURRENCY,$CONCURRENCY" --duration "${DURATION%s}" > "$WORK/ours.log"
say "### Each kind alone over HTTP (ms)"
say ""
python3 - "$WORK/ours" "1,$LATENCY_CONCURRENCY,$CONCURRENCY" <<'PY' | tee -a "$RESULTS"
import json, sys, glob, os
out, levels = sys.argv[1], sys.argv[2].split(",")
print("| kind | clients | req/s | p50 | p90 | p99 | max | errors |")
print("|---|--:|--:|--:|--:|--:|--:|--:|")
kinds = []
for path in sorted(glob.glob(os.path.join(out, "ours-c*-*.json"))):
    k = json.load(open(path))["kinds"][0]["kind"]
    if k not in kinds:
        kinds.append(k)
for kind in kinds:
    for c in levels:
        path = os.path.join(out, f"ours-c{c}-{kind}.json")
        if not os.path.exists(path):
            continue
        k = json.load(open(path))["overall"]
        ms = lambda us: f"{us / 1000:.2f}"
        print(f"| {kind} | {c} | {k['ok_rps']:.0f} | {ms(k['p50_us'])} | {ms(k['p90_us'])} | "
              f"{ms(k['p99_us'])} | {ms(k['max_us'])} | {k['errors']} |")
PY
say ""
say "### Default mix over HTTP, concurrency $CONCURRENCY"
say ""
"$BENCH" load --base "$BASE" --duration "$DURATION" --warmup 2s --concurrency "$CONCURRENCY" \
  --json "$WORK/load-mix.json" > "$WORK/load-mix.md"
tee -a "$RESULTS" < "$WORK/load-mix.md"
say ""
say "Server memory after the load: $(server_rss)(target: RSS < 3 GiB)"
say ""
stop_server

# --- Once with the default limiter -------------------------------------------------------------
start_server
wait_for_startup_work
say "### Default mix with the default rate limiter (600 requests / 60 s per IP), concurrency $CONCURRENCY"
say ""
"$BENCH" load --base "$BASE" --duration 5s --concurrency "$CONCURRENCY" --json "$WORK/load-limited.json" \
  > "$WORK/load-limited.md" 2>&1 || true
grep -E '^\|' "$WORK/load-limited.md" | tee -a "$RESULTS"
say ""
stop_server

# --- Peers -------------------------------------------------------------------------------------
if [[ $PEERS == 1 ]]; then
  timed "export for the peers" "$BENCH" export-peers --data-dir "$DATA" --out "$WORK/peers-export" --gzip
  say "Export for the peers (catalogue-bench export-peers --gzip): ${STEP_ROWS[-1]}"
  say ""
  for c in 1 "$CONCURRENCY"; do
    "$BENCH" replay --data-dir "$DATA" --requests "$WORK/requests.jsonl" --concurrency "$c" \
      --duration "$DURATION" --json "$WORK/ours/inprocess-c$c.json" > /dev/null
  done
  # The server is up again only so that the peers' answers are checked against ours.
  start_server "${UNLIMITED[@]}"
  bash "$ROOT/bench/peers/run-peers.sh" "$WORK/peers-export" "$WORK/requests.jsonl" "$WORK/peers" \
    --concurrency "1,$CONCURRENCY" --duration "${DURATION%s}" --base "$BASE" > "$WORK/peers.log" 2>&1
  stop_server
  say "### Peers"
  say ""
  say "$(cat "$WORK/peers/load.txt")"
  say ""
  python3 "$ROOT/bench/peers/compare.py" "$WORK"/ours/*.json "$WORK"/peers/postgresql-c*.json \
    "$WORK"/peers/sqlite-c*.json --out "$WORK/compare.md" > /dev/null
  tee -a "$RESULTS" < "$WORK/compare.md"
fi

echo "figures in $RESULTS"
