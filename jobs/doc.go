// Package jobs is jobkit's core: typed job arguments, the worker registry, the producer client
// that enqueues jobs onto SQS, and the Lambda runtime that runs an SQS batch of jobs.
//
// A job is a plain struct with a Kind; a worker is a [Worker] for that struct. Outcomes are
// errors: nil succeeds, [Cancel] dead-letters at once with the error attached, [Snooze] retries
// after a given delay, and any other error retries with exponential backoff and full jitter until
// the job's attempts are used up, when the runtime dead-letters it itself. An error whose chain
// holds a DeadLetterReason() string method is permanent too, dead-lettered with that reason.
//
// Every message body is an [Envelope] (JSON, versioned). Anything that cannot be decoded is
// dead-lettered at once with a reason — never retried, never dropped. A kind with no worker is
// retried with backoff (its consumer may not be deployed yet) and dead-lettered as
// [ReasonUnknownKind] on its last attempt.
//
// # Attempts
//
// A job's attempt ([JobRow.Attempt]) is its message's ApproximateReceiveCount less the deliveries
// that did not run it — FIFO records skipped behind a failed record of their group, records not
// started before the deadline — when [Config.Deliveries] is set: those are counted in a
// [DeliveryLedger] (idempotency.DynamoDBStore keeps them in the idempotency table, keyed by
// message id). A job then gets MaxAttempts real runs, and its backoff is sized by them. Without a
// ledger a message attribute cannot record them (a received message cannot be changed), so the
// attempt is the receive count: a job may get fewer than MaxAttempts runs, but it is never
// dead-lettered for its attempts without having run. Snoozed deliveries are recorded too, so a
// snooze is not an attempt. A [DeliveryLedger] (idempotency.DynamoDBStore is one) also marks each run
// begun on a redelivery, which tells a crash loop from receives that never reached the runtime:
// the runtime dead-letters a job whose runs kept dying ([ReasonNoOutcome]) without running it
// again. On the last receive the queue's redrive policy allows ([Config.MaxReceiveCount]) the
// runtime dead-letters the job itself ([ReasonReceiveLimit]) rather than run it: SQS never moves a
// job unnamed. On a FIFO queue, size the redrive with
// [github.com/jobkit-go/jobkit/jobs/contract.MinFIFOMaxReceiveCount].
//
// What the runtime cannot see — a function that never reaches it (it fails at init, its role or
// code is broken) or an invocation throttled on the last receive — the queue's redrive policy
// moves, into the queue's holding queue under the infra constructs. There a [RedriveRecorder]
// (the function cmd/jobkit-recorder, which the constructs deploy) records the job dead
// ([ReasonRedrivePolicy]) through the same [StateStore] and sends it on to the dead-letter queue
// with the attributes of dlq.go: every job the redrive policy moves still ends as a job.
//
// # Producing
//
// [NewClient] routes kinds to queues and sends with [Client.Enqueue] and [Client.EnqueueBatch]
// (10 entries and 1 MiB per call, failed entries retried; on FIFO one job of a group per call, so
// a group's order survives retries — see [ErrGroupFailed]). Bad input — an empty kind, a body over
// 1 MiB or the queue's own limit, a FIFO job without a group, an invalid group or deduplication
// id, a delay that cannot be honoured — returns an [*InvalidJobError] before any AWS call. Delays
// beyond 15 minutes go to a [LongDelayer]. With [ClientOptions.Payloads], a job whose envelope is
// over 1 MiB (or a lower threshold) is stored in S3 and sent as a pointer in the format of AWS's
// SQS extended clients (the claim check, see [Payloads] and [ParsePayloadPointer]); without it,
// such a job is refused with [ErrBodyTooLarge].
//
// # Running
//
// [NewLambdaHandler] is the runtime, as a Lambda handler (the event's bytes in, the response's
// out; [LambdaHandler.HandleSQS] for aws-lambda-go's typed event) for an SQS event source mapping with
// ReportBatchItemFailures, configured by [ConfigFromEnv] from the variables the infra Worker
// construct sets (see env.go). It lists retryable records in batchItemFailures after setting
// their visibility to the backoff, sends permanent failures to the dead-letter queue itself with
// the attributes in dlq.go, runs FIFO groups in order with skip-group-on-error, keeps the batch
// invisible with a heartbeat, and writes a CloudWatch Embedded Metric Format line per job kind of
// a batch (namespace Jobkit, per queue and per queue and kind: package jobs/contract) and JSON log lines carrying each job's id, kind and attempt. A
// claim-check pointer is fetched from S3 ([Config.S3]) when its record runs and its object deleted
// once the job succeeded; its dead-letter copy keeps the pointer, and an object that cannot be
// read is dead-lettered as [ReasonPayloadUnavailable].
//
// Package jobstest helps test workers and handlers without AWS.
package jobs
