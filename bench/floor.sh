#!/usr/bin/env bash
# The floor of issue 50, measured now on this machine: what an ingest of DATA_DIR's listings
# cannot go below while sled is the store of record and every listing is indexed as today
# (docs/decisions.md, D-36; bench/RESULTS.md, "Batch work at the floor"). Its two parts, each
# alone with the page cache dropped: sled writing one record per listing (examples/sled_floor),
# and the CPU of tantivy's own threads while the listings index is rebuilt from DATA_DIR
# (`reindex --index listings` under `perf record`, samples split by thread name). The floor is
# their core-seconds over the machine's cores.
#
#   bench/floor.sh DATA_DIR [BIN_DIR] [LISTINGS]
#
# BIN_DIR holds release builds of watch-catalogue and examples/sled_floor (default
# target/release and target/release/examples); LISTINGS is how many records sled writes
# (default 10,000,000, the scale run's). With INGEST_SECONDS set (an ingest's and match's wall
# time), the last line also gives their distance to the floor. DATA_DIR's listings index is
# rebuilt (the same documents, its segments merged afresh); sled's scratch store goes under
# DATA_DIR's parent and is removed. Needs perf (Debian: linux-perf); drops the page cache when
# run as root.
set -euo pipefail
DATA=${1:?usage: bench/floor.sh DATA_DIR [BIN_DIR] [LISTINGS]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN_DIR=${2:-$ROOT/target/release}
LISTINGS=${3:-10000000}
SLED_FLOOR=$BIN_DIR/sled_floor
[[ -x $SLED_FLOOR ]] || SLED_FLOOR=$BIN_DIR/examples/sled_floor
[[ -d $DATA/store ]] || { echo "no data dir at $DATA" >&2; exit 2; }
[[ -x $SLED_FLOOR && -x $BIN_DIR/watch-catalogue ]] || {
  echo "needs $BIN_DIR/watch-catalogue and sled_floor: cargo build --release --bins --examples" >&2; exit 2; }
command -v perf > /dev/null || { echo "needs perf (apt-get install linux-perf)" >&2; exit 2; }
command -v /usr/bin/time > /dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

SCRATCH=$(mktemp -d "$(dirname "$DATA")/sled-floor.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
drop_cache() { sync; [[ $EUID -ne 0 ]] || echo 3 > /proc/sys/vm/drop_caches; }
# Core-seconds (user + system) of one command, from /usr/bin/time's `%U %S` in file $1.
core_seconds() { awk '{ printf "%.1f", $1 + $2 }' "$1"; }

drop_cache
/usr/bin/time -f '%U %S %e' -o "$SCRATCH/sled.time" "$SLED_FLOOR" "$SCRATCH/store" "$LISTINGS" > /dev/null
sled=$(core_seconds "$SCRATCH/sled.time")
echo "sled alone: $LISTINGS records in $(awk '{ print $3 }' "$SCRATCH/sled.time") s wall, $sled core-seconds"
rm -rf "$SCRATCH/store"

drop_cache
# /usr/bin/time inside perf: the command's own CPU, not perf's.
perf record -q -F 250 -o "$SCRATCH/perf.data" -- /usr/bin/time -f '%U %S %e' -o "$SCRATCH/index.time" \
  "$BIN_DIR/watch-catalogue" --data-dir "$DATA" reindex --index listings > /dev/null 2>&1
reindex=$(core_seconds "$SCRATCH/index.time")
# tantivy's threads: its indexing workers, merge threads, docstore compressor, segment updater.
share=$(perf report -i "$SCRATCH/perf.data" --sort comm --stdio --no-children 2> /dev/null |
  awk '/%/ && $2 ~ /^(thrd-tantivy|merge_thread|docstore|segment_updater)/ { s += $1 } END { printf "%.2f", s }')
tantivy=$(awk -v c="$reindex" -v s="$share" 'BEGIN { printf "%.1f", c * s / 100 }')
echo "listings index alone: $(awk '{ print $3 }' "$SCRATCH/index.time") s wall, $reindex core-seconds, $share % of them in tantivy's threads: $tantivy core-seconds"

cores=$(nproc)
floor=$(awk -v a="$sled" -v b="$tantivy" -v n="$cores" 'BEGIN { printf "%.1f", (a + b) / n }')
echo -n "floor: ($sled + $tantivy) / $cores cores = $floor s"
if [[ -n ${INGEST_SECONDS:-} ]]; then
  awk -v i="$INGEST_SECONDS" -v f="$floor" 'BEGIN { printf "; ingest and match %.1f s = %.2fx the floor (target <= 1.3x)", i, i / f }'
fi
echo
