package constructs

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/infra/internal/cfntest"
	"github.com/jobkit-go/jobkit/scheduler"
)

// Every construct, with the options the sample app leaves out (reserved concurrency, a FIFO
// worker, a schedule on a FIFO queue, the outbox writer's conditional grant, alarm actions
// everywhere), passes AWS's CloudFormation linter with the repository's configuration: the
// sample's templates are linted in infra's TestSampleApp, these here.
func TestEveryConstructPassesCfnLint(t *testing.T) {
	_, stack := newStack(t) // environment-agnostic, as a user's app: no placeholder zones
	topic := awssns.NewTopic(stack, jsii.String("Alarms"), &awssns.TopicProps{EnforceSSL: jsii.Bool(true)})
	actions := []awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(topic)}
	table := NewIdempotencyTable(stack, "State", nil)
	email := NewJobQueue(stack, "Email", &JobQueueProps{MaxAttempts: 4, RedriveMargin: 6, AlarmActions: actions})
	orders := NewJobQueue(stack, "Orders", &JobQueueProps{FIFO: true, HighThroughputFIFO: true, ContentBasedDeduplication: true, AlarmActions: actions})
	long := NewJobQueue(stack, "Long", &JobQueueProps{MaxAttempts: 3, VisibilityTimeout: 5 * time.Minute, AlarmActions: actions})
	bucket := NewPayloadBucket(stack, "Payloads", &PayloadBucketProps{Queues: []*JobQueue{email, orders}})
	w := NewWorker(stack, "EmailWorker", &WorkerProps{
		Source: helloSource, Queue: email, IdempotencyTable: table, Kinds: []string{"email.send"}, RateLimiters: []string{"provider"},
		JobStates: true, PayloadBucket: bucket, ReservedConcurrency: 5, MaxConcurrency: 3, BatchSize: 25,
		MaxBatchingWindow: time.Second, AlarmActions: actions,
	})
	w.GrantBatchCallbacks(email.Queue)
	NewWorker(stack, "OrdersWorker", &WorkerProps{Source: helloSource, Queue: orders, IdempotencyTable: table, Kinds: []string{"order.charge"}, BatchSize: 10, AlarmActions: actions})
	NewContainerWorker(stack, "Encoder", &ContainerWorkerProps{
		Source: helloSource, Queue: long, IdempotencyTable: table, Kinds: []string{"video.encode"}, MaxTasks: 2,
	})
	NewPriorityQueue(stack, "Notify", &PriorityQueueProps{
		Lanes:            []Lane{{Name: "default", Weight: 2}, {Name: "bulk", Weight: 1, BacklogAlarmThreshold: 100}},
		TotalConcurrency: 6, Queue: JobQueueProps{AlarmActions: actions},
	})
	NewDelayedJobs(stack, "Delayed", &DelayedJobsProps{Queues: []awssqs.IQueue{email.Queue, orders.Queue}, AlarmActions: actions})
	NewSchedule(stack, "Sweep", &ScheduleProps{
		Schedule: scheduler.Schedule{Name: "sweep", Expression: "cron(0 3 * * ? *)", Args: reportArgs{Team: "ops"}, Queue: "orders.fifo", GroupID: "sweeper"},
		Queue:    orders.Queue,
	})
	outbox := NewOutboxForwarder(stack, "Outbox", &OutboxForwarderProps{Source: helloSource, Table: table, Queues: []awssqs.IQueue{email.Queue}, AlarmActions: actions})
	producer := awsiam.NewRole(stack, jsii.String("Producer"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	outbox.GrantWriter(producer)
	NewDashboard(stack, "Dashboard", &DashboardProps{Queues: []*JobQueue{email, orders, long}, Workers: []*Worker{w}})

	tpl := synth(t, stack)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.Empty(t, cfntest.Lint(t, root, tpl.WriteFile(t, t.TempDir(), "Every")))
}
