#!/usr/bin/env bash
# Our side of bench/peers: `catalogue-bench load` against our running service, one kind at a
# time (`--only KIND`), as the peers are run, at each concurrency.
#
#   bench/peers/run-ours.sh BASE REQUESTS OUT_DIR [options]
#
# BASE is the service without /v1, started with `--rate-limit 1000000000`; REQUESTS is the file
# `catalogue-bench load --dump-requests` wrote from it (its kinds are the kinds run).
# Options (defaults in brackets):
#   --concurrency N,M   clients, one run per value [32]
#   --duration S        measured seconds per kind [10]
#   --warmup S          seconds run first per kind, not measured [2]
#   --kinds a,b         only these kinds [every kind in REQUESTS]
#   --seed N            as given to --dump-requests [42]
#   --bin PATH          catalogue-bench [target/release/catalogue-bench of this repository]
#
# Writes OUT_DIR/ours-cN-KIND.json (LoadReport JSON) and OUT_DIR/ours-cN-KIND.txt.
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 3 ]] || usage
BASE=$1; REQUESTS=$2; OUT=$3; shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
CONCURRENCY=32 DURATION=10 WARMUP=2 KINDS="" SEED=42 BIN=$HERE/../../target/release/catalogue-bench
while [[ $# -gt 0 ]]; do
  case $1 in
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --kinds) KINDS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
[[ -x $BIN ]] || { echo "$BIN: build it with cargo build --release -p catalogue-bench" >&2; exit 2; }
mkdir -p "$OUT"
if [[ -z $KINDS ]]; then
  KINDS=$(python3 -c 'import json,sys
seen = []
for line in open(sys.argv[1]):
    if line.strip():
        k = json.loads(line)["kind"]
        if k not in seen:
            seen.append(k)
print(",".join(seen))' "$REQUESTS")
fi
IFS=, read -r -a KIND_LIST <<< "$KINDS"
IFS=, read -r -a CONCURRENCIES <<< "$CONCURRENCY"
for c in "${CONCURRENCIES[@]}"; do
  for kind in "${KIND_LIST[@]}"; do
    "$BIN" load --base "$BASE" --only "$kind" --concurrency "$c" --duration "${DURATION}s" \
      --warmup "${WARMUP}s" --seed "$SEED" --json "$OUT/ours-c$c-$kind.json" \
      > "$OUT/ours-c$c-$kind.txt" 2>&1 \
      || { cat "$OUT/ours-c$c-$kind.txt" >&2; exit 1; }
    grep "^| $kind " "$OUT/ours-c$c-$kind.txt" >&2 || true
  done
done
