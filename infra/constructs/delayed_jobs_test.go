package constructs

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/infra/internal/cfntest"
	"github.com/jobkit-go/jobkit/scheduler"
)

func TestDelayedJobsConstruct(t *testing.T) {
	app, stack := scheduleStack(t)
	jobsQ := NewJobQueue(stack, "Jobs", nil)
	orders := NewJobQueue(stack, "Orders", &JobQueueProps{FIFO: true, ContentBasedDeduplication: true})
	d := NewDelayedJobs(stack, "Delayed", &DelayedJobsProps{
		Queues: []awssqs.IQueue{jobsQ.Queue},
		Retry:  &scheduler.RetryPolicy{MaxRetries: 10, MaxEventAge: 6 * time.Hour},
	})
	d.AddQueue(orders.Queue)
	producer := awsiam.NewRole(stack, jsii.String("Producer"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	d.GrantProducer(producer)

	tpl := cfnOf(t, stack)
	_, group := tpl.one(t, "AWS::Scheduler::ScheduleGroup")
	groupName := cfntest.Resolved(t, stack, d.Group.ScheduleGroupName())
	assert.Equal(t, group["Name"], groupName, "CDK generates the group name from the construct path")
	assert.Empty(t, tpl.ofType("AWS::Scheduler::Schedule"), "one-time schedules are created at run time")

	// Scheduler assumes the role, for this account only.
	roleArn := cfntest.Resolved(t, stack, d.Role.RoleArn())
	roleID := cfntest.Get(roleArn, "Fn::GetAtt.0").(string)
	role := tpl["Resources"].(map[string]any)[roleID].(map[string]any)
	trust := cfntest.Get(role, "Properties.AssumeRolePolicyDocument.Statement.0").(map[string]any)
	assert.Equal(t, "sts:AssumeRole", trust["Action"])
	assert.Equal(t, "scheduler.amazonaws.com", cfntest.Get(trust, "Principal.Service"))
	assert.Equal(t, "123456789012", cfntest.Get(trust, "Condition.StringEquals.aws:SourceAccount"))
	// ... for the schedules of its own group only (Scheduler presents the group's ARN).
	groupID, _ := tpl.one(t, "AWS::Scheduler::ScheduleGroup")
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{groupID, "Arn"}}, cfntest.Get(trust, "Condition.ArnEquals.aws:SourceArn"))
	assert.Len(t, cfntest.Get(role, "Properties.AssumeRolePolicyDocument.Statement"), 1)

	// It may send to the queues and the DLQ; nothing else.
	for _, q := range []awssqs.IQueue{jobsQ.Queue, orders.Queue, d.DLQ} {
		assert.Equal(t, []string{"sqs:SendMessage"}, tpl.grantsOn(cfntest.Resolved(t, stack, q.QueueArn())))
	}
	var roleActions []string
	for _, p := range tpl.ofType("AWS::IAM::Policy") {
		if fmt.Sprint(cfntest.Get(p, "Properties.Roles.0")) == fmt.Sprint(map[string]any{"Ref": roleID}) {
			for _, st := range cfntest.Get(p, "Properties.PolicyDocument.Statement").([]any) {
				roleActions = append(roleActions, cfntest.Actions(st.(map[string]any))...)
			}
		}
	}
	assert.Equal(t, []string{"sqs:SendMessage", "sqs:SendMessage", "sqs:SendMessage"}, roleActions)

	// The producer may create and delete schedules in the group and pass the role to Scheduler.
	producerID := cfntest.Get(cfntest.Resolved(t, stack, producer.RoleArn()), "Fn::GetAtt.0").(string)
	var producerStatements []map[string]any
	for _, p := range tpl.ofType("AWS::IAM::Policy") {
		if fmt.Sprint(cfntest.Get(p, "Properties.Roles.0")) == fmt.Sprint(map[string]any{"Ref": producerID}) {
			for _, st := range cfntest.Get(p, "Properties.PolicyDocument.Statement").([]any) {
				producerStatements = append(producerStatements, st.(map[string]any))
			}
		}
	}
	require.Len(t, producerStatements, 2)
	sched, pass := producerStatements[0], producerStatements[1]
	if cfntest.Actions(sched)[0] == "iam:PassRole" {
		sched, pass = pass, sched
	}
	acts := cfntest.Actions(sched)
	sort.Strings(acts)
	assert.Equal(t, []string{"scheduler:CreateSchedule", "scheduler:DeleteSchedule"}, acts)
	assert.Equal(t, map[string]any{"Fn::Join": []any{"", []any{
		"arn:", map[string]any{"Ref": "AWS::Partition"}, ":scheduler:eu-west-1:123456789012:schedule/" + groupName.(string) + "/*",
	}}}, sched["Resource"], "only the schedules of the group")
	assert.Equal(t, []string{"iam:PassRole"}, cfntest.Actions(pass))
	assert.Equal(t, roleArn, pass["Resource"])
	assert.Equal(t, "scheduler.amazonaws.com", cfntest.Get(pass, "Condition.StringEquals.iam:PassedToService"))
	requireNoWildcardActions(t, tpl)

	// The created DLQ is a Standard queue, encrypted, kept 14 days, with a depth alarm.
	dlqArn := cfntest.Resolved(t, stack, d.DLQ.QueueArn())
	dlqID := cfntest.Get(dlqArn, "Fn::GetAtt.0").(string)
	dlq := tpl["Resources"].(map[string]any)[dlqID].(map[string]any)
	assert.Nil(t, cfntest.Get(dlq, "Properties.FifoQueue"))
	assert.Equal(t, true, cfntest.Get(dlq, "Properties.SqsManagedSseEnabled"))
	assert.Equal(t, 1209600.0, cfntest.Get(dlq, "Properties.MessageRetentionPeriod"))
	require.NotNil(t, d.DLQDepthAlarm)

	// The producer's environment, as scheduler.DelayerConfigFromEnv reads it.
	env := map[string]any{}
	for k, v := range d.Environment() {
		env[k] = cfntest.Resolved(t, stack, *v)
	}
	assert.Equal(t, map[string]any{
		scheduler.EnvScheduleGroup:    groupName,
		scheduler.EnvSchedulerRoleARN: roleArn,
		scheduler.EnvScheduleDLQARN:   dlqArn,
		scheduler.EnvScheduleRetries:  "10",
		scheduler.EnvScheduleMaxAge:   "6h0m0s",
		scheduler.EnvDelayQueues: map[string]any{"Fn::Join": []any{",", []any{
			cfntest.Resolved(t, stack, jobsQ.Queue.QueueArn()), cfntest.Resolved(t, stack, orders.Queue.QueueArn()),
		}}},
	}, env)
	// A FIFO queue without content-based deduplication is refused: Scheduler sends no
	// deduplication id, so SQS would refuse every delayed job.
	noDedup := NewJobQueue(stack, "Ledger", &JobQueueProps{FIFO: true})
	assert.PanicsWithValue(t, "jobkit: DelayedJobs: FIFO queue Ledger has no content-based deduplication, and EventBridge Scheduler sends no "+
		"deduplication id: SQS would refuse every job Scheduler delivers; set JobQueueProps.ContentBasedDeduplication",
		func() { d.AddQueue(noDedup.Queue) })
	// The same configuration as stack outputs, for producers outside the stack.
	outputs := map[string]any{}
	for k, v := range tpl["Outputs"].(map[string]any) {
		if !strings.HasPrefix(k, "JobkitQueue") && !strings.HasPrefix(k, "JobkitDlq") {
			outputs[k] = cfntest.Get(v, "Value")
		}
	}
	assert.Equal(t, map[string]any{
		OutputScheduleGroupPrefix + "Delayed":    groupName,
		OutputSchedulerRoleArnPrefix + "Delayed": roleArn,
		OutputScheduleDLQArnPrefix + "Delayed":   dlqArn,
		OutputScheduleDLQURLPrefix + "Delayed":   map[string]any{"Ref": dlqID},
	}, outputs)

	requireNoNagErrors(t, app, stack)
}

