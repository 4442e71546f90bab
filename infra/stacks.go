package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	jk "github.com/jobkit-go/jobkit/infra/constructs"
	"github.com/jobkit-go/jobkit/jobs/contract"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
)

// Stack ids of the sample app. The stateful stack holds what must outlive a redeploy of the
// functions (queues with jobs in them, tables) and what produces jobs on its own (schedules);
// deleting JobkitWorkers leaves jobs waiting, and the schedules go on adding to them.
const (
	StateStackID   = contract.DefaultStack
	WorkersStackID = "JobkitWorkers"
)

// StateStack holds the sample's stateful resources: the idempotency table, the ledger table, the
// three job queues with their dead-letter queues, and the scheduling that feeds the queues — the
// delayed jobs' schedule group, role and dead-letter queue, and the recurring schedules of
// samplejobs.Schedules (with a Scheduler role per target queue).
//
// Scheduling lives here rather than with the functions: the schedule group holds the one-time
// schedules of delayed jobs created at run time (deleting the group deletes those jobs), each of
// them names the role by ARN (replacing the role would leave them undeliverable), and the
// dead-letter queue holds jobs. The recurring schedules are producers, like the services that
// enqueue: their ticks wait in the queues while the functions are redeployed or absent, and
// they need no cross-stack grant, since the queues and the role are here too.
type StateStack struct {
	awscdk.Stack
	Idempotency *jk.IdempotencyTable
	LedgerTable awsdynamodb.Table
	Email       *jk.JobQueue
	Ledger      *jk.JobQueue
	Transcode   *jk.JobQueue
	// Notify has priority lanes (samplejobs.NotifyLanes), each a JobQueue of its own.
	Notify *jk.PriorityQueue
	// Delayed is the delayed jobs' schedule group, Scheduler role and Standard dead-letter
	// queue; the recurring schedules use the same dead-letter queue but roles of their own.
	Delayed *jk.DelayedJobs
	// Schedules are samplejobs.Schedules, in order.
	Schedules []*jk.Schedule
	// Payloads holds the claim-checked jobs of the three queues (jobs over SQS's 1 MiB).
	Payloads *jk.PayloadBucket
	// Alarms is the topic every alarm of the sample notifies (subscribe an address or a chat
	// integration to it once deployed); AlarmActions holds its action.
	Alarms       awssns.Topic
	AlarmActions []awscloudwatch.IAlarmAction
}

// Queue returns the job queue of a samplejobs queue name, or nil.
func (s *StateStack) Queue(name string) *jk.JobQueue {
	switch name {
	case samplejobs.QueueEmail:
		return s.Email
	case samplejobs.QueueLedger:
		return s.Ledger
	case samplejobs.QueueTranscode:
		return s.Transcode
	}
	for _, l := range s.Notify.Lanes {
		if name == contract.LaneQueueName(samplejobs.QueueNotify, l.Name) {
			return l.Queue
		}
	}
	return nil
}

