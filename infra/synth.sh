#!/usr/bin/env bash
# Synthesizes the sample CDK app into <repo>/cdk.out with the CDK CLI, installing the pinned CLI
# under <repo>/.tools first if it is missing. Function binaries are built by the synth itself.
# Extra arguments go to `cdk synth` (e.g. a stack name, or --quiet).
set -euo pipefail

CDK_CLI_VERSION=2.1148.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/.tools"
cdk="$tools/node_modules/.bin/cdk"

export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="${JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION:-20}"
export CDK_DISABLE_CLI_TELEMETRY=true
export CDK_DISABLE_VERSION_CHECK=1
# Keep the CLI's and jsii's caches out of the home directory.
export CDK_HOME="${CDK_HOME:-$tools/cdk-home}"
export JSII_RUNTIME_PACKAGE_CACHE_ROOT="${JSII_RUNTIME_PACKAGE_CACHE_ROOT:-$tools/jsii-cache}"

installed=$("$cdk" --version 2>/dev/null | awk '{print $1}' || true)
if [ "$installed" != "$CDK_CLI_VERSION" ]; then
  echo "synth: installing aws-cdk@$CDK_CLI_VERSION into $tools" >&2
  mkdir -p "$tools"
  npm install --prefix "$tools" --no-audit --no-fund --no-save --loglevel=error \
    --cache "$tools/npm-cache" "aws-cdk@$CDK_CLI_VERSION" >&2
fi

cd "$root"
exec "$cdk" synth --no-notices --no-version-reporting --output cdk.out "$@"
