#!/usr/bin/env bash
# Synthesizes the sample CDK app into <repo>/cdk.out with the CDK CLI, installing the pinned CLI
# under <repo>/.tools first if it is missing. Function binaries are built by the synth itself.
# Extra arguments go to `cdk synth` (e.g. a stack name, or --quiet).
#
# The CLI (aws-cdk) and cdklocal (aws-cdk-local, for LocalStack) are pinned with their integrity
# hashes in infra/tools/package.json and package-lock.json; `npm ci` installs exactly that lock
# into .tools (a dot folder: `go ... ./...` skips it, and the packages carry Go template files).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/.tools"
lock="$root/infra/tools/package-lock.json"
cdk="$tools/node_modules/.bin/cdk"

export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="${JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION:-20}"
export CDK_DISABLE_CLI_TELEMETRY=true
export CDK_DISABLE_VERSION_CHECK=1
# Keep the CLI's and jsii's caches out of the home directory.
export CDK_HOME="${CDK_HOME:-$tools/cdk-home}"
export JSII_RUNTIME_PACKAGE_CACHE_ROOT="${JSII_RUNTIME_PACKAGE_CACHE_ROOT:-$tools/jsii-cache}"

# Install when the lock changed since the last install (npm ci keeps a copy of the lock it
# installed in node_modules/.package-lock.json; the copy beside it is the one we compare).
if [ ! -x "$cdk" ] || ! cmp -s "$lock" "$tools/package-lock.json"; then
  echo "synth: installing the CDK CLI from infra/tools/package-lock.json into $tools" >&2
  mkdir -p "$tools"
  cp "$root/infra/tools/package.json" "$lock" "$tools/"
  npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error --cache "$tools/npm-cache" >&2
fi

cd "$root"
exec "$cdk" synth --no-notices --no-version-reporting --output cdk.out "$@"
