#!/usr/bin/env bash
# Starts and stops the offline AWS emulator (moto in server mode) on 127.0.0.1:4566,
# the port LocalStack uses, so the same tests and tools run against either.
#
#   emulator.sh up     print "reused" if AWS_ENDPOINT_URL (or the port) already answers,
#                      otherwise start moto, wait for readiness (<= 20 s) and print "started"
#   emulator.sh down   stop the emulator this script started (no-op otherwise)
#   emulator.sh status exit 0 if the endpoint answers
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUN_DIR="${JOBKIT_RUN_DIR:-$ROOT/.run}"
# shellcheck source=procs.sh
source "$ROOT/localstack/procs.sh"
# One way to choose the port for every command: AWS_ENDPOINT_URL. A loopback URL with a port
# (http://127.0.0.1:5566, http://localhost:5566) is where moto starts when nothing answers there;
# JOBKIT_EMULATOR_PORT says the same for callers that set no URL.
PORT="$(endpoint_port "${JOBKIT_EMULATOR_PORT:-4566}")"
server_files moto "$PORT"
URL="${AWS_ENDPOINT_URL:-http://$HOST:$PORT}"
READY_TIMEOUT="${JOBKIT_EMULATOR_READY_TIMEOUT:-20}"

alive() { curl -s -o /dev/null --max-time 2 "$1" ; }

case "${1:-}" in
up)
  if alive "$URL"; then
    echo reused
    exit 0
  fi
  if [[ -n "${AWS_ENDPOINT_URL:-}" && "$AWS_ENDPOINT_URL" != "http://$HOST:$PORT" && "$AWS_ENDPOINT_URL" != "http://localhost:$PORT" ]]; then
    echo "emulator: AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL does not answer, and it is not the local emulator's address" >&2
    exit 1
  fi
  if [[ ! -x "$ROOT/.venv/bin/python" ]] || ! "$ROOT/.venv/bin/python" -c 'import moto.server' 2>/dev/null; then
    echo "emulator: moto is not installed in $ROOT/.venv; run 'make setup'" >&2
    exit 1
  fi
  mkdir -p "$RUN_DIR"
  # setsid: the server gets its own process group, so 'down' stops it and its children.
  # localstack/motofix/server.py is moto's server with the SQS fixes it documents (FIFO group
  # order after a partial batch failure, FIFO long polls, receive cost on deep queues), and the
  # AWS/SQS metrics SQS publishes every minute, here every 10 s (JOBKIT_SQS_METRICS_INTERVAL).
  JOBKIT_SQS_METRICS_INTERVAL="${JOBKIT_SQS_METRICS_INTERVAL:-10}" setsid "$ROOT/.venv/bin/python" "$ROOT/localstack/motofix/server.py" -H "$HOST" -p "$PORT" >"$LOG_FILE" 2>&1 < /dev/null &
  echo $! >"$PID_FILE"
  if ! wait_ready "emulator: moto on http://$HOST:$PORT" "$PID_FILE" "$LOG_FILE" "$READY_TIMEOUT" alive "http://$HOST:$PORT"; then
    stop_group "$PID_FILE" 5
    exit 1
  fi
  echo started
  ;;
down)
  stop_group "$PID_FILE" 5
  ;;
status)
  alive "$URL"
  ;;
*)
  echo "usage: $0 up|down|status" >&2
  exit 2
  ;;
esac