// A FIFO queue defined with awssqs directly is checked too (its CfnQueue): refused without
// content-based deduplication, taken with it. An imported queue cannot be read at synth.
func TestDelayedJobsChecksPlainFIFOQueues(t *testing.T) {
	_, stack := scheduleStack(t)
	d := NewDelayedJobs(stack, "Delayed", nil)
	plain := awssqs.NewQueue(stack, jsii.String("Plain"), &awssqs.QueueProps{Fifo: jsii.Bool(true)})
	assert.PanicsWithValue(t, "jobkit: DelayedJobs: FIFO queue Sched/Plain has no content-based deduplication, and EventBridge Scheduler sends no "+
		"deduplication id: SQS would refuse every job Scheduler delivers; set ContentBasedDeduplication on it",
		func() { d.AddQueue(plain) })
	d.AddQueue(awssqs.NewQueue(stack, jsii.String("PlainDedup"), &awssqs.QueueProps{Fifo: jsii.Bool(true), ContentBasedDeduplication: jsii.Bool(true)}))
	d.AddQueue(awssqs.Queue_FromQueueArn(stack, jsii.String("Imported"), jsii.String("arn:aws:sqs:eu-west-1:123456789012:elsewhere.fifo")))
}

func TestDelayedJobsConstructOptions(t *testing.T) {
	_, stack := scheduleStack(t)
	own := awssqs.NewQueue(stack, jsii.String("OwnDLQ"), nil)
	d := NewDelayedJobs(stack, "Delayed", &DelayedJobsProps{DeadLetterQueue: own, GroupName: "jobkit-delayed"})
	assert.Nil(t, d.DLQDepthAlarm, "no alarm on a given DLQ")
	tpl := cfnOf(t, stack)
	_, g := tpl.one(t, "AWS::Scheduler::ScheduleGroup")
	assert.Equal(t, "jobkit-delayed", g["Name"])
	assert.Len(t, tpl.ofType("AWS::SQS::Queue"), 1, "no DLQ created")
	assert.Equal(t, []string{"sqs:SendMessage"}, tpl.grantsOn(cfntest.Resolved(t, stack, own.QueueArn())))
	_, hasRetries := d.Environment()[scheduler.EnvScheduleRetries]
	assert.False(t, hasRetries, "no retry policy: Scheduler's default, nothing in the environment")

	for name, props := range map[string]*DelayedJobsProps{
		"FIFO DLQ":  {DeadLetterQueue: awssqs.NewQueue(stack, jsii.String("FifoDLQ"), &awssqs.QueueProps{Fifo: jsii.Bool(true)})},
		"bad retry": {Retry: &scheduler.RetryPolicy{MaxRetries: 500}},
	} {
		var got any
		func() {
			defer func() { got = recover() }()
			NewDelayedJobs(stack, "Bad"+name[:3], props)
		}()
		require.NotNil(t, got, name)
		assert.Contains(t, fmt.Sprint(got), `jobkit: DelayedJobs "Bad`, name)
	}
	got := mustPanic(t, func() { NewDelayedJobs(stack, "delayed-jobs", nil) })
	assert.Contains(t, toString(got), "alphanumeric", "the id names the outputs")
}
