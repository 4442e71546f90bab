// Package jobs is jobkit's core: typed job arguments, the worker registry, the producer client
// that enqueues jobs onto SQS, and the Lambda runtime that runs an SQS batch of jobs.
//
// A job is a plain struct with a Kind; a worker is a [Worker] for that struct. Outcomes are
// errors: nil succeeds, [Cancel] dead-letters at once with the error attached, [Snooze] retries
// after a given delay, and any other error retries with exponential backoff and full jitter until
// the job's attempts are used up, when the runtime dead-letters it itself.
//
// Every message body is an [Envelope] (JSON, versioned). Anything that cannot be decoded or has no
// worker is dead-lettered at once with a reason — never retried, never dropped.
package jobs
