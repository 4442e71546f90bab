package constructs

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/outbox"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// Defaults of WorkerProps. The runtime's defaults are package jobs' (one owner): a worker the
// construct configures behaves as one configured by jobs.ConfigFromEnv with nothing set.
const (
	DefaultWorkerTimeout = 30 * time.Second
	DefaultMemorySize    = 256 // MB
	DefaultBatchSize     = 10  // the event source mapping's own default
	DefaultConcurrency   = contract.DefaultConcurrency
	DefaultBackoffBase   = contract.DefaultBackoffBase
	DefaultBackoffCap    = contract.DefaultBackoffCap
	DefaultLogRetention  = awslogs.RetentionDays_ONE_MONTH
)

// IdempotencyActions are the DynamoDB item actions a Worker may call on its IdempotencyTable:
// those of the idempotency package's DynamoDB store (PutItem claims, GetItem reads, UpdateItem
// completes, DeleteItem releases; TransactWrite's record update is an UpdateItem). No Scan,
// Query, batch or stream action.
var IdempotencyActions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}

// JobStateActions are the DynamoDB item actions a Worker with WorkerProps.JobStates may call on
// the state table's job and batch items (jobs/state: states, batch counts in transactions, the
// callback's state written with BatchWriteItem).
var JobStateActions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem"}

// IdempotencyKeyPrefix is how the record keys of a kind begin: idempotency.JobKey is
// "<kind>#<idempotency key>" (a test pins the two together).
func IdempotencyKeyPrefix(kind string) string { return kind + "#" }

// SourceMetadataKey is the CloudFormation metadata key on a Worker's AWS::Lambda::Function that
// names its Go main package relative to the module root (e.g. "functions/email"), or its import
// path (a RedriveRecorder's: RecorderPackage), so tools that read the template (the offline stack)
// can build the same source for another architecture.
const SourceMetadataKey = contract.SourceMetadataKey

// ModuleMetadataKey is the CloudFormation metadata key on a Worker's AWS::Lambda::Function that
// names the directory of its Go module relative to the cloud assembly (cdk.out), so the offline
// stack builds the source from the right module wherever the CDK app ran.
const ModuleMetadataKey = contract.ModuleMetadataKey

