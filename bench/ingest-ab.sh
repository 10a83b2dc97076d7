#!/usr/bin/env bash
# One build's offline ingest of the jobs dataset (bench/jobs-dataset.sh's CACHE: 100,000 models,
# a 1,000,000-listing snapshot): a fresh import, the ingest, then the same snapshot again (a
# revisit), each timed, with the store's size after each. Run it for two builds, alternated, to
# compare them (D-208's segment sizes, the series log of D-212):
#
#   bench/ingest-ab.sh BIN NAME [CACHE]     e.g. bench/ingest-ab.sh /tmp/wc-before before1
#
# The data dir (/tmp/ingest-ab-NAME) is removed at the end.
set -euo pipefail
BIN=$1
NAME=$2
CACHE=${3:-/tmp/catalogue-bench-jobs-100000-1000000-42}
D=/tmp/ingest-ab-$NAME
[[ -f $CACHE/snapshot.jsonl ]] || { echo "no dataset at $CACHE (see bench/jobs-dataset.sh)" >&2; exit 2; }
rm -rf "$D"
timed() {
  local what=$1; shift
  /usr/bin/time -f "$NAME $what %e s wall %U+%S s cpu %M KiB" "$@" > /dev/null 2> "$D.err" \
    || { cat "$D.err" >&2; exit 1; }
  tail -1 "$D.err"
}
timed import "$BIN" --data-dir "$D" import "$CACHE"
timed ingest "$BIN" --data-dir "$D" ingest --provider provider-1 "$CACHE/snapshot.jsonl"
echo "$NAME store after ingest $(du -sm "$D/store" | cut -f1) MiB"
timed revisit "$BIN" --data-dir "$D" ingest --provider provider-1 "$CACHE/snapshot.jsonl"
echo "$NAME store after revisit $(du -sm "$D/store" | cut -f1) MiB"
rm -rf "$D" "$D.err"
