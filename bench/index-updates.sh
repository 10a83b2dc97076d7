#!/usr/bin/env bash
# The writer's turns beside a large merge's moves (D-248): starts `serve` on DATA_DIR with the
# writer's debug lines, signs a fresh admin in, runs `backoffice.py --large-merges N --least L`
# (merges of duplicates with L listings or more, a link every 100 ms while the listing mover
# relinks them), then prints its table and, from the log, each turn's parts: the wait for the
# turn, the store write, and the index update (the larger of the two indexes' times), p50, p90
# and the largest, over the turns that updated an index. Last, which links over 100 ms came
# while the machine itself did not run (`bench/host-stalls.py`, from `disk-cpu-sample.py` run
# beside the whole bench; D-254).
#
#   bench/index-updates.sh [--cold] DATA_DIR [BIN] [MERGES] [LEAST]
#
# --cold syncs and drops the page cache before `serve` starts (root only, checked before
# anything is written), so the moves read the data dir from the disk as after a reboot (D-252).
# BIN defaults to target/release/watch-catalogue; 3 merges of 1,500 listings or more. The data
# dir is written to (merges, links, an admin user): run it on a copy, and let a start fold the
# price series a fresh ingest logged first (its fold runs beside the requests). Listens on
# 127.0.0.1 only; the server is stopped on exit, its log left in /tmp/index-updates.*.log. The
# sampler watches the disk `vda` unless DEVICE names another.
set -euo pipefail
COLD=0
if [[ ${1:-} == --cold ]]; then COLD=1; shift; fi
if [[ $COLD == 1 && ! -w /proc/sys/vm/drop_caches ]]; then
  echo "--cold needs root (/proc/sys/vm/drop_caches)" >&2
  exit 2
fi
DATA=${1:?usage: bench/index-updates.sh [--cold] DATA_DIR [BIN] [MERGES] [LEAST]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${2:-$ROOT/target/release/watch-catalogue}
MERGES=${3:-3}
LEAST=${4:-1500}
PORT=${PORT:-18434}
BASE=http://127.0.0.1:$PORT
[[ -d $DATA/store ]] || { echo "no data dir at $DATA" >&2; exit 2; }

# shellcheck source=bench/server-lib.sh
source "$ROOT/bench/server-lib.sh"
PASSWORD="bench $(date +%s) $RANDOM"
"$BIN" --data-dir "$DATA" user remove index-bench > /dev/null 2>&1 || true
printf '%s\n%s\n' "$PASSWORD" "$PASSWORD" | "$BIN" --data-dir "$DATA" user add index-bench --role admin > /dev/null
LOG=$(mktemp /tmp/index-updates.XXXXXX.log)
if [[ $COLD == 1 ]]; then
  sync
  echo 3 > /proc/sys/vm/drop_caches || { echo "--cold needs root (/proc/sys/vm/drop_caches)" >&2; exit 2; }
fi
SAMPLES=${LOG%.log}.samples
TIMELINE=${LOG%.log}.links
start_sampler "$SAMPLES"
RUST_LOG=${RUST_LOG:-info,watch_catalogue::jobs::writer=debug} "$BIN" --data-dir "$DATA" serve \
  --addr "127.0.0.1:$PORT" "${UNLIMITED[@]}" --no-picture-worker > "$LOG" 2>&1 &
SERVER_PID=$!
wait_ready "$BASE" 600 "$LOG"
# The start's own reads first (as bench/backoffice.sh waits for them).
for _ in $(seq 1 600); do
  grep -q "store's first flush" "$LOG" && grep -q "search indexes read ahead" "$LOG" \
    && grep -q "duplicate groups" "$LOG" && break
  sleep 0.1
done
python3 "$ROOT/bench/backoffice.py" "$BASE" index-bench "$PASSWORD" \
  --large-merges "$MERGES" --least "$LEAST" --pages 6000 --repeat 50 --timeline "$TIMELINE"
stop_server
stop_sampler
python3 - "$LOG" <<'PY'
import re, sys
UNITS = {"ns": 1e-6, "µs": 1e-3, "ms": 1.0, "s": 1000.0}
def ms(text):
    value, unit = re.match(r"([\d.]+)(ns|µs|ms|s)$", text).groups()
    return float(value) * UNITS[unit]
turns = []
for line in open(sys.argv[1], encoding="utf-8"):
    if "write turn ended" in line:
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        turns.append([ms(fields[k]) for k in ("waited", "write_took", "index_took")])
indexed = [t for t in turns if t[2] > 1]
print(f"\n{len(indexed)} turns that updated an index, of {len(turns)}")
print("| part | p50 ms | p90 ms | max ms |\n|---|--:|--:|--:|")
for at, name in enumerate(("wait for the turn", "store write", "index update")):
    values = sorted(t[at] for t in indexed)
    if values:
        print(f"| {name} | {values[len(values) // 2]:.1f} | {values[int(len(values) * 0.9)]:.1f} | {values[-1]:.1f} |")
PY
echo
python3 "$ROOT/bench/host-stalls.py" --only /v1/reconciliation/link "$TIMELINE" "$SAMPLES" || true
