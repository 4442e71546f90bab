package constructs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/outbox"
)

// Defaults of OutboxForwarderProps.
const (
	DefaultOutboxBatchSize     = 100 // Lambda's default for a DynamoDB stream
	DefaultOutboxTimeout       = 30 * time.Second
	DefaultOutboxMaxRecordAge  = 6 * time.Hour
	DefaultIteratorAgeAlarmAge = 5 * time.Minute
)

// OutboxStreamViewType is the stream view the forwarder reads: the new image holds the outbox
// item (package outbox); nothing else is needed.
const OutboxStreamViewType = "NEW_IMAGE"

// OutboxStreamActions are the stream actions the event source mapping needs on the state table's
// stream (its ARN only, as AWS's own example policy grants them).
var OutboxStreamActions = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}

// OutboxDeleteActions are what the forwarder calls on the state table: BatchWriteItem deletes of
// the items it sent, on the "outbox#" items only. (IAM cannot tell a batch's deletes from its
// puts; a put of an outbox item would let the role send a job to the queues it may send to
// anyway, so the batch call grants nothing more.)
var OutboxDeleteActions = []string{"dynamodb:BatchWriteItem"}

// OutboxForwarderProps configures an OutboxForwarder. Table, Queues and Source.ModuleDir (or
// Code) are required.
type OutboxForwarderProps struct {
	// Source is the forwarder's Go main package, built at synth (see GoSource). With no Package
	// it is jobkit's own, OutboxPackage (cmd/jobkit-outbox), built by import path from the
	// service's module at ModuleDir, which lists it as a tool: nothing to write.
	Source GoSource
	// Code replaces the build of Source with ready-made code; Source.Package still names it.
	Code awslambda.Code

	// Table is the jobkit state table that holds the outbox items. The construct turns on its
	// stream (NEW_IMAGE) if it has none.
	Table *IdempotencyTable
	// Queues are the queues outbox jobs may go to: the forwarder may send to these and no other.
	// A job written for another queue fails its send and stays in the table (see the package
	// documentation of jobs/outbox).
	Queues []awssqs.IQueue

	// BatchSize is the most stream records per invocation, 1-10000. Default DefaultOutboxBatchSize.
	BatchSize int
	// MaxBatchingWindow gathers records for up to this long before invoking (whole seconds, at
	// most 5 minutes). Default none: an outbox job is sent as soon as it is written.
	MaxBatchingWindow time.Duration
	// MaxRecordAge is how long a failing record is retried before its batch is given up and
	// described in the DLQ (60 s to 7 days; the stream keeps records 24 hours). The outbox items
	// stay in the table (until their TTL, outbox.DefaultRetention) for a replay. Default
	// DefaultOutboxMaxRecordAge.
	MaxRecordAge time.Duration

	// Timeout of the function. Default DefaultOutboxTimeout.
	Timeout time.Duration
	// MemorySize in MB. Default DefaultMemorySize.
	MemorySize int
	// LogRetention of the function's log group. Default DefaultLogRetention.
	LogRetention awslogs.RetentionDays

	// IteratorAgeAlarmThreshold: the alarm fires when the oldest record waiting in the stream is
	// older than this (jobs written but not sent). Default DefaultIteratorAgeAlarmAge.
	IteratorAgeAlarmThreshold time.Duration
	// AlarmActions are added to the three alarms. Optional.
	AlarmActions []awscloudwatch.IAlarmAction
}

// OutboxForwarder is the transactional outbox's forwarder (package jobs/outbox): a Go Lambda
// function on the jobkit state table's DynamoDB stream that sends each new outbox item as an SQS
// message and deletes it.
//
// The stream's event source mapping starts at TRIM_HORIZON (no item written before the function
// existed is missed), reports partial batch failures (the forwarder names the first record it
// could not send; the batch is retried from there), invokes the function only for INSERTs of
// "outbox#" items (a filter: the table's other writes, idempotency records and job states,
// never invoke it), reads each shard with one invocation at a time (parallelization factor 1,
// so a shard's jobs go in order), and after MaxRecordAge of failures gives the batch up to an
// encrypted, TLS-only SQS dead-letter queue (its stream coordinates; the items stay in the table).
// No bisecting: the partial batch response already says where the batch failed.
//
// Grants: the four stream actions on the table's stream ARN, BatchWriteItem on the table's
// "outbox#" items only, SendMessage on Queues and on its DLQ, and its own log group.
// Alarms: function errors, iterator age, and any message in the DLQ.
type OutboxForwarder struct {
	constructs.Construct

	Function awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
	Mapping  awslambda.EventSourceMapping
	// StreamArn is the state table's stream.
	StreamArn *string
	// DLQ receives the stream coordinates of batches given up after MaxRecordAge.
	DLQ awssqs.Queue

	ErrorsAlarm, IteratorAgeAlarm, DLQDepthAlarm awscloudwatch.Alarm

	table *IdempotencyTable // the state table holding the outbox items
}

