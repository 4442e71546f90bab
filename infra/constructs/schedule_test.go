package constructs

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/infra/internal/cfntest"
	"github.com/jobkit-go/jobkit/scheduler"
)

// The Schedule and DelayedJobs tests synthesize stacks and read the template with the assertions
// module, as plain Go values.

type reportArgs struct {
	Team string `json:"team"`
}

func (reportArgs) Kind() string { return "report.nightly" }

// cfnTemplate is a synthesized template as plain Go values (cfntest.Template).
type cfnTemplate map[string]any

func cfnOf(t *testing.T, stack awscdk.Stack) cfnTemplate {
	t.Helper()
	return cfnTemplate(cfntest.Synth(t, stack))
}

// ofType returns the resources of a type by logical id.
func (tpl cfnTemplate) ofType(typ string) map[string]map[string]any {
	return cfntest.Template(tpl).Resources(typ)
}

// one returns the logical id and properties of the single resource of a type.
func (tpl cfnTemplate) one(t *testing.T, typ string) (string, map[string]any) {
	t.Helper()
	id, body := cfntest.Template(tpl).Only(t, typ)
	return id, cfntest.Props(body)
}

// iamStatements returns every statement of the identity policies in the template.
func (tpl cfnTemplate) iamStatements() []map[string]any {
	var out []map[string]any
	for _, p := range tpl.ofType("AWS::IAM::Policy") {
		for _, st := range cfntest.Get(p, "Properties.PolicyDocument.Statement").([]any) {
			out = append(out, st.(map[string]any))
		}
	}
	return out
}

// grantsOn returns the actions granted on resource by identity policies.
func (tpl cfnTemplate) grantsOn(resource any) []string {
	want, _ := json.Marshal(resource)
	var out []string
	for _, st := range tpl.iamStatements() {
		rs, ok := st["Resource"].([]any)
		if !ok {
			rs = []any{st["Resource"]}
		}
		for _, r := range rs {
			if got, _ := json.Marshal(r); string(got) == string(want) && st["Effect"] == "Allow" {
				out = append(out, cfntest.Actions(st)...)
			}
		}
	}
	return out
}

func requireNoWildcardActions(t *testing.T, tpl cfnTemplate) {
	t.Helper()
	for _, st := range tpl.iamStatements() {
		for _, a := range cfntest.Actions(st) {
			require.NotContains(t, a, "*", "wildcard action in %v", st)
		}
		require.NotContains(t, st, "NotAction")
	}
}

// requireNoNagErrors applies the AwsSolutions checks and fails on any error they annotate.
func requireNoNagErrors(t *testing.T, app awscdk.App, stack awscdk.Stack) {
	t.Helper()
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	var failure any
	func() {
		defer func() { failure = recover() }()
		assertions.Annotations_FromStack(stack).HasNoError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	}()
	require.Nil(t, failure, "cdk-nag AwsSolutions errors")
}

func scheduleStack(t *testing.T) (awscdk.App, awscdk.Stack) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	return app, awscdk.NewStack(app, jsii.String("Sched"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")},
	})
}

