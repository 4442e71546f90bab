// Package devrun runs any CDK app's cloud assembly offline until told to stop: it deploys cdk.out
// onto the emulator, runs every function's real binary behind its event source mappings and fires
// the schedules (package devstack), says what the stacks output as shell exports a producer can
// source, and counts what became of the jobs on every job queue it deployed, from the stack's own
// records (Counter, by job id with package tally: a redriven job stays one job, dead while it is
// in a dead-letter queue, and a lost job is named with its last known state). It is what
// `jobkit dev` runs for a service's own CDK app; it knows nothing of jobkit's sample app.
package devrun
