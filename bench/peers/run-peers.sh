#!/usr/bin/env bash
# The peers side by side: loads an export of our store (`catalogue-bench export-peers`) into
# PostgreSQL (Debian packages, a throwaway cluster on 127.0.0.1) and SQLite (FTS5), then runs
# the requests `catalogue-bench load --dump-requests` wrote, translated into SQL, kind by kind at
# one concurrency: pgbench for PostgreSQL, a Python client (a process per client) for SQLite.
#
#   bench/peers/run-peers.sh EXPORT_DIR REQUESTS OUT_DIR [options]
#
# Options (defaults in brackets):
#   --concurrency N,M    clients, one run per value [32]; `1,32` gives the latency of one
#                        query alone as well as the figures under load
#   --duration S         measured seconds per kind and peer [10]
#   --warmup S           seconds run first per kind, not measured [2]
#   --kinds a,b          only these kinds [every kind in REQUESTS]
#   --port P             PostgreSQL's port on 127.0.0.1 [54329]
#   --shared-buffers X   PostgreSQL shared_buffers [1GB]
#   --pg-dir DIR         where the cluster lives [OUT_DIR/pg]
#   --base URL           our running service (without /v1): also check each peer's answers
#                        against ours (check.json)
#   --skip-pg, --skip-sqlite
#   --keep               keep the PostgreSQL cluster and the SQLite file afterwards
#
# Writes OUT_DIR/postgresql-cN.json and OUT_DIR/sqlite-cN.json (figures per kind, per
# concurrency N), load.txt (load times and sizes), check.txt and check.json with --base, and the
# pgbench scripts and logs under OUT_DIR/pgbench.
# Must run as root (installs packages, runs PostgreSQL as the postgres user). PostgreSQL is
# stopped when the script exits, whatever the outcome.
set -euo pipefail

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 3 ]] || usage
EXPORT=$(realpath "$1"); REQUESTS=$(realpath "$2"); OUT=$3; shift 3
CONCURRENCY=32 DURATION=10 WARMUP=2 KINDS="" PORT=54329 SHARED_BUFFERS=1GB PG_DIR="" BASE=""
SKIP_PG=0 SKIP_SQLITE=0 KEEP=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --kinds) KINDS=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --shared-buffers) SHARED_BUFFERS=$2; shift 2 ;;
    --pg-dir) PG_DIR=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --skip-pg) SKIP_PG=1; shift ;;
    --skip-sqlite) SKIP_SQLITE=1; shift ;;
    --keep) KEEP=1; shift ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
[[ -f $EXPORT/manifest.json ]] || { echo "$EXPORT/manifest.json: not an export-peers directory" >&2; exit 2; }
[[ -f $REQUESTS ]] || { echo "$REQUESTS: no such file" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "run as root (package install, postgres user)" >&2; exit 2; }

HERE=$(cd "$(dirname "$0")" && pwd)
PEERS="python3 $HERE/peers.py"
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
PG_DIR=${PG_DIR:-$OUT/pg}
SQLITE_DB=$OUT/peers.sqlite
KIND_ARGS=(); [[ -n $KINDS ]] && KIND_ARGS=(--kinds "$KINDS")
LOAD_ARGS=(--duration "$DURATION" --warmup "$WARMUP" "${KIND_ARGS[@]}")
IFS=, read -r -a CONCURRENCIES <<< "$CONCURRENCY"
: > "$OUT/load.txt"
note() { echo "$*" | tee -a "$OUT/load.txt" >&2; }
seconds_since() { echo "$(( $(date +%s) - $1 ))"; }

# --- PostgreSQL: packages, cluster, load ---------------------------------------------------
# shellcheck source=bench/peers/pg-cluster.sh
source "$HERE/pg-cluster.sh"
stop_pg() { pg_cluster_stop; }
cleanup() {
  stop_pg
  if [[ $KEEP -eq 0 ]]; then
    rm -rf "$PG_DIR/data" "$SQLITE_DB"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ $SKIP_PG -eq 0 ]]; then
  pg_cluster_start "$PG_DIR" "$PORT" "$SHARED_BUFFERS"
  note "postgresql $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT, shared_buffers $SHARED_BUFFERS, data in $PG_DIR/data"
  psql -X -q -d postgres -c "CREATE DATABASE catalogue"
  $PEERS pg-load-sql "$EXPORT" > "$OUT/pg-load.sql"
  started=$(date +%s)
  psql -X -q -d catalogue -f "$OUT/pg-load.sql"
  note "postgresql: loaded, indexed and analysed in $(seconds_since "$started") s; database $(psql -X -Atd catalogue -c "SELECT pg_size_pretty(pg_database_size('catalogue'))")"
fi

# --- SQLite: load ------------------------------------------------------------------------------
if [[ $SKIP_SQLITE -eq 0 ]]; then
  started=$(date +%s)
  $PEERS sqlite-load "$EXPORT" "$SQLITE_DB"
  note "sqlite: loaded, indexed and analysed in $(seconds_since "$started") s; database $(du -h "$SQLITE_DB" | cut -f1)"
fi

# --- the answers, against ours ----------------------------------------------------------------
if [[ -n $BASE ]]; then
  CHECK_ARGS=(--base "$BASE" --out "$OUT/check.json" "${KIND_ARGS[@]}")
  [[ $SKIP_PG -eq 0 ]] && CHECK_ARGS+=(--port "$PORT")
  [[ $SKIP_SQLITE -eq 0 ]] && CHECK_ARGS+=(--sqlite "$SQLITE_DB")
  $PEERS check "$REQUESTS" "${CHECK_ARGS[@]}" | tee "$OUT/check.txt"
fi

# --- the load, one peer at a time ------------------------------------------------------------
if [[ $SKIP_PG -eq 0 ]]; then
  for c in "${CONCURRENCIES[@]}"; do
    $PEERS pg-bench "$REQUESTS" "$OUT/postgresql-c$c.json" --port "$PORT" \
      --work-dir "$OUT/pgbench/c$c" --concurrency "$c" "${LOAD_ARGS[@]}"
  done
  stop_pg
fi
if [[ $SKIP_SQLITE -eq 0 ]]; then
  for c in "${CONCURRENCIES[@]}"; do
    $PEERS sqlite-bench "$SQLITE_DB" "$REQUESTS" "$OUT/sqlite-c$c.json" --concurrency "$c" "${LOAD_ARGS[@]}"
  done
fi
echo "figures in $OUT; compare: bench/peers/compare.py OURS_DIR/ours-*.json $OUT/postgresql-c*.json $OUT/sqlite-c*.json" >&2
