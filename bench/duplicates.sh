#!/usr/bin/env bash
# The duplicate finder (issue 14) at scale: the full pass on MODELS generated models, recall of
# the pairs the generator planted, and the back office's read and merge latency.
#
#   bench/duplicates.sh [BINARY] [BENCH_BINARY]
#       (default: $CARGO_TARGET_DIR or target/, release/watch-catalogue and
#        release/catalogue-bench; build both with `cargo build --release`)
#
# Knobs (environment): MODELS=1000000 SEED=42 BASE_VARIANTS=0.01 ALTERNATE_OVERLAPS=0.01
# (the generator's planted shares; near-duplicates are always 1 %), IMPORT_CHUNK=0 (models per
# `import`; 0 imports the dataset whole, 3.2 GB peak at 1M since large writes are applied key
# by key; before that a 1M-model import needed more than this machine's 24 GiB), REBUILDS=2 (timed `duplicates rebuild` runs), WARM=50 (warm
# requests per GET), MERGES=5, MEM_LIMIT_MIB=18000 (a timed step using more is killed, so the
# machine's other work is not OOM-killed instead), CACHE (where the generated dataset is kept
# between runs; default /tmp/catalogue-bench-dup-MODELS-SEED-BASE_VARIANTS-ALTERNATE_OVERLAPS;
# delete it after changing the generator), KEEP_DATA (a path: the data dir, merges done, is
# moved there at the end, e.g. for perf; default: removed), FROM_DATA (a data dir a run kept:
# copied and used instead of importing, so steps 3-5 run alone).
#
# 1. `catalogue-bench generate --base-variants --alternate-overlaps` into CACHE, once: the
#    dataset and planted-pairs.jsonl (original, planted model, expected signal).
# 2. `watch-catalogue import` into a fresh data dir, IMPORT_CHUNK models at a time (each chunk
#    a dataset dir of the same brands, series, calibres and a slice of models.jsonl), each under
#    /usr/bin/time -v (wall, CPU, peak RSS); each import's write refreshes the duplicate pairs,
#    a full pass over every model imported so far when it changed more than 20,000.
# 3. `watch-catalogue duplicates rebuild` alone, REBUILDS times, under /usr/bin/time -v
#    (targets: < 60 s, < 4 GB peak); the first finds what the last import's pass stored.
# 4. `catalogue-bench duplicates-recall`: each planted pair, is it a stored pair and by which
#    signal, are both models in one group of `jobs::duplicates::groups` (what GET
#    /duplicate-models pages through) and of what kind; pairs and groups beyond the planted.
# 5. `serve` (no picture worker, rate limits lifted), an admin logged in: GET
#    /v1/duplicate-models?pageSize=100 cold (the first request after start) then WARM times
#    (p50, p99), the same with kind=baseVariant, and with q=<a brand's name>; then MERGES merges
#    of a planted near-duplicate into its original (POST /v1/duplicate-models/merge), each
#    timed, each followed by the first GET after it (the groups are joined again).
# Everything listens on 127.0.0.1 only. The work dir (mktemp) is removed on exit and every
# process started here is stopped; the dataset cache is kept.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${1:-$TARGET/release/watch-catalogue}
BENCH=${2:-$TARGET/release/catalogue-bench}
MODELS=${MODELS:-1000000}
SEED=${SEED:-42}
BASE_VARIANTS=${BASE_VARIANTS:-0.01}
ALTERNATE_OVERLAPS=${ALTERNATE_OVERLAPS:-0.01}
IMPORT_CHUNK=${IMPORT_CHUNK:-0}
REBUILDS=${REBUILDS:-2}
WARM=${WARM:-50}
MERGES=${MERGES:-5}
MEM_LIMIT_MIB=${MEM_LIMIT_MIB:-18000}
CACHE=${CACHE:-/tmp/catalogue-bench-dup-$MODELS-$SEED-$BASE_VARIANTS-$ALTERNATE_OVERLAPS}
KEEP_DATA=${KEEP_DATA:-}
FROM_DATA=${FROM_DATA:-}
# Upper bounds, so a stuck step ends the run instead of hanging it.
IMPORT_LIMIT_SECS=${IMPORT_LIMIT_SECS:-1800}
REBUILD_LIMIT_SECS=${REBUILD_LIMIT_SECS:-1200}
START_LIMIT_SECS=${START_LIMIT_SECS:-600}
REQUEST_LIMIT_SECS=${REQUEST_LIMIT_SECS:-300}
for exe in "$BIN" "$BENCH"; do
  [[ -x $exe ]] || { echo "no $exe: cargo build --release first" >&2; exit 1; }
