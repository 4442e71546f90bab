package faultproxy_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/awstest"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// Through the proxy, on the emulator: with 30% of requests throttled, every SQS and DynamoDB call
// still succeeds once (the SDK retries), the emulator holds exactly what was sent, and the
// counters match what happened.
func TestThroughProxyOnEmulator(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	queueURL := awstest.CreateQueue(t, cfg, "q", nil).URL
	table := awstest.CreateTable(t, cfg, "t", "id", "")

	p := start(t, aws.ToString(cfg.BaseEndpoint), &faultproxy.Options{ThrottleRate: 0.3, Seed: 3})
	pcfg := cfg.Copy()
	pcfg.BaseEndpoint = aws.String(p.URL())
	pcfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 20; o.MaxBackoff = 10e6 })
	}
	q, db := sqs.NewFromConfig(pcfg), dynamodb.NewFromConfig(pcfg)

	const n = 30
	for i := 0; i < n; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := range 10 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(strconv.Itoa(i + j))})
		}
		out, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, out.Failed)
	}
	seen := map[string]int{}
	for len(seen) < n {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, VisibilityTimeout: 300})
		require.NoError(t, err)
		for _, m := range out.Messages {
			seen[aws.ToString(m.Body)]++
		}
	}
	out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, VisibilityTimeout: 300})
	require.NoError(t, err)
	require.Empty(t, out.Messages, "each message sent exactly once")
	for body, c := range seen {
		require.Equal(t, 1, c, body)
	}

	put := func(id string) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		})
		return err
	}
	for i := range 20 {
		require.NoError(t, put("k"+strconv.Itoa(i)))
	}
	var ccf *ddbtypes.ConditionalCheckFailedException
	require.True(t, errors.As(put("k0"), &ccf), "the first put of k0 applied once, so a second fails its condition")

	st := p.Stats()
	send := st.APIs["SQS.SendMessageBatch"]
	require.EqualValues(t, 3, send.Forwarded)
	require.EqualValues(t, 30, send.Entries)
	recv := st.APIs["SQS.ReceiveMessage"]
	require.EqualValues(t, n, recv.Messages)
	require.GreaterOrEqual(t, recv.EmptyReceives, int64(1))
	name := queueURL[strings.LastIndexByte(queueURL, '/')+1:]
	require.Equal(t, recv, st.Queues[name].APIs["SQS.ReceiveMessage"], "the queue's own counters")
	require.Len(t, st.Queues, 1)
	puts := st.APIs["DynamoDB.PutItem"]
	require.EqualValues(t, 21, puts.Forwarded)
	require.EqualValues(t, 1, puts.Errors)
	require.Equal(t, 21.0, puts.WriteUnits, "a failed conditional write consumes its unit too")
	require.Positive(t, st.Total("").Throttled)
	require.Equal(t, st.Total("").Requests, st.Total("").Forwarded+st.Total("").Throttled)
}
