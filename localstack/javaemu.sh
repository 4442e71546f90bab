#!/usr/bin/env bash
# Starts and stops the Java emulators the differential checks run beside moto and LocalStack:
# DynamoDB Local (AWS's own DynamoDB engine) and ElasticMQ (an SQS implementation), both
# fetched from Maven into .tools/ on first use (localstack/maven/pom.xml).
#
#   javaemu.sh up dynamodb|elasticmq     start it (or reuse one answering) and print its endpoint
#   javaemu.sh down dynamodb|elasticmq   stop what 'up' started (no-op otherwise)
#   javaemu.sh install                   fetch both, start nothing
#   javaemu.sh lock                      fetch both afresh and write their jars' SHA-256 locks
#
# Every file fetched (jars and native libraries) must match localstack/maven/<profile>.sha256 (a
# version pin alone trusts the repository); a mismatch, or a file the lock does not list, removes
# the fetch and fails.
#
# Ports: JOBKIT_DYNAMODB_LOCAL_PORT (default 4570), JOBKIT_ELASTICMQ_PORT (default 4571).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUN_DIR="${JOBKIT_RUN_DIR:-$ROOT/.run}"
TOOLS="$ROOT/.tools"
READY_TIMEOUT="${JOBKIT_JAVAEMU_READY_TIMEOUT:-60}"
# shellcheck source=procs.sh
source "$ROOT/localstack/procs.sh"

fetch() { # fetch <maven profile> <dir> [nocheck]
  local profile="$1" lib="$2" lock="$ROOT/localstack/maven/$1.sha256"
  [[ -f "$lib/.installed" ]] && return
  command -v mvn >/dev/null || { echo "javaemu: $profile needs Maven (mvn) to fetch it" >&2; return 1; }
  mvn -q -B -f "$ROOT/localstack/maven/pom.xml" -P "$profile" dependency:copy-dependencies -DoutputDirectory="$lib" >&2
  if [[ "${3:-}" != nocheck ]]; then
    if ! verify "$lib" "$lock"; then
      rm -rf "$lib"
      echo "javaemu: the $profile jars do not match $lock; nothing installed" >&2
      return 1
    fi
  fi
  touch "$lib/.installed"
}

# verify <dir> <lock>: the files in dir are exactly those the lock lists, with its hashes.
verify() {
  local lib="$1" lock="$2"
  [[ -f "$lock" ]] || { echo "javaemu: no lock $lock (javaemu.sh lock writes it)" >&2; return 1; }
  (cd "$lib" && sha256sum --quiet --strict -c "$lock") >&2 || return 1
  diff <(cd "$lib" && ls -1 | LC_ALL=C sort) <(awk '{print $2}' "$lock" | LC_ALL=C sort) >&2
}

# lock <profile>: fetch afresh into a scratch directory and write the profile's lock.
lock() {
  local profile="$1" scratch
  scratch="$(mktemp -d)"
  fetch "$profile" "$scratch/lib" nocheck
  (cd "$scratch/lib" && sha256sum -- * | LC_ALL=C sort -k2) >"$ROOT/localstack/maven/$profile.sha256"
  rm -rf "$scratch"
  echo "javaemu: wrote localstack/maven/$profile.sha256" >&2
}

port_of() {
  case "$1" in
  dynamodb) echo "${JOBKIT_DYNAMODB_LOCAL_PORT:-4570}" ;;
  elasticmq) echo "${JOBKIT_ELASTICMQ_PORT:-4571}" ;;
  *) echo "javaemu: unknown emulator $1 (dynamodb or elasticmq)" >&2; return 2 ;;
  esac
}

# answers: any HTTP answer on the port (both answer a bare GET with an error document).
answers() { curl -s -o /dev/null --max-time 2 "http://$HOST:$1"; }

start() {
  local name="$1" port lib
  port="$(port_of "$name")"
  if answers "$port"; then
    echo "http://$HOST:$port"
    return
  fi
  command -v java >/dev/null || { echo "javaemu: $name needs Java (java) on PATH" >&2; return 1; }
  mkdir -p "$RUN_DIR"
  RUN_DIR="$(cd "$RUN_DIR" && pwd)"
  server_files "$name" "$port"
  case "$name" in
  dynamodb)
    lib="$TOOLS/dynamodb-local/lib"
    fetch dynamodb-local "$lib"
    # DynamoDB Local has no bind-address option: it listens on every interface. It writes
    # dynamodb-local-metadata.json to its working directory: run it in RUN_DIR.
    cd "$RUN_DIR"
    setsid java -Djava.library.path="$lib" -cp "$lib/*" software.amazon.dynamodb.services.local.main.ServerRunner \
      -inMemory -port "$port" >"$LOG_FILE" 2>&1 </dev/null &
    cd - >/dev/null
    ;;
  elasticmq)
    lib="$TOOLS/elasticmq/lib"
    fetch elasticmq "$lib"
    cat >"$RUN_DIR/elasticmq-$port.conf" <<EOF
include classpath("application.conf")
node-address { protocol = http, host = "$HOST", port = $port, context-path = "" }
rest-sqs { enabled = true, bind-port = $port, bind-hostname = "$HOST", sqs-limits = strict }
rest-stats.enabled = false
EOF
    setsid java -Dconfig.file="$RUN_DIR/elasticmq-$port.conf" -cp "$lib/*" org.elasticmq.server.Main >"$LOG_FILE" 2>&1 </dev/null &
    ;;
  esac
  echo $! >"$PID_FILE"
  if ! wait_ready "javaemu: $name on port $port" "$PID_FILE" "$LOG_FILE" "$READY_TIMEOUT" answers "$port"; then
    stop "$name"
    return 1
  fi
  echo "http://$HOST:$port"
}

stop() {
  local port
  port="$(port_of "$1")" || return
  server_files "$1" "$port"
  stop_group "$PID_FILE" 10
}

case "${1:-}" in
up) start "${2:?dynamodb or elasticmq}" ;;
down) stop "${2:?dynamodb or elasticmq}" ;;
install)
  fetch dynamodb-local "$TOOLS/dynamodb-local/lib"
  fetch elasticmq "$TOOLS/elasticmq/lib"
  ;;
lock)
  lock dynamodb-local
  lock elasticmq
  ;;
*) echo "usage: $0 up|down dynamodb|elasticmq, install or lock" >&2; exit 2 ;;
esac