// WorkerProps configures a Worker. Queue and one of Source or Code are required.
type WorkerProps struct {
	// Source is the Go main package the function runs, built at synth (see GoSource).
	Source GoSource
	// Code replaces the build of Source with ready-made code (a prebuilt bootstrap, tests).
	// Source.Package, when set, still names the source in the function's metadata.
	Code awslambda.Code
	// RecorderCode replaces the build of the queue's redrive recorder (RecorderPackage, from
	// Source.ModuleDir) with ready-made code; needed with Code when Source.ModuleDir is unset.
	RecorderCode awslambda.Code

	// Queue is the JobQueue the function consumes. Its visibility timeout must be at least
	// Timeout.
	Queue *JobQueue
	// IdempotencyTable, when set, is named in JOBKIT_IDEMPOTENCY_TABLE and the function may make
	// the IdempotencyActions on it — only on the records of Kinds.
	IdempotencyTable *IdempotencyTable
	// JobStates (with IdempotencyTable) names the table in JOBKIT_STATE_TABLE as the jobkit state
	// table too, and lets the function keep job states and batch counts there (package
	// jobs/state): the JobStateActions on the items under "job#" and "batch#" only. The queue's
	// redrive recorder keeps the states of the jobs the redrive policy moves, with the same grant.
	// Sending a batch's callback job needs the callback queue's send grant besides:
	// GrantBatchCallbacks gives it to the worker and the recorder.
	JobStates bool
	// ListJobs (with JobStates) also lists the queue's jobs by state in the table's index
	// (JOBKIT_LIST_JOBS=1, for the worker and its redrive recorder): `jobkit job list`, the
	// console's Jobs section. The index bills its own writes — four write units a job that
	// succeeds, on top of job states' one — and one queue's jobs in one state share one index
	// partition (docs/scale.md). Producers that record enqueued jobs set
	// jobs/state Options.ListJobs too.
	ListJobs bool
	// Kinds are the job kinds the function runs. With an IdempotencyTable, they limit the
	// function to the records of its own kinds (keys "<kind>#...", see idempotency.JobKey):
	// the grant carries a dynamodb:LeadingKeys condition, so a compromised function cannot mark
	// another worker's jobs completed. A key passed to idempotency.Do must then start with one
	// of these prefixes too. Without Kinds, the grant covers every record of the table, and the
	// construct says so with a warning annotation (jobkit:UnscopedIdempotency) at synth.
	Kinds []string
	// RateLimiters names the ratelimit limiters the function takes tokens from: with Kinds, the
	// grant on the IdempotencyTable (jobkit's state table) also covers their buckets
	// ("rate#<limiter>*").
	RateLimiters []string
	// PayloadBucket, when set, holds the payloads of the queue's claim-checked jobs: it is named
	// in JOBKIT_PAYLOAD_BUCKET and the function may read and delete its objects
	// (PayloadWorkerActions). Its expiry must cover the queue (PayloadBucketProps.Queues).
	PayloadBucket *PayloadBucket

	// Timeout is the function timeout, at most 15 minutes. Default DefaultWorkerTimeout.
	Timeout time.Duration
	// MemorySize in MB. Default DefaultMemorySize.
	MemorySize int

	// BatchSize is the most records per invocation: 1-10 on a FIFO queue, 1-10000 on a Standard
	// queue (above 10 needs MaxBatchingWindow). Default DefaultBatchSize.
	BatchSize int
	// MaxBatchingWindow is how long the event source gathers records before invoking, whole
	// seconds up to 5 minutes. Standard queues only (AWS supports no batching window on FIFO).
	MaxBatchingWindow time.Duration
	// MaxConcurrency caps the concurrent invocations the event source starts (2-1000). Zero
	// leaves it unset: the event source scales up to the account's concurrency.
	MaxConcurrency int
	// ReservedConcurrency reserves that many concurrent executions of the account for the
	// function (and caps it there): a priority lane's worker given one keeps its capacity however
	// busy the account's other functions are — MaxConcurrency alone caps a lane but reserves
	// nothing from the account's shared pool. It must be at least MaxConcurrency when both are
	// set (else the event source's invocations are throttled), and AWS keeps 100 of the
	// account's concurrency unreserved: the sum of all reservations must leave that. Zero
	// reserves nothing.
	ReservedConcurrency int

	// Concurrency is how many records of a batch run at once (JOBKIT_CONCURRENCY).
	// Default DefaultConcurrency.
	Concurrency int
	// BackoffBase and BackoffCap bound the retry delays (JOBKIT_BACKOFF_BASE, JOBKIT_BACKOFF_CAP).
	// Defaults DefaultBackoffBase and DefaultBackoffCap; the cap is at most 12 hours (the
	// longest visibility timeout SQS accepts).
	BackoffBase time.Duration
	BackoffCap  time.Duration

	// LogRetention of the function's log group. Default DefaultLogRetention.
	LogRetention awslogs.RetentionDays
	// Environment adds variables to the function's environment; a JOBKIT_ name set by the
	// construct cannot be overridden.
	Environment map[string]string
	// Description of the function. Default "jobkit worker <Source.Package>".
	Description string
	// AlarmActions are added to the function's alarms (ErrorsAlarm, ThrottlesAlarm), e.g. an SNS
	// topic's action. Optional.
	AlarmActions []awscloudwatch.IAlarmAction
}

// Worker is a Go Lambda function (provided.al2023, arm64) that runs the jobs of a JobQueue
// through the jobs runtime: an SQS event source with ReportBatchItemFailures, the environment
// ConfigFromEnv reads, least-privilege grants (consume and change visibility on its queue, send
// to its dead-letter queue, the idempotency store's item calls on its own kinds' records, write
// its own log group), a log group with retention, and JSON logs.
//
// The first Worker (or ContainerWorker) of a queue also gives it its redrive recorder: the
// queue's holding queue (JobQueue.Moved, in the queue's stack) and a RedriveRecorder function in
// this construct, with the worker's job states and payload bucket, so that a job SQS's redrive
// policy moves still ends as a job — dead, with a reason, a time and its source queue.
type Worker struct {
	constructs.Construct

	Name        string
	Function    awslambda.Function
	Role        awsiam.Role
	LogGroup    awslogs.LogGroup
	EventSource awslambdaeventsources.SqsEventSource
	// Environment is the environment the construct set (JOBKIT_ names and Props.Environment).
	Environment map[string]string
	// Recorder is the queue's redrive recorder when this worker defined it; nil when another
	// worker of the queue did (JobQueue.Recorder names it either way).
	Recorder *RedriveRecorder
	// ErrorsAlarm fires when an invocation of the function failed as a whole — a crash, a
	// timeout, a start-up failure — in 5 minutes (a job's own failure is not one: the runtime
	// retries it in the batch response). ThrottlesAlarm fires when Lambda throttled an
	// invocation (reserved or account concurrency): its jobs wait, and on a message's last
	// receive the redrive policy moves it (the redrive recorder keeps it a job).
	ErrorsAlarm, ThrottlesAlarm awscloudwatch.Alarm

	queue *JobQueue
}

