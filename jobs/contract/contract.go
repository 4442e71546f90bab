// Package contract holds the names jobkit's parts agree on across a deployment: the environment
// variables the constructs set and the runtime reads (Env*), the message attributes of a
// dead-lettered job (Attr*) and its reasons (Reason*), the metrics the runtime writes (Metric*,
// Dimension*), the stack outputs the tools read (Output*) and the template metadata the offline
// stack reads. Changing one changes the contract between a deployed stack and the code it runs.
package contract

import "strings"

// Environment variables ConfigFromEnv reads besides those in env.go.
const (
	EnvSafetyMargin = "JOBKIT_SAFETY_MARGIN" // time kept before the Lambda deadline, Go duration; default 2s
	EnvJobTimeout   = "JOBKIT_JOB_TIMEOUT"   // a job's own time limit, Go duration; default none
	EnvFunctionName = "AWS_LAMBDA_FUNCTION_NAME"
	EnvLogLevel     = "AWS_LAMBDA_LOG_LEVEL" // DEBUG, INFO, WARN or ERROR (Lambda's JSON log level); default INFO
)

// Environment variables of the container mode (set by the infra ContainerWorker construct),
// read by ConsumerOptionsFromEnv and Start besides those of ConfigFromEnv.
const (
	EnvDrainTimeout = "JOBKIT_DRAIN_TIMEOUT" // time from SIGTERM until the consumer has stopped; Go duration or seconds; default 25s
	EnvPollers      = "JOBKIT_POLLERS"       // receive calls in flight at once; default one per 10 of JOBKIT_CONCURRENCY
	EnvWorkerName   = "JOBKIT_WORKER_NAME"   // written on dead-lettered messages (AttrFunction) when not on Lambda
)

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

// EnvPrefix begins the name of every environment variable of jobkit's own (the infra Worker
// construct sets them and refuses them in a caller's environment).
const EnvPrefix = "JOBKIT_"

// EnvStack names the stack whose outputs name the queues, for the jobkit CLI (its --stack
// default) and producers; `jobkit dev` exports it for the stack it deployed.
const EnvStack = "JOBKIT_STACK"

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
	// EnvMetricsEndpoint sends the EMF lines to a CloudWatch agent instead of stdout:
	// tcp://host:port or udp://host:port (the agent's EMF listener, default port 25888). The
	// ContainerWorker construct sets it to its agent sidecar: CloudWatch extracts EMF from a
	// Lambda function's output, not from a container's awslogs stream.
	EnvMetricsEndpoint = "JOBKIT_METRICS_ENDPOINT"
	// EnvMetricsLogGroup is the log group the agent writes the EMF lines to (their
	// _aws.LogGroupName); default the agent's own default.
	EnvMetricsLogGroup = "JOBKIT_METRICS_LOG_GROUP"
	// EnvStateTable names the jobkit state table when the Worker construct grants job states
	// (WorkerProps.JobStates): wire jobs/state.New on it as Config.States and middleware.
	EnvStateTable = "JOBKIT_STATE_TABLE"
	// EnvListJobs, "1" beside EnvStateTable, keeps the worker's jobs listed by queue and state
	// in the state table's index (WorkerProps.ListJobs): jobs/state Options.ListJobs and
	// idempotency DynamoDBOptions.ListJobs.
	EnvListJobs = "JOBKIT_LIST_JOBS"
	// EnvIdempotencyExpiry is how long idempotency.Middleware's records hold their keys, a Go
	// duration; the Worker construct sets it to cover the queue's and its DLQ's retention, so a
	// job that succeeded and is redriven from the DLQ is still skipped. Default 1h.
	EnvIdempotencyExpiry = "JOBKIT_IDEMPOTENCY_EXPIRY"
)

// Metrics the runtime writes as CloudWatch Embedded Metric Format (EMF) log lines, one line per
// job kind of a batch (and per 100 of its records), in namespace MetricNamespace with the
// dimension sets [[DimensionQueue], [DimensionQueue, DimensionKind]]: every figure is published
// per queue and per queue and kind. The line's "trace_ids" property lists the trace ids of its
// jobs. The infra Dashboard and alarms use these names.
const (
	MetricNamespace = "Jobkit"
	DimensionQueue  = "Queue" // the consumed queue's name
	// DimensionKind is the job's kind when the function runs it, else KindUnknown (a malformed
	// message, a kind no worker runs): its values are the kinds registered in the code, so made-up
	// kinds in messages cannot add metrics.
	DimensionKind = "Kind"
	KindUnknown   = "unknown"

	MetricSucceeded = "Succeeded" // Count: jobs that succeeded
	MetricRetried   = "Retried"   // Count: records listed for retry (failed, skipped in a FIFO group, abandoned, dead-letter send failed)
	MetricSnoozed   = "Snoozed"   // Count: jobs that returned Snooze
	MetricDead      = "Dead"      // Count: jobs dead-lettered by the runtime
	MetricDuration  = "Duration"  // Milliseconds: time in each job that ran
	MetricAttempt   = "Attempt"   // Count: the attempt number of each job that ran
)

