package constructs

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// A ContainerWorker: an arm64 Fargate service of the source's binary, with the consumer's
// environment, a stop timeout above the drain budget, a task role scoped like a Worker's, backlog
// scaling from zero, and no cdk-nag AwsSolutions error.
func TestContainerWorker(t *testing.T) {
	app, stack := newStack(t)
	q := NewJobQueue(stack, "Long", &JobQueueProps{MaxAttempts: 3, VisibilityTimeout: 5 * time.Minute})
	table := NewIdempotencyTable(stack, "Idempotency", nil)
	w := NewContainerWorker(stack, "Encoder", &ContainerWorkerProps{
		Source: helloSource, Queue: q, IdempotencyTable: table, Kinds: []string{"video.encode"},
		Concurrency: 4, DrainTimeout: 60 * time.Second, MaxTasks: 3,
	})
	requireNoNagErrors(t, app, stack)
	tpl := synth(t, stack)

	_, td := tpl.Only(t, "AWS::ECS::TaskDefinition")
	assert.Equal(t, "ARM64", get(props(td), "RuntimePlatform.CpuArchitecture"))
	assert.Equal(t, "constructs/testdata/hello", td["Metadata"].(map[string]any)[SourceMetadataKey])
	c := get(props(td), "ContainerDefinitions.0").(map[string]any)
	assert.Equal(t, float64(65), c["StopTimeout"], "stop timeout = drain budget + margin")
	assert.Equal(t, "awslogs", get(c, "LogConfiguration.LogDriver"))
	env := map[string]any{}
	for _, e := range c["Environment"].([]any) {
		m := e.(map[string]any)
		env[m["Name"].(string)] = m["Value"]
	}
	assert.Equal(t, "1m0s", env[contract.EnvDrainTimeout])
	assert.Equal(t, "4", env[contract.EnvConcurrency])
	assert.Equal(t, "300", env[contract.EnvVisibilityTimeout])
	assert.Equal(t, "3", env[contract.EnvMaxAttempts])
	assert.Equal(t, "Encoder", env[contract.EnvWorkerName])
	assert.NotNil(t, env[contract.EnvQueueURL])
	assert.NotNil(t, env[contract.EnvIdempotencyTable])
	assert.Equal(t, 65*time.Second, w.StopTimeout)

	// Its metrics: the EMF lines go to the CloudWatch agent beside it, which writes them to the
	// worker's log group (the task role may), where CloudWatch extracts them; the worker starts
	// after it and outlives it.
	assert.Equal(t, CloudWatchAgentEndpoint, env[contract.EnvMetricsEndpoint])
	logGroupID := *stack.GetLogicalId(w.LogGroup.Node().DefaultChild().(awscdk.CfnElement))
	assert.Equal(t, map[string]any{"Ref": logGroupID}, env[contract.EnvMetricsLogGroup])
	assert.Equal(t, "Worker", td["Metadata"].(map[string]any)[contract.ContainerMetadataKey], "the container the source runs in")
	assert.NotEmpty(t, td["Metadata"].(map[string]any)[ModuleMetadataKey], "and its module, for the offline stack")
	require.Len(t, get(props(td), "ContainerDefinitions").([]any), 2)
	agent := get(props(td), "ContainerDefinitions.1").(map[string]any)
	assert.Equal(t, "CloudWatchAgent", agent["Name"])
	assert.Equal(t, DefaultCloudWatchAgentImage, agent["Image"])
	assert.Equal(t, false, agent["Essential"])
	assert.Equal(t, []any{map[string]any{"Name": "CW_CONFIG_CONTENT", "Value": `{"logs":{"metrics_collected":{"emf":{}}}}`}}, agent["Environment"])
	assert.Equal(t, map[string]any{"Ref": logGroupID}, get(agent, "LogConfiguration.Options.awslogs-group"))
	assert.Equal(t, []any{map[string]any{"Condition": "START", "ContainerName": "CloudWatchAgent"}}, c["DependsOn"])
	grants := tpl.RoleGrants(*stack.GetLogicalId(w.TaskRole.Node().DefaultChild().(awscdk.CfnElement)))
	var logs map[string]bool
	for res, actions := range grants {
		if strings.Contains(res, logGroupID) {
			logs = actions
		}
	}
	assert.True(t, logs["logs:PutLogEvents"] && logs["logs:CreateLogStream"], "the task role writes to its log group: %v", grants)

	_, svc := tpl.Only(t, "AWS::ECS::Service")
	assert.Equal(t, "FARGATE", get(props(svc), "LaunchType"))
	assert.Equal(t, float64(0), get(props(svc), "DesiredCount"))
	_, target := tpl.Only(t, "AWS::ApplicationAutoScaling::ScalableTarget")
	assert.Equal(t, float64(0), get(props(target), "MinCapacity"))
	assert.Equal(t, float64(3), get(props(target), "MaxCapacity"))
	policies := tpl.Resources("AWS::ApplicationAutoScaling::ScalingPolicy")
	require.NotEmpty(t, policies)
	for _, p := range policies {
		assert.Equal(t, "ExactCapacity", get(props(p), "StepScalingPolicyConfiguration.AdjustmentType"))
	}
	requireNoWildcardGrant(t, tpl)
	// The task role consumes its queue and sends to its DLQ, as a Worker's role does.
	mainID, dlqID := queueIDs(t, tpl)
	assert.True(t, tpl.AllowedActions(getAtt(mainID, "Arn"))["sqs:ReceiveMessage"])
	assert.True(t, tpl.AllowedActions(getAtt(mainID, "Arn"))["sqs:ChangeMessageVisibility"])
	assert.True(t, tpl.AllowedActions(getAtt(mainID, "Arn"))["sqs:ListQueueTags"], "the consumer reads its queue's pause")
	assert.True(t, tpl.AllowedActions(getAtt(dlqID, "Arn"))["sqs:SendMessage"])

	// ECS may assume the task role only for this account's tasks (the confused deputy).
	roleID := *stack.GetLogicalId(w.TaskRole.Node().DefaultChild().(awscdk.CfnElement))
	trust := get(tpl, "Resources."+roleID+".Properties.AssumeRolePolicyDocument.Statement.0").(map[string]any)
	assert.Equal(t, "ecs-tasks.amazonaws.com", get(trust, "Principal.Service"))
	assert.Equal(t, map[string]any{"Ref": "AWS::AccountId"}, get(trust, "Condition.StringEquals.aws:SourceAccount"))
	assert.Contains(t, toString(get(trust, "Condition.ArnLike.aws:SourceArn")), ":ecs:")

	// Nothing can connect to a task: its security group admits no inbound traffic.
	for id, sg := range tpl.Resources("AWS::EC2::SecurityGroup") {
		assert.Nil(t, get(props(sg), "SecurityGroupIngress"), id)
	}
	assert.Empty(t, tpl.Resources("AWS::EC2::SecurityGroupIngress"))
}

