package constructs

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// The redrive recorder's settings.
const (
	// RecorderPackage is the recorder's main package, built from the worker's module by import
	// path (the module must require it: `go get -tool github.com/jobkit-go/jobkit/cmd/jobkit-recorder`).
	RecorderPackage = contract.RecorderPackage
	// OutboxPackage is the outbox forwarder's main package (cmd/jobkit-outbox), which an
	// OutboxForwarder builds by import path when its Source names no package.
	OutboxPackage = contract.OutboxPackage
	// RecorderTimeout is the recorder function's timeout, and the holding queue's visibility
	// timeout: a failed record comes back after it.
	RecorderTimeout = 30 * time.Second
	// RecorderMemorySize is the recorder function's memory, in MB.
	RecorderMemorySize = 128
	// RecorderBatchSize is the most moved messages per invocation of the recorder.
	RecorderBatchSize = 10
	// RecorderMaxConcurrency caps the recorder's concurrent invocations (the event source's
	// maximum concurrency, the least AWS takes): a broken worker whose whole backlog is moved
	// takes two of the account's concurrent executions from the other functions, not hundreds;
	// the holding queue keeps what waits, its receives uncounted.
	RecorderMaxConcurrency = 2
	// RecorderReceives is how many receives of a moved message the recorder gets before the
	// holding queue's own redrive policy moves it to the dead-letter queue unrecorded: about five
	// minutes of failed records, RecorderTimeout apart.
	RecorderReceives = 10
)

// PayloadReadActions are what a redrive recorder may do with a claim-checked job's payload: read
// its envelope, to know which job it is (never delete it: the job may be redriven).
var PayloadReadActions = []string{"s3:GetObject"}

// RedriveRecorder is the function that keeps a job the queue's redrive policy moves from being
// lost as a job: a job whose function never reached its handler (it fails at init, its role or
// code is broken) or whose invocation was throttled on its last receive, which the runtime cannot
// dead-letter itself. The redrive policy moves it into the JobQueue's holding queue (Moved); the
// recorder (jobs.RedriveRecorder, built from RecorderPackage) records it dead
// (contract.ReasonRedrivePolicy) in the jobkit state table when the worker keeps job states —
// counting a fan-out batch member dead, so its batch completes — and sends it on to the
// dead-letter queue with the jobkit.* attributes the runtime's dead letters carry, the job queue
// as their source queue.
//
// The Worker and ContainerWorker constructs define it for the queue they consume (one per queue),
// with its own role: consume the holding queue, send to the dead-letter queue, the JobStateActions
// on the "job#" and "batch#" items of the state table (with job states), read claim-checked
// payloads (PayloadReadActions), write its own log group. Sending fan-out batch callbacks needs the
// callback queues' send grant, as the worker does: Worker.GrantBatchCallbacks gives it to both.
type RedriveRecorder struct {
	constructs.Construct

	Function    awslambda.Function
	Role        awsiam.Role
	LogGroup    awslogs.LogGroup
	EventSource awslambdaeventsources.SqsEventSource
	// Environment is the function's environment (what jobs.RecorderConfigFromEnv reads).
	Environment map[string]string
}

// recorderProps is what a worker construct tells the recorder of its queue.
type recorderProps struct {
	queue        *JobQueue
	moduleDir    string         // the worker's module, which builds RecorderPackage
	code         awslambda.Code // ready-made code instead of the build
	worker       string         // the worker's function (or container worker) name: AttrFunction
	table        *IdempotencyTable
	jobStates    bool // with table: record job states
	listJobs     bool // with jobStates: list them by queue and state
	payloads     *PayloadBucket
	logRetention awslogs.RetentionDays
}

// recorderSource is the GoSource of the recorder built from moduleDir.
func recorderSource(moduleDir string) GoSource {
	return GoSource{ModuleDir: moduleDir, Package: RecorderPackage}
}

