# Sourced by the bench scripts that start the real server: SERVER_PID holds the one running,
# wait_ready waits for it to answer, and stop_server (also the EXIT trap) stops it with SIGTERM
# and waits for it.
SERVER_PID=

stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=
}
trap stop_server EXIT

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
