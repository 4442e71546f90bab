package constructs

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/jobs"
)

// Defaults of WorkerProps.
const (
	DefaultWorkerTimeout = 30 * time.Second
	DefaultMemorySize    = 256 // MB
	DefaultBatchSize     = 10
	DefaultConcurrency   = 10               // the jobs runtime's default too
	DefaultBackoffBase   = time.Second      // the jobs runtime's default too
	DefaultBackoffCap    = 15 * time.Minute // the jobs runtime's default too
	DefaultLogRetention  = awslogs.RetentionDays_ONE_MONTH
)

// SourceMetadataKey is the CloudFormation metadata key on a Worker's AWS::Lambda::Function that
// names its Go main package relative to the module root (e.g. "functions/email"), so tools that
// read the template (the offline stack) can build the same source for another architecture.
const SourceMetadataKey = jobs.SourceMetadataKey

// WorkerProps configures a Worker. Queue and one of Source or Code are required.
type WorkerProps struct {
	// Source is the Go main package the function runs, built at synth (see GoSource).
	Source GoSource
	// Code replaces the build of Source with ready-made code (a prebuilt bootstrap, tests).
	// Source.Package, when set, still names the source in the function's metadata.
	Code awslambda.Code

	// Queue is the JobQueue the function consumes. Its visibility timeout must be at least
	// Timeout.
	Queue *JobQueue
	// IdempotencyTable, when set, is granted read/write and named in JOBKIT_IDEMPOTENCY_TABLE.
	IdempotencyTable *IdempotencyTable

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
}