// recorderCheck returns why q cannot get a recorder built from moduleDir (or code), or "": the
// holding queue's redrive must fit SQS's maxReceiveCount, and the build needs the module.
func recorderCheck(q *JobQueue, moduleDir string, code awslambda.Code) string {
	if q.Recorder != nil {
		return ""
	}
	if q.MaxReceiveCount+RecorderReceives > MaxMaxReceiveCount {
		return fmt.Sprintf("queue %s redrives after %d receives: its holding queue's redrive, which counts them on, needs %d more "+
			"(RecorderReceives), past SQS's maximum of %d; lower MaxAttempts or RedriveMargin",
			q.Name, q.MaxReceiveCount, RecorderReceives, MaxMaxReceiveCount)
	}
	if code != nil {
		return ""
	}
	if moduleDir == "" {
		return "the queue's redrive recorder is built from the worker's module: set Source.ModuleDir (or RecorderCode)"
	}
	if err := recorderSource(moduleDir).validate(); err != nil {
		return err.Error()
	}
	return ""
}

// defineRecorder gives p.queue its holding queue and recorder, in scope, unless it has them.
func defineRecorder(scope constructs.Construct, p recorderProps) *RedriveRecorder {
	if p.queue.Recorder != nil {
		return nil
	}
	moved := p.queue.holdMoved()
	c := constructs.NewConstruct(scope, jsii.String("Recorder"))
	r := &RedriveRecorder{Construct: c}
	q := p.queue
	r.Environment = map[string]string{
		contract.EnvQueueURL:        *q.Queue.QueueUrl(),
		contract.EnvDLQURL:          *q.DLQ.QueueUrl(),
		contract.EnvMaxReceiveCount: strconv.Itoa(q.MaxReceiveCount),
		contract.EnvWorkerName:      p.worker,
	}
	if p.table != nil && p.jobStates {
		r.Environment[contract.EnvStateTable] = *p.table.Table.TableName()
		if p.listJobs {
			r.Environment[contract.EnvListJobs] = "1"
		}
	}
	if p.payloads != nil {
		r.Environment[contract.EnvPayloadBucket] = *p.payloads.Bucket.BucketName()
	}
	r.LogGroup = awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{Retention: p.logRetention})
	r.Role = awsiam.NewRole(c, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("jobkit redrive recorder of queue " + q.Name),
	})
	r.LogGroup.GrantWrite(r.Role)
	r.Function = r.newFunction(p)
	// The event source grants consuming the holding queue only.
	r.EventSource = awslambdaeventsources.NewSqsEventSource(moved, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize: jsii.Number(RecorderBatchSize), ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency: jsii.Number(RecorderMaxConcurrency),
	})
	r.Function.AddEventSource(r.EventSource)
	moved.GrantConsumeMessages(r.Role)
	q.DLQ.GrantSendMessages(r.Role)
	if p.table != nil && p.jobStates {
		grantJobStates(r.Role, p.table)
	}
	if p.payloads != nil {
		p.payloads.grant(r.Role, PayloadReadActions, p.queue)
	}
	q.Recorder = r
	return r
}

// newFunction defines the recorder's Lambda function, as a Worker's, built from RecorderPackage
// in the worker's module (named in its metadata for the offline stack).
func (r *RedriveRecorder) newFunction(p recorderProps) awslambda.Function {
	return newGoFunction(r.Construct, goFunction{
		source: recorderSource(p.moduleDir), code: p.code, description: "jobkit redrive recorder of queue " + p.queue.Name,
		timeout: RecorderTimeout, memoryMB: RecorderMemorySize, env: sortedEnv(r.Environment), role: r.Role, logGroup: r.LogGroup,
	})
}

// grantJobStates lets role make the JobStateActions on the table's "job#" and "batch#" items.
func grantJobStates(role awsiam.Role, t *IdempotencyTable) {
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(JobStateActions...),
		Resources: jsii.Strings(*t.Table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []any{jobStatePrefix("job#"), jobStatePrefix("batch#")},
		}},
	}))
}

// grantSend lets role, and the recorder of queue q when it has one, send to queues.
func grantSend(role awsiam.IRole, q *JobQueue, queues []awssqs.IQueue) {
	for _, cq := range queues {
		cq.GrantSendMessages(role)
		if q.Recorder != nil {
			cq.GrantSendMessages(q.Recorder.Role)
		}
	}
}
