#!/usr/bin/env bash
# The image pipeline (issue 13): throughput of fetch + decode + crop + encode + store for
# COUNT local SIZE×SIZE JPEGs, and the server's read latency while its worker runs.
#
#   bench/pictures.sh [BINARY] [BENCH_BINARY]
#       (default: $CARGO_TARGET_DIR or target/, release/watch-catalogue and
#        release/catalogue-bench; build both with `cargo build --release`)
#
# Knobs (environment): COUNT=1000 SIZE=2000 CONCURRENCIES="4 2 8" (--fetch-concurrency of
# the timed `pictures fetch` runs), LOAD_SECS=20, LOAD_CONCURRENCIES="1 4" (clients of
# `catalogue-bench load`, default mix), NO_WORKER_BASELINE=yes, CACHE (where the generated
# JPEGs are kept between runs; default /tmp/catalogue-bench-jpegs-SIZE).
#
# 1. `catalogue-bench jpegs` writes COUNT distinct product-shot-like JPEGs into CACHE, once.
# 2. A threaded python3 http.server serves them on 127.0.0.1 (a free port).
# 3. A template data dir: tests/data/real-listings' catalogue imported, then a snapshot of
#    COUNT listings ingested, each with one picture URL on that server (a pending picture each).
# 4. For each of CONCURRENCIES, on a copy of the template: `watch-catalogue pictures fetch
#    --fetch-allow 127.0.0.1/32 --fetch-concurrency C`, timed (wall, CPU, peak RSS); its report
#    must say COUNT fetched and nothing failed, and media/ must hold 2×COUNT files.
# 5. On another copy: `serve` with the worker on, and `catalogue-bench load` for LOAD_SECS at
#    each of LOAD_CONCURRENCIES while the worker runs; once its pass is logged (every crop is
#    then checked through /media/pictures/{id}/cropped), the same loads again with the worker
#    idle; then (NO_WORKER_BASELINE=yes) on a third copy served with --no-picture-worker.
# 6. A summary table.
# Everything listens on 127.0.0.1 only. The work dir (mktemp) is removed on exit, and every
# process started here is stopped; the JPEG cache is kept.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${1:-$TARGET/release/watch-catalogue}
BENCH=${2:-$TARGET/release/catalogue-bench}
COUNT=${COUNT:-1000}
SIZE=${SIZE:-2000}
CONCURRENCIES=${CONCURRENCIES:-4 2 8}
LOAD_SECS=${LOAD_SECS:-20}
LOAD_CONCURRENCIES=${LOAD_CONCURRENCIES:-1 4}
NO_WORKER_BASELINE=${NO_WORKER_BASELINE:-yes}
CACHE=${CACHE:-/tmp/catalogue-bench-jpegs-$SIZE}
# Upper bounds, so a stuck step ends the run instead of hanging it.
FETCH_LIMIT_SECS=${FETCH_LIMIT_SECS:-1800}
WORKER_LIMIT_SECS=${WORKER_LIMIT_SECS:-1800}
for exe in "$BIN" "$BENCH"; do
  [[ -x $exe ]] || { echo "no $exe: cargo build --release first" >&2; exit 1; }
