package deploy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/deploy/deploytest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// outboxPattern is the filter the OutboxForwarder construct sets (infra/constructs).
const outboxPattern = `{"eventName":["INSERT"],"dynamodb":{"Keys":{"id":{"S":[{"prefix":"outbox#"}]}}}}`

// withStream edits the test assembly as the OutboxForwarder construct would: the state table's
// stream on (new images), its ARN exported, and a mapping of the echo function on it.
func withStream(stack string, tpl map[string]any) {
	switch stack {
	case "JobkitState":
		props(tpl, "IdempotencyTable48612DF4")["StreamSpecification"] = map[string]any{"StreamViewType": "NEW_IMAGE"}
		tpl["Outputs"].(map[string]any)["ExportsOutputFnGetAttIdempotencyTableStreamArn"] = map[string]any{
			"Value":  map[string]any{"Fn::GetAtt": []any{"IdempotencyTable48612DF4", "StreamArn"}},
			"Export": map[string]any{"Name": "JobkitState:ExportsOutputFnGetAttIdempotencyTableStreamArn"},
		}
	case "JobkitWorkers":
		tpl["Resources"].(map[string]any)["OutboxStream1A2B3C4D"] = map[string]any{
			"Type": "AWS::Lambda::EventSourceMapping",
			"Properties": map[string]any{
				"EventSourceArn":            map[string]any{"Fn::ImportValue": "JobkitState:ExportsOutputFnGetAttIdempotencyTableStreamArn"},
				"FunctionName":              map[string]any{"Ref": "EchoFunction8D469E43"},
				"StartingPosition":          "TRIM_HORIZON",
				"BatchSize":                 50,
				"FunctionResponseTypes":     []any{"ReportBatchItemFailures"},
				"MaximumRecordAgeInSeconds": 3600,
				"ParallelizationFactor":     1,
				"FilterCriteria":            map[string]any{"Filters": []any{map[string]any{"Pattern": outboxPattern}}},
				"DestinationConfig": map[string]any{"OnFailure": map[string]any{
					"Destination": map[string]any{"Fn::ImportValue": "JobkitState:ExportsOutputFnGetAttEchoDLQ4B8B1D5EArnD1E2F3A4"},
				}},
			},
		}
	}
}

// A DynamoDB stream's mapping is read from the template with Lambda's defaults; the table's
// stream, which the emulator's CloudFormation creates, is the one the mapping names.
func TestDeployStreamMapping(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	d := deploytest.Deploy(t, cfg, &deploy.Options{
		CDKOut: deploytest.Assembly(t, "", withStream), Prefix: prefix(), ModuleDir: moduleDir, SkipBuild: true,
	})

	require.Len(t, d.Tables, 1)
	table := d.Tables[0]
	desc, err := dynamodb.NewFromConfig(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table.Name)})
	require.NoError(t, err)
	require.NotNil(t, desc.Table.StreamSpecification, "the emulator's CloudFormation turned the stream on")
	require.Equal(t, ddbtypes.StreamViewTypeNewImage, desc.Table.StreamSpecification.StreamViewType)

	require.Len(t, d.StreamMappings, 1)
	m := d.StreamMappings[0]
	dlq := d.Queue("EchoDLQ4B8B1D5E")
	require.Equal(t, deploy.StreamEventSourceMapping{
		Stack: d.Stacks[1].Name, LogicalID: "OutboxStream1A2B3C4D", UUID: m.UUID,
		Function: d.Functions[0].Name, StreamARN: aws.ToString(desc.Table.LatestStreamArn), Table: table.Name,
		BatchSize: 50, StartingPosition: "TRIM_HORIZON", ReportBatchItemFailures: true, MaximumRetryAttempts: -1,
		MaximumRecordAge: time.Hour, ParallelizationFactor: 1, Filters: []string{outboxPattern},
		OnFailureARN: dlq.ARN, OnFailureURL: dlq.URL, Enabled: true,
	}, m)
	require.Equal(t, []deploy.StreamEventSourceMapping{m}, d.StreamMappingsOf(d.Functions[0].Name))
	for _, s := range d.Skipped {
		require.NotEqual(t, "OutboxStream1A2B3C4D", s.LogicalID, "a stream mapping runs offline: %s", s.Reason)
	}
	require.True(t, strings.HasPrefix(m.StreamARN, table.ARN+"/stream/"))
}

// A stream mapping without a starting position cannot be created on AWS, nor here.
func TestDeployStreamMappingNeedsStartingPosition(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	d, err := deploy.Deploy(context.Background(), deploy.NewClients(cfg), &deploy.Options{
		CDKOut: deploytest.Assembly(t, "", func(stack string, tpl map[string]any) {
			withStream(stack, tpl)
			if stack == "JobkitWorkers" {
				delete(props(tpl, "OutboxStream1A2B3C4D"), "StartingPosition")
			}
		}), Prefix: prefix(), ModuleDir: moduleDir, SkipBuild: true,
	})
	if d != nil {
		t.Cleanup(func() { _ = d.Destroy(context.Background()) })
	}
	var ce *deploy.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "OutboxStream1A2B3C4D", ce.LogicalID)
	require.Contains(t, ce.Reason, "StartingPosition")
}
