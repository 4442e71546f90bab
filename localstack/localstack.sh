#!/usr/bin/env bash
# Starts and stops LocalStack on 127.0.0.1:4566 (the port the offline emulator uses too, so the
# same tests and tools run against either; run one at a time).
#
#   localstack.sh up      print "reused" if LocalStack already answers there; otherwise start it
#                         and print "started": in Docker when a Docker engine answers
#                         (docker-compose.yml), else LocalStack's own core package in host mode
#                         (no Docker, no account), installed on first use into .venv-localstack
#                         from localstack/requirements-localstack.lock, with DynamoDB served by
#                         DynamoDB Local fetched into .tools/ (so LocalStack never downloads).
#   localstack.sh down    stop what 'up' started (no-op otherwise)
#   localstack.sh status  exit 0 if LocalStack answers
#   localstack.sh install install the host-mode venv and DynamoDB Local, start nothing
#
# JOBKIT_LOCALSTACK_MODE=host|docker forces a mode; JOBKIT_LOCALSTACK_PORT moves the port.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUN_DIR="${JOBKIT_RUN_DIR:-$ROOT/.run}"
TOOLS="$ROOT/.tools"
# shellcheck source=procs.sh
source "$ROOT/localstack/procs.sh"
# AWS_ENDPOINT_URL, when a loopback URL with a port, chooses it (as for moto: emulator.sh).
PORT="$(endpoint_port "${JOBKIT_LOCALSTACK_PORT:-4566}")"
URL="http://$HOST:$PORT"
server_files localstack "$PORT"
MODE_FILE="$RUN_DIR/localstack-$PORT.mode"
FS_ROOT="$RUN_DIR/localstack-fs-$PORT"
VENV="$ROOT/.venv-localstack"
LOCK="$ROOT/localstack/requirements-localstack.lock"
DDB_LIB="$TOOLS/dynamodb-local/lib"
SEED="$TOOLS/localstack-seed"
READY_TIMEOUT="${JOBKIT_LOCALSTACK_READY_TIMEOUT:-90}"
COMPOSE=(docker compose -f "$ROOT/localstack/docker-compose.yml")

# LocalStack's health document lists every service; "running" or "available" is good.
healthy() { curl -sf --max-time 2 "$URL/_localstack/health" 2>/dev/null | grep -q '"sqs": *"\(running\|available\)"'; }

docker_answers() { command -v docker >/dev/null && docker info >/dev/null 2>&1; }

# find_python prints a Python >= 3.13 (localstack-core 2026.3 uses PEP 695 syntax and
# warnings.deprecated, new in 3.13), or fails naming it.
find_python() {
  local c
  for c in python3.13 "$(command -v pyenv >/dev/null && echo "$(pyenv root)/versions/3.13"*/bin/python3)" python3.14 python3; do
    [[ -n "$c" ]] && command -v "$c" >/dev/null 2>&1 || continue
    if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' 2>/dev/null; then
      command -v "$c"
      return
    fi
  done
  echo "localstack: host mode needs Python >= 3.13 (python3.13 on PATH, or under pyenv); none found" >&2
  return 1
}

install_venv() {
  [[ -f "$VENV/.installed" && "$VENV/.installed" -nt "$LOCK" ]] && return
  local py
  py="$(find_python)"
  [[ -x "$VENV/bin/python" ]] || "$py" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes -r "$LOCK" >&2
  touch "$VENV/.installed"
}

# install_dynamodb_local fetches DynamoDB Local (AWS's own engine) from Maven and builds the two
# small jars LocalStack expects beside it: a launcher (LocalStack runs `java -jar
# DynamoDBLocal.jar`) and a no-op -javaagent in place of the patch it would download.
install_dynamodb_local() {
  if [[ ! -f "$DDB_LIB/.installed" ]]; then
    command -v mvn >/dev/null || { echo "localstack: DynamoDB Local needs Maven (mvn) to fetch it" >&2; return 1; }
    mvn -q -B -f "$ROOT/localstack/maven/pom.xml" -P dynamodb-local dependency:copy-dependencies \
      -DoutputDirectory="$DDB_LIB" >&2
    touch "$DDB_LIB/.installed"
  fi
  [[ -f "$SEED/DynamoDBLocal.jar" && -f "$SEED/ddb-local-loader-0.1.jar" ]] && return
  local work="$SEED/build"
  rm -rf "$work" && mkdir -p "$work/agent"
  {
    echo "Main-Class: software.amazon.dynamodb.services.local.main.ServerRunner"
    # One jar per continuation line: a manifest line holds at most 72 bytes; the continuation's
    # first space is dropped, the second separates the entries.
    echo "Class-Path: ."
    (cd "$DDB_LIB" && ls *.jar | sed 's#^#  DynamoDBLocal_lib/#')
  } >"$work/launcher.mf"
  jar --create --file "$SEED/DynamoDBLocal.jar" --manifest "$work/launcher.mf"
  cat >"$work/agent/NoopAgent.java" <<'EOF'
public final class NoopAgent {
    public static void premain(String args) {}
}
EOF
  javac -d "$work/agent" "$work/agent/NoopAgent.java"
  printf 'Premain-Class: NoopAgent\n' >"$work/agent.mf"
  jar --create --file "$SEED/ddb-local-loader-0.1.jar" --manifest "$work/agent.mf" -C "$work/agent" NoopAgent.class
  rm -rf "$work"
}

