#!/usr/bin/env bash
# What picture URLs cost an ingest (issue 50, point 2): the jobs dataset's snapshot (bench/jobs.sh's,
# 1,000,000 listings, 0-4 picture URLs each) and the same file with every `pictures` array
# removed, each ingested offline into a fresh copy of the same imported catalogue, page cache
# dropped before each (root only), alternated for ROUNDS rounds; wall and CPU seconds, bytes
# written, and the store's size after each.
#
#   bench/picture-cost.sh [BINARY] [ROUNDS] [BENCH_BINARY]
#
# Knobs (environment): MODELS=100000 LISTINGS=1000000 SEED=42, CACHE (the dataset, shared with
# bench/jobs.sh and bench/ingest.sh), BASE (the imported catalogue; default CACHE.base). The
# copies are removed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/watch-catalogue}
ROUNDS=${2:-2}
BENCH=${3:-$(dirname "$BIN")/catalogue-bench}
[[ -x $BIN ]] || { echo "no binary at $BIN" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
[[ -w /proc/sys/vm/drop_caches ]] || { echo "dropping the page cache needs root" >&2; exit 2; }
: "${MODELS:=100000}" "${LISTINGS:=1000000}" "${SEED:=42}"
CACHE=${CACHE:-/tmp/catalogue-bench-jobs-$MODELS-$LISTINGS-$SEED}
BASE=${BASE:-$CACHE.base}
# shellcheck source=bench/jobs-dataset.sh
source "$ROOT/bench/jobs-dataset.sh"
imported_catalogue "$BASE"
BARE=$CACHE/snapshot-without-pictures.jsonl
if [[ ! -f $BARE ]]; then
  # Every listing's `pictures` array removed, the rest of each line as it was.
  sed -E 's/,"pictures":\[[^]]*\]//' "$CACHE/snapshot.jsonl" > "$BARE.part"
  mv "$BARE.part" "$BARE"
fi
echo "with pictures: $(grep -c '"pictures"' "$CACHE/snapshot.jsonl") of $(wc -l < "$CACHE/snapshot.jsonl") lines; without: $(grep -c '"pictures"' "$BARE")" >&2

WORK=$(mktemp -d /tmp/picture-cost.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# Runs a command with its output kept aside, shown (its end) only if it fails.
quietly() {
  "$@" > /dev/null 2> "$WORK/err" || { echo "failed: $*" >&2; tail -5 "$WORK/err" >&2; exit 1; }
}

# One ingest of `feed` into a fresh copy of the base; sets WALL, CPU (seconds), WRITTEN (MiB the
# process wrote: rusage's blocks of 512 bytes) and STORE (MiB of store after).
ingest() {
  local feed=$1
  rm -rf "$WORK/data"
  cp -a "$BASE" "$WORK/data"
  quietly "$BIN" --data-dir "$WORK/data" migrate
  sync
  echo 3 > /proc/sys/vm/drop_caches
  quietly /usr/bin/time -f '%e %U %S %O' -o "$WORK/time" \
    "$BIN" --data-dir "$WORK/data" ingest --provider provider-1 "$feed"
  local user sys blocks
  read -r WALL user sys blocks < "$WORK/time"
  CPU=$(python3 -c "print(f'{$user + $sys:.1f}')")
  WRITTEN=$((blocks * 512 >> 20))
  STORE=$(du -sm "$WORK/data/store" | cut -f1)
}

ratio() { python3 -c "print(f'{$1 / $2:.2f}x')"; }

echo "$(nproc) cores, $(date -u '+%Y-%m-%d %H:%M'), $(git -C "$ROOT" rev-parse --short HEAD), build $BIN; \`bench/picture-cost.sh\` (MODELS=$MODELS LISTINGS=$LISTINGS SEED=$SEED), page cache dropped before each ingest"
echo
echo "| round | with pictures: wall s (CPU s), MiB written, store MiB | without | with / without: wall (CPU) |"
echo "|---|--:|--:|--:|"
for round in $(seq 1 "$ROUNDS"); do
  ingest "$CACHE/snapshot.jsonl"
  with="$WALL ($CPU), $WRITTEN, $STORE" with_wall=$WALL with_cpu=$CPU
  ingest "$BARE"
  echo "| $round | $with | $WALL ($CPU), $WRITTEN, $STORE | $(ratio "$with_wall" "$WALL") ($(ratio "$with_cpu" "$CPU")) |"
done
