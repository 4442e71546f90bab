package jobs

// EnvPrefix begins the name of every environment variable of jobkit's own (the infra Worker
// construct sets them and refuses them in a caller's environment).
const EnvPrefix = "JOBKIT_"

// Environment variables the runtime reads (set by the infra Worker construct). See ConfigFromEnv.
const (
	EnvQueueURL          = "JOBKIT_QUEUE_URL"          // the queue the function consumes (required)
	EnvDLQURL            = "JOBKIT_DLQ_URL"            // its dead-letter queue (required)
	EnvMaxAttempts       = "JOBKIT_MAX_ATTEMPTS"       // attempts before dead-lettering; default 5
	EnvVisibilityTimeout = "JOBKIT_VISIBILITY_TIMEOUT" // the queue's visibility timeout, seconds; default 30
	EnvConcurrency       = "JOBKIT_CONCURRENCY"        // records run at once in a batch; default 10
	EnvBackoffBase       = "JOBKIT_BACKOFF_BASE"       // first retry delay, Go duration; default 1s
	EnvBackoffCap        = "JOBKIT_BACKOFF_CAP"        // longest retry delay, Go duration; default 15m
	EnvIdempotencyTable  = "JOBKIT_IDEMPOTENCY_TABLE"  // DynamoDB table of the idempotency store, if any
	EnvMaxReceiveCount   = "JOBKIT_MAX_RECEIVE_COUNT"  // the queue's redrive maxReceiveCount; default unknown
	EnvEvents            = "JOBKIT_EVENTS"             // "stdout": job events as JSON lines (WriteEvents)
	EnvMaxPayloadSize    = "JOBKIT_MAX_PAYLOAD_SIZE"   // the largest claim-checked payload read, bytes; default 64 MiB
	// EnvStateTable names the jobkit state table when the Worker construct grants job states
	// (WorkerProps.JobStates): wire jobs/state.New on it as Config.States and middleware.
	EnvStateTable = "JOBKIT_STATE_TABLE"
	// EnvIdempotencyExpiry is how long idempotency.Middleware's records hold their keys, a Go
	// duration; the Worker construct sets it to cover the queue's and its DLQ's retention, so a
	// job that succeeded and is redriven from the DLQ is still skipped. Default 1h.
	EnvIdempotencyExpiry = "JOBKIT_IDEMPOTENCY_EXPIRY"
)