done
command -v python3 > /dev/null && command -v curl > /dev/null \
  || { echo "needs python3 and curl" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-pictures.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2> /dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2> /dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# User + system CPU seconds of a running process so far (/proc, 100 ticks a second).
cpu_of() {
  awk '{ split($0, a, ") "); split(a[2], f, " "); printf "%.2f\n", (f[12] + f[13]) / 100 }' "/proc/$1/stat"
}
# Busy CPU seconds of the whole machine so far (/proc/stat: all but idle and iowait).
machine_cpu() {
  awk '/^cpu / { printf "%.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / 100 }' /proc/stat
}
media_files() { # files under a data dir's media/, temp files aside (0 before the first)
  { find "$1/media" -path "$1/media/tmp" -prune -o -type f -print 2> /dev/null || true; } | wc -l
}
now() { date +%s.%N; }
secs() { echo "scale=2; ($2 - $1) / 1" | bc; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/^Mem:/ { print $2 }') GiB; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "binaries: $BIN, $BENCH"

# 1. The pictures, once.
jpegs=$("$BENCH" jpegs --count "$COUNT" --size "$SIZE" --out "$CACHE")
echo "$jpegs"
JPEG_MIB=$(echo "$jpegs" | sed -n 's/.* \([0-9.]*\) MiB in all.*/\1/p')

# 2. The image host.
python3 - "$CACHE" "$WORK/images.port" <<'PY' > "$WORK/images.log" 2>&1 &
import functools, http.server, os, sys
class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the fetcher's pooled connections are reused
    # Without TCP_NODELAY each keep-alive answer waits ~40 ms for a delayed ACK (Nagle).
    disable_nagle_algorithm = True
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(
    ("127.0.0.1", 0), functools.partial(Handler, directory=sys.argv[1]))
server.daemon_threads = True
with open(sys.argv[2] + ".tmp", "w") as out:
    out.write(str(server.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
PY
IMAGES_PID=$!
PIDS+=("$IMAGES_PID")
for _ in $(seq 100); do [[ -f $WORK/images.port ]] && break; sleep 0.1; done
IMAGES_PORT=$(cat "$WORK/images.port")
curl -fsS -o /dev/null "http://127.0.0.1:$IMAGES_PORT/0000.jpg"
echo "image host: http://127.0.0.1:$IMAGES_PORT/ (pid $IMAGES_PID) serving $CACHE"

# 3. The template data dir.
mkdir -p "$WORK/dataset"
cp "$ROOT"/tests/data/real-listings/catalogue/*.jsonl "$WORK/dataset/"
echo '{"slug":"chrono24","name":"Chrono24","url":"https://www.chrono24.com"}' > "$WORK/dataset/providers.jsonl"
python3 - "$ROOT/tests/data/real-listings/catalogue/models.jsonl" "$WORK/snapshot.jsonl" "$COUNT" "$IMAGES_PORT" <<'PY'
import json, sys
models = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
count, port = int(sys.argv[3]), sys.argv[4]
with open(sys.argv[2], "w") as out:
    for n in range(count):
        model = models[n % len(models)]
        out.write(json.dumps({
            "sourceId": f"pic-{n:04}",
            "url": f"https://www.chrono24.com/rolex/pic-{n:04}.htm",
            "title": f"Rolex {model['name']} ref. {model['referenceNumber']}",
            "price": 5000 + 37 * n, "currency": "EUR", "year": 1960 + n % 60,
            "pictures": [f"http://127.0.0.1:{port}/{n:04}.jpg"],
        }) + "\n")
PY
TEMPLATE=$WORK/template
"$BIN" --data-dir "$TEMPLATE" import "$WORK/dataset" > /dev/null 2>&1
ingested=$("$BIN" --data-dir "$TEMPLATE" ingest --provider chrono24 "$WORK/snapshot.jsonl" 2> /dev/null)
echo "${ingested%%$'\n'*}"
fresh_copy() { rm -rf "$1"; cp -a "$TEMPLATE" "$1"; }

# 4. `pictures fetch` on a stopped data dir, timed.
FETCH_ROWS=()
for c in $CONCURRENCIES; do
  data=$WORK/fetch-$c
  fresh_copy "$data"
  sync
  host_cpu=$(cpu_of "$IMAGES_PID")
  all_cpu=$(machine_cpu)
  start=$(now)
  if [[ -x /usr/bin/time ]]; then
    timeout "$FETCH_LIMIT_SECS" /usr/bin/time -v -o "$WORK/time-$c" \
      "$BIN" --data-dir "$data" pictures fetch --fetch-allow 127.0.0.1/32 --fetch-concurrency "$c" \
      > "$WORK/report-$c" 2> "$WORK/stderr-$c"
  else
    ( TIMEFORMAT='%U %S'; time timeout "$FETCH_LIMIT_SECS" "$BIN" --data-dir "$data" pictures fetch \
        --fetch-allow 127.0.0.1/32 --fetch-concurrency "$c" > "$WORK/report-$c" 2> "$WORK/stderr-$c" ) 2> "$WORK/bashtime-$c"
  fi
  end=$(now)
  host_cpu=$(echo "$(cpu_of "$IMAGES_PID") - $host_cpu" | bc)
  all_cpu=$(echo "$(machine_cpu) - $all_cpu" | bc)
  wall=$(secs "$start" "$end")
  if [[ -f $WORK/time-$c ]]; then
    user=$(sed -n 's/^\tUser time (seconds): //p' "$WORK/time-$c")
    sys=$(sed -n 's/^\tSystem time (seconds): //p' "$WORK/time-$c")
    rss=$(( $(sed -n 's/^\tMaximum resident set size (kbytes): //p' "$WORK/time-$c") / 1024 ))
  else
    read -r user sys < "$WORK/bashtime-$c"
    rss=?
  fi
  report=$(cat "$WORK/report-$c")
  files=$(media_files "$data")
  rest=$(echo "$all_cpu - $user - $sys - $host_cpu" | bc)
  echo "fetch --fetch-concurrency $c: ${wall}s wall, ${user}s user + ${sys}s sys, peak ${rss} MiB; $report; $files files in media/; image host ${host_cpu}s CPU, rest of the machine ${rest}s"
  if [[ $report != "pictures: $COUNT fetched, 0 cropped again, 0 failed"* || $files -ne $((2 * COUNT)) ]]; then
    echo "unexpected: wanted $COUNT fetched and cropped, none failed, $((2 * COUNT)) files" >&2
    cat "$WORK/stderr-$c" >&2
    exit 1
  fi
  FETCH_ROWS+=("$c $wall $user $sys $rss $host_cpu $rest $(du -sm "$data/media" | cut -f1)")
  rm -rf "$data"
done

# 5. Read latency while the worker runs, then with it idle (and off).
start_server() { # data dir, log, extra flags…
  local data=$1 log=$2
  shift 2
  SERVER_PORT=$(free_port)
  "$BIN" --data-dir "$data" serve --addr "127.0.0.1:$SERVER_PORT" --rate-limit 1000000000 \
    --fetch-allow 127.0.0.1/32 "$@" > "$log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 300); do
    curl -fsS -o /dev/null "http://127.0.0.1:$SERVER_PORT/healthz" 2> /dev/null && return 0
    kill -0 "$SERVER_PID" 2> /dev/null || break
    sleep 0.1
  done
  echo "the server did not start:" >&2
  cat "$log" >&2
  exit 1
}
stop_server() {
  kill "$SERVER_PID" 2> /dev/null || true
  wait "$SERVER_PID" 2> /dev/null || true
}
LOAD_ROWS=()
load() { # label, clients, data dir (for the crops done meanwhile)
  local label=$1 clients=$2 data=$3 json=$WORK/load-$1-$2.json
  local before after started ended server all
  before=$(media_files "$data")
  server=$(cpu_of "$SERVER_PID")
  all=$(machine_cpu)
  started=$(now)
  "$BENCH" load --base "http://127.0.0.1:$SERVER_PORT" --concurrency "$clients" \
    --duration "${LOAD_SECS}s" --json "$json" > "$WORK/load-$label-$clients.txt" 2>&1 \
    || { cat "$WORK/load-$label-$clients.txt" >&2; exit 1; }
  ended=$(now)
  after=$(media_files "$data")
  server=$(echo "scale=2; ($(cpu_of "$SERVER_PID") - $server) / ($ended - $started)" | bc)
  all=$(echo "scale=2; ($(machine_cpu) - $all) / ($ended - $started)" | bc)
  LOAD_ROWS+=("$label $clients $json $(( (after - before) / 2 )) $server $all")
  python3 - "$json" "$label" "$clients" "$(( (after - before) / 2 ))" "$server" "$all" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["overall"]
print(f"load {sys.argv[2]}, {sys.argv[3]} clients: {r['rps']} req/s, p50 {r['p50_us'] / 1000:.2f} ms, "
      f"p99 {r['p99_us'] / 1000:.2f} ms, {r['errors']} errors; {sys.argv[4]} pictures cropped meanwhile; "
      f"server {sys.argv[5]} cores, machine {sys.argv[6]} cores busy")
PY
}
worker_done() { grep -q "picture worker pass" "$1"; }

data=$WORK/serve
fresh_copy "$data"
start_server "$data" "$WORK/serve.log"
served=$(now)
echo "serve with the worker: http://127.0.0.1:$SERVER_PORT (pid $SERVER_PID)"
for clients in $LOAD_CONCURRENCIES; do
  load worker-busy "$clients" "$data"
  if worker_done "$WORK/serve.log"; then
    echo "warning: the worker finished during that run; its figures mix busy and idle" >&2
  fi
done
deadline=$(( $(date +%s) + WORKER_LIMIT_SECS ))
until worker_done "$WORK/serve.log"; do
  (( $(date +%s) < deadline )) || { echo "the worker did not finish in ${WORKER_LIMIT_SECS}s" >&2; exit 1; }
  sleep 0.5
done
worker_secs=$(secs "$served" "$(now)")
grep "picture worker pass" "$WORK/serve.log" | head -1 | sed 's/\x1b\[[0-9;]*m//g'
# Every picture's crop answers 200 (its id from the listings' pages).
python3 - "http://127.0.0.1:$SERVER_PORT" "$COUNT" <<'PY'
import json, sys, urllib.request
base, count = sys.argv[1], int(sys.argv[2])
ids, page = [], 1
while True:
    with urllib.request.urlopen(f"{base}/v1/listings?pageSize=100&page={page}") as answer:
        body = json.load(answer)
    items = next(v for v in body.values() if isinstance(v, list))
    ids += [p["id"] for item in items for p in item["pictures"]]
    if len(items) < 100:
        break
    page += 1
bad = []
for picture in ids:
    try:
        with urllib.request.urlopen(f"{base}/media/pictures/{picture}/cropped") as answer:
            answer.read()
            if answer.status != 200 or answer.headers["Content-Type"] != "image/jpeg":
                bad.append(picture)
    except Exception:
        bad.append(picture)
print(f"crops served: {len(ids) - len(bad)} of {len(ids)} pictures")
sys.exit(0 if len(ids) == count and not bad else 1)
PY
for clients in $LOAD_CONCURRENCIES; do
  load worker-idle "$clients" "$data"
done
stop_server
rm -rf "$data"

if [[ $NO_WORKER_BASELINE == yes ]]; then
  data=$WORK/serve-off
  fresh_copy "$data"
  start_server "$data" "$WORK/serve-off.log" --no-picture-worker
  echo "serve --no-picture-worker: http://127.0.0.1:$SERVER_PORT (pid $SERVER_PID)"
  for clients in $LOAD_CONCURRENCIES; do
    load worker-off "$clients" "$data"
  done
  stop_server
  rm -rf "$data"
fi

# 6. Summary.
echo
echo "$COUNT pictures of ${SIZE}x${SIZE} ($JPEG_MIB MiB of JPEG), $(nproc) cores"
echo
echo "| pictures fetch | wall s | pictures/s | CPU s (user+sys) | cores used | CPU ms/picture | peak RSS MiB | image host CPU s | rest of machine CPU s | media/ MiB |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
for row in "${FETCH_ROWS[@]}"; do
  read -r c wall user sys rss host rest media <<< "$row"
  cpu=$(echo "$user + $sys" | bc)
  printf '| --fetch-concurrency %s | %.1f | %.1f | %.1f | %.2f | %.0f | %s | %.1f | %.1f | %s |\n' "$c" "$wall" \
    "$(echo "scale=3; $COUNT / $wall" | bc)" "$cpu" "$(echo "scale=3; $cpu / $wall" | bc)" \
    "$(echo "scale=3; $cpu * 1000 / $COUNT" | bc)" "$rss" "$host" "$rest" "$media"
done
echo
echo "In serve (default --fetch-concurrency, under the loads below): all $COUNT pictures ${worker_secs}s after start, $(echo "scale=1; $COUNT / $worker_secs" | bc) pictures/s."
echo
echo "| load, default mix, ${LOAD_SECS}s | clients | req/s | p50 ms | p90 ms | p99 ms | max ms | errors | pictures cropped meanwhile | server cores | machine cores busy |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
for row in "${LOAD_ROWS[@]}"; do
  read -r label clients json cropped server all <<< "$row"
  python3 - "$json" "$label" "$clients" "$cropped" "$server" "$all" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["overall"]
ms = lambda us: f"{us / 1000:.2f}"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {r['rps']:.0f} | {ms(r['p50_us'])} | {ms(r['p90_us'])} | "
      f"{ms(r['p99_us'])} | {ms(r['max_us'])} | {r['errors']} | {sys.argv[4]} | {float(sys.argv[5]):.2f} | {float(sys.argv[6]):.2f} |")
PY
done
