package inspect_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type chargeCard struct {
	Cents int `json:"cents"`
}

func (chargeCard) Kind() string { return "card.charge" }

// End to end with the real producer and runtime: a job the worker cancels is dead-lettered by the
// runtime, read back by the Inspector with everything the runtime recorded, and redriven to its
// queue unchanged.
func TestRuntimeDeadLetterIsReadBackAndRedriven(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	q, dlq := awstest.QueueWithDLQ(t, cfg, "main", nil)

	producer, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL})
	require.NoError(t, err)
	enq, err := producer.Enqueue(ctx, chargeCard{Cents: 500}, nil)
	require.NoError(t, err)

	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[chargeCard](func(context.Context, *jobs.Job[chargeCard]) error {
		return jobs.Cancel(errors.New("card declined"))
	}))
	handler := jobs.NewLambdaHandler(workers, jobs.Config{
		QueueURL: q.URL, DLQURL: dlq.URL, SQS: client, FunctionName: "charge-worker",
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
	}).HandleSQS
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.URL), WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	original := aws.ToString(out.Messages[0].Body)
	resp, err := handler(ctx, jobstest.EventFromMessages(q.ARN, out.Messages))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "dead-lettered, so reported done")
	// The event source mapping deletes what the runtime reports done.
	_, err = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: out.Messages[0].ReceiptHandle})
	require.NoError(t, err)

	in := inspect.New(cfg)
	list, err := in.ListDead(ctx, dlq.URL, nil)
	require.NoError(t, err)
	require.Len(t, list.Jobs, 1)
	j := list.Jobs[0]
	require.Equal(t, enq.ID, j.JobID)
	require.Equal(t, "card.charge", j.Kind)
	require.Equal(t, contract.ReasonCancelled, j.Reason)
	require.Contains(t, j.Error, "card declined")
	require.Equal(t, 1, j.Attempts)
	require.Equal(t, "charge-worker", j.Function)
	require.Equal(t, q.URL, j.SourceQueue)
	require.Equal(t, aws.ToString(out.Messages[0].MessageId), j.SourceMessageID)
	require.False(t, j.FailedAt.IsZero())
	require.False(t, j.FirstReceivedAt.IsZero())
	require.False(t, j.FailedAt.Before(j.FirstReceivedAt))
	require.JSONEq(t, `{"cents":500}`, string(j.Envelope.Args))

	res, err := in.Redrive(ctx, dlq.URL, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.Moved)
	back := drain(t, client, q.URL)
	require.Len(t, back, 1+int(res.PossibleDuplicates))
	require.Equal(t, original, back[0].Body, "the job goes back unchanged")
	if res.Method == inspect.RedriveNative {
		// Where SQS has message move tasks (AWS, LocalStack; not moto), Redrive uses one, and a
		// move task keeps a message's attributes.
		require.Equal(t, enq.ID, aws.ToString(back[0].Attrs[contract.AttrJobID].StringValue), "SQS moves the message with its attributes")
	} else {
		require.Empty(t, back[0].Attrs, "without the dead-letter attributes")
	}
}
