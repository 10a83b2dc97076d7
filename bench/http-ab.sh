#!/usr/bin/env bash
# Two builds of the server alternated over HTTP on one data dir, one kind at a time: whether a
# change moved the figures of bench/RESULTS.md, with the machine's drift spread over both.
#
#   bench/http-ab.sh BIN_A BIN_B DATA_DIR REQUESTS [--kinds a,b] [--rounds 2] [--port 18433]
#
# REQUESTS is a scale run's WORK/requests.jsonl (bench/run-scale.sh). Each round starts A, then
# B, waits 25 s after ready (the start-up work), and runs bench/peers/run-ours.sh at 1 and 32
# clients, 6 s per kind. Prints req/s and p50 per kind, build and round; loopback only.
set -euo pipefail
[[ $# -ge 4 ]] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
A=$1; B=$2; DATA=$3; REQ=$4; shift 4
KINDS=listing_stats,models_filtered,text_search_2w,listings_filtered,model_by_slugs
ROUNDS=2
PORT=18433
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kinds) KINDS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=http://127.0.0.1:$PORT
OUT=$(mktemp -d)
# run-ours.sh's output goes to a log: a missing load driver would end this script silently.
[[ -x $ROOT/target/release/catalogue-bench ]] || {
  echo "no load driver: cargo build --release -p catalogue-bench" >&2; exit 2; }
# shellcheck source=bench/server-lib.sh
source "$ROOT/bench/server-lib.sh"
for round in $(seq 1 "$ROUNDS"); do
  for build in A B; do
    bin=$A; [[ $build == B ]] && bin=$B
    "$bin" --data-dir "$DATA" serve --addr "127.0.0.1:$PORT" "${UNLIMITED[@]}" > "$OUT/server-$build-$round.log" 2>&1 &
    SERVER_PID=$!
    until curl -fs -o /dev/null "$BASE/readyz"; do sleep 0.1; done
    sleep 25
    bash "$ROOT/bench/peers/run-ours.sh" "$BASE" "$REQ" "$OUT/$build-$round" --kinds "$KINDS" \
      --concurrency 1,32 --duration 6 > "$OUT/$build-$round.log" 2>&1
    stop_server
  done
done
python3 - "$OUT" <<'PY'
import json, glob, os, sys
rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*-*", "ours-c*-*.json"))):
    build_round = os.path.basename(os.path.dirname(path))
    name = os.path.basename(path)[5:-5]
    k = json.load(open(path))["overall"]
    rows.setdefault(name, []).append(f"{build_round}: {k['ok_rps']:.0f} req/s p50 {k['p50_us'] / 1000:.2f} ms")
for name, r in sorted(rows.items()):
    print(name, " | ".join(r))
PY