// ConfigError is the panic value of NewWorker for props that cannot deploy.
type ConfigError struct {
	Construct string // the construct path
	Reason    string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("jobkit: %s: %s", e.Construct, e.Reason)
}

// constructProps is what settle takes: a construct's props, which give their defaults and say
// why they cannot deploy.
type constructProps[P any] interface {
	withDefaults() P
	check() string
}

// settle returns the props (nil: all defaults) with their defaults applied, and the construct's
// path; it panics with a *ConfigError when they cannot deploy (mustCheck).
func settle[P constructProps[P]](scope constructs.Construct, id string, given *P) (P, string) {
	var p P
	if given != nil {
		p = *given
	}
	p = p.withDefaults()
	return p, mustCheck(scope, id, p.check())
}

// mustCheck returns the path of the construct id defines in scope ("Stack/Email"), for messages,
// and panics with a *ConfigError there when reason, what its props' check found, is not "".
func mustCheck(scope constructs.Construct, id, reason string) string {
	where := id
	if scope != nil {
		where = path.Join(*scope.Node().Path(), id)
	}
	if reason != "" {
		panic(&ConfigError{Construct: where, Reason: reason})
	}
	return where
}

// checkRuntime checks what a Worker and a ContainerWorker both give the jobs runtime: its
// concurrency and backoff, a payload bucket whose expiry covers queue q, an environment that
// leaves the construct's own names alone, and kinds that keep the idempotency grant narrow.
func checkRuntime(q *JobQueue, concurrency int, base, ceiling time.Duration, bucket *PayloadBucket, env map[string]string, kinds []string) string {
	switch {
	case concurrency < 1:
		return fmt.Sprintf("Concurrency %d must be at least 1", concurrency)
	case base < 0 || ceiling < base || ceiling > jobs.MaxVisibility:
		return fmt.Sprintf("backoff base %s and cap %s must satisfy 0 <= base <= cap <= %s", base, ceiling, jobs.MaxVisibility)
	}
	if bucket != nil {
		if reason := bucket.covers(q); reason != "" {
			return reason
		}
	}
	for k := range env {
		if strings.HasPrefix(k, contract.EnvPrefix) {
			return fmt.Sprintf("Environment sets %s: %s names are set by the construct", k, contract.EnvPrefix)
		}
	}
	return checkKinds(kinds)
}

