# jobkit — the two commands are `make dev` (run the local stack) and `make test`.
# Every target installs what it needs, idempotently: a fresh clone needs only Go, Node, Python 3
# and apt-get (for the Chromium the console's browser tests drive).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT          := $(CURDIR)
VENV          := $(ROOT)/.venv
TOOLS         := $(ROOT)/.tools
RUN_DIR       := $(ROOT)/.run
LOCALSTACK    := $(ROOT)/localstack/localstack.sh
# EMULATOR picks what serves the AWS APIs for dev, test, bench and chaos: moto (default) or
# localstack (make dev EMULATOR=localstack).
EMULATOR      ?= moto
EMULATOR_SH   := $(if $(filter localstack,$(EMULATOR)),$(LOCALSTACK),$(ROOT)/localstack/emulator.sh)
# The emulator's port: the one in AWS_ENDPOINT_URL when it is a loopback URL (the one way to choose
# it for every command: make, jobkit dev, the CLI), else JOBKIT_LOCALSTACK_PORT for LocalStack or
# JOBKIT_EMULATOR_PORT for moto (the variables the scripts honour), 4566 by default, so that
# checkouts side by side do not collide.
ENDPOINT_PORT := $(shell [[ "$${AWS_ENDPOINT_URL:-}" =~ ^http://(127\.0\.0\.1|localhost):([0-9]+)/?$$ ]] && echo "$${BASH_REMATCH[2]}")
EMULATOR_PORT := $(or $(ENDPOINT_PORT),$(if $(filter localstack,$(EMULATOR)),$(JOBKIT_LOCALSTACK_PORT),$(JOBKIT_EMULATOR_PORT)),4566)
EMULATOR_URL  := http://127.0.0.1:$(EMULATOR_PORT)
ENDPOINT      := $(or $(AWS_ENDPOINT_URL),$(EMULATOR_URL))
STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.6.1
GO_TEST_FLAGS ?= -count=1 -timeout 20m
ONCE          ?=

# The emulator speaks plain HTTP; test credentials are static and never leave the machine.
export AWS_REGION            ?= us-east-1
export AWS_ACCESS_KEY_ID     ?= test
export AWS_SECRET_ACCESS_KEY ?= test
export CDK_DISABLE_CLI_TELEMETRY := true
export CDK_DISABLE_VERSION_CHECK := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# The CDK CLI's home (its cache and state) is inside the checkout, one per emulator: it caches the
# account an access key belongs to, and moto and LocalStack answer the same test key with
# different accounts. Nothing of ~/.cdk is read or written, so make test and make test-localstack
# pass in either order.
export CDK_HOME := $(RUN_DIR)/cdk-home-$(EMULATOR)

.PHONY: producers chaos dev cli synth help setup lock lock-localstack emulator-up emulator-down test test-unit lint fuzz bench bench-doc localstack-up localstack-down test-localstack browser

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

setup: $(VENV)/.installed ## install the Python emulator venv (.venv) from the hashed lock

# Every package of the venv is pinned with its hashes in localstack/requirements.lock (made by
# `make lock` from localstack/requirements.txt): pip refuses anything unpinned or altered.
$(VENV)/.installed: localstack/requirements.lock localstack/requirements.txt
	@sed -e 's/#.*//' -e 's/\[[^]]*\]//' -e 's/[[:space:]]//g' localstack/requirements.txt | grep . | while read -r pin; do \
	  grep -qi "^$${pin//./\\.} " localstack/requirements.lock || { echo "setup: $$pin is not in localstack/requirements.lock: run 'make lock'" >&2; exit 1; }; \
	done
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r localstack/requirements.lock
	@touch $@

# Regenerates the locks after an edit of localstack/requirements.txt or infra/tools/package.json:
# pip-tools (pinned) in a throwaway venv, and npm's own lockfile.
PIP_TOOLS := pip-tools==7.6.2
lock: ## regenerate localstack/requirements.lock, infra/tools/package-lock.json and the Maven jars' SHA-256 locks
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	python3 -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/pip" install --quiet --disable-pip-version-check '$(PIP_TOOLS)'; \
	cd localstack && "$$tmp/venv/bin/pip-compile" --quiet --generate-hashes --strip-extras \
	  --no-emit-index-url --no-emit-trusted-host --no-emit-find-links \
	  --output-file requirements.lock requirements.txt
	cd infra/tools && npm install --package-lock-only --no-audit --no-fund --loglevel=error
	cd offline/lambdaruntime/nodesdk && npm install --package-lock-only --omit-lockfile-registry-resolved --no-audit --no-fund --loglevel=error
	localstack/javaemu.sh lock

lock-localstack: ## regenerate localstack/requirements-localstack.lock (LocalStack's host-mode venv; Python >= 3.13)
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	py=$$(command -v python3.13) || { echo "lock-localstack: needs python3.13" >&2; exit 1; }; \
	"$$py" -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/pip" install --quiet --disable-pip-version-check '$(PIP_TOOLS)'; \
	cd localstack && "$$tmp/venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
	  --no-emit-index-url --no-emit-trusted-host --no-emit-find-links \
	  --output-file requirements-localstack.lock requirements-localstack.txt

emulator-up: setup ## start moto on 127.0.0.1:4566 (reuses a live AWS_ENDPOINT_URL)
	@$(EMULATOR_SH) up

emulator-down: ## stop the emulator emulator-up started
	@$(EMULATOR_SH) down

# The console's browser tests drive a headless Chromium: the Debian package, installed when missing.
browser: ## install headless Chromium (Debian package chromium) for the console's browser tests, if missing
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
	echo "browser: installing chromium (apt-get)"; \
	$$sudo apt-get install -y -qq chromium >/dev/null 2>&1 || { $$sudo apt-get update -qq && $$sudo apt-get install -y -qq chromium; }; \
	command -v chromium >/dev/null || { echo "browser: chromium did not install" >&2; exit 1; }

# The TypeScript producer (docs/producers/typescript): its pinned packages (npm ci) and its build
# (tsc), which make test runs against the emulator.
PRODUCERS_TS := $(ROOT)/docs/producers/typescript
producers: $(PRODUCERS_TS)/dist/.built ## install and build the TypeScript producer (docs/producers) that make test runs

$(PRODUCERS_TS)/node_modules/.installed: $(PRODUCERS_TS)/package-lock.json
	cd $(PRODUCERS_TS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The AWS SDK for JavaScript that Lambda's Node.js runtimes provide, for the Node.js functions the
# offline stack runs (CDK's custom-resource providers require it): devstack puts it on NODE_PATH
# (JOBKIT_NODE_MODULES).
NODE_SDK := $(ROOT)/.tools/node-sdk
$(NODE_SDK)/.installed: offline/lambdaruntime/nodesdk/package.json offline/lambdaruntime/nodesdk/package-lock.json
	mkdir -p $(NODE_SDK) && cp offline/lambdaruntime/nodesdk/package.json offline/lambdaruntime/nodesdk/package-lock.json $(NODE_SDK)/
	cd $(NODE_SDK) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(PRODUCERS_TS)/dist/.built: $(PRODUCERS_TS)/node_modules/.installed $(PRODUCERS_TS)/tsconfig.json $(wildcard $(PRODUCERS_TS)/src/*.ts)
	cd $(PRODUCERS_TS) && node_modules/.bin/tsc -p .
	@touch $@

test: browser producers $(NODE_SDK)/.installed ## unit, emulator integration, browser and infra tests; synthesizes cdk.out, installs what they need, starts and stops the emulator
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory setup; \
	infra/synth.sh --quiet; \
	state=$$($(EMULATOR_SH) up) || exit 1; \
	if [ "$$state" = started ]; then trap '$(EMULATOR_SH) down' EXIT; trap 'exit 130' INT TERM; fi; \
	echo "emulator: $(EMULATOR) $$state at $(ENDPOINT)"; \
	: "--- begin DynamoDB Local (the idempotency store's suite also runs on it)"; \
	ddb_started=0; curl -s -o /dev/null --max-time 2 http://127.0.0.1:$(DYNAMODB_LOCAL_PORT) || ddb_started=1; \
	JOBKIT_DYNAMODB_LOCAL_URL=$$($(JAVAEMU) up dynamodb) || exit 1; export JOBKIT_DYNAMODB_LOCAL_URL; \
	trap '[ "$$state" != started ] || $(EMULATOR_SH) down; [ $$ddb_started = 0 ] || $(JAVAEMU) down dynamodb' EXIT; trap 'exit 130' INT TERM; \
	echo "DynamoDB Local at $$JOBKIT_DYNAMODB_LOCAL_URL"; \
	: "--- end DynamoDB Local"; \
	rc=0; \
	: "On LocalStack the end-to-end test (internal/devapp) runs alone, after the rest: with the other"; \
	: "packages' tests beside it on two cores, LocalStack's DynamoDB answered so late that the workload"; \
	: "missed its drain bound (docs/emulators.md)."; \
	pkgs=./...; if [ "$(EMULATOR)" = localstack ]; then pkgs=$$(go list ./... | grep -v '/internal/devapp$$'); fi; \
	export JOBKIT_NODE_MODULES=$(NODE_SDK)/node_modules; \
	AWS_ENDPOINT_URL=$(ENDPOINT) JOBKIT_EMULATOR=$(EMULATOR) JOBKIT_REQUIRE_EMULATOR=1 go test $(GO_TEST_FLAGS) $$pkgs || rc=$$?; \
	if [ "$(EMULATOR)" = localstack ]; then \
	  : "... on a LocalStack of its own: one that served every other test answers its DynamoDB calls"; \
	  : "slowly enough to push the workload past its drain bound (docs/emulators.md)."; \
	  if [ "$$state" = started ]; then $(EMULATOR_SH) down >/dev/null; state=$$($(EMULATOR_SH) up) || exit 1; echo "emulator: $(EMULATOR) restarted for the end-to-end test"; fi; \
	  AWS_ENDPOINT_URL=$(ENDPOINT) JOBKIT_EMULATOR=$(EMULATOR) JOBKIT_REQUIRE_EMULATOR=1 go test $(GO_TEST_FLAGS) ./internal/devapp || rc=$$?; \
	fi; \
	: "infra's tests synthesize templates and call no endpoint, but for those that deploy an app on the"; \
	: "offline stack (named ...OnTheOfflineStack), which run on both emulators."; \
	if [ -f infra/go.mod ] && ls infra/*.go >/dev/null 2>&1; then \
	  infra_run=; if [ "$(EMULATOR)" != moto ]; then infra_run='OnTheOfflineStack'; fi; \
	  (cd infra && AWS_ENDPOINT_URL=$(ENDPOINT) JOBKIT_EMULATOR=$(EMULATOR) JOBKIT_REQUIRE_EMULATOR=1 go test $(GO_TEST_FLAGS) $${infra_run:+-run $$infra_run} ./...) || rc=$$?; \
	fi; \
	echo "make test ($(EMULATOR)): wall time $$(( $$(date +%s) - start ))s (exit $$rc)"; \
	exit $$rc

test-unit: ## tests that need no emulator (integration tests skip)
	go test ./...

synth: ## synthesize the CDK app into cdk.out (installs the CDK CLI under .tools; builds the arm64 functions)
	@infra/synth.sh

cli: ## build the jobkit CLI into bin/jobkit
	go build -o bin/jobkit ./cmd/jobkit

lint: ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go run $(STATICCHECK) ./...
	@if ls infra/*.go >/dev/null 2>&1; then cd infra && go vet ./... && go run $(STATICCHECK) ./...; fi

dev: setup ## run the sample stack offline with a demo workload; ONCE=1 ends when it drains (CI)
	@state=$$($(EMULATOR_SH) up) || exit 1; \
	if [ "$$state" = started ]; then trap '$(EMULATOR_SH) down' EXIT; trap 'exit 130' INT TERM; fi; \
	echo "emulator: $(EMULATOR) $$state at $(ENDPOINT)"; \
	AWS_ENDPOINT_URL=$(ENDPOINT) go run ./internal/cmd/dev $(if $(ONCE),--once)

bench: setup ## print BENCH key=value figures (starts and stops the emulator, and ElasticMQ for the producer's second run)
	@infra/synth.sh --quiet
	@state=$$($(EMULATOR_SH) up) || exit 1; \
	mq_started=0; curl -s -o /dev/null --max-time 2 http://127.0.0.1:$(ELASTICMQ_PORT) || mq_started=1; \
	JOBKIT_ELASTICMQ_URL=$$($(JAVAEMU) up elasticmq) || exit 1; export JOBKIT_ELASTICMQ_URL; \
	trap '[ "$$state" != started ] || $(EMULATOR_SH) down; [ $$mq_started = 0 ] || $(JAVAEMU) down elasticmq' EXIT; trap 'exit 130' INT TERM; \
	mkdir -p .run; \
	AWS_ENDPOINT_URL=$(ENDPOINT) go run ./internal/cmd/bench $(if $(ONLY),-only $(ONLY)) | tee .run/bench.out

bench-doc: ## regenerate docs/benchmarks.md's figures from the last make bench run (.run/bench.out); fails on stale prose
	go run ./internal/cmd/bench -doc docs/benchmarks.md -from .run/bench.out

# CHAOS_JOBS sizes make chaos (default 10,000; e.g. CHAOS_JOBS=300 for a run of a minute or two
# of the same shape); CHAOS_FLAGS passes any other flag of internal/cmd/chaos.
CHAOS_JOBS  ?=
CHAOS_FLAGS ?=
chaos: setup ## 10,000 jobs on the offline stack under faults, then a redrive of the DLQs; fails unless nothing is lost, stranded or missing after the redrive (EMULATOR=localstack, CHAOS_JOBS=300)
	@infra/synth.sh --quiet
	@state=$$($(EMULATOR_SH) up) || exit 1; \
	if [ "$$state" = started ]; then trap '$(EMULATOR_SH) down' EXIT; trap 'exit 130' INT TERM; fi; \
	echo "emulator: $(EMULATOR) $$state at $(ENDPOINT)"; \
	AWS_ENDPOINT_URL=$(ENDPOINT) JOBKIT_EMULATOR=$(EMULATOR) go run ./internal/cmd/chaos $(if $(CHAOS_JOBS),-jobs $(CHAOS_JOBS)) $(CHAOS_FLAGS)

fuzz: ## fuzz the SQS event and envelope decoders and the schedule expression parser, 60 s each
	go test ./jobs/internal/wire -run '^$$' -fuzz FuzzDecodeSQSEvent -fuzztime 60s
	go test ./jobs -run '^$$' -fuzz FuzzDecodeEnvelope -fuzztime 60s
	go test ./jobs -run '^$$' -fuzz FuzzDecodeArgs -fuzztime 30s
	go test ./scheduler -run '^$$' -fuzz FuzzParseExpression -fuzztime 60s

localstack-up: ## start LocalStack on 127.0.0.1:4566: in Docker when an engine answers, else host mode (installs it)
	@$(LOCALSTACK) up

localstack-down: ## stop the LocalStack localstack-up started
	@$(LOCALSTACK) down

test-localstack: ## make test against LocalStack instead of moto (starts and stops it); of infra's tests, which synthesize templates, only those that deploy on the offline stack
	@$(MAKE) --no-print-directory test EMULATOR=localstack

# --- conformance: the SQS/DynamoDB behaviours jobkit relies on, per emulator ---
# DynamoDB Local for `make test` (port JOBKIT_DYNAMODB_LOCAL_PORT, default 4570; fetched from Maven
# into .tools on first use, needs Java and Maven).
DYNAMODB_LOCAL_PORT := $(or $(JOBKIT_DYNAMODB_LOCAL_PORT),4570)
ELASTICMQ_PORT      := $(or $(JOBKIT_ELASTICMQ_PORT),4571)
JAVAEMU             := JOBKIT_DYNAMODB_LOCAL_PORT=$(DYNAMODB_LOCAL_PORT) JOBKIT_ELASTICMQ_PORT=$(ELASTICMQ_PORT) $(ROOT)/localstack/javaemu.sh

.PHONY: conformance
conformance: setup ## the conformance suite on moto, LocalStack, ElasticMQ and DynamoDB Local: a CONFORMANCE line each
	@$(ROOT)/localstack/conformance.sh
