#!/usr/bin/env bash
# Batch jobs against a running server (issue 15): a LISTINGS-listing snapshot posted to a server
# holding MODELS models while the load driver reads, against the offline `ingest` of the same
# snapshot into a copy of the same data dir; the readers' p50/p99 during the job against the
# idle server.
#
#   bench/jobs.sh [BINARY] [BENCH_BINARY]
#       (default: $CARGO_TARGET_DIR or target/, release/watch-catalogue and
#        release/catalogue-bench; build both with `cargo build --release`)
#
# Knobs (environment): MODELS=100000 LISTINGS=1000000 SEED=42 CONCURRENCY=4 (load clients)
# RATE=200 (the readers' requests a second, sent on schedule, as real readers send them; 0: a
# closed loop, each client sending again once answered, which takes every core the job leaves)
# IDLE=20s (the idle load's measured time) DURING=120s (the load's measured time, started once
# the job runs, after the upload and the check; keep it under the job's run time; 0: no load
# while the job runs, the job alone) PORT=18441 CACHE (the generated dataset,
# kept between runs; default /tmp/catalogue-bench-jobs-MODELS-LISTINGS-SEED).
#
# 1. `catalogue-bench generate` into CACHE, once; its four provider snapshots concatenated into
#    one snapshot of LISTINGS listings (their source ids are distinct) posted as `provider-1`'s.
# 2. `watch-catalogue import` of the catalogue alone into a data dir, copied: A and B.
# 3. Offline: `watch-catalogue ingest --provider provider-1` on A under /usr/bin/time.
# 4. `serve` on B (no picture worker, rate limits lifted), an admin added first; the load
#    driver alone for IDLE (the idle figures); then `watch-catalogue ingest --provider
#    provider-1 SNAPSHOT --server` (under /usr/bin/time: the upload, the check, the job), the
#    load driver for DURING from the moment the job is running, and the job's record read back
#    (startedAt, finishedAt).
# Everything listens on 127.0.0.1 only. The work dir is removed on exit and every process
# started here is stopped; the dataset cache is kept.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${1:-$TARGET/release/watch-catalogue}
BENCH=${2:-$TARGET/release/catalogue-bench}
MODELS=${MODELS:-100000}
LISTINGS=${LISTINGS:-1000000}
SEED=${SEED:-42}
CONCURRENCY=${CONCURRENCY:-4}
RATE=${RATE:-200}
LOAD_RATE=()
[[ $RATE == 0 ]] || LOAD_RATE=(--rate "$RATE")
IDLE=${IDLE:-20s}
DURING=${DURING:-120s}
PORT=${PORT:-18441}
CACHE=${CACHE:-/tmp/catalogue-bench-jobs-$MODELS-$LISTINGS-$SEED}
for exe in "$BIN" "$BENCH"; do
  [[ -x $exe ]] || { echo "no $exe: cargo build --release first" >&2; exit 1; }
done
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/catalogue-bench-jobs.XXXXXX)
BASE=http://127.0.0.1:$PORT
SERVER_PID=
LOAD_PID=
cleanup() {
  for pid in "$LOAD_PID" "$SERVER_PID"; do
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; fi
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# A timed step: wall, CPU, peak RSS, as a table row in $WORK/rows.
timed() {
  local name=$1; shift
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$@" > "$WORK/out" 2> "$WORK/err" || {
    echo "step '$name' failed:" >&2; tail -20 "$WORK/err" >&2; exit 1; }
  read -r wall user sys rss < <(tail -1 "$WORK/time")
  awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v l="$LISTINGS" \
    'BEGIN { printf "| %s | %.1f s | %.1f s | %.2f | %d MiB | %d listings/s |\n", n, w, u + s, (u + s) / w, r / 1024, l / w }' \
    >> "$WORK/rows"
  tail -3 "$WORK/out" | sed 's/^/    /' >> "$WORK/reports"
}

# shellcheck source=bench/jobs-dataset.sh
source "$ROOT/bench/jobs-dataset.sh"
SNAPSHOT=$CACHE/snapshot.jsonl