// NewWorker defines a Worker. It panics with a *ConfigError when the props cannot deploy, among
// them a queue visibility timeout shorter than the function timeout, which AWS refuses when it
// creates the event source mapping; the synth stops before anything reaches CloudFormation.
func NewWorker(scope constructs.Construct, id string, props *WorkerProps) *Worker {
	p, where := settle(scope, id, props)

	c := constructs.NewConstruct(scope, jsii.String(id))
	w := &Worker{Construct: c, Name: id, queue: p.Queue}

	w.Environment = maps.Clone(p.Environment)
	if w.Environment == nil {
		w.Environment = map[string]string{}
	}
	q := p.Queue
	w.Environment[contract.EnvQueueURL] = *q.Queue.QueueUrl()
	w.Environment[contract.EnvDLQURL] = *q.DLQ.QueueUrl()
	w.Environment[contract.EnvMaxAttempts] = strconv.Itoa(q.MaxAttempts)
	w.Environment[contract.EnvMaxReceiveCount] = strconv.Itoa(q.MaxReceiveCount)
	w.Environment[contract.EnvVisibilityTimeout] = strconv.Itoa(int(q.VisibilityTimeout / time.Second))
	w.Environment[contract.EnvConcurrency] = strconv.Itoa(p.Concurrency)
	w.Environment[contract.EnvBackoffBase] = p.BackoffBase.String()
	w.Environment[contract.EnvBackoffCap] = p.BackoffCap.String()
	if p.IdempotencyTable != nil {
		w.Environment[contract.EnvIdempotencyTable] = *p.IdempotencyTable.Table.TableName()
		// Records outlive any message of the queue or its DLQ: a redriven job is still skipped.
		w.Environment[contract.EnvIdempotencyExpiry] = (q.RetentionPeriod + DLQRetentionPeriod).String()
		if p.JobStates {
			w.Environment[contract.EnvStateTable] = *p.IdempotencyTable.Table.TableName()
			if p.ListJobs {
				w.Environment[contract.EnvListJobs] = "1"
			}
		}
	}
	if p.PayloadBucket != nil {
		w.Environment[contract.EnvPayloadBucket] = *p.PayloadBucket.Bucket.BucketName()
	}
	w.LogGroup = awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention: p.LogRetention,
	})
	// An own role instead of AWSLambdaBasicExecutionRole: it may write only its own log group.
	w.Role = awsiam.NewRole(c, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String(fmt.Sprintf("jobkit worker %s", where)),
	})
	w.LogGroup.GrantWrite(w.Role)
	w.Function = w.newFunction(p)
	w.consume(p)
	if p.PayloadBucket != nil {
		p.PayloadBucket.grantWorker(w.Role, p.Queue)
	}
	if p.IdempotencyTable != nil {
		grantIdempotency(w.Construct, w.Role, p.IdempotencyTable, p.Kinds, p.RateLimiters)
		if p.JobStates {
			grantJobStates(w.Role, p.IdempotencyTable)
		}
	}
	w.Recorder = defineRecorder(c, recorderProps{
		queue: q, moduleDir: p.Source.ModuleDir, code: p.RecorderCode, worker: *w.Function.FunctionName(),
		table: p.IdempotencyTable, jobStates: p.JobStates, listJobs: p.ListJobs, payloads: p.PayloadBucket, logRetention: p.LogRetention,
	})
	w.addAlarms(p)
	return w
}

// addAlarms defines the function's errors and throttles alarms, with the props' alarm actions.
func (w *Worker) addAlarms(p WorkerProps) {
	five := &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}
	alarm := func(id, description string, metric awscloudwatch.IMetric) awscloudwatch.Alarm {
		return newAlarm(w.Construct, id, fmt.Sprintf("jobkit %s: %s", w.Name, description), metric, 0, p.AlarmActions)
	}
	w.ErrorsAlarm = alarm("ErrorsAlarm", "invocations failed as a whole (a crash, a timeout, a start-up failure): their batches come back after the visibility timeout",
		w.Function.MetricErrors(five))
	w.ThrottlesAlarm = alarm("ThrottlesAlarm", "invocations were throttled: jobs wait, and a message throttled on its last receive is moved by the redrive policy",
		w.Function.MetricThrottles(five))
}

// GrantBatchCallbacks lets the worker, and its queue's redrive recorder, send to queues: the
// callback queues of the fan-out batches whose members it runs (with JobStates). A member's end —
// its success or failure in the worker, its move by the redrive policy in the recorder — may be
// the batch's last, and the one that ends it sends its callback.
func (w *Worker) GrantBatchCallbacks(queues ...awssqs.IQueue) {
	grantSend(w.Role, w.queue, queues)
}

// newFunction defines the Lambda function (provided.al2023, arm64, JSON logs into w.LogGroup,
// w.Role, w.Environment) and names its Go source in its metadata.
func (w *Worker) newFunction(p WorkerProps) awslambda.Function {
	description := p.Description
	if description == "" {
		description = "jobkit worker " + p.Source.Package
	}
	return newGoFunction(w.Construct, goFunction{
		source: p.Source, code: p.Code, description: description, timeout: p.Timeout, memoryMB: p.MemorySize,
		env: sortedEnv(w.Environment), role: w.Role, logGroup: w.LogGroup, reserved: p.ReservedConcurrency,
	})
}