// The construct refuses what would break the consumer's promises.
func TestContainerWorkerRefuses(t *testing.T) {
	_, stack := newStack(t)
	q := NewJobQueue(stack, "Long", &JobQueueProps{VisibilityTimeout: 2 * time.Second})
	text := toString(mustPanic(t, func() { NewContainerWorker(stack, "A", &ContainerWorkerProps{Source: helloSource, Queue: q}) }))
	assert.Contains(t, text, "heartbeat")
	q2 := NewJobQueue(stack, "Long2", nil)
	text = toString(mustPanic(t, func() {
		NewContainerWorker(stack, "B", &ContainerWorkerProps{Source: helloSource, Queue: q2, DrainTimeout: 116 * time.Second})
	}))
	assert.Contains(t, text, "DrainTimeout")
	text = toString(mustPanic(t, func() {
		NewContainerWorker(stack, "C", &ContainerWorkerProps{Source: helloSource, Queue: q2, Environment: map[string]string{"JOBKIT_X": "1"}})
	}))
	assert.Contains(t, text, "JOBKIT_X")
	// The consumer receives 10 at once: a FIFO queue needs 10 × (attempts + 1) + 1 receives.
	fifo := NewJobQueue(stack, "Fifo", &JobQueueProps{FIFO: true, MaxAttempts: 3, RedriveMargin: 37})
	text = toString(mustPanic(t, func() { NewContainerWorker(stack, "D", &ContainerWorkerProps{Source: helloSource, Queue: fifo}) }))
	assert.Contains(t, text, "batches of 10 with 3 attempts need at least 41")
}

