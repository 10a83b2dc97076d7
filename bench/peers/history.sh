#!/usr/bin/env bash
# A model's weekly price series asked of PostgreSQL (issue 51 point 5), beside ours: the
# observations of `bench/history-dataset.py`'s HISTORY_DIR among FILLER others, the series
# computed per request in SQL (bench/peers/history.py), its answers checked period by period
# against our server at --base, then one client's latency under pgbench.
#
#   bench/peers/history.sh HISTORY_DIR OUT_DIR --from DAY --to DAY [--base URL]
#       [--filler 10000000] [--duration 10] [--port 54329] [--shared-buffers 1GB]
#
# Writes OUT_DIR/history.txt (load time, check, figures). Run as root; the cluster (under
# OUT_DIR/pg) is stopped and removed when the script exits.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
HISTORY=$(realpath "$1"); OUT=$2; shift 2
FROM="" TO="" BASE="" FILLER=10000000 DURATION=10 PORT=54329 SHARED_BUFFERS=1GB
while [[ $# -gt 0 ]]; do
  case $1 in
    --from) FROM=$2; shift 2 ;;
    --to) TO=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --filler) FILLER=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --shared-buffers) SHARED_BUFFERS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -n $FROM && -n $TO ]] || { echo "--from and --to are required" >&2; exit 2; }
[[ -f $HISTORY/observations.tsv ]] || { echo "$HISTORY: not a history-dataset.py directory" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
HISTORY_PY="python3 $HERE/history.py"
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
: > "$OUT/history.txt"
note() { echo "$*" | tee -a "$OUT/history.txt" >&2; }

# shellcheck source=bench/peers/pg-cluster.sh
source "$HERE/pg-cluster.sh"
trap 'pg_cluster_stop; rm -rf "$OUT/pg"' EXIT
trap 'exit 130' INT TERM
pg_cluster_start "$OUT/pg" "$PORT" "$SHARED_BUFFERS"
note "postgresql $("$PGBIN/postgres" --version | awk '{print $3}'), shared_buffers $SHARED_BUFFERS"
psql -X -q -d postgres -c "CREATE DATABASE history" -c "ALTER DATABASE history SET timezone = 'UTC'"
started=$(date +%s)
$HISTORY_PY load "$HISTORY" --filler "$FILLER" | psql -X -q -d history -v ON_ERROR_STOP=1
note "loaded $(psql -X -Atd history -c "SELECT count(*) FROM observations") observations ($(psql -X -Atd history -c "SELECT count(*) FROM observations WHERE model = 1") of the model) and indexed in $(( $(date +%s) - started )) s; database $(psql -X -Atd history -c "SELECT pg_size_pretty(pg_database_size('history'))")"
if [[ -n $BASE ]]; then
  $HISTORY_PY check "$HISTORY" --base "$BASE" --from "$FROM" --to "$TO" | tee -a "$OUT/history.txt"
fi
rm -rf "$OUT/pgbench"; mkdir -p "$OUT/pgbench"
# One client, a warm-up run, then the measured one; `what` names the pgbench log.
run_pgbench() {
  local what=$1
  pgbench -n -M prepared -c 1 -T 2 -f "$OUT/$what.sql" history > /dev/null 2>&1
  (cd "$OUT/pgbench" && pgbench -n -M prepared -c 1 -T "$DURATION" -f "$OUT/$what.sql" --log \
    --log-prefix="$what" history > "$what.out" 2>&1)
  $HISTORY_PY figures "$OUT/pgbench/$what"
}
$HISTORY_PY sql --from "$FROM" --to "$TO" > "$OUT/series.sql"
note "postgresql, the series computed per request, 1 client, $DURATION s, weeks $FROM to $TO: $(run_pgbench series)"
started=$(date +%s%N)
$HISTORY_PY materialize --from "$FROM" --to "$TO" | psql -X -q -d history -v ON_ERROR_STOP=1
elapsed_ms=$(( ($(date +%s%N) - started) / 1000000 ))
note "postgresql: the series kept in a table in $((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000))) s"
$HISTORY_PY sql --kept --from "$FROM" --to "$TO" > "$OUT/kept.sql"
note "postgresql, the kept series read, 1 client, $DURATION s: $(run_pgbench kept)"
