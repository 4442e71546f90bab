package inspect_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// moveCounter passes every call to SQS and counts the move tasks started.
type moveCounter struct {
	inspect.SQSAPI
	starts atomic.Int32
}

func (m *moveCounter) StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	m.starts.Add(1)
	return m.SQSAPI.StartMessageMoveTask(ctx, in, optFns...)
}

// A FIFO job that SQS's RedrivePolicy moved to the DLQ, redriven within 5 minutes of its enqueue
// (the producer's deduplication id, the job id, still counts in the source queue): a native move
// would send it with a deduplication id SQS may drop it for (LocalStack does: the task counts it
// moved, the queue never receives it). RedriveNative is refused before anything moves; RedriveAuto
// moves it by hand with a deduplication id of its own, and the job arrives.
func TestRedriveFIFOJobMovedByTheRedrivePolicy(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", &awstest.QueueOptions{FIFO: true, MaxReceiveCount: 1, VisibilityTimeout: 1})
	// Enqueued as the producer does it: the job id is the deduplication id.
	enqueued := time.Now()
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src.URL), MessageBody: aws.String(envelopeBody("job-1", "ledger.post", nil)),
		MessageGroupId: aws.String("g1"), MessageDeduplicationId: aws.String("job-1")})
	require.NoError(t, err)
	awstest.DeadLetterByPolicy(t, cfg, src, dlq, 1)

	counter := &moveCounter{SQSAPI: client}
	in := inspect.New(cfg, func(o *inspect.Options) { o.SQS = counter })
	// Read back, it is known for what it is: moved by the RedrivePolicy, at a time no attribute gives.
	list := listDead(t, in, client, dlq.URL, nil, 1)
	require.Len(t, list.Jobs, 1)
	dead := list.Jobs[0]
	require.True(t, dead.ByRedrivePolicy())
	require.Equal(t, "job-1", dead.JobID)
	require.True(t, dead.DeadLetteredAt.IsZero())
	require.False(t, dead.SentAt.IsZero())
	require.Contains(t, dead.Hint(), "maxReceiveCount")

	_, err = in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveNative})
	require.ErrorIs(t, err, inspect.ErrNativeFIFO)
	require.Zero(t, counter.starts.Load(), "no move task started")
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 1, v+f, "nothing moved")

	res, err := in.Redrive(ctx, dlq.URL, nil)
	require.NoError(t, err)
	require.Less(t, time.Since(enqueued), 5*time.Minute, "redriven inside the deduplication window")
	require.Equal(t, inspect.RedriveManual, res.Method)
	require.Contains(t, res.FallbackReason, "deduplication id")
	require.Zero(t, counter.starts.Load())
	require.Equal(t, int64(1), res.Moved)
	require.Zero(t, res.Remaining)
	require.Empty(t, res.RemainingReason)

	got := drain(t, client, src.URL)
	require.Len(t, got, 1, "the job arrives in its queue")
	require.Equal(t, "job-1", got[0].Env.ID)
	require.Equal(t, "g1", got[0].GroupID)
	require.Equal(t, inspect.RedriveDeduplicationID("job-1", dead.MessageID), got[0].DedupID)
	v, f = awstest.Counts(t, client, dlq.URL)
	require.Zero(t, v+f, "the DLQ is empty")
}

// A Standard queue's job that the RedrivePolicy moved goes back by a native move where the
// endpoint has one (AWS, LocalStack; moto falls back to the manual move), and the result says
// nothing is left in the DLQ.
func TestRedriveStandardChecksTheDLQAfterwards(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", &awstest.QueueOptions{MaxReceiveCount: 1, VisibilityTimeout: 1})
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src.URL), MessageBody: aws.String(envelopeBody("job-1", "email.send", nil))})
	require.NoError(t, err)
	awstest.DeadLetterByPolicy(t, cfg, src, dlq, 1)

	res, err := inspect.New(cfg).Redrive(ctx, dlq.URL, &inspect.RedriveOptions{PollInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	if awstest.HasMessageMoveTasks(t) {
		require.Equal(t, inspect.RedriveNative, res.Method)
		require.NotEmpty(t, res.TaskHandle)
	} else {
		require.Equal(t, inspect.RedriveManual, res.Method)
		require.Contains(t, res.FallbackReason, "StartMessageMoveTask")
	}
	require.Equal(t, int64(1), res.Moved)
	require.Zero(t, res.Remaining)
	require.Empty(t, res.RemainingReason)
	got := drain(t, client, src.URL)
	require.Len(t, got, 1+int(res.PossibleDuplicates))
	require.Equal(t, "job-1", got[0].Env.ID)
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Zero(t, v+f)
}

// A message another reader holds while the redrive runs is not moved; the result counts it as
// still in the DLQ and says why.
func TestRedriveReportsWhatStaysInTheDLQ(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	seedDead(t, client, dlq.URL, []deadSpec{
		{ID: "a", Kind: "k", Reason: contract.ReasonCancelled, Source: src.URL},
		{ID: "b", Kind: "k", Reason: contract.ReasonCancelled, Source: src.URL},
	})
	held, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), MaxNumberOfMessages: 1, VisibilityTimeout: 120, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, held.Messages, 1)

	method := inspect.RedriveManual
	if awstest.HasMessageMoveTasks(t) {
		method = inspect.RedriveNative
	}
	res, err := inspect.New(cfg).Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: method, InFlightWait: -1, PollInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, int64(v+f), res.Remaining, "the DLQ's depth after the move")
	require.Equal(t, int64(2), res.Moved+res.Remaining)
	if method == inspect.RedriveNative {
		if res.Remaining > 0 {
			require.Contains(t, res.RemainingReason, "in flight")
		}
	} else {
		// The manual move counts the held message itself: nothing is left unexplained.
		require.Equal(t, int64(1), res.LeftInFlight)
		require.Equal(t, int64(1), res.Remaining)
		require.Empty(t, res.RemainingReason)
	}
	require.Len(t, drain(t, client, src.URL), int(res.Moved+res.PossibleDuplicates))
}
