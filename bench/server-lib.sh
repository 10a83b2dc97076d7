# Sourced by the bench scripts that start the real server: SERVER_PID holds the one running,
# wait_ready waits for it to answer, and stop_server (also the EXIT trap) stops it with SIGTERM
# and waits for it; start_sampler FILE samples the machine beside a bench.
SERVER_PID=
# A bench sends more from one address and one admin than a client's budgets allow (600
# requests a minute per IP, 6,000 per admin session): its server runs with both lifted.
UNLIMITED=(--rate-limit 1000000000 --admin-rate-limit 1000000000)

stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=
}
trap stop_server EXIT

# Samples the disk (DEVICE, vda unless named) and the cores every 100 ms into FILE beside a
# bench (bench/disk-cpu-sample.py, for bench/host-stalls.py); on exit stopped with the server.
SAMPLER_PID=
start_sampler() {
  python3 "$ROOT/bench/disk-cpu-sample.py" "${DEVICE:-vda}" 0.1 > "$1" &
  SAMPLER_PID=$!
  trap 'stop_sampler; stop_server' EXIT
}
stop_sampler() {
  [[ -z "$SAMPLER_PID" ]] || kill "$SAMPLER_PID" 2>/dev/null || true
  SAMPLER_PID=
}

# Polls BASE/readyz every 20 ms until SERVER_PID answers 200; stops the script when the server
# exits first (LOG: where its output went, for the message) or is not ready within SECONDS.
wait_ready() {
  local base=$1 seconds=${2:-600} log=${3:-its output}
  local deadline=$((SECONDS + seconds))
  until curl -fs -o /dev/null "$base/readyz"; do
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "server exited before it was ready; see $log" >&2; exit 1; }
    (( SECONDS < deadline )) || { echo "server not ready after $seconds s" >&2; exit 1; }
    sleep 0.02
  done
}