// consume adds the SQS event source (ReportBatchItemFailures, batch size, window, maximum
// concurrency) and grants what the runtime calls on the queues.
func (w *Worker) consume(p WorkerProps) {
	esProps := &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(p.BatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	if p.MaxBatchingWindow > 0 {
		esProps.MaxBatchingWindow = cdkDuration(p.MaxBatchingWindow)
	}
	if p.MaxConcurrency > 0 {
		esProps.MaxConcurrency = jsii.Number(p.MaxConcurrency)
	}
	// The event source grants consuming the queue: ReceiveMessage, ChangeMessageVisibility,
	// DeleteMessage, GetQueueAttributes, GetQueueUrl, on this queue only.
	w.EventSource = awslambdaeventsources.NewSqsEventSource(p.Queue.Queue, esProps)
	w.Function.AddEventSource(w.EventSource)
	p.Queue.Queue.GrantConsumeMessages(w.Role)
	// The runtime dead-letters jobs itself.
	p.Queue.DLQ.GrantSendMessages(w.Role)
}

// grantIdempotency lets role make the IdempotencyActions on the table's records of kinds and the
// buckets of limiters (all records when kinds is empty, with a warning annotation on scope).
func grantIdempotency(scope constructs.Construct, role awsiam.Role, t *IdempotencyTable, kinds, limiters []string) {
	st := &awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(IdempotencyActions...),
		Resources: jsii.Strings(*t.Table.TableArn()),
	}
	if len(kinds) == 0 {
		awscdk.Annotations_Of(scope).AddWarningV2(jsii.String("jobkit:UnscopedIdempotency"), jsii.String(
			"WorkerProps.Kinds is empty: the function may write every record of the idempotency table, "+
				"other workers' included; set Kinds to limit it to its own kinds' keys (dynamodb:LeadingKeys)"))
	} else {
		// Its own kinds' records, and the ledger of deliveries that did not run a job
		// (jobs.Config.Deliveries), keyed by message id.
		prefixes := []any{idempotency.NotRunKeyPrefix + "*"}
		for _, k := range kinds {
			prefixes = append(prefixes, IdempotencyKeyPrefix(k)+"*")
		}
		for _, l := range limiters {
			prefixes = append(prefixes, ratelimit.BucketID(l, ""), ratelimit.BucketID(l, "")+"#*")
		}
		st.Conditions = &map[string]any{
			"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": prefixes},
		}
	}
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(st))
}

// jobStatePrefix is a LeadingKeys pattern for the state items under prefix (jobs/state's
// PrefixJob, PrefixBatch; a test pins them equal).
func jobStatePrefix(prefix string) string { return prefix + "*" }

func (p WorkerProps) withDefaults() WorkerProps {
	p.Timeout = cmp.Or(p.Timeout, DefaultWorkerTimeout)
	p.MemorySize = cmp.Or(p.MemorySize, DefaultMemorySize)
	p.BatchSize = cmp.Or(p.BatchSize, DefaultBatchSize)
	p.Concurrency = cmp.Or(p.Concurrency, DefaultConcurrency)
	p.BackoffBase = cmp.Or(p.BackoffBase, DefaultBackoffBase)
	p.BackoffCap = cmp.Or(p.BackoffCap, DefaultBackoffCap)
	p.LogRetention = cmp.Or(p.LogRetention, DefaultLogRetention)
	return p
}

