# Sourced by emulator.sh, localstack.sh and javaemu.sh: what they do alike to the servers they start.

# HOST is where every server listens: loopback only.
HOST=127.0.0.1

# server_files NAME PORT sets PID_FILE and LOG_FILE: NAME's process id and output on PORT, in RUN_DIR.
server_files() {
  PID_FILE="$RUN_DIR/$1-$2.pid"
  LOG_FILE="$RUN_DIR/$1-$2.log"
}

# endpoint_port DEFAULT prints the port of AWS_ENDPOINT_URL when it is a loopback URL with a port
# (http://127.0.0.1:5566, http://localhost:5566), otherwise DEFAULT: one way to choose the port.
endpoint_port() {
  if [[ "${AWS_ENDPOINT_URL:-}" =~ ^http://(127\.0\.0\.1|localhost):([0-9]+)/?$ ]]; then
    echo "${BASH_REMATCH[2]}"
  else
    echo "$1"
  fi
}

# wait_ready WHO PID_FILE LOG TIMEOUT CHECK... runs CHECK until it succeeds. It fails, saying why
# on stderr as WHO, when the process in PID_FILE exits first (with the last lines of LOG) or when
# TIMEOUT seconds pass. An empty PID_FILE: no process to watch (LocalStack in Docker).
wait_ready() {
  local who="$1" pid_file="$2" log="$3" timeout="$4"
  local deadline=$((SECONDS + timeout))
  shift 4
  until "$@"; do
    if [[ -n "$pid_file" ]] && ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
      echo "$who exited during start; last log lines:" >&2
      tail -n 20 "$log" >&2
      return 1
    fi
    if ((SECONDS >= deadline)); then
      echo "$who not ready after ${timeout}s; log: $log" >&2
      return 1
    fi
    sleep 0.2
  done
}

# stop_group PID_FILE SECONDS stops the process group PID_FILE names (each server is started with
# setsid, so it leads one): SIGTERM, then SIGKILL after SECONDS. It removes PID_FILE.
stop_group() {
  local pid_file="$1" tries=$(($2 * 5)) pid
  [[ -f "$pid_file" ]] || return 0
  pid="$(cat "$pid_file")"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 "$tries"); do
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$pid_file"
}