// NewStateStack defines the stateful stack.
func NewStateStack(scope constructs.Construct, id string, props *awscdk.StackProps) *StateStack {
	stack := awscdk.NewStack(scope, jsii.String(id), props)
	s := &StateStack{Stack: stack}
	// One topic for every alarm, TLS only. Alarm notifications carry an alarm's name, state and
	// reason, no job data, so the topic keeps SNS's default (no KMS key): CloudWatch could not
	// publish to one under the AWS-managed key, and a key of its own costs a monthly fee.
	s.Alarms = awssns.NewTopic(stack, jsii.String("Alarms"), &awssns.TopicProps{
		DisplayName: jsii.String("jobkit alarms"), EnforceSSL: jsii.Bool(true),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(s.Alarms, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SNS2"),
		Reason: jsii.String("alarm notifications carry alarm names and states, no job data; CloudWatch cannot publish to a topic under the AWS-managed SNS key"),
	}}, nil)
	// The topic's policy (EnforceSSL writes one) replaces SNS's default: CloudWatch must be let
	// publish, for this account's alarms only.
	s.Alarms.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  jsii.Strings(*s.Alarms.TopicArn()),
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
			"ArnLike":      map[string]any{"aws:SourceArn": fmt.Sprintf("arn:%s:cloudwatch:%s:%s:alarm:*", *stack.Partition(), *stack.Region(), *stack.Account())},
		},
	}))
	s.AlarmActions = []awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(s.Alarms)}
	s.Idempotency = jk.NewIdempotencyTable(stack, "Idempotency", nil)
	s.LedgerTable = awsdynamodb.NewTable(stack, jsii.String("LedgerTable"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(samplejobs.LedgerAccountAttr), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	// The email jobs are rate limited (samplejobs.EmailRateLimits): a job that waits for the mail
	// provider's tokens is received about log2(wait/1s)+1 times without an attempt charged, and
	// each receive counts against the redrive's maxReceiveCount. A margin of 20 covers waits far
	// beyond any backlog the sample sees (an hour is 13 receives).
	s.Email = jk.NewJobQueue(stack, samplejobs.QueueEmail, &jk.JobQueueProps{
		MaxAttempts: 5, VisibilityTimeout: time.Minute, RedriveMargin: 20, AlarmActions: s.AlarmActions,
	})
	// Content-based deduplication: EventBridge Scheduler sends ticks and delayed jobs to the FIFO
	// queue without a deduplication id (the jobs client always sets one).
	s.Ledger = jk.NewJobQueue(stack, samplejobs.QueueLedger, &jk.JobQueueProps{
		FIFO: true, HighThroughputFIFO: true, ContentBasedDeduplication: true,
		MaxAttempts: 5, VisibilityTimeout: time.Minute, AlarmActions: s.AlarmActions,
	})
	s.Transcode = jk.NewJobQueue(stack, samplejobs.QueueTranscode, &jk.JobQueueProps{
		MaxAttempts: 3, VisibilityTimeout: 10 * time.Minute, AgeAlarmThreshold: 2 * time.Hour, AlarmActions: s.AlarmActions,
	})

	s.Payloads = jk.NewPayloadBucket(stack, "Jobs", &jk.PayloadBucketProps{
		Queues: []*jk.JobQueue{s.Email, s.Ledger, s.Transcode},
	})

	// Notifications in three lanes sharing 10 concurrent invocations by weight: default 4,
	// critical 4, bulk 2 — a flood of bulk digests waits behind its own 2, never the critical 4.
	weights := map[string]int{samplejobs.LaneDefault: 2, samplejobs.LaneCritical: 2, samplejobs.LaneBulk: 1}
	var lanes []jk.Lane
	for _, name := range samplejobs.NotifyLanes {
		lanes = append(lanes, jk.Lane{Name: name, Weight: weights[name]})
	}
	s.Notify = jk.NewPriorityQueue(stack, samplejobs.QueueNotify, &jk.PriorityQueueProps{
		Lanes: lanes, TotalConcurrency: 10,
		Queue: jk.JobQueueProps{MaxAttempts: 5, VisibilityTimeout: time.Minute, AlarmActions: s.AlarmActions},
	})

	// Delays beyond SQS's 15 minutes, to any of the queues (every lane of Notify: a delayed job
	// keeps its lane). Its dead-letter queue is a Standard one (Scheduler refuses FIFO dead-letter queues, such as the Ledger queue's).
	delayed := []awssqs.IQueue{s.Email.Queue, s.Ledger.Queue, s.Transcode.Queue}
	for _, l := range s.Notify.Lanes {
		delayed = append(delayed, l.Queue.Queue)
	}
	s.Delayed = jk.NewDelayedJobs(stack, samplejobs.DelayedJobsName, &jk.DelayedJobsProps{Queues: delayed, AlarmActions: s.AlarmActions})
	// The recurring schedules, in the stack's group of recurring schedules (the constructs' own,
	// jk.RecurringScheduleGroup): the delayed jobs' group is the producers' to create and delete
	// schedules in, and the account's default group anyone's.
	schedules := constructs.NewConstruct(stack, jsii.String("Schedules"))
	for _, sch := range samplejobs.Schedules {
		q := s.Queue(sch.Queue)
		if q == nil {
			panic(fmt.Sprintf("jobkit sample: schedule %s targets the unknown queue %q", sch.Name, sch.Queue))
		}
		// No Role: each target queue gets its own, trusted for the recurring schedules' group
		// only; the delayed jobs' role serves the producers' one-time schedules in their group.
		props := &jk.ScheduleProps{Schedule: sch, Queue: q.Queue}
		switch sch.DeadLetterQueue {
		case "":
		case samplejobs.QueueScheduleDLQ:
			props.DeadLetterQueue = s.Delayed.DLQ
		default:
			panic(fmt.Sprintf("jobkit sample: schedule %s names the unknown dead-letter queue %q", sch.Name, sch.DeadLetterQueue))
		}
		s.Schedules = append(s.Schedules, jk.NewSchedule(schedules, sch.Name, props))
	}
	return s
}

// WorkersStack holds the sample's workers and the dashboard: Email and Ledger are functions;
// Transcode, the long job, runs in containers. Outbox sends the jobs services write in their own
// DynamoDB transactions (package jobs/outbox) from the state table's stream.
type WorkersStack struct {
	awscdk.Stack
	Email, Ledger *jk.Worker
	// Notify has a worker per lane of the Notify queue, the same code (functions/notify), each
	// with its lane's MaximumConcurrency.
	Notify    []*jk.Worker
	Transcode *jk.ContainerWorker
	Dashboard *jk.Dashboard
	Outbox    *jk.OutboxForwarder
}

// NewWorkersStack defines the functions consuming state's queues, built from the Go module at
// moduleDir (functions/email, functions/ledger, functions/transcode).
func NewWorkersStack(scope constructs.Construct, id string, state *StateStack, moduleDir string, props *awscdk.StackProps) *WorkersStack {
	stack := awscdk.NewStack(scope, jsii.String(id), props)
	s := &WorkersStack{Stack: stack}
	src := func(name string) jk.GoSource { return jk.GoSource{ModuleDir: moduleDir, Package: "functions/" + name} }
	// kinds lists the sample kinds a queue carries: each worker may touch only their
	// idempotency records.
	kinds := func(queue string) []string {
		var out []string
		for kind, q := range samplejobs.Queues {
			if q == queue {
				out = append(out, kind)
			}
		}
		slices.Sort(out)
		return out
	}

	// Email: many short jobs; gather up to 25 per invocation for at most 2 s.
	s.Email = jk.NewWorker(stack, "Email", &jk.WorkerProps{
		Source: src("email"), Queue: state.Email, IdempotencyTable: state.Idempotency, Kinds: kinds(samplejobs.QueueEmail),
		RateLimiters: []string{samplejobs.LimiterMailProvider},
		Timeout:      30 * time.Second, BatchSize: 25, MaxBatchingWindow: 2 * time.Second,
		MaxConcurrency: 10, Concurrency: 10, JobStates: true, ListJobs: true, PayloadBucket: state.Payloads,
		AlarmActions: state.AlarmActions,
	})
	// Email batches' callbacks (EmailBatchDone) go to the Email queue: the worker sends them, and
	// so does the queue's redrive recorder when a batch's last member is one the redrive policy moved.
	s.Email.GrantBatchCallbacks(state.Email.Queue)
	// Ledger: FIFO, so no batching window; accounts (message groups) run 10 at a time.
	s.Ledger = jk.NewWorker(stack, "Ledger", &jk.WorkerProps{
		Source: src("ledger"), Queue: state.Ledger, IdempotencyTable: state.Idempotency, Kinds: kinds(samplejobs.QueueLedger),
		Timeout: 30 * time.Second, BatchSize: 10, MaxConcurrency: 5, Concurrency: 10, PayloadBucket: state.Payloads,
		Environment:  map[string]string{samplejobs.EnvLedgerTable: *state.LedgerTable.TableName()},
		AlarmActions: state.AlarmActions,
	})
	state.LedgerTable.GrantReadWriteData(s.Ledger.Role)
	// Transcode: long jobs, past Lambda's 15 minutes, in Fargate tasks (arm64) of two jobs each,
	// from zero tasks when the queue is empty up to 4; the heartbeat keeps each job's message
	// invisible while it runs, and a task stopped mid-job releases it for another at once. Behind
	// idempotency, a task killed between a finished transcode and its delete does not redo it.
	s.Transcode = jk.NewContainerWorker(stack, "Transcode", &jk.ContainerWorkerProps{
		Source: src("transcode"), Queue: state.Transcode, IdempotencyTable: state.Idempotency, Kinds: kinds(samplejobs.QueueTranscode),
		CPU: 1024, MemoryMiB: 2048, Concurrency: 2, MaxTasks: 4, DrainTimeout: 60 * time.Second,
		BackoffBase: 30 * time.Second, BackoffCap: 30 * time.Minute, PayloadBucket: state.Payloads,
		AlarmActions: state.AlarmActions,
	})
	// Outbox: the sample's outbox jobs are welcome emails, written with the account they welcome
	// (samplejobs.OpenAccount); the forwarder may send to the Email queue only. Its function is
	// jobkit's own (cmd/jobkit-outbox): the Source names only the module.
	s.Outbox = jk.NewOutboxForwarder(stack, "Outbox", &jk.OutboxForwarderProps{
		Source: jk.GoSource{ModuleDir: moduleDir}, Table: state.Idempotency, Queues: []awssqs.IQueue{state.Email.Queue},
		AlarmActions: state.AlarmActions,
	})
	notifyQueues := []*jk.JobQueue{}
	for _, lane := range state.Notify.Lanes {
		name := contract.LaneQueueName(samplejobs.QueueNotify, lane.Name)
		s.Notify = append(s.Notify, jk.NewWorker(stack, name, &jk.WorkerProps{
			Source: src("notify"), Queue: lane.Queue, IdempotencyTable: state.Idempotency, Kinds: kinds(samplejobs.Queues[samplejobs.KindSendNotification]),
			Timeout: 30 * time.Second, BatchSize: 10, MaxConcurrency: lane.MaxConcurrency, AlarmActions: state.AlarmActions,
		}))
		notifyQueues = append(notifyQueues, lane.Queue)
	}
	s.Dashboard = jk.NewDashboard(stack, "Dashboard", &jk.DashboardProps{
		Queues:           append([]*jk.JobQueue{state.Email, state.Ledger, state.Transcode}, notifyQueues...),
		Workers:          append([]*jk.Worker{s.Email, s.Ledger}, s.Notify...),
		ContainerWorkers: []*jk.ContainerWorker{s.Transcode},
		OutboxForwarders: []*jk.OutboxForwarder{s.Outbox},
	})
	return s
}