# seed_packages puts Java and DynamoDB Local where LocalStack's package installer looks, so that
# it finds them installed and never tries a download (which fails offline and hangs DynamoDB).
seed_packages() {
  local lib="$FS_ROOT/var/lib/localstack/lib" java_home
  java_home="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
  mkdir -p "$lib/java" "$lib/dynamodb-local/2"
  ln -sfn "$java_home" "$lib/java/21"
  ln -sfn "$DDB_LIB" "$lib/dynamodb-local/2/DynamoDBLocal_lib"
  cp -f "$SEED/DynamoDBLocal.jar" "$SEED/ddb-local-loader-0.1.jar" "$lib/dynamodb-local/2/"
}

start_host() {
  install_venv
  install_dynamodb_local
  command -v java >/dev/null || { echo "localstack: DynamoDB Local needs Java (java) on PATH" >&2; return 1; }
  mkdir -p "$RUN_DIR" "$FS_ROOT"
  seed_packages
  # OVERRIDE_IN_DOCKER=0: this may be a container itself (/.dockerenv), which LocalStack would
  # otherwise take for its own. LOCALSTACK_HOST: queue URLs must name an address that resolves
  # offline. DNS_ADDRESS=0: no DNS server on port 53. SQS_DELAY_PURGE_RETRY=1: a second purge of
  # a queue within 60 s is refused (PurgeQueueInProgress), as SQS refuses it.
  # SQS_CLOUDWATCH_METRICS_REPORT_INTERVAL=10: the AWS/SQS metrics (lsfix adds the oldest age)
  # every 10 s; SQS publishes them every minute.
  setsid env OVERRIDE_IN_DOCKER=0 FILESYSTEM_ROOT="$FS_ROOT" GATEWAY_LISTEN="$HOST:$PORT" \
    LOCALSTACK_HOST="$HOST:$PORT" DNS_ADDRESS=0 DISABLE_EVENTS=1 SQS_ENDPOINT_STRATEGY=path SQS_DELAY_PURGE_RETRY=1 \
    SQS_CLOUDWATCH_METRICS_REPORT_INTERVAL=10 \
    SERVICES=sqs,dynamodb,cloudformation,scheduler,events,lambda,s3,iam,sts,logs,ssm,cloudwatch,sns \
    "$VENV/bin/python" "$ROOT/localstack/lsfix/main.py" >"$LOG_FILE" 2>&1 </dev/null &
  echo $! >"$PID_FILE"
  echo host >"$MODE_FILE"
}

start_docker() {
  mkdir -p "$RUN_DIR"
  "${COMPOSE[@]}" up -d >&2
  echo docker >"$MODE_FILE"
}

stop() {
  [[ -f "$MODE_FILE" ]] || return 0
  if [[ "$(cat "$MODE_FILE")" == docker ]]; then
    "${COMPOSE[@]}" down >&2 || true
  else
    stop_group "$PID_FILE" 15
  fi
  rm -f "$PID_FILE" "$MODE_FILE"
}

case "${1:-}" in
up)
  if healthy; then
    echo reused
    exit 0
  fi
  if curl -s -o /dev/null --max-time 2 "$URL"; then
    echo "localstack: something that is not LocalStack answers at $URL (the offline emulator? 'make emulator-down')" >&2
    exit 1
  fi
  mode="${JOBKIT_LOCALSTACK_MODE:-}"
  if [[ -z "$mode" ]]; then
    if docker_answers; then mode=docker; else mode=host; fi
  fi
  case "$mode" in
  docker) start_docker ;;
  host) start_host ;;
  *) echo "localstack: JOBKIT_LOCALSTACK_MODE must be host or docker, not $mode" >&2; exit 2 ;;
  esac
  watch="$PID_FILE"
  [[ "$mode" == host ]] || watch=""
  if ! wait_ready "localstack: LocalStack on $URL" "$watch" "$LOG_FILE" "$READY_TIMEOUT" healthy; then
    stop
    exit 1
  fi
  echo started
  ;;
down) stop ;;
status) healthy ;;
install)
  install_venv
  install_dynamodb_local
  ;;
*)
  echo "usage: $0 up|down|status|install" >&2
  exit 2
  ;;
esac