// NewOutboxForwarder defines an OutboxForwarder. It panics with a *ConfigError on props that
// cannot deploy.
func NewOutboxForwarder(scope constructs.Construct, id string, props *OutboxForwarderProps) *OutboxForwarder {
	p, where := settle(scope, id, props)
	c := constructs.NewConstruct(scope, jsii.String(id))
	f := &OutboxForwarder{Construct: c, StreamArn: p.Table.EnableStream(), table: p.Table}

	f.LogGroup = awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{Retention: p.LogRetention})
	f.Role = awsiam.NewRole(c, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("jobkit outbox forwarder " + where),
	})
	f.LogGroup.GrantWrite(f.Role)
	f.Function = f.newFunction(p)
	f.grant(p)
	f.DLQ = awssqs.NewQueue(c, jsii.String("DLQ"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: cdkDuration(DLQRetentionPeriod),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(f.DLQ, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SQS3"),
		Reason: jsii.String("the outbox forwarder's on-failure destination: Lambda sends the stream coordinates of batches it gave up to it directly, not through a redrive policy"),
	}}, nil)
	f.Mapping = awslambda.NewEventSourceMapping(c, jsii.String("Stream"), &awslambda.EventSourceMappingProps{
		Target:                  f.Function,
		EventSourceArn:          f.StreamArn,
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(p.BatchSize),
		MaxBatchingWindow:       optionalDuration(p.MaxBatchingWindow),
		ReportBatchItemFailures: jsii.Bool(true),
		BisectBatchOnError:      jsii.Bool(false),
		ParallelizationFactor:   jsii.Number(1),
		MaxRecordAge:            cdkDuration(p.MaxRecordAge),
		OnFailure:               awslambdaeventsources.NewSqsDlq(f.DLQ),
		Filters:                 &[]*map[string]any{OutboxStreamFilter()},
	})
	f.addAlarms(p)
	return f
}

// OutboxStreamFilter is the event filter of the forwarder's mapping: INSERTs of items whose key
// starts with outbox.KeyPrefix.
func OutboxStreamFilter() *map[string]any {
	pattern, err := json.Marshal(map[string]any{
		"eventName": []any{"INSERT"},
		"dynamodb": map[string]any{"Keys": map[string]any{
			outbox.AttrID: map[string]any{"S": []any{map[string]any{"prefix": outbox.KeyPrefix}}},
		}},
	})
	if err != nil {
		panic(err)
	}
	return &map[string]any{"pattern": string(pattern)}
}

// EnableStream turns on the table's DynamoDB stream with new images (OutboxStreamViewType) if it
// has none, and returns the stream's ARN.
func (t *IdempotencyTable) EnableStream() *string {
	cfn := t.Table.Node().DefaultChild().(awsdynamodb.CfnTable)
	if cfn.StreamSpecification() == nil {
		cfn.SetStreamSpecification(&awsdynamodb.CfnTable_StreamSpecificationProperty{
			StreamViewType: jsii.String(OutboxStreamViewType),
		})
	}
	return cfn.AttrStreamArn()
}

// newFunction defines the forwarder's function (provided.al2023, arm64, JSON logs) and names its
// Go source in its metadata, as a Worker's.
func (f *OutboxForwarder) newFunction(p OutboxForwarderProps) awslambda.Function {
	return newGoFunction(f.Construct, goFunction{
		source: p.Source, code: p.Code, description: "jobkit outbox forwarder " + p.Source.Package,
		timeout: p.Timeout, memoryMB: p.MemorySize, role: f.Role, logGroup: f.LogGroup,
		env: map[string]*string{contract.EnvIdempotencyTable: p.Table.Table.TableName(), outbox.EnvQueues: queueURLs(p.Queues)},
	})
}

// queueURLs joins the queues' URLs with spaces (outbox.EnvQueues): the forwarder's allow-list.
func queueURLs(queues []awssqs.IQueue) *string {
	urls := make([]*string, len(queues))
	for i, q := range queues {
		urls[i] = q.QueueUrl()
	}
	return awscdk.Fn_Join(jsii.String(" "), &urls)
}

// grant lets the role read the stream, delete outbox items and send to the queues.
func (f *OutboxForwarder) grant(p OutboxForwarderProps) {
	f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(OutboxStreamActions...),
		Resources: &[]*string{f.StreamArn},
	}))
	f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(OutboxDeleteActions...),
		Resources: jsii.Strings(*p.Table.Table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []any{outbox.KeyPrefix + "*"},
		}},
	}))
	for _, q := range p.Queues {
		q.GrantSendMessages(f.Role)
	}
}

// OutboxWriteActions are what a producer needs to write outbox items in its DynamoDB transactions
// (outbox.Put; a transaction's Put is a PutItem to IAM).
var OutboxWriteActions = []string{"dynamodb:PutItem"}

// GrantWriter lets role write outbox items — and no other item — into the state table, in its own
// DynamoDB transactions (package outbox): OutboxWriteActions on the table, for keys "outbox#…"
// only. Its business items are its own tables' grants.
func (f *OutboxForwarder) GrantWriter(role awsiam.IRole) {
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(OutboxWriteActions...),
		Resources: jsii.Strings(*f.table.Table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []any{outbox.KeyPrefix + "*"},
		}},
	}))
}

