// Package demo drives jobkit's sample stack offline, end to end: it synthesizes the CDK app when
// needed, deploys the cloud assembly onto the emulator (package deploy), runs every function and
// event source mapping and the schedules (package devstack), enqueues a demo workload on the three
// sample functions — with jobs that fail a few attempts, exhaust their attempts or are poison —
// shows the progress, and counts what became of every job from the stack's own records: the
// idempotency table's COMPLETED records, the functions' output lines, the event source mappings'
// reports and the dead-letter queues with the attributes the runtime set. `jobkit dev` (and so
// `make dev`) is a thin layer over Run; the end-to-end test of `make test` uses the same pieces.
//
// A job is accounted for when it succeeded or is in its dead-letter queue; a job that is neither,
// nor still on its queue, is lost. The Tracker counts by job id with package tally (the same
// counting as `jobkit dev` on any app and `make chaos`), so a job redriven and dead-lettered
// again is dead, and each lost job is named with its last known state. The summary line is
//
//	DEV summary: succeeded=<n> retried=<n> dead=<n> lost=<n>
//
// and, with Config.StateDemo (fan-out batches with a callback, unique jobs; the email function
// keeps job states in the stack's state table),
//
//	DEV batches: opened=<n> callbacks=<n> duplicate_callbacks=<n>
//	DEV unique: sent=<n> deduplicated=<n>
//
// and, with Config.OutboxDemo (accounts opened with their welcome email in the transactional
// outbox, which the stack's outbox forwarder sends from the state table's stream),
//
//	DEV outbox: written=<n> forwarded=<n> left=<n>
package devapp
