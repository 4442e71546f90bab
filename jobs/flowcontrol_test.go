package jobs_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// countingSQS passes every call to the endpoint's SQS and counts GetQueueAttributes.
type countingSQS struct {
	*sqs.Client
	attrs atomic.Int32
}

func (c *countingSQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c.attrs.Add(1)
	return c.Client.GetQueueAttributes(ctx, in, optFns...)
}

// On SQS: a queue whose backlog reached MaxBacklog refuses enqueues with an *OverloadedError and
// sends nothing; its backlog is read once per Refresh however many enqueues ask; another queue
// with room (its own limit) takes jobs; once the backlog drains, the next reading admits again.
func TestBackpressureRefusesAnOverloadedQueueOnSQS(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	client := &countingSQS{Client: sqs.NewFromConfig(cfg)}
	full := awstest.CreateQueue(t, cfg, "full", nil)
	roomy := awstest.CreateQueue(t, cfg, "roomy", nil)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c, err := jobs.NewClient(client, jobs.ClientOptions{
		DefaultQueueURL: full.URL,
		Now:             func() time.Time { return now },
		Backpressure: &jobs.Backpressure{
			API: client, MaxBacklog: 3, MaxBacklogs: map[string]int{roomy.URL: 100}, Refresh: 10 * time.Second,
		},
	})
	require.NoError(t, err)
	ctx := context.Background()
	for i := range 3 {
		_, err := c.Enqueue(ctx, SendEmail{To: "a@example.com"}, nil)
		require.NoError(t, err, "job %d", i) // the first reading (0) holds for Refresh
	}
	require.Equal(t, int32(1), client.attrs.Load())

	now = now.Add(10 * time.Second) // the reading expires: 3 waiting
	for range 5 {
		_, err = c.Enqueue(ctx, SendEmail{To: "b@example.com"}, nil)
		require.Error(t, err)
	}
	assert.Equal(t, int32(2), client.attrs.Load(), "one reading for five refusals")
	require.ErrorIs(t, err, jobs.ErrOverloaded)
	var over *jobs.OverloadedError
	require.ErrorAs(t, err, &over)
	assert.Equal(t, jobs.OverloadedError{QueueURL: full.URL, Backlog: 3, MaxBacklog: 3, RetryAfter: 10 * time.Second}, *over)

	results, err := c.EnqueueBatch(ctx, []jobs.BatchJob{
		{Args: SendEmail{To: "c@example.com"}},
		{Args: SendEmail{To: "d@example.com"}, Opts: &jobs.EnqueueOpts{Queue: roomy.URL}},
	})
	require.Error(t, err)
	assert.ErrorIs(t, results[0].Err, jobs.ErrOverloaded)
	assert.NoError(t, results[1].Err, "the other queue has room")

	depth := func(url string) int {
		out, err := client.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
		require.NoError(t, err)
		n, err := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 3, depth(full.URL), "refused jobs were not sent")
	assert.Equal(t, 1, depth(roomy.URL))

	// Workers take two jobs; after Refresh the backlog (1) admits again.
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(full.URL), MaxNumberOfMessages: 2, WaitTimeSeconds: 1})
	require.NoError(t, err)
	for _, m := range got.Messages {
		_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(full.URL), ReceiptHandle: m.ReceiptHandle})
		require.NoError(t, err)
	}
	require.Len(t, got.Messages, 2)
	now = now.Add(10 * time.Second)
	_, err = c.Enqueue(ctx, SendEmail{To: "e@example.com"}, nil)
	assert.NoError(t, err)
}

// EnqueueOpts.Priority routes a job to a lane of its queue; a priority the queue has no lane for
// is invalid input, refused before any call.
func TestPriorityRoutesToTheLane(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	const base, critical, bulk = "https://sqs.us-east-1.amazonaws.com/1/jobs", "https://sqs.us-east-1.amazonaws.com/1/jobs-critical", "https://sqs.us-east-1.amazonaws.com/1/jobs-bulk"
	c, err := jobs.NewClient(rec, jobs.ClientOptions{
		DefaultQueueURL: base,
		Lanes:           map[string]map[string]string{base: {"critical": critical, "bulk": bulk}},
	})
	require.NoError(t, err)
	ctx := context.Background()
	for prio, want := range map[string]string{"": base, "critical": critical, "bulk": bulk} {
		res, err := c.Enqueue(ctx, SendEmail{To: "a@example.com"}, &jobs.EnqueueOpts{Priority: prio})
		require.NoError(t, err)
		assert.Equal(t, want, res.QueueURL, "priority %q", prio)
	}
	require.Len(t, rec.Sent(), 3)
	_, err = c.Enqueue(ctx, SendEmail{To: "a@example.com"}, &jobs.EnqueueOpts{Priority: "urgent"})
	var invalid *jobs.InvalidJobError
	require.ErrorAs(t, err, &invalid)
	assert.True(t, errors.Is(err, jobs.ErrUnknownPriority))
	assert.Len(t, rec.Sent(), 3, "nothing sent")
}

func TestBackpressureNeedsItsSettings(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	for _, bp := range []*jobs.Backpressure{{MaxBacklog: 1}, {API: &countingSQS{}}, {API: &countingSQS{}, MaxBacklog: 1, MaxBacklogs: map[string]int{"q": 0}}} {
		_, err := jobs.NewClient(rec, jobs.ClientOptions{DefaultQueueURL: "q", Backpressure: bp})
		assert.Error(t, err)
	}
}