// addAlarms defines the errors, iterator age and DLQ depth alarms.
func (f *OutboxForwarder) addAlarms(p OutboxForwarderProps) {
	name := *f.Node().Id()
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	alarm := func(id, description string, metric awscloudwatch.IMetric, threshold float64) awscloudwatch.Alarm {
		return newAlarm(f.Construct, id, fmt.Sprintf("jobkit %s: %s", name, description), metric, threshold, p.AlarmActions)
	}
	f.ErrorsAlarm = alarm("ErrorsAlarm", "the outbox forwarder failed (its stream batches are retried)",
		f.Function.MetricErrors(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}), 0)
	f.IteratorAgeAlarm = alarm("IteratorAgeAlarm", fmt.Sprintf("outbox jobs have waited more than %s to be sent", p.IteratorAgeAlarmThreshold),
		f.Function.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}),
		float64(p.IteratorAgeAlarmThreshold.Milliseconds()))
	f.DLQDepthAlarm = alarm("DLQDepthAlarm", "stream batches were given up; their outbox items wait in the table for a replay",
		f.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}), 0)
}

// outboxWidgets is the dashboard row of the forwarders: invocations and errors, iterator age.
func outboxWidgets(fs []*OutboxForwarder) []awscloudwatch.IWidget {
	var calls, age []awscloudwatch.IMetric
	minutes5 := awscdk.Duration_Minutes(jsii.Number(5))
	for _, f := range fs {
		name := *f.Node().Id()
		calls = append(calls,
			f.Function.MetricInvocations(&awscloudwatch.MetricOptions{Label: jsii.String(name), Period: minutes5}),
			f.Function.MetricErrors(&awscloudwatch.MetricOptions{Label: jsii.String(name + " errors"), Period: minutes5}))
		age = append(age, f.Function.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
			Label: jsii.String(name), Statistic: jsii.String("Maximum"), Period: minutes5}))
	}
	return []awscloudwatch.IWidget{
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String("outbox: forwarder invocations and errors"), Width: jsii.Number(12), Left: &calls}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String("outbox: oldest unsent job (iterator age, ms)"), Width: jsii.Number(12), Left: &age}),
	}
}

func optionalDuration(d time.Duration) awscdk.Duration {
	if d == 0 {
		return nil
	}
	return cdkDuration(d)
}

func (p OutboxForwarderProps) withDefaults() OutboxForwarderProps {
	if p.Code == nil && p.Source.Package == "" && p.Source.ModuleDir != "" {
		p.Source.Package = OutboxPackage
	}
	p.BatchSize = cmp.Or(p.BatchSize, DefaultOutboxBatchSize)
	p.Timeout = cmp.Or(p.Timeout, DefaultOutboxTimeout)
	p.MemorySize = cmp.Or(p.MemorySize, DefaultMemorySize)
	p.MaxRecordAge = cmp.Or(p.MaxRecordAge, DefaultOutboxMaxRecordAge)
	p.LogRetention = cmp.Or(p.LogRetention, DefaultLogRetention)
	p.IteratorAgeAlarmThreshold = cmp.Or(p.IteratorAgeAlarmThreshold, DefaultIteratorAgeAlarmAge)
	return p
}

// check returns why the props (with defaults applied) cannot deploy, or "".
func (p OutboxForwarderProps) check() string {
	switch {
	case p.Table == nil:
		return "OutboxForwarderProps.Table is required"
	case len(p.Queues) == 0:
		return "OutboxForwarderProps.Queues is empty: the forwarder could send no job"
	case p.Code == nil && p.Source.Package == "":
		return "OutboxForwarderProps.Source.ModuleDir (or Code) is required"
	case p.Code == nil && p.Source.validate() != nil:
		return p.Source.validate().Error()
	case p.Timeout < time.Second || p.Timeout > 15*time.Minute || p.Timeout%time.Second != 0:
		return fmt.Sprintf("Timeout %s must be whole seconds between 1s and 15m", p.Timeout)
	case p.MemorySize < 128 || p.MemorySize > 10240:
		return fmt.Sprintf("MemorySize %d MB must be between 128 and 10240", p.MemorySize)
	case p.BatchSize < 1 || p.BatchSize > 10000:
		return fmt.Sprintf("BatchSize %d must be between 1 and 10000", p.BatchSize)
	case p.MaxBatchingWindow < 0 || p.MaxBatchingWindow > 5*time.Minute || p.MaxBatchingWindow%time.Second != 0:
		return fmt.Sprintf("MaxBatchingWindow %s must be whole seconds between 0 and 5m", p.MaxBatchingWindow)
	case p.MaxRecordAge < time.Minute || p.MaxRecordAge > 7*24*time.Hour || p.MaxRecordAge%time.Second != 0:
		return fmt.Sprintf("MaxRecordAge %s must be whole seconds between 1m and 7d", p.MaxRecordAge)
	case p.IteratorAgeAlarmThreshold < 0:
		return fmt.Sprintf("IteratorAgeAlarmThreshold %s must not be negative", p.IteratorAgeAlarmThreshold)
	}
	return ""
}
