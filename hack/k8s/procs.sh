# Sourced by hack/k8s/harness.sh and hack/node/node.sh: processes started in their own session with a
# pid file in $RUN and a log in $LOGS (default $RUN), stopped by that pid only.
#   start NAME CMD...       unless NAME is alive
#   stop NAME               SIGTERM, SIGKILL after 10 s
#   alive NAME
#   wait_for NAME SECS CMD...   until CMD succeeds, for SECS seconds of wall time (CMD's own time
#                               included: give it a timeout); else NAME's last log lines and status 1
alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

start() {
  local name=$1; shift
  if alive "$name"; then return 0; fi
  setsid "$@" >>"${LOGS:-$RUN}/$name.log" 2>&1 < /dev/null &
  echo $! > "$RUN/$name.pid"
}

stop() {
  local name=$1 pid
  [ -f "$RUN/$name.pid" ] || return 0
  pid=$(cat "$RUN/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/$name.pid"
}

wait_for() {
  local what=$1 secs=$2; shift 2
  local end=$((SECONDS + secs))
  while [ "$SECONDS" -lt "$end" ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  log "$what did not become ready in ${secs}s; last log lines:"; tail -30 "${LOGS:-$RUN}/$what.log" >&2 || true
  return 1
}