const (
	// AttrPayloadSize is the message attribute the extended clients set on a message whose body is
	// a pointer: the stored payload's size in bytes (DataType Number).
	AttrPayloadSize = "ExtendedPayloadSize"
	// AttrLegacyPayloadSize is the attribute older extended clients set instead.
	AttrLegacyPayloadSize = "SQSLargePayloadSize"
)

// EnvPayloadBucket names the bucket of claim-checked job payloads (set by the infra Worker
// construct when its queue has one, and by producers' wiring): ConfigFromEnv reads it into
// Config.PayloadBucket.
const EnvPayloadBucket = "JOBKIT_PAYLOAD_BUCKET"

// AttrPrefix begins the name of every message attribute jobkit writes on a dead letter (the
// Attr* names).
const AttrPrefix = "jobkit."

const (
	// OutputQueuePrefix and OutputDLQPrefix prefix the stack outputs that name a deployment's
	// queues: an output JobkitQueue<Name> holds the URL of job queue <Name>, and JobkitDlq<Name>
	// the URL of its dead-letter queue.
	OutputQueuePrefix = "JobkitQueue"
	OutputDLQPrefix   = "JobkitDlq"
	// OutputStateTable is the stack output that holds the name of the jobkit state table (the
	// table the IdempotencyTable construct deploys: idempotency records, job states, unique keys,
	// batches), read by the CLI's job and batch verbs and the console.
	OutputStateTable = "JobkitStateTable"
	// OutputPayloadBucketPrefix prefixes the stack output that names a bucket of claim-checked
	// job payloads: JobkitPayloadBucket<Name> holds the name of the PayloadBucket construct
	// <Name>, for producers to set Payloads.Bucket (see Payloads).
	OutputPayloadBucketPrefix = "JobkitPayloadBucket"
	// SourceMetadataKey is the CloudFormation metadata key on a worker's AWS::Lambda::Function
	// that names its Go main package relative to the module root (e.g. "functions/email"), or by
	// import path for a package of a module it requires (IsImportPath; e.g. RecorderPackage), so a
	// tool that reads the template (the local stack) can build the same source.
	SourceMetadataKey = "jobkit:source"
	// ModuleMetadataKey is the CloudFormation metadata key on a worker's AWS::Lambda::Function
	// that names the directory of the Go module its SourceMetadataKey package belongs to,
	// slash-separated and relative to the directory of the template (the cloud assembly, cdk.out),
	// so a tool that reads the assembly finds the sources wherever the CDK app ran.
	ModuleMetadataKey = "jobkit:module"
	// ContainerMetadataKey is the CloudFormation metadata key on a container worker's
	// AWS::ECS::TaskDefinition that names the container its SourceMetadataKey package runs in;
	// the task's other containers are sidecars (the CloudWatch agent).
	ContainerMetadataKey = "jobkit:container"
)

// EnvLambdaRuntimeAPI is set by AWS Lambda (and by local Lambda runtimes): Start then serves
// Lambda invocations.
const EnvLambdaRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"

// TagPaused is the queue tag that pauses a queue (inspect.Inspector.SetQueuePaused, jobkit queues
// pause): while a queue carries it, a container Consumer receives nothing from it, nor does an
// event source mapping of the offline stack (on AWS, pausing also disables the queue's event
// source mappings). Its value is when the pause began, RFC 3339.
const TagPaused = "jobkit:paused"

// TagPausedMappings lists, space-separated, the UUIDs of the event source mappings a pause
// disabled (or "all" when they would not fit a tag's 256 characters): resuming enables those.
const TagPausedMappings = "jobkit:paused-mappings"

// The jobkit state table's index of jobs by queue and state (jobs/state Table.List): a global
// secondary index whose partition key AttrListKey is "<queue name>#<state>" and whose sort key
// AttrListAt is when the job entered that state (epoch milliseconds). The job items jobs/state
// writes carry both attributes, and so do the idempotency records that double as a job's running
// and succeeded state (idempotency.Config.RecordJobs).
const (
	StateIndex  = "jobs_by_queue_state"
	AttrListKey = "lst"
	AttrListAt  = "lst_at"
)

// ListKey is the AttrListKey of a job of queue (a name or URL) in state.
func ListKey(queue, state string) string {
	if i := strings.LastIndexByte(queue, '/'); i >= 0 {
		queue = queue[i+1:]
	}
	return queue + "#" + state
}
