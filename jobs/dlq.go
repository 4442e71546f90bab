package jobs

// Message attributes the runtime sets on a message it dead-letters, read back by the Inspector
// and the CLI. SQS allows at most 10 message attributes; these are all of them. When the body
// leaves too little of SQS's 1 MiB for all of them, they are left off in this order: the error,
// source queue, function, first receive, failure time, source message id, job id, kind,
// attempts and, last, the reason.
const (
	AttrReason          = "jobkit.reason"            // one of the Reason* values
	AttrError           = "jobkit.error"             // the error text (truncated to 4 KiB)
	AttrKind            = "jobkit.kind"              // the job kind, if the envelope decoded
	AttrJobID           = "jobkit.job_id"            // the envelope id, if it decoded
	AttrAttempts        = "jobkit.attempts"          // attempts made (JobRow.Attempt)
	AttrFunction        = "jobkit.function"          // the Lambda function that gave up
	AttrFirstFailureAt  = "jobkit.first_received_at" // RFC 3339, first receive of the message
	AttrFailedAt        = "jobkit.failed_at"         // RFC 3339, when it was dead-lettered
	AttrSourceMessageID = "jobkit.source_message_id" // the message id on the source queue
	AttrSourceQueue     = "jobkit.source_queue"      // the source queue URL (where redrive sends it back)
)

// Reasons a message is dead-lettered, in AttrReason.
const (
	ReasonMalformed       = "malformed"       // the body is not a JSON envelope
	ReasonVersion         = "unknown_version" // the envelope version is not one this runtime reads
	ReasonUnknownKind     = "unknown_kind"    // no worker is registered for the kind
	ReasonBadArgs         = "bad_args"        // the args do not decode into the worker's type
	ReasonCancelled       = "cancelled"       // the worker returned Cancel(err)
	ReasonAttemptsUsed    = "attempts_exhausted"
	ReasonPayloadMismatch = "payload_mismatch" // idempotency: the same key with a different payload
	// ReasonPayloadUnavailable: the body is a claim-check pointer (see Payloads) to an S3 object
	// the runtime cannot read — missing (expired, or deleted after an earlier delivery
	// succeeded), in another bucket than Config.PayloadBucket, refused, or no Config.S3.
	// Transient S3 errors are retried like any job error instead.
	ReasonPayloadUnavailable = "payload_unavailable"
	// ReasonNoOutcome: the job's attempts were used by deliveries that ended without an outcome
	// the runtime could report — the process crashed or was killed (a crash loop, an
	// out-of-memory kill) or the whole invocation timed out. The runtime dead-letters it on its
	// next delivery, before running it again (needs Config.Deliveries, which tells such
	// deliveries from those that did not run the job).
	ReasonNoOutcome = "no_outcome"
	// ReasonReceiveLimit: the message was received Config.MaxReceiveCount times, the queue's
	// redrive maxReceiveCount, and was about to be returned to the queue; SQS's redrive policy
	// would have moved it on its next receive, without its failure. The runtime dead-letters it
	// itself instead, with the count of deliveries that did not run it in the error.
	ReasonReceiveLimit = "receive_limit"
	// ReasonRedrivePolicy: the queue's redrive policy moved the message, received maxReceiveCount
	// times with no outcome reported — the function never reached the runtime (it failed at
	// init, its code or role is broken) or its invocations were throttled on the last receive —
	// into the queue's holding queue, and the redrive recorder (RedriveRecorder) recorded the job
	// as dead and sent it on to the dead-letter queue.
	ReasonRedrivePolicy = "redrive_policy"
)
