package constructs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/state"
)

func TestIdempotencyTable(t *testing.T) {
	_, stack := newStack(t)
	NewIdempotencyTable(stack, "Idempotency", nil)
	tpl := synth(t, stack)
	_, body := tpl.Only(t, "AWS::DynamoDB::Table")
	p := props(body)
	require.Equal(t, []any{map[string]any{"AttributeName": "id", "KeyType": "HASH"}}, p["KeySchema"])
	require.ElementsMatch(t, []any{
		map[string]any{"AttributeName": "id", "AttributeType": "S"},
		map[string]any{"AttributeName": contract.AttrListKey, "AttributeType": "S"},
		map[string]any{"AttributeName": contract.AttrListAt, "AttributeType": "N"},
	}, p["AttributeDefinitions"])
	// The index of jobs by queue and state (jobs/state Table.List), as the tests' tables have it.
	require.Equal(t, []any{map[string]any{
		"IndexName": contract.StateIndex,
		"KeySchema": []any{
			map[string]any{"AttributeName": contract.AttrListKey, "KeyType": "HASH"},
			map[string]any{"AttributeName": contract.AttrListAt, "KeyType": "RANGE"},
		},
		"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": []any{"kind"}},
	}}, p["GlobalSecondaryIndexes"])
	require.Equal(t, "PAY_PER_REQUEST", p["BillingMode"])
	require.Equal(t, map[string]any{"AttributeName": "expiration", "Enabled": true}, p["TimeToLiveSpecification"])
	require.Equal(t, true, get(p, "PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled"))
	require.NotContains(t, p, "TableName", "no fixed resource names")
	require.Equal(t, "Retain", body["DeletionPolicy"])
	require.Equal(t, "Retain", body["UpdateReplacePolicy"])
	require.Equal(t, true, get(p, "SSESpecification.SSEEnabled"), "encrypted with a KMS key (AWS-managed unless EncryptionKey is set; SSEEnabled without SSEType means KMS)")
	require.Contains(t, tpl["Outputs"], contract.OutputStateTable, "the CLI and the console find the table by this output")
}

func TestJobStateGrant(t *testing.T) {
	require.Equal(t, state.PrefixJob+"*", jobStatePrefix("job#"))
	require.Equal(t, state.PrefixBatch+"*", jobStatePrefix("batch#"))
}
