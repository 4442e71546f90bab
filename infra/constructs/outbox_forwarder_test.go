package constructs

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/outbox"
)

// The forwarder: the table's stream on, a mapping from TRIM_HORIZON with partial batch responses,
// the outbox filter and an on-failure DLQ, least-privilege grants, three alarms, no nag error.
func TestOutboxForwarder(t *testing.T) {
	app, stack := newStack(t)
	table := NewIdempotencyTable(stack, "State", nil)
	email := NewJobQueue(stack, "Email", nil)
	other := NewJobQueue(stack, "Other", nil)
	f := NewOutboxForwarder(stack, "Outbox", &OutboxForwarderProps{
		Source: helloSource, Table: table, Queues: []awssqs.IQueue{email.Queue},
		BatchSize: 50, MaxRecordAge: time.Hour,
	})
	requireNoNagErrors(t, app, stack)
	tpl := synth(t, stack)

	tableID, tableBody := tpl.Only(t, "AWS::DynamoDB::Table")
	require.Equal(t, map[string]any{"StreamViewType": "NEW_IMAGE"}, get(tableBody, "Properties.StreamSpecification"))

	_, esm := tpl.Only(t, "AWS::Lambda::EventSourceMapping")
	m := props(esm)
	require.Equal(t, getAtt(tableID, "StreamArn"), m["EventSourceArn"])
	require.Equal(t, "TRIM_HORIZON", m["StartingPosition"])
	require.Equal(t, []any{"ReportBatchItemFailures"}, m["FunctionResponseTypes"])
	require.Equal(t, float64(50), m["BatchSize"])
	require.Equal(t, float64(3600), m["MaximumRecordAgeInSeconds"])
	require.NotEqual(t, true, m["BisectBatchOnError"], "no bisecting")
	require.Equal(t, float64(1), m["ParallelizationFactor"], "one invocation per shard: its jobs in order")
	fnID, fnBody := tpl.Only(t, "AWS::Lambda::Function")
	require.Equal(t, ref(fnID), m["FunctionName"])
	dlqID := ""
	for id, body := range tpl.Resources("AWS::SQS::Queue") {
		if get(body, "Properties.RedrivePolicy") == nil && fmt.Sprint(getAtt(id, "Arn")) == fmt.Sprint(get(m, "DestinationConfig.OnFailure.Destination")) {
			dlqID = id
		}
	}
	require.NotEmpty(t, dlqID, "the on-failure destination is the forwarder's DLQ: %v", get(m, "DestinationConfig"))
	require.Equal(t, true, get(tpl, "Resources."+dlqID+".Properties.SqsManagedSseEnabled"))

	// The filter: INSERTs of outbox items only.
	pattern := get(m, "FilterCriteria.Filters.0.Pattern").(string)
	var pat map[string]any
	require.NoError(t, json.Unmarshal([]byte(pattern), &pat))
	require.Equal(t, map[string]any{
		"eventName": []any{"INSERT"},
		"dynamodb":  map[string]any{"Keys": map[string]any{"id": map[string]any{"S": []any{map[string]any{"prefix": "outbox#"}}}}},
	}, pat)

	// The function: the Worker's build and logging, the table in its environment.
	fn := props(fnBody)
	require.Equal(t, "provided.al2023", fn["Runtime"])
	require.Equal(t, []any{"arm64"}, fn["Architectures"])
	require.Equal(t, "JSON", get(fn, "LoggingConfig.LogFormat"))
	env := get(fn, "Environment.Variables").(map[string]any)
	require.Equal(t, ref(tableID), env[contract.EnvIdempotencyTable])
	// Its allow-list: the queues it may send to, and no other (one queue: its URL, the Ref).
	emailID := *stack.GetLogicalId(email.Queue.Node().DefaultChild().(awssqs.CfnQueue))
	require.Equal(t, ref(emailID), env[outbox.EnvQueues])
	require.Len(t, env, 2)
	require.Equal(t, "constructs/testdata/hello", get(fnBody, "Metadata."+SourceMetadataKey))

	// Grants: the stream, the outbox items' deletes, its queue and its DLQ; nothing on the other.
	require.Equal(t, map[string]bool{
		"dynamodb:DescribeStream": true, "dynamodb:GetRecords": true, "dynamodb:GetShardIterator": true, "dynamodb:ListStreams": true,
	}, tpl.AllowedActions(getAtt(tableID, "StreamArn")))
	require.Equal(t, map[string]bool{"dynamodb:BatchWriteItem": true}, tpl.AllowedActions(getAtt(tableID, "Arn")))
	require.Equal(t, map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"outbox#*"}}},
		tableStatement(t, tpl, getAtt(tableID, "Arn"))["Condition"])
	otherID := *stack.GetLogicalId(other.Queue.Node().DefaultChild().(awssqs.CfnQueue))
	require.True(t, tpl.AllowedActions(getAtt(emailID, "Arn"))["sqs:SendMessage"])
	require.Empty(t, tpl.AllowedActions(getAtt(otherID, "Arn")), "a queue not in Queues")
	require.True(t, tpl.AllowedActions(getAtt(dlqID, "Arn"))["sqs:SendMessage"], "Lambda sends failed batches as the function's role")
	requireNoWildcardGrant(t, tpl)

	// Alarms: errors, iterator age (5 min by default, in ms), the DLQ.
	alarms := tpl.Resources("AWS::CloudWatch::Alarm")
	byMetric := map[string]map[string]any{}
	for _, a := range alarms {
		byMetric[fmt.Sprint(get(a, "Properties.MetricName"))] = props(a)
	}
	require.Equal(t, float64(0), get(byMetric["Errors"], "Threshold"))
	require.Equal(t, float64(5*60*1000), get(byMetric["IteratorAge"], "Threshold"))
	require.Equal(t, "Maximum", get(byMetric["IteratorAge"], "Statistic"))
	require.Len(t, alarms, 3+2*2, "the forwarder's three and each queue's two")
	require.NotNil(t, f.DLQDepthAlarm)
}