done
for tool in curl jq python3 /usr/bin/time; do
  command -v "$tool" > /dev/null || { echo "needs $tool" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-duplicates.XXXXXX")
DATA=$WORK/data
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    pkill -P "$pid" 2> /dev/null || true
    kill "$pid" 2> /dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2> /dev/null || true
  done
  if [[ -n $KEEP_DATA && -d $DATA ]]; then
    rm -rf "$KEEP_DATA" && mv "$DATA" "$KEEP_DATA" && echo "data dir kept in $KEEP_DATA"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# What else is running: the load average, and cargo or rustc processes (another session's
# `cargo test` makes figures noisy).
noise() {
  echo "[load average $(cut -d' ' -f1-3 /proc/loadavg); $(pgrep -c -x 'rustc|cargo' || true) cargo/rustc processes]"
}
# `/usr/bin/time -v` output as "wall s | cpu s | cores | peak RSS MiB".
time_row() {
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, p, ":"); wall = 0; for (i = 1; i <= n; i++) wall = wall * 60 + p[i] }
    /User time/ { user = $2 } /System time/ { sys = $2 }
    /Maximum resident set size/ { rss = $2 / 1024 }
    END { cpu = user + sys; printf "%.1f s | %.1f s | %.2f | %.0f MiB", wall, cpu, cpu / (wall > 0 ? wall : 1), rss }
  ' "$1"
}
# guarded TIMEFILE LIMIT_SECS COMMAND...: runs COMMAND under /usr/bin/time -v -o TIMEFILE,
# killed past LIMIT_SECS or when its resident memory passes MEM_LIMIT_MIB.
guarded() {
  local timefile=$1 limit=$2 started child rss status=0
  shift 2
  /usr/bin/time -v -o "$timefile" "$@" &
  local timer=$!
  PIDS+=("$timer")
  started=$(date +%s)
  while kill -0 "$timer" 2> /dev/null; do
    child=$(pgrep -P "$timer" | head -1 || true)
    if [[ -n $child ]]; then
      rss=$(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$child/status" 2> /dev/null || true)
      if [[ -n $rss ]] && ((rss > MEM_LIMIT_MIB)); then
        echo "killed: resident memory $rss MiB > MEM_LIMIT_MIB $MEM_LIMIT_MIB" >&2
        kill -9 "$child"
      elif (($(date +%s) - started > limit)); then
        echo "killed: over $limit s" >&2
        kill -9 "$child"
      fi
    fi
    sleep 0.5
  done
  wait "$timer" || status=$?
  return "$status"
}
# p50 and p99 (nearest rank) of the numbers in a file, in ms.
percentiles() {
  sort -g "$1" | awk '{ v[NR] = $1 } END {
    i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
    printf "p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d requests)", v[i50] * 1000, v[i99] * 1000, v[NR] * 1000, NR }'
}

echo "$(date -u +%FT%TZ) $(nproc) cores; $(lscpu | sed -n 's/^Model name: *//p'); $(free -g | awk '/Mem:/ { print $2 " GiB" }')"
echo "binaries: $BIN, $BENCH"

# 1. The dataset, once.
GENERATE=("$BENCH" generate --models "$MODELS" --seed "$SEED" --base-variants "$BASE_VARIANTS"
  --alternate-overlaps "$ALTERNATE_OVERLAPS" --out "$CACHE")
if [[ ! -f $CACHE/.complete || $(cat "$CACHE/.complete") != "${GENERATE[*]}" ]]; then
  rm -rf "$CACHE"
  echo "generating: ${GENERATE[*]}"
  "${GENERATE[@]}" | tee "$WORK/generate.txt"
  echo "${GENERATE[*]}" > "$CACHE/.complete"
else
  echo "dataset cached in $CACHE"
fi
echo "planted pairs: $(jq -r .signal "$CACHE/planted-pairs.jsonl" | sort | uniq -c | tr -s ' ' | paste -sd,)"