// Worker is a Go Lambda function (provided.al2023, arm64) that runs the jobs of a JobQueue
// through the jobs runtime: an SQS event source with ReportBatchItemFailures, the environment
// ConfigFromEnv reads, least-privilege grants (consume and change visibility on its queue, send
// to its dead-letter queue, read/write its idempotency table, write its own log group), a log
// group with retention, and JSON logs.
type Worker struct {
	constructs.Construct

	Name        string
	Function    awslambda.Function
	Role        awsiam.Role
	LogGroup    awslogs.LogGroup
	EventSource awslambdaeventsources.SqsEventSource
	// Environment is the environment the construct set (JOBKIT_ names and Props.Environment).
	Environment map[string]string
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

// NewWorker defines a Worker. It panics with a *ConfigError when the props cannot deploy, among
// them a queue visibility timeout shorter than the function timeout, which AWS refuses when it
// creates the event source mapping; the synth stops before anything reaches CloudFormation.
func NewWorker(scope constructs.Construct, id string, props *WorkerProps) *Worker {
	if props == nil {
		props = &WorkerProps{}
	}
	p := props.withDefaults()
	where := id
	if scope != nil {
		where = path.Join(*scope.Node().Path(), id)
	}
	if reason := p.check(); reason != "" {
		panic(&ConfigError{Construct: where, Reason: reason})
	}

	c := constructs.NewConstruct(scope, jsii.String(id))
	w := &Worker{Construct: c, Name: id}

	code := p.Code
	if code == nil {
		code = p.Source.Code()
	}

	w.Environment = maps.Clone(p.Environment)
	if w.Environment == nil {
		w.Environment = map[string]string{}
	}
	q := p.Queue
	w.Environment[jobs.EnvQueueURL] = *q.Queue.QueueUrl()
	w.Environment[jobs.EnvDLQURL] = *q.DLQ.QueueUrl()
	w.Environment[jobs.EnvMaxAttempts] = strconv.Itoa(q.MaxAttempts)
	w.Environment[jobs.EnvVisibilityTimeout] = strconv.Itoa(int(q.VisibilityTimeout / time.Second))
	w.Environment[jobs.EnvConcurrency] = strconv.Itoa(p.Concurrency)
	w.Environment[jobs.EnvBackoffBase] = p.BackoffBase.String()
	w.Environment[jobs.EnvBackoffCap] = p.BackoffCap.String()
	if p.IdempotencyTable != nil {
		w.Environment[jobs.EnvIdempotencyTable] = *p.IdempotencyTable.Table.TableName()
		// Records outlive any message of the queue or its DLQ: a redriven job is still skipped.
		w.Environment[jobs.EnvIdempotencyExpiry] = (q.RetentionPeriod + DLQRetentionPeriod).String()
	}
	env := map[string]*string{}
	for _, k := range slices.Sorted(maps.Keys(w.Environment)) {
		env[k] = jsii.String(w.Environment[k])
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

	description := p.Description
	if description == "" {
		description = "jobkit worker " + p.Source.Package
	}
	w.Function = awslambda.NewFunction(c, jsii.String("Function"), &awslambda.FunctionProps{
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          code,
		Description:   jsii.String(description),
		Timeout:       cdkDuration(p.Timeout),
		MemorySize:    jsii.Number(p.MemorySize),
		Environment:   &env,
		Role:          w.Role,
		LogGroup:      w.LogGroup,
		LoggingFormat: awslambda.LoggingFormat_JSON,
	})
	if p.Source.Package != "" {
		cfn := w.Function.Node().DefaultChild().(awslambda.CfnFunction)
		cfn.AddMetadata(jsii.String(SourceMetadataKey), jsii.String(path.Clean(p.Source.Package)))
	}

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
	w.EventSource = awslambdaeventsources.NewSqsEventSource(q.Queue, esProps)
	w.Function.AddEventSource(w.EventSource)
	q.Queue.GrantConsumeMessages(w.Role)
	// The runtime dead-letters jobs itself.
	q.DLQ.GrantSendMessages(w.Role)
	if p.IdempotencyTable != nil {
		p.IdempotencyTable.Table.GrantReadWriteData(w.Role)
	}
	return w
}

func (p WorkerProps) withDefaults() WorkerProps {
	if p.Timeout == 0 {
		p.Timeout = DefaultWorkerTimeout
	}
	if p.MemorySize == 0 {
		p.MemorySize = DefaultMemorySize
	}
	if p.BatchSize == 0 {
		p.BatchSize = DefaultBatchSize
	}
	if p.Concurrency == 0 {
		p.Concurrency = DefaultConcurrency
	}
	if p.BackoffBase == 0 {
		p.BackoffBase = DefaultBackoffBase
	}
	if p.BackoffCap == 0 {
		p.BackoffCap = DefaultBackoffCap
	}
	if p.LogRetention == "" {
		p.LogRetention = DefaultLogRetention
	}
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
	case p.Timeout < time.Second || p.Timeout > 15*time.Minute || p.Timeout%time.Second != 0:
		return fmt.Sprintf("Timeout %s must be whole seconds between 1s and 15m", p.Timeout)
	case q.VisibilityTimeout < p.Timeout:
		return fmt.Sprintf("the visibility timeout of queue %s (%s) is shorter than the function timeout (%s): "+
			"AWS refuses such an event source mapping, and a job could run twice at once; "+
			"set JobQueueProps.VisibilityTimeout to at least %s", q.Name, q.VisibilityTimeout, p.Timeout, p.Timeout)
	case p.MemorySize < 128 || p.MemorySize > 10240:
		return fmt.Sprintf("MemorySize %d MB must be between 128 and 10240", p.MemorySize)
	case q.FIFO && (p.BatchSize < 1 || p.BatchSize > 10):
		return fmt.Sprintf("BatchSize %d must be between 1 and 10 on FIFO queue %s", p.BatchSize, q.Name)
	case p.BatchSize < 1 || p.BatchSize > 10000:
		return fmt.Sprintf("BatchSize %d must be between 1 and 10000", p.BatchSize)
	case q.FIFO && p.MaxBatchingWindow != 0:
		return fmt.Sprintf("MaxBatchingWindow is not supported on FIFO queue %s", q.Name)
	case p.MaxBatchingWindow < 0 || p.MaxBatchingWindow > 5*time.Minute || p.MaxBatchingWindow%time.Second != 0:
		return fmt.Sprintf("MaxBatchingWindow %s must be whole seconds between 0 and 5m", p.MaxBatchingWindow)
	case p.BatchSize > 10 && p.MaxBatchingWindow < time.Second:
		return fmt.Sprintf("BatchSize %d above 10 needs a MaxBatchingWindow of at least 1s", p.BatchSize)
	case p.MaxConcurrency != 0 && (p.MaxConcurrency < 2 || p.MaxConcurrency > 1000):
		return fmt.Sprintf("MaxConcurrency %d must be between 2 and 1000 (or 0 for unset)", p.MaxConcurrency)
	case p.Concurrency < 1:
		return fmt.Sprintf("Concurrency %d must be at least 1", p.Concurrency)
	case p.BackoffBase < 0 || p.BackoffCap < p.BackoffBase || p.BackoffCap > 12*time.Hour:
		return fmt.Sprintf("backoff base %s and cap %s must satisfy 0 <= base <= cap <= 12h", p.BackoffBase, p.BackoffCap)
	}
	for k := range p.Environment {
		if len(k) >= len("JOBKIT_") && k[:len("JOBKIT_")] == "JOBKIT_" {
			return fmt.Sprintf("Environment sets %s: JOBKIT_ names are set by the construct", k)
		}
	}
	return ""
}
