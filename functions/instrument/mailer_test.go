package instrument_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type countMailer struct{ sent []string }

func (c *countMailer) Send(_ context.Context, msg samplejobs.Email) error {
	c.sent = append(c.sent, msg.IdempotencyKey)
	return nil
}

// The stand-in provider delivers each idempotency key once, however often it is asked, and a
// message without a key every time.
func TestKeyedMailerDeliversAKeyOnceOnDynamoDB(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	var next countMailer
	m := instrument.KeyedMailer{DB: dynamodb.NewFromConfig(cfg), Table: awstest.CreateTable(t, cfg, "mail", "id", ""), Next: &next}
	ctx := context.Background()
	for _, key := range []string{"a", "b", "a", "", "a", ""} {
		require.NoError(t, m.Send(ctx, samplejobs.Email{To: "x@example.com", IdempotencyKey: key}))
	}
	require.Equal(t, []string{"a", "b", "", ""}, next.sent)

	// An acceptance whose answer was lost: the key is there, not yet delivered. The retry
	// delivers it, once.
	db := dynamodb.NewFromConfig(cfg)
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(m.Table), Item: map[string]types.AttributeValue{
		instrument.EffectsIDAttr: &types.AttributeValueMemberS{Value: instrument.MailKeyPrefix + "lost"},
	}})
	require.NoError(t, err)
	require.NoError(t, m.Send(ctx, samplejobs.Email{IdempotencyKey: "lost"}))
	require.NoError(t, m.Send(ctx, samplejobs.Email{IdempotencyKey: "lost"}))
	require.Equal(t, []string{"a", "b", "", "", "lost"}, next.sent)
}