// The dashboard's outbox row: the forwarder's invocations, errors and iterator age.
func TestDashboardOutboxRow(t *testing.T) {
	_, stack := newStack(t)
	table := NewIdempotencyTable(stack, "State", nil)
	q := NewJobQueue(stack, "Q", nil)
	f := NewOutboxForwarder(stack, "Outbox", &OutboxForwarderProps{Source: helloSource, Table: table, Queues: []awssqs.IQueue{q.Queue}})
	NewDashboard(stack, "Dashboard", &DashboardProps{Queues: []*JobQueue{q}, OutboxForwarders: []*OutboxForwarder{f}})
	tpl := synth(t, stack)
	_, body := tpl.Only(t, "AWS::CloudWatch::Dashboard")
	raw, err := json.Marshal(get(body, "Properties.DashboardBody"))
	require.NoError(t, err)
	flat := string(raw)
	require.Contains(t, flat, "outbox: oldest unsent job")
	for _, m := range []string{`\"IteratorAge\"`, `\"Invocations\"`, `\"Errors\"`} {
		require.Contains(t, flat, m)
	}
}

// A table whose stream is already on keeps it.
func TestOutboxForwarderKeepsAStream(t *testing.T) {
	_, stack := newStack(t)
	table := NewIdempotencyTable(stack, "State", nil)
	arn := table.EnableStream()
	q := NewJobQueue(stack, "Q", nil)
	f := NewOutboxForwarder(stack, "Outbox", &OutboxForwarderProps{Source: helloSource, Table: table, Queues: []awssqs.IQueue{q.Queue}})
	a, _ := json.Marshal(stack.Resolve(arn))
	b, _ := json.Marshal(stack.Resolve(f.StreamArn))
	require.JSONEq(t, string(a), string(b))
	tpl := synth(t, stack)
	_, body := tpl.Only(t, "AWS::DynamoDB::Table")
	require.Equal(t, "NEW_IMAGE", get(body, "Properties.StreamSpecification.StreamViewType"))
}

// A Source that names only the module builds jobkit's own forwarder (cmd/jobkit-outbox) by import
// path from it; GrantWriter lets a producer put outbox items, and no other item, in the table.
func TestOutboxForwarderTurnkey(t *testing.T) {
	app, stack := newStack(t)
	table := NewIdempotencyTable(stack, "State", nil)
	q := NewJobQueue(stack, "Q", nil)
	f := NewOutboxForwarder(stack, "Outbox", &OutboxForwarderProps{Source: GoSource{ModuleDir: helloSource.ModuleDir}, Table: table, Queues: []awssqs.IQueue{q.Queue}})
	producer := awsiam.NewRole(stack, jsii.String("Producer"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	f.GrantWriter(producer)
	requireNoNagErrors(t, app, stack)
	tpl := synth(t, stack)
	_, fn := tpl.Only(t, "AWS::Lambda::Function")
	require.Equal(t, OutboxPackage, get(fn, "Metadata."+SourceMetadataKey))
	_, esm := tpl.Only(t, "AWS::Lambda::EventSourceMapping")
	require.Equal(t, float64(6*3600), props(esm)["MaximumRecordAgeInSeconds"], "a failing batch is retried 6 h by default (docs/sending.md)")
	tableID, _ := tpl.Only(t, "AWS::DynamoDB::Table")
	writes := map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"outbox#*"}}}
	require.Equal(t, set(OutboxWriteActions...), tpl.RoleGrants(logicalID(stack, producer))[key(getAtt(tableID, "Arn"), writes)])
	require.Len(t, tpl.RoleGrants(logicalID(stack, producer)), 1, "nothing else")
}

func TestOutboxForwarderRejectsBadProps(t *testing.T) {
	_, stack := newStack(t)
	table := NewIdempotencyTable(stack, "State", nil)
	q := NewJobQueue(stack, "Q", nil)
	qs := []awssqs.IQueue{q.Queue}
	cases := map[string]struct {
		props OutboxForwarderProps
		want  string
	}{
		"no table":   {OutboxForwarderProps{Source: helloSource, Queues: qs}, "Table is required"},
		"no queues":  {OutboxForwarderProps{Source: helloSource, Table: table}, "Queues is empty"},
		"no source":  {OutboxForwarderProps{Table: table, Queues: qs}, "Source.ModuleDir (or Code) is required"},
		"batch":      {OutboxForwarderProps{Source: helloSource, Table: table, Queues: qs, BatchSize: 10001}, "BatchSize"},
		"record age": {OutboxForwarderProps{Source: helloSource, Table: table, Queues: qs, MaxRecordAge: 30 * time.Second}, "MaxRecordAge"},
		"window":     {OutboxForwarderProps{Source: helloSource, Table: table, Queues: qs, MaxBatchingWindow: 1500 * time.Millisecond}, "MaxBatchingWindow"},
		"timeout":    {OutboxForwarderProps{Source: helloSource, Table: table, Queues: qs, Timeout: 16 * time.Minute}, "Timeout"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.Contains(t, configReason(t, func() { NewOutboxForwarder(stack, "F", &tc.props) }), tc.want)
		})
	}
}

// The filter and the grant name outbox items as package outbox does.
func TestOutboxNamesPinned(t *testing.T) {
	require.Equal(t, "outbox#", outbox.KeyPrefix)
	require.Equal(t, IdempotencyKeyAttribute, outbox.AttrID)
	require.Equal(t, IdempotencyTTLAttribute, outbox.AttrExpiration)
}
