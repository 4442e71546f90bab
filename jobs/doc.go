// Package jobs is jobkit's core: typed job arguments, the worker registry, the producer client
// that enqueues jobs onto SQS, and the Lambda runtime that runs an SQS batch of jobs.
//
// A job is a plain struct with a Kind; a worker is a [Worker] for that struct. Outcomes are
// errors: nil succeeds, [Cancel] dead-letters at once with the error attached, [Snooze] retries
// after a given delay, and any other error retries with exponential backoff and full jitter until
// the job's attempts are used up, when the runtime dead-letters it itself. An error whose chain
// holds a DeadLetterReason() string method is permanent too, dead-lettered with that reason.
//
// Every message body is an [Envelope] (JSON, versioned). Anything that cannot be decoded or has no
// worker is dead-lettered at once with a reason — never retried, never dropped.
//
// # Producing
//
// [NewClient] routes kinds to queues and sends with [Client.Enqueue] and [Client.EnqueueBatch]
// (10 entries and 1 MiB per call, failed entries retried, FIFO order kept). Bad input — an empty
// kind, a body over 1 MiB, a FIFO job without a group, a delay that cannot be honoured — returns an
// [*InvalidJobError] before any AWS call. Delays beyond 15 minutes go to a [LongDelayer].
//
// # Running
//
// [NewSQSHandler] is the Lambda handler for an SQS event source mapping with
// ReportBatchItemFailures, configured by [ConfigFromEnv] from the variables the infra Worker
// construct sets (see env.go). It lists retryable records in batchItemFailures after setting
// their visibility to the backoff, sends permanent failures to the dead-letter queue itself with
// the attributes in dlq.go, runs FIFO groups in order with skip-group-on-error, keeps the batch
// invisible with a heartbeat, and writes one CloudWatch Embedded Metric Format line per batch
// (namespace [MetricNamespace]) and JSON log lines carrying each job's id, kind and attempt.
//
// Package jobstest helps test workers and handlers without AWS.
package jobs
