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
PGBIN=""
PG_STARTED=0
stop_pg() {
  if [[ $PG_STARTED -eq 1 ]]; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null || true
    PG_STARTED=0
    echo "postgresql stopped" >&2
  fi
}
cleanup() {
  stop_pg
  if [[ $KEEP -eq 0 ]]; then
    rm -rf "$PG_DIR/data" "$SQLITE_DB"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ $SKIP_PG -eq 0 ]]; then
  if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 \
     || ! ls /usr/share/postgresql/*/extension/pg_trgm.control >/dev/null 2>&1; then
    echo "installing postgresql and postgresql-contrib" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-contrib >/dev/null
    # The package's own cluster is not used: stop it if it started.
    command -v pg_ctlcluster >/dev/null && for c in /etc/postgresql/*/main; do
      [[ -d $c ]] && pg_ctlcluster "$(basename "$(dirname "$c")")" main stop 2>/dev/null || true
    done
  fi
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  export PATH=$PGBIN:$PATH
  rm -rf "$PG_DIR/data"; mkdir -p "$PG_DIR/data"
  chown postgres: "$PG_DIR" "$PG_DIR/data"; chmod 700 "$PG_DIR/data"
  runuser -u postgres -- test -w "$PG_DIR/data" \
    || { echo "$PG_DIR is not reachable by the postgres user: give --pg-dir elsewhere" >&2; exit 2; }
  # C collation: byte order like ours, and btree prefix lookups for LIKE 'abc%'.
  runuser -u postgres -- "$PGBIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust \
    --locale=C --encoding=UTF8 >/dev/null
  cat >> "$PG_DIR/data/postgresql.conf" <<EOF
# bench/peers/run-peers.sh
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$PG_DIR/data'
max_connections = 100
shared_buffers = $SHARED_BUFFERS
effective_cache_size = 8GB
work_mem = 32MB
maintenance_work_mem = 1GB
random_page_cost = 1.1
jit = off
# A throwaway cluster loaded once: durability costs only the load time.
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
max_wal_size = 8GB
checkpoint_timeout = 30min
EOF
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 120 start >/dev/null
  PG_STARTED=1
  export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres
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