# 2. Import (with the duplicate full pass each import's write runs).
CHUNKS=()
if [[ -n $FROM_DATA ]]; then
  echo "copying $FROM_DATA instead of importing"
  cp -r "$FROM_DATA" "$DATA"
elif ((IMPORT_CHUNK > 0 && MODELS > IMPORT_CHUNK)); then
  rm -rf "$WORK/chunks"
  mkdir -p "$WORK/chunks"
  split -d -a 3 -l "$IMPORT_CHUNK" "$CACHE/models.jsonl" "$WORK/chunks/models-"
  for part in "$WORK/chunks"/models-*; do
    dir=$WORK/chunks/dataset-${part##*-}
    mkdir -p "$dir"
    for file in "$CACHE"/*; do
      [[ $(basename "$file") == models.jsonl || $(basename "$file") == planted-pairs.jsonl ]] \
        || ln -s "$file" "$dir/"
    done
    mv "$part" "$dir/models.jsonl"
    CHUNKS+=("$dir")
  done
else
  CHUNKS=("$CACHE")
fi
IMPORT_ROWS=()
for dir in "${CHUNKS[@]}"; do
  noise
  name=import-$(basename "$dir")
  guarded "$WORK/$name.time" "$IMPORT_LIMIT_SECS" \
    "$BIN" --data-dir "$DATA" import "$dir" > "$WORK/$name.txt" 2> "$WORK/$name.err" \
    || { echo "import of $dir failed"; tail -20 "$WORK/$name.err"; tail -5 "$WORK/$name.time"; exit 1; }
  row="$(wc -l < "$dir/models.jsonl") | $(time_row "$WORK/$name.time")"
  echo "import $(basename "$dir"): $row"
  IMPORT_ROWS+=("$row")
done

# 3. The full pass alone.
REBUILD_ROWS=()
for run in $(seq "$REBUILDS"); do
  noise
  guarded "$WORK/rebuild-$run.time" "$REBUILD_LIMIT_SECS" \
    "$BIN" --data-dir "$DATA" duplicates rebuild > "$WORK/rebuild.txt" 2> "$WORK/rebuild.err" \
    || { echo "duplicates rebuild failed"; tail -20 "$WORK/rebuild.err"; tail -5 "$WORK/rebuild-$run.time"; exit 1; }
  row=$(time_row "$WORK/rebuild-$run.time")
  writes=$(awk -F': ' '/File system outputs/ { printf "%.0f MiB", $2 * 512 / 1048576 }' "$WORK/rebuild-$run.time")
  echo "duplicates rebuild ($run): $row; $writes written; $(cat "$WORK/rebuild.txt")"
  REBUILD_ROWS+=("$row | $writes | $(cat "$WORK/rebuild.txt")")
done

# 4. Recall of the planted pairs.
noise
guarded "$WORK/recall.time" "$REBUILD_LIMIT_SECS" "$BENCH" duplicates-recall --data-dir "$DATA" \
  --planted "$CACHE/planted-pairs.jsonl" --candidates "$WORK/candidates.txt" \
  --candidate-count "$MERGES" --json "$WORK/recall.json"
RECALL_ROW=$(time_row "$WORK/recall.time")
echo "duplicates-recall (store open, pairs, groups, recall): $RECALL_ROW"

# 5. Serve, read, merge.
printf 'pw-long-enough-123\n' | "$BIN" --data-dir "$DATA" user add ana --role admin > /dev/null 2>&1 \
  || printf 'pw-long-enough-123\n' | "$BIN" --data-dir "$DATA" user passwd ana > /dev/null
PORT=$(free_port)
BASE=http://127.0.0.1:$PORT
# Debug lines of the groups kept in memory: joined whole, or again around a write.
RUST_LOG=info,watch_catalogue::app=debug "$BIN" --data-dir "$DATA" serve --addr "127.0.0.1:$PORT" \
  --no-picture-worker --rate-limit 1000000000 --admin-rate-limit 1000000000 > "$WORK/serve.log" 2>&1 &
SERVER=$!
PIDS+=("$SERVER")
started=$(date +%s)
until curl -sf -o /dev/null "$BASE/healthz"; do
  kill -0 "$SERVER" 2> /dev/null || { echo "serve exited"; tail -20 "$WORK/serve.log"; exit 1; }
  (($(date +%s) - started < START_LIMIT_SECS)) || { echo "serve did not start"; exit 1; }
  sleep 0.5
done
echo "serve answering after $(($(date +%s) - started)) s"
JAR=$WORK/jar
curl -sf -c "$JAR" -o /dev/null -H 'content-type: application/json' \
  -d '{"username":"ana","password":"pw-long-enough-123"}' "$BASE/v1/auth/login"
# One request: prints "STATUS SECONDS", the body in $WORK/body.json.
request() {
  curl -s -b "$JAR" -o "$WORK/body.json" -w '%{http_code} %{time_total}\n' \
    --max-time "$REQUEST_LIMIT_SECS" "$@"
}
# GET $1 (a query string) once cold-ish (reported as is), then WARM times.
measure() {
  local query=$1 label=$2 first status secs
  first=$(request "$BASE/v1/duplicate-models?$query")
  [[ ${first%% *} == 200 ]] || { echo "GET ?$query: $first"; cat "$WORK/body.json"; exit 1; }
  local total
  total=$(jq '"\(.total) groups, summary \(.summary | tostring)"' -r "$WORK/body.json")
  : > "$WORK/times.txt"
  for _ in $(seq "$WARM"); do
    read -r status secs < <(request "$BASE/v1/duplicate-models?$query")
    [[ $status == 200 ]] || { echo "GET ?$query: $status"; exit 1; }
    echo "$secs" >> "$WORK/times.txt"
  done
  printf '| %s | `?%s` | %.1f ms | %s | %s |\n' "$label" "$query" \
    "$(echo "${first#* } * 1000" | bc -l)" "$(percentiles "$WORK/times.txt")" "$total"
}
noise
echo "| request | query | first | then | answer |"
echo "|---|---|---|---|---|"
measure "pageSize=100" "cold (first after start)"
rss_after=$(awk '/VmRSS/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$SERVER/status")
measure "pageSize=100&kind=baseVariant" "kind=baseVariant"
measure "pageSize=100&kind=alternateOverlap" "kind=alternateOverlap"
BRAND_NAME=$(jq -r '.data[0].models[0].brandName' "$WORK/body.json")
measure "pageSize=100&q=$(jq -rn --arg v "$BRAND_NAME" '$v | @uri')" "q=<brand name>"
measure "pageSize=100&q=brand-1" "q=<brand slug>"
measure "pageSize=100&page=50" "page 50"
measure "" "default page (20 groups)"
echo "server RSS after the first GET: $rss_after"

echo
echo "| merge | keeper <- duplicate | status | merge | first GET after |"
echo "|---|---|---|---|---|"
n=0
while read -r keeper duplicate brand; do
  n=$((n + 1))
  merged=$(request -H 'content-type: application/json' \
    -d "{\"keeperId\":\"$keeper\",\"duplicateIds\":[\"$duplicate\"]}" \
    "$BASE/v1/duplicate-models/merge")
  [[ ${merged%% *} == 200 ]] || { echo "merge: $merged"; cat "$WORK/body.json"; exit 1; }
  after=$(request "$BASE/v1/duplicate-models?pageSize=100")
  printf '| %d | %s <- %s (%s) | %s | %.1f ms | %.1f ms |\n' "$n" "$keeper" "$duplicate" "$brand" \
    "${merged%% *}" "$(echo "${merged#* } * 1000" | bc -l)" "$(echo "${after#* } * 1000" | bc -l)"
done < "$WORK/candidates.txt"
echo "server peak RSS: $(awk '/VmHWM/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$SERVER/status")"
echo "groups joined whole $(grep -c 'duplicate groups joined groups' "$WORK/serve.log" || true) times, again around a write $(grep -c 'joined again around a write' "$WORK/serve.log" || true) times"

echo
echo "| step | models | wall | cpu | cores | peak RSS | written | result |"
echo "|---|---|---|---|---|---|---|---|"
n=0
for row in "${IMPORT_ROWS[@]}"; do
  n=$((n + 1))
  echo "| import $n of ${#IMPORT_ROWS[@]} (with the duplicate pass) | $row | | |"
done
n=0
for row in "${REBUILD_ROWS[@]}"; do
  n=$((n + 1))
  echo "| duplicates rebuild ($n) | $MODELS | $row |"
done
echo "| duplicates-recall (open, pairs, groups, recall) | $MODELS | $RECALL_ROW | | |"