// backlogSteps gives one task per BacklogPerTask jobs, none for an empty queue.
func TestBacklogSteps(t *testing.T) {
	steps := *backlogSteps(0, 3, 10)
	require.Len(t, steps, 4)
	type iv struct{ lower, upper, change float64 }
	var got []iv
	for _, s := range steps {
		x := iv{lower: -1, upper: -1, change: *s.Change}
		if s.Lower != nil {
			x.lower = *s.Lower
		}
		if s.Upper != nil {
			x.upper = *s.Upper
		}
		got = append(got, x)
	}
	assert.Equal(t, []iv{{-1, 1, 0}, {1, 11, 1}, {11, 21, 2}, {21, -1, 3}}, got)
}

// Without the agent (NoCloudWatchAgent): one container, its metrics on stdout, no log grant.
func TestContainerWorkerWithoutAgent(t *testing.T) {
	app, stack := newStack(t)
	q := NewJobQueue(stack, "Long", &JobQueueProps{MaxAttempts: 3, VisibilityTimeout: 5 * time.Minute})
	w := NewContainerWorker(stack, "Encoder", &ContainerWorkerProps{Source: helloSource, Queue: q, NoCloudWatchAgent: true})
	requireNoNagErrors(t, app, stack)
	tpl := synth(t, stack)
	_, td := tpl.Only(t, "AWS::ECS::TaskDefinition")
	defs := get(props(td), "ContainerDefinitions").([]any)
	require.Len(t, defs, 1)
	for _, e := range defs[0].(map[string]any)["Environment"].([]any) {
		assert.NotContains(t, e.(map[string]any)["Name"], "JOBKIT_METRICS_", "metrics stay on stdout")
	}
	assert.Nil(t, w.Agent)
}

// A container worker's memory alarm: the service's maximum memory use over 5 minutes above 90%,
// with the props' alarm actions.
func TestContainerWorkerMemoryAlarm(t *testing.T) {
	_, stack := newStack(t)
	topic := awssns.NewTopic(stack, jsii.String("Alarms"), nil)
	q := NewJobQueue(stack, "Long", &JobQueueProps{VisibilityTimeout: 5 * time.Minute})
	w := NewContainerWorker(stack, "Encoder", &ContainerWorkerProps{Source: helloSource, Queue: q,
		AlarmActions: []awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(topic)}})
	require.NotNil(t, w.MemoryAlarm)
	tpl := synth(t, stack)
	topicID, _ := tpl.Only(t, "AWS::SNS::Topic")
	var found []string
	for id, body := range tpl.Resources("AWS::CloudWatch::Alarm") {
		p := props(body)
		if p["Namespace"] != "AWS/ECS" {
			continue // the queue's alarms, the recorder's
		}
		found = append(found, id)
		assert.Equal(t, "MemoryUtilization", p["MetricName"])
		assert.Equal(t, "Maximum", p["Statistic"])
		assert.Equal(t, float64(300), p["Period"])
		assert.Equal(t, float64(MemoryAlarmPercent), p["Threshold"])
		assert.Equal(t, "GreaterThanThreshold", p["ComparisonOperator"])
		assert.Equal(t, []any{ref(topicID)}, p["AlarmActions"])
		dims := map[string]bool{}
		for _, d := range p["Dimensions"].([]any) {
			dims[d.(map[string]any)["Name"].(string)] = true
		}
		assert.Equal(t, map[string]bool{"ClusterName": true, "ServiceName": true}, dims)
	}
	require.Len(t, found, 1)
}
