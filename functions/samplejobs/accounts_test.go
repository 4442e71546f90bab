package samplejobs_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/outbox"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Opening an account writes the account and its welcome email's outbox item together; opening
// it again writes neither, and says why.
func TestOpenAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := awstest.Config(t)
	stateTable := awstest.CreateTable(t, cfg, "state", "id", "")
	ledgerTable := awstest.CreateTable(t, cfg, "ledger", samplejobs.LedgerAccountAttr, "")
	db := dynamodb.NewFromConfig(cfg)
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{Queues: map[string]string{samplejobs.KindSendEmail: "https://sqs.example/emails"}})
	require.NoError(t, err)
	ob, err := outbox.New(outbox.Config{Table: stateTable, Client: client})
	require.NoError(t, err)

	id, err := samplejobs.OpenAccount(ctx, ob, db, ledgerTable, "acct-7", "ada@example.com")
	require.NoError(t, err)
	get := func(table, key string, v string) map[string]types.AttributeValue {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{key: &types.AttributeValueMemberS{Value: v}}})
		require.NoError(t, err)
		return out.Item
	}
	require.NotNil(t, get(ledgerTable, samplejobs.LedgerAccountAttr, "acct-7"), "the account")
	item := get(stateTable, outbox.AttrID, outbox.KeyPrefix+id)
	require.NotNil(t, item, "its welcome email, in the outbox")
	var env jobs.Envelope
	require.NoError(t, json.Unmarshal([]byte(item[outbox.AttrBody].(*types.AttributeValueMemberS).Value), &env))
	require.Equal(t, samplejobs.KindSendEmail, env.Kind)
	require.Equal(t, "https://sqs.example/emails", item[outbox.AttrQueueURL].(*types.AttributeValueMemberS).Value)

	_, err = samplejobs.OpenAccount(ctx, ob, db, ledgerTable, "acct-7", "ada@example.com")
	var exists *samplejobs.AccountExistsError
	require.ErrorAs(t, err, &exists)
	require.Equal(t, "acct-7", exists.Account)
	scan, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(stateTable), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Len(t, scan.Items, 1, "no second welcome email")
}
