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
//   - one transcode job running for three times its queue's visibility timeout, in the transcode
//     worker's container (a local process, package taskrun);
//   - once it is done, short transcodes (PlanConfig.Transcodes) in the same container, during a
//     share of whose first starts (Config.ContainerKillRate) the container's process is killed (SIGKILL): it is
//     restarted and the job's message comes back after the queue's visibility timeout;
//   - a few ledger groups enqueued each in one burst, whose first posting's first attempt
//     overruns its deadline (instrument.Faults.OverrunMS): the group's postings behind it in the
//     batch meet the soft deadline and must be listed without running or being charged an
//     attempt;
//   - a share of email envelopes sent twice with the same id, as SQS Standard may deliver them.
//
// Meanwhile the fault proxy answers a share of all AWS calls with throttling errors and holds
// another share back before forwarding it (slow answers), and a share of the function
// invocations have their process killed (SIGKILL) while it works on the batch.
//
// The functions run instrumented (functions/instrument: the sample workers wrapped with
// a fault-injection and an effect-counting middleware) with instrument.EnvEffectsTable set: each
// job's effect is counted in an effects table in the same DynamoDB transaction as its idempotency
// record, and the ledger keeps
// the order it applied each account's postings, so the checks read real state, not expectations.
// The runtime reports each real run of a job and each outcome as an event line on the functions'
// output (event.Write, asked for by the offline stack), so a dead-lettered job can be told
// from one that never ran; its not-run events at a deadline, matched by message id to the batches
// that listed them, count the batches that reached their deadline.
//
// Once the jobs have settled, the run redrives its dead-letter queues with the Inspector (as an
// operator would, under the same faults) and waits for the redriven jobs: each must run again or
// be back in a dead-letter queue. Every job is then sorted by where it ended with package tally —
// the same counting as `make dev` and `jobkit dev` — from its effect, the dead-letter queues
// (before and after the redrive: a job in one is dead, expected or not, never lost), the
// messages left on its queue and what the run last knew of it (the mappings' reports, the
// runtime's outcomes, the real runs). The lost, the stranded (still on their queue: their state
// never ended) and the redriven jobs that went missing are named, with their kind, queue and
// last known state. The result is one line:
//
//	CHAOS jobs=<n> lost=<n> stranded=<n> redriven=<n> redrive_lost=<n> duplicate_effects=<n> dead=<n> expected_dead=<n> order_violations=<n> long_job_runs=<n> never_ran_dead=<n> duplicate_deliveries=<n> deadline_batches=<n> seconds=<n> batches=<n> callbacks=<n> duplicate_callbacks=<n> missing_callbacks=<n>
//
// StartStack, the harness that deploys the stack behind the proxy, serves the cost benchmark too.
package chaos
