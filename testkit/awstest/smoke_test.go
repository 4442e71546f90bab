package awstest_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A Standard queue with a redrive DLQ (maxReceiveCount 2) moves a message to the DLQ after it has
// been received twice without being deleted.
func TestSmokeRedriveToDLQ(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	q, dlq := awstest.QueueWithDLQ(t, cfg, "main", &awstest.QueueOptions{MaxReceiveCount: 2})

	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("poison")})
	require.NoError(t, err)

	for i := 1; i <= 2; i++ {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.URL), WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
		})
		require.NoError(t, err)
		require.Len(t, out.Messages, 1, "receive %d", i)
		require.Equal(t, strconv.Itoa(i), out.Messages[0].Attributes["ApproximateReceiveCount"])
		// Hand it back at once, as a failed attempt does.
		_, err = client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(q.URL), ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0,
		})
		require.NoError(t, err)
	}
	// The third receive finds the receive count used up: the message moves to the DLQ.
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Empty(t, out.Messages)

	dead, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, dead.Messages, 1)
	require.Equal(t, "poison", aws.ToString(dead.Messages[0].Body))
}

// A FIFO queue hands out a message group strictly in order, one in-flight batch at a time.
func TestSmokeFIFOGroupOrder(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	q := awstest.CreateQueue(t, cfg, "fifo", &awstest.QueueOptions{FIFO: true})

	for _, g := range []string{"a", "b"} {
		for i := range 5 {
			_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl: aws.String(q.URL), MessageBody: aws.String(g + strconv.Itoa(i)),
				MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(g + strconv.Itoa(i)),
			})
			require.NoError(t, err)
		}
	}
	got := map[string][]string{}
	for range 20 {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 3,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			g := m.Attributes["MessageGroupId"]
			got[g] = append(got[g], aws.ToString(m.Body))
			_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
	require.Equal(t, []string{"a0", "a1", "a2", "a3", "a4"}, got["a"])
	require.Equal(t, []string{"b0", "b1", "b2", "b3", "b4"}, got["b"])
}

// A conditional put on an existing key fails with the typed ConditionalCheckFailedException and
// carries the old item when asked for it.
func TestSmokeDynamoDBConditionalPut(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	client := dynamodb.NewFromConfig(cfg)
	table := awstest.CreateTable(t, cfg, "ddb", "id", "")

	put := func() error {
		_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(table),
			Item:                                map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "k1"}},
			ConditionExpression:                 aws.String("attribute_not_exists(id)"),
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	}
	require.NoError(t, put())
	err := put()
	var ccf *ddbtypes.ConditionalCheckFailedException
	require.True(t, errors.As(err, &ccf), "want ConditionalCheckFailedException, got %v", err)
	require.Equal(t, &ddbtypes.AttributeValueMemberS{Value: "k1"}, ccf.Item["id"])
}

// The capability probes answer on every endpoint and agree with the emulator they name.
func TestCapabilities(t *testing.T) {
	t.Parallel()
	awstest.Config(t)
	acct := awstest.Account(t)
	require.Regexp(t, `^\d{12}$`, acct)
	move, cw := awstest.HasMessageMoveTasks(t), awstest.HasCloudWatch(t)
	t.Logf("emulator %q: account %s, message move tasks %v, CloudWatch %v", awstest.Emulator(), acct, move, cw)
	switch awstest.Emulator() {
	case awstest.EmulatorMoto:
		require.False(t, move)
		require.True(t, cw, "moto serves CloudWatch over its Query protocol (inspect.NewCloudWatch)")
	case awstest.EmulatorLocalStack:
		require.Equal(t, "000000000000", acct)
		require.True(t, move)
		require.True(t, cw)
	}
}
