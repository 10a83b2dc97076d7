# Sourced by the bench scripts that start the real server: SERVER_PID holds the one running,
# and stop_server (also the EXIT trap) stops it with SIGTERM and waits for it.
SERVER_PID=

stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=
}
trap stop_server EXIT
