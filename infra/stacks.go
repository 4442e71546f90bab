package main

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	jk "github.com/jobkit-go/jobkit/infra/constructs"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
)

// Stack ids of the sample app. The stateful stack holds what must outlive a redeploy of the
// functions (queues with jobs in them, tables); deleting JobkitWorkers leaves jobs waiting.
const (
	StateStackID   = "JobkitState"
	WorkersStackID = "JobkitWorkers"
)

// StateStack holds the sample's stateful resources: the idempotency table, the ledger table and
// the three job queues with their dead-letter queues.
type StateStack struct {
	awscdk.Stack
	Idempotency *jk.IdempotencyTable
	LedgerTable awsdynamodb.Table
	Email       *jk.JobQueue
	Ledger      *jk.JobQueue
	Transcode   *jk.JobQueue
}

// NewStateStack defines the stateful stack.
func NewStateStack(scope constructs.Construct, id string, props *awscdk.StackProps) *StateStack {
	stack := awscdk.NewStack(scope, jsii.String(id), props)
	s := &StateStack{Stack: stack}
	s.Idempotency = jk.NewIdempotencyTable(stack, "Idempotency", nil)
	s.LedgerTable = awsdynamodb.NewTable(stack, jsii.String("LedgerTable"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(samplejobs.LedgerAccountAttr), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	s.Email = jk.NewJobQueue(stack, samplejobs.QueueEmail, &jk.JobQueueProps{
		MaxAttempts: 5, VisibilityTimeout: time.Minute,
	})
	s.Ledger = jk.NewJobQueue(stack, samplejobs.QueueLedger, &jk.JobQueueProps{
		FIFO: true, HighThroughputFIFO: true, MaxAttempts: 5, VisibilityTimeout: time.Minute,
	})
	s.Transcode = jk.NewJobQueue(stack, samplejobs.QueueTranscode, &jk.JobQueueProps{
		MaxAttempts: 3, VisibilityTimeout: 10 * time.Minute, AgeAlarmThreshold: 2 * time.Hour,
	})
	return s
}

// WorkersStack holds the sample's functions and the dashboard.
type WorkersStack struct {
	awscdk.Stack
	Email, Ledger, Transcode *jk.Worker
	Dashboard                *jk.Dashboard
}

// NewWorkersStack defines the functions consuming state's queues, built from the Go module at
// moduleDir (functions/email, functions/ledger, functions/transcode).
func NewWorkersStack(scope constructs.Construct, id string, state *StateStack, moduleDir string, props *awscdk.StackProps) *WorkersStack {
	stack := awscdk.NewStack(scope, jsii.String(id), props)
	s := &WorkersStack{Stack: stack}
	src := func(name string) jk.GoSource { return jk.GoSource{ModuleDir: moduleDir, Package: "functions/" + name} }

	// Email: many short jobs; gather up to 25 per invocation for at most 2 s.
	s.Email = jk.NewWorker(stack, "Email", &jk.WorkerProps{
		Source: src("email"), Queue: state.Email, IdempotencyTable: state.Idempotency,
		Timeout: 30 * time.Second, BatchSize: 25, MaxBatchingWindow: 2 * time.Second,
		MaxConcurrency: 10, Concurrency: 10,
	})
	// Ledger: FIFO, so no batching window; accounts (message groups) run 10 at a time.
	s.Ledger = jk.NewWorker(stack, "Ledger", &jk.WorkerProps{
		Source: src("ledger"), Queue: state.Ledger, IdempotencyTable: state.Idempotency,
		Timeout: 30 * time.Second, BatchSize: 10, MaxConcurrency: 5, Concurrency: 10,
		Environment: map[string]string{samplejobs.EnvLedgerTable: *state.LedgerTable.TableName()},
	})
	state.LedgerTable.GrantReadWriteData(s.Ledger.Role)
	// Transcode: long jobs, one per invocation; the heartbeat keeps each invisible while it runs.
	s.Transcode = jk.NewWorker(stack, "Transcode", &jk.WorkerProps{
		Source: src("transcode"), Queue: state.Transcode,
		Timeout: 10 * time.Minute, MemorySize: 1024, BatchSize: 1, MaxConcurrency: 2, Concurrency: 1,
		BackoffBase: 30 * time.Second, BackoffCap: 30 * time.Minute,
	})
	s.Dashboard = jk.NewDashboard(stack, "Dashboard", &jk.DashboardProps{
		Queues:  []*jk.JobQueue{state.Email, state.Ledger, state.Transcode},
		Workers: []*jk.Worker{s.Email, s.Ledger, s.Transcode},
	})
	return s
}
