#!/usr/bin/env bash
# Runs the conformance suite (localstack/conformance) against each emulator in turn — moto (SQS and
# DynamoDB), LocalStack (SQS and DynamoDB), ElasticMQ (SQS), DynamoDB Local (DynamoDB) — starting
# and stopping each, then prints one line per emulator:
#
#   CONFORMANCE emulator=<name> passed=<n> failed=<n> known_differences=<n>
#
# and exits 1 if any emulator failed a check (or could not start). `make conformance` runs it.
# Ports: JOBKIT_CONFORMANCE_PORTS="<moto> <localstack> <dynamodb-local> <elasticmq>"
# (default "4611 4612 4613 4614"); an emulator already answering on its port is reused, not stopped.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUN_DIR="${JOBKIT_RUN_DIR:-$ROOT/.run}"
read -r MOTO_PORT LS_PORT DDB_PORT EMQ_PORT <<<"${JOBKIT_CONFORMANCE_PORTS:-4611 4612 4613 4614}"
export AWS_REGION="${AWS_REGION:-us-east-1}" AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"

"$ROOT/localstack/localstack.sh" install
"$ROOT/localstack/javaemu.sh" install
mkdir -p "$RUN_DIR"
RUNNER="$RUN_DIR/conformance"
(cd "$ROOT" && go build -o "$RUNNER" ./localstack/cmd/conformance)

STOP=""                # the command that stops the emulator running now, if we started it
trap '[[ -z "$STOP" ]] || eval "$STOP" >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM

summaries=() rc=0 start_all=$SECONDS
timings=()

# run <name> <services> <endpoint>: runs the suite, keeps its CONFORMANCE line.
run() {
  local name="$1" services="$2" endpoint="$3" out t0=$SECONDS code=0
  out="$("$RUNNER" -emulator "$name" -services "$services" -endpoint "$endpoint" 2>&1)" || code=$?
  echo "$out" | grep -v '^CONFORMANCE ' || true
  local line
  line="$(echo "$out" | grep '^CONFORMANCE ' || true)"
  if [[ -z "$line" ]]; then
    line="CONFORMANCE emulator=$name passed=0 failed=1 known_differences=0"
    echo "conformance: the runner gave no verdict for $name (exit $code)" >&2
  fi
  ((code == 0)) || rc=1
  summaries+=("$line")
  timings+=("$name $((SECONDS - t0))s")
}

# unreachable <name>: records an emulator that did not start as one failure.
unreachable() {
  echo "conformance: $1 did not start" >&2
  summaries+=("CONFORMANCE emulator=$1 passed=0 failed=1 known_differences=0")
  timings+=("$1 failed")
  rc=1
}

# against <name> <services> <control>: `<control> up` starts the emulator ("started") or finds one
# answering, the suite runs on it, and `<control> down` stops it if this started it.
against() {
  local name="$1" services="$2" control="$3" t0=$SECONDS state
  if state="$("$control" up)"; then
    [[ "$state" != started ]] || STOP="$control down"
    run "$name" "$services" "http://127.0.0.1:$(port_of "$name")"
    eval "${STOP:-true}"; STOP=""
  else unreachable "$name"; fi
  timings[-1]="$name $((SECONDS - t0))s (with start and stop)"
}

port_of() {
  case "$1" in
  moto) echo "$MOTO_PORT" ;;
  localstack) echo "$LS_PORT" ;;
  elasticmq) echo "$EMQ_PORT" ;;
  dynamodb-local) echo "$DDB_PORT" ;;
  esac
}

moto() { JOBKIT_EMULATOR_PORT=$MOTO_PORT AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT "$ROOT/localstack/emulator.sh" "$1"; }
localstack() { JOBKIT_LOCALSTACK_PORT=$LS_PORT "$ROOT/localstack/localstack.sh" "$1"; }
# javaemu.sh up prints the endpoint, and starts what does not answer; it is stopped after, as before.
elasticmq() { JOBKIT_ELASTICMQ_PORT=$EMQ_PORT "$ROOT/localstack/javaemu.sh" "$1" elasticmq >/dev/null && { [[ $1 != up ]] || echo started; }; }
dynamodb_local() { JOBKIT_DYNAMODB_LOCAL_PORT=$DDB_PORT "$ROOT/localstack/javaemu.sh" "$1" dynamodb >/dev/null && { [[ $1 != up ]] || echo started; }; }

against moto sqs,dynamodb moto
against localstack sqs,dynamodb localstack
against elasticmq sqs elasticmq
against dynamodb-local dynamodb dynamodb_local

echo "conformance: wall time $((SECONDS - start_all))s (${timings[*]/%/;})"
printf '%s\n' "${summaries[@]}"
exit $rc
