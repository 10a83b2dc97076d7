# A throwaway PostgreSQL cluster on 127.0.0.1 for the peers' benches (sourced by run-peers.sh
# and history.sh): the distribution's packages (installed when missing), a cluster tuned for a
# load-once bench, stopped by `pg_cluster_stop`. Needs root (packages, the postgres user).
#
#   pg_cluster_start DIR PORT SHARED_BUFFERS   # then PGHOST, PGPORT, PGUSER and PGBIN are set
#   pg_cluster_stop

PGBIN=""
PG_STARTED=0
PG_CLUSTER_DIR=""

pg_cluster_stop() {
  if [[ $PG_STARTED -eq 1 ]]; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG_CLUSTER_DIR/data" -m fast -w stop >/dev/null || true
    PG_STARTED=0
    echo "postgresql stopped" >&2
  fi
}

pg_cluster_start() {
  local dir=$1 port=$2 shared_buffers=$3
  PG_CLUSTER_DIR=$dir
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
  rm -rf "$dir/data"; mkdir -p "$dir/data"
  chown postgres: "$dir" "$dir/data"; chmod 700 "$dir/data"
  runuser -u postgres -- test -w "$dir/data" \
    || { echo "$dir is not reachable by the postgres user: give --pg-dir elsewhere" >&2; exit 2; }
  # C collation: byte order like ours, and btree prefix lookups for LIKE 'abc%'.
  runuser -u postgres -- "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust \
    --locale=C --encoding=UTF8 >/dev/null
  cat >> "$dir/data/postgresql.conf" <<EOF
# bench/peers/pg-cluster.sh
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/data'
max_connections = 100
shared_buffers = $shared_buffers
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
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 start >/dev/null
  PG_STARTED=1
  export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres
}
