// Package chaos runs jobkit's sample stack offline under faults and checks, from the state the
// stack left behind, that no job was lost, none applied its effect twice, FIFO groups applied
// their jobs in order, exactly the poison jobs were dead-lettered and a long job ran once.
//
// Run deploys the synthesized cloud assembly (cdk.out) onto the emulator, starts the real
// function binaries and the event source mappings (package devstack) with every AWS call of the
// functions, the mappings and the producer going through a fault proxy (package faultproxy), and
// enqueues a plan of jobs:
//
//   - Standard email jobs and, on the FIFO ledger queue, groups of postings in order;
//   - a share of them failing their first attempts with a retryable error (fail_attempts), a
//     share of poison jobs (cancelled: dead-lettered at once);
//   - one transcode job running for three times its queue's visibility timeout.
//
// Meanwhile the fault proxy answers a share of all AWS calls with throttling errors, and a share
// of the function invocations have their process killed (SIGKILL) while it works on the batch.
//
// The functions run instrumented (internal/sampleapp/instrument: the sample workers wrapped with
// a fault-injection and an effect-counting middleware) with instrument.EnvEffectsTable set: each
// job's effect is counted in an effects table in the same DynamoDB transaction as its idempotency
// record, and the ledger keeps
// the order it applied each account's postings, so the checks read real state, not expectations.
// The result is one line:
//
//	CHAOS jobs=<n> lost=<n> duplicate_effects=<n> dead=<n> expected_dead=<n> order_violations=<n> long_job_runs=<n> seconds=<n>
//
// StartStack, the harness that deploys the stack behind the proxy, serves the cost benchmark too.
package chaos