// check returns why the props (with defaults applied) cannot deploy, or "".
func (p WorkerProps) check() string {
	q := p.Queue
	switch {
	case q == nil:
		return "WorkerProps.Queue is required"
	case p.Code == nil && p.Source.Package == "":
		return "WorkerProps.Source (or Code) is required"
	case p.Code == nil && p.Source.validate() != nil:
		return p.Source.validate().Error()
	case recorderCheck(q, p.Source.ModuleDir, p.RecorderCode) != "":
		return recorderCheck(q, p.Source.ModuleDir, p.RecorderCode)
	case p.Timeout < time.Second || p.Timeout > 15*time.Minute || p.Timeout%time.Second != 0:
		return fmt.Sprintf("Timeout %s must be whole seconds between 1s and 15m", p.Timeout)
	case q.VisibilityTimeout < p.Timeout:
		return fmt.Sprintf("the visibility timeout of queue %s (%s) is shorter than the function timeout (%s): "+
			"AWS refuses such an event source mapping, and a job could run twice at once; "+
			"set JobQueueProps.VisibilityTimeout to at least %s", q.Name, q.VisibilityTimeout, p.Timeout, p.Timeout)
	case p.ListJobs && !(p.JobStates && p.IdempotencyTable != nil):
		return "ListJobs needs JobStates (and an IdempotencyTable): it lists the job states they keep"
	case p.MemorySize < 128 || p.MemorySize > 10240:
		return fmt.Sprintf("MemorySize %d MB must be between 128 and 10240", p.MemorySize)
	case q.FIFO && (p.BatchSize < 1 || p.BatchSize > 10):
		return fmt.Sprintf("BatchSize %d must be between 1 and 10 on FIFO queue %s", p.BatchSize, q.Name)
	case p.BatchSize < 1 || p.BatchSize > 10000:
		return fmt.Sprintf("BatchSize %d must be between 1 and 10000", p.BatchSize)
	case q.FIFO && p.MaxBatchingWindow != 0:
		return fmt.Sprintf("MaxBatchingWindow is not supported on FIFO queue %s", q.Name)
	case q.FIFO && q.MaxReceiveCount < contract.MinFIFOMaxReceiveCount(p.BatchSize, q.MaxAttempts):
		return fifoReceivesShort(q, p.BatchSize)
	case p.MaxBatchingWindow < 0 || p.MaxBatchingWindow > 5*time.Minute || p.MaxBatchingWindow%time.Second != 0:
		return fmt.Sprintf("MaxBatchingWindow %s must be whole seconds between 0 and 5m", p.MaxBatchingWindow)
	case p.BatchSize > 10 && p.MaxBatchingWindow < time.Second:
		return fmt.Sprintf("BatchSize %d above 10 needs a MaxBatchingWindow of at least 1s", p.BatchSize)
	case p.MaxConcurrency != 0 && (p.MaxConcurrency < 2 || p.MaxConcurrency > 1000):
		return fmt.Sprintf("MaxConcurrency %d must be between 2 and 1000 (or 0 for unset)", p.MaxConcurrency)
	case p.ReservedConcurrency < 0:
		return fmt.Sprintf("ReservedConcurrency %d must not be negative", p.ReservedConcurrency)
	case p.ReservedConcurrency > 0 && p.ReservedConcurrency < p.MaxConcurrency:
		return fmt.Sprintf("ReservedConcurrency %d is below MaxConcurrency %d: the event source's invocations past it would be throttled", p.ReservedConcurrency, p.MaxConcurrency)
	}
	if reason := checkRuntime(q, p.Concurrency, p.BackoffBase, p.BackoffCap, p.PayloadBucket, p.Environment, p.Kinds); reason != "" {
		return reason
	}
	for _, l := range p.RateLimiters {
		if l == "" || strings.ContainsAny(l, "*?$#") {
			return fmt.Sprintf("RateLimiters: %q is not a limiter name (empty, or holds *, ?, $ or #)", l)
		}
	}
	return ""
}

// fifoReceivesShort explains why FIFO queue q's maxReceiveCount is too small for batches of
// batchSize records: a job could reach the DLQ by receives alone, without having run.
func fifoReceivesShort(q *JobQueue, batchSize int) string {
	need := contract.MinFIFOMaxReceiveCount(batchSize, q.MaxAttempts)
	return fmt.Sprintf("FIFO queue %s redrives after %d receives, but batches of %d with %d attempts need at least %d "+
		"(batch size × (attempts + 1) + 1): each job ahead of another in its message group costs it a receive per run that fails or dies, "+
		"so a job could be dead-lettered before it ran; raise JobQueueProps.RedriveMargin to %d or more, "+
		"or lower the batch size or MaxAttempts", q.Name, q.MaxReceiveCount, batchSize, q.MaxAttempts, need, need-q.MaxAttempts)
}

// reservedKinds are the first elements of the keys of jobkit's own items in the state table: a
// kind named one of them would stretch its grant ("<kind>#*") over them.
var reservedKinds = []string{
	strings.TrimSuffix(state.PrefixJob, "#"), strings.TrimSuffix(state.PrefixUnique, "#"),
	strings.TrimSuffix(state.PrefixBatch, "#"), strings.TrimSuffix(ratelimit.KeyPrefix, "#"),
	strings.TrimSuffix(outbox.KeyPrefix, "#"), strings.Split(idempotency.NotRunKeyPrefix, "#")[0],
}

// checkKinds says why kinds cannot scope an idempotency grant, or "". The grant's prefixes
// ("<kind>#*") are IAM StringLike patterns: a wildcard would widen them, a '#' would let one kind's
// prefix cover another's keys ("a#b#*" within "a#*"), and a reserved name would cover jobkit's
// own items.
func checkKinds(kinds []string) string {
	for _, k := range kinds {
		switch {
		case k == "" || strings.ContainsAny(k, "*?$#"):
			return fmt.Sprintf("Kinds: %q is not a kind the idempotency grant can name (empty, or holds *, ?, $ or #)", k)
		case slices.Contains(reservedKinds, k):
			return fmt.Sprintf("Kinds: %q names jobkit's own items in the state table (%s#...): its grant would reach them", k, k)
		}
	}
	return ""
}