echo ">> importing the catalogue" >&2
"$BIN" --data-dir "$WORK/a" import "$CACHE" > /dev/null
cp -a "$WORK/a" "$WORK/b"
echo bench-password-123 | "$BIN" --data-dir "$WORK/b" user add bench > /dev/null

echo ">> offline ingest" >&2
timed "offline \`ingest\`" "$BIN" --data-dir "$WORK/a" ingest --provider provider-1 "$SNAPSHOT"
rm -rf "$WORK/a"

echo ">> serving" >&2
RUST_LOG=warn "$BIN" --data-dir "$WORK/b" serve --addr "127.0.0.1:$PORT" --no-picture-worker \
  --rate-limit 1000000000 --admin-rate-limit 1000000000 > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 3000); do curl -fs -o /dev/null "$BASE/readyz" && break; sleep 0.1; done
curl -fs -o /dev/null "$BASE/readyz" || { echo "server not ready" >&2; exit 1; }

echo ">> idle load" >&2
"$BENCH" load --base "$BASE" --concurrency "$CONCURRENCY" "${LOAD_RATE[@]}" --duration "$IDLE" --warmup 2s > "$WORK/idle.md"

cookie=$(curl -fs -i -H 'content-type: application/json' \
  -d '{"username":"bench","password":"bench-password-123"}' "$BASE/v1/auth/login" \
  | awk -F'[ ;]' 'tolower($1) == "set-cookie:" { print $2 }')
state() { curl -fs -H "cookie: $cookie" "$BASE/v1/admin/jobs/1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null || echo none; }
echo ">> posting the snapshot" >&2
export WATCH_CATALOGUE_USER=bench WATCH_CATALOGUE_PASSWORD=bench-password-123
timed "\`ingest --server\` (upload, check, job)" "$BIN" ingest --provider provider-1 "$SNAPSHOT" --server "$BASE" &
LOAD_PID=$!
until [[ $(state) == running ]]; do sleep 0.5; kill -0 "$LOAD_PID" 2>/dev/null || { echo "the submission ended before its job ran" >&2; exit 1; }; done
if [[ $DURING == 0 ]]; then
  echo ">> the job alone (DURING=0)" >&2
  echo "No load while the job ran (DURING=0)." > "$WORK/during.md"
  still=no
else
  echo ">> load during the job" >&2
  "$BENCH" load --base "$BASE" --concurrency "$CONCURRENCY" "${LOAD_RATE[@]}" --duration "$DURING" > "$WORK/during.md"
  [[ $(state) == running ]] && still=yes || still="no (DURING outlasted the job: lower it)"
fi
wait "$LOAD_PID" || { echo "the submission failed" >&2; exit 1; }
LOAD_PID=
job=$(curl -fs -H "cookie: $cookie" "$BASE/v1/admin/jobs/1")
rss=$(awk '/VmHWM/ { printf "%d MiB", $2 / 1024 }' "/proc/$SERVER_PID/status")

echo "# Batch jobs: $LISTINGS listings posted to a server holding $MODELS models"
echo
echo "$(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(date -u '+%Y-%m-%d %H:%M'); \`bench/jobs.sh\` (MODELS=$MODELS LISTINGS=$LISTINGS CONCURRENCY=$CONCURRENCY RATE=$RATE IDLE=$IDLE DURING=$DURING)"
echo
echo "| step | wall | CPU | cores | peak RSS | rate |"
echo "|---|--:|--:|--:|--:|--:|"
cat "$WORK/rows"
echo
echo "Reports (last lines):"
echo
cat "$WORK/reports"
echo
echo "The job's record: \`$(echo "$job" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({k: j[k] for k in ["state","progress","submittedAt","startedAt","finishedAt"]}))')\`; server peak RSS $rss."
echo
echo "## Readers, idle server ($CONCURRENCY clients, RATE=$RATE, $IDLE)"
echo
cat "$WORK/idle.md"
echo
echo "## Readers while the job runs ($CONCURRENCY clients, RATE=$RATE, $DURING from the job's start; job still running at the end: $still)"
echo
cat "$WORK/during.md"