func TestScheduleConstruct(t *testing.T) {
	app, stack := scheduleStack(t)
	queue := NewJobQueue(stack, "Reports", nil)
	dlq := awssqs.NewQueue(stack, jsii.String("SchedDLQ"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true)})
	cdknag.NagSuppressions_AddResourceSuppressions(dlq, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-SQS3"), Reason: jsii.String("a Scheduler dead-letter queue receives failed invocations directly, not through a redrive policy"),
	}}, nil)
	decl := scheduler.Schedule{
		Name:            "nightly-report",
		Expression:      "cron(30 2 ? * MON-FRI *)",
		TimeZone:        "Europe/Berlin",
		FlexibleWindow:  15 * time.Minute,
		Args:            reportArgs{Team: "ops"},
		Queue:           "reports",
		Retry:           &scheduler.RetryPolicy{MaxRetries: 3, MaxEventAge: time.Hour},
		DeadLetterQueue: "sched-dlq",
	}
	s := NewSchedule(stack, "Nightly", &ScheduleProps{Schedule: decl, Queue: queue.Queue, DeadLetterQueue: dlq})
	wantInput, err := decl.Input()
	require.NoError(t, err)
	assert.Equal(t, wantInput, s.Input)
	assert.Equal(t, "nightly-report", s.Name)

	tpl := cfnOf(t, stack)
	queueArn := cfntest.Resolved(t, stack, queue.Queue.QueueArn())
	dlqArn := cfntest.Resolved(t, stack, dlq.QueueArn())
	_, p := tpl.one(t, "AWS::Scheduler::Schedule")
	assert.Equal(t, "cron(30 2 ? * MON-FRI *)", p["ScheduleExpression"])
	assert.Equal(t, "Europe/Berlin", p["ScheduleExpressionTimezone"])
	assert.Equal(t, map[string]any{"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15.0}, p["FlexibleTimeWindow"])
	assert.Equal(t, "ENABLED", p["State"])
	assert.Equal(t, queueArn, cfntest.Get(p, "Target.Arn"), "the target is the job queue")
	assert.Equal(t, wantInput, cfntest.Get(p, "Target.Input"), "the input is the envelope template, placeholder intact")
	assert.Contains(t, cfntest.Get(p, "Target.Input"), `"id":"sched:nightly-report:<aws.scheduler.scheduled-time>"`)
	assert.Equal(t, map[string]any{"MaximumRetryAttempts": 3.0, "MaximumEventAgeInSeconds": 3600.0}, cfntest.Get(p, "Target.RetryPolicy"))
	assert.Equal(t, dlqArn, cfntest.Get(p, "Target.DeadLetterConfig.Arn"))
	assert.Nil(t, cfntest.Get(p, "Target.SqsParameters.MessageGroupId"), "no message group on a Standard queue")
	assert.Contains(t, p["Description"], "nightly-report")

	// The role Scheduler assumes may send to the queue and the DLQ, nothing more.
	roleArn := cfntest.Get(p, "Target.RoleArn").(map[string]any)
	roleID := roleArn["Fn::GetAtt"].([]any)[0].(string)
	role := tpl["Resources"].(map[string]any)[roleID].(map[string]any)
	assert.Equal(t, "scheduler.amazonaws.com", cfntest.Get(role, "Properties.AssumeRolePolicyDocument.Statement.0.Principal.Service"))
	// It trusts Scheduler for this account's schedules in the schedule's group only: the stack's
	// group of recurring schedules, not the account's default group, where anyone may make one.
	groupID, group := tpl.one(t, "AWS::Scheduler::ScheduleGroup")
	assert.Equal(t, group["Name"], p["GroupName"])
	assert.NotEqual(t, "default", p["GroupName"])
	trust := cfntest.Get(role, "Properties.AssumeRolePolicyDocument.Statement.0.Condition.StringEquals").(map[string]any)
	assert.Equal(t, "123456789012", trust["aws:SourceAccount"])
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{groupID, "Arn"}}, trust["aws:SourceArn"])
	assert.Equal(t, []string{"sqs:SendMessage"}, tpl.grantsOn(queueArn))
	assert.Equal(t, []string{"sqs:SendMessage"}, tpl.grantsOn(dlqArn))
	requireNoWildcardActions(t, tpl)
	requireNoNagErrors(t, app, stack)
}

