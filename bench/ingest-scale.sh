#!/usr/bin/env bash
# Offline ingest at the scale run's size (bench/RESULTS.md, "Ingest and match (part 5)"): the
# catalogue of `catalogue-bench generate` imported alone, then each provider's snapshot through
# `watch-catalogue ingest` under /usr/bin/time -v with the writer's debug log, and what sled
# applied per snapshot (keys and seconds, summed from the "store commit" lines).
#
#   bench/ingest-scale.sh [BINARY] [BENCH_BINARY]
#
# Knobs (environment): MODELS=1000000 LISTINGS=10000000 SEED=42, WORK=/tmp/ingest-scale,
# FEEDS (how many of the provider snapshots to ingest, in order; default all),
# MIN_FREE_GB=10 (a guard stops everything, deleting the work dir, when the disk's free space
# falls under it). The work dir is removed on exit unless KEEP=1. With KEEP=1 the imported
# catalogue is also kept as WORK/base and copied instead of imported again on the next run (the
# import is not what this measures; delete WORK/base to import again).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/watch-catalogue}
BENCH=${2:-$(dirname "$BIN")/catalogue-bench}
: "${MODELS:=1000000}" "${LISTINGS:=10000000}" "${SEED:=42}" "${WORK:=/tmp/ingest-scale}"
: "${MIN_FREE_GB:=10}" "${FEEDS:=99}"
free_gb() { df --output=avail -BG / | tail -1 | tr -dc '0-9'; }
[[ $(free_gb) -ge $((MIN_FREE_GB + 15)) ]] || { echo "needs $((MIN_FREE_GB + 15)) GB free" >&2; exit 1; }
mkdir -p "$WORK"
# The disk guard below is stopped on every exit (with KEEP=1 too: it would loop on, holding the
# caller's output open); the work dir is removed unless KEEP=1.
trap 'kill "$GUARD" 2>/dev/null; [[ ${KEEP:-0} == 1 ]] || rm -rf "$WORK"' EXIT
(
  while sleep 5; do
    if [[ $(free_gb) -lt $MIN_FREE_GB ]]; then
      echo "!! under $MIN_FREE_GB GB free: stopping" >&2
      # The step under way: the child of its /usr/bin/time.
      [[ -f $WORK/pid ]] && pkill -P "$(cat "$WORK/pid")" || true
      rm -rf "$WORK/data"
      exit 1
    fi
  done
) &
GUARD=$!
timed() {
  local what=$1; shift
  echo ">> $what: $*" >&2
  RUST_LOG=watch_catalogue=debug,catalogue_index=debug /usr/bin/time -v "$@" > "$WORK/$what.out" 2> "$WORK/$what.err" &
  echo $! > "$WORK/pid"
  wait $!
  rm -f "$WORK/pid"
  cat "$WORK/$what.out"
  grep -E "Elapsed|Maximum resident|User time|System time" "$WORK/$what.err" | sed 's/^\s*/   /'
  # sled's share: keys applied and seconds, over every commit of the step.
  # (`|| true`: a step with no store commit, as generate, is not a failure)
  { sed 's/\x1b\[[0-9;]*m//g' "$WORK/$what.err" | grep "store commit" || true; } |
    sed -E 's/.*keys=([0-9]+) applied=([0-9.]+)([^0-9. ]+).*/\1 \2 \3/' |
    awk '{ s = ($3 == "s") ? $2 : ($3 == "ms") ? $2 / 1e3 : $2 / 1e6; k += $1; t += s; n++ }
         END { if (n) printf "   sled: %d commits, %d keys in %.1f s (%.0f keys/s)\n", n, k, t, k / t }'
}
if [[ ! -d $WORK/dataset ]]; then
  timed generate "$BENCH" generate --models "$MODELS" --listings "$LISTINGS" --seed "$SEED" --out "$WORK/dataset.part"
  mv "$WORK/dataset.part" "$WORK/dataset"
fi
[[ -d $WORK/feeds ]] || mv "$WORK/dataset/listings" "$WORK/feeds"
rm -rf "$WORK/data"
if [[ -d $WORK/base ]]; then
  cp -r "$WORK/base" "$WORK/data"
  # A base kept by an older build: its store brought up to this one's schema, and its (empty)
  # listings index made again in this build's, else the first snapshot is not loaded into the
  # index beside its writes but the index rebuilt whole after them (provider-1: 161.9 s
  # against 144.3, bench/RESULTS.md "Batch work at the floor").
  "$BIN" --data-dir "$WORK/data" migrate > /dev/null
  "$BIN" --data-dir "$WORK/data" reindex --index listings > /dev/null
else
  timed import "$BIN" --data-dir "$WORK/data" import "$WORK/dataset"
  [[ ${KEEP:-0} != 1 ]] || cp -r "$WORK/data" "$WORK/base"
fi
n=0
for feed in "$WORK"/feeds/*.jsonl; do
  n=$((n + 1)); [[ $n -le $FEEDS ]] || break
  provider=$(basename "$feed" .jsonl)
  timed "ingest-$provider" "$BIN" --data-dir "$WORK/data" ingest --provider "$provider" "$feed"
  echo "   free: $(free_gb) GB" >&2
done
du -sh "$WORK/data"/* | sed 's/^/   /'