func TestScheduleConstructFIFO(t *testing.T) {
	_, stack := scheduleStack(t)
	orders := NewJobQueue(stack, "Orders", &JobQueueProps{FIFO: true, ContentBasedDeduplication: true})
	role := awsiam.NewRole(stack, jsii.String("SchedulerRole"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), nil)})
	NewSchedule(stack, "Sweep", &ScheduleProps{
		Schedule: scheduler.Schedule{
			Name: "sweep", Expression: "rate(5 minutes)", Args: reportArgs{Team: "ops"},
			Queue: "orders.fifo", GroupID: "sweeper",
		},
		Queue: orders.Queue,
		Role:  role,
	})
	tpl := cfnOf(t, stack)
	queueArn := cfntest.Resolved(t, stack, orders.Queue.QueueArn())
	_, p := tpl.one(t, "AWS::Scheduler::Schedule")
	assert.Equal(t, "rate(5 minutes)", p["ScheduleExpression"])
	assert.Equal(t, "UTC", p["ScheduleExpressionTimezone"], "no time zone means UTC, explicitly")
	assert.Equal(t, map[string]any{"Mode": "OFF"}, p["FlexibleTimeWindow"])
	assert.Equal(t, "sweeper", cfntest.Get(p, "Target.SqsParameters.MessageGroupId"), "FIFO group")
	assert.Equal(t, queueArn, cfntest.Get(p, "Target.Arn"))
	assert.Equal(t, cfntest.Resolved(t, stack, role.RoleArn()), cfntest.Get(p, "Target.RoleArn"), "the given role")
	assert.Equal(t, map[string]any{"MaximumRetryAttempts": 185.0, "MaximumEventAgeInSeconds": 86400.0}, cfntest.Get(p, "Target.RetryPolicy"), "Scheduler's defaults")
	assert.Nil(t, cfntest.Get(p, "Target.DeadLetterConfig"))
	assert.Equal(t, []string{"sqs:SendMessage"}, tpl.grantsOn(queueArn))
}

func TestScheduleConstructRefusesMismatches(t *testing.T) {
	valid := scheduler.Schedule{Name: "n", Expression: "rate(1 hour)", Args: reportArgs{}, Queue: "q"}
	cases := map[string]struct {
		mutate func(*scheduler.Schedule)
		props  func(stack awscdk.Stack, p *ScheduleProps)
		want   string
	}{
		"invalid schedule": {func(s *scheduler.Schedule) { s.Expression = "rate(1 hours)" }, nil, "singular"},
		"no queue":         {nil, func(_ awscdk.Stack, p *ScheduleProps) { p.Queue = nil }, "no target Queue"},
		"FIFO without group": {nil, func(stack awscdk.Stack, p *ScheduleProps) {
			p.Queue = NewJobQueue(stack, "F", &JobQueueProps{FIFO: true, ContentBasedDeduplication: true}).Queue
		}, "needs a GroupID"},
		"group on Standard":    {func(s *scheduler.Schedule) { s.GroupID = "g" }, nil, "not FIFO"},
		"declared DLQ missing": {func(s *scheduler.Schedule) { s.DeadLetterQueue = "dlq" }, nil, "pass it as DeadLetterQueue"},
		"FIFO DLQ": {nil, func(stack awscdk.Stack, p *ScheduleProps) {
			p.DeadLetterQueue = awssqs.NewQueue(stack, jsii.String("FD"), &awssqs.QueueProps{Fifo: jsii.Bool(true)})
		}, "Standard dead-letter queue"},
		"FIFO target without content-based deduplication": {func(s *scheduler.Schedule) { s.GroupID = "g" }, func(stack awscdk.Stack, p *ScheduleProps) {
			p.Queue = NewJobQueue(stack, "F", &JobQueueProps{FIFO: true}).Queue
		}, "has no content-based deduplication"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stack := scheduleStack(t)
			s := valid
			if tc.mutate != nil {
				tc.mutate(&s)
			}
			p := &ScheduleProps{Schedule: s, Queue: awssqs.NewQueue(stack, jsii.String("Q"), nil)}
			if tc.props != nil {
				tc.props(stack, p)
			}
			var got any
			func() {
				defer func() { got = recover() }()
				NewSchedule(stack, "S", p)
			}()
			require.NotNil(t, got, "NewSchedule did not panic")
			assert.Contains(t, fmt.Sprint(got), tc.want)
		})
	}
}
