package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The oldest job's age comes from CloudWatch's AWS/SQS ApproximateAgeOfOldestMessage, which the
// offline emulators publish as SQS does (every 10 s there, every minute on AWS): a job waiting in
// its queue shows its age, no message received to learn it.
func TestOldestAgeFromCloudWatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := awstest.Config(t)
	q := awstest.CreateQueue(t, cfg, "aged", nil)
	sent := time.Now()
	_, err := sqs.NewFromConfig(cfg).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(`{"v":1}`)})
	require.NoError(t, err)
	in := inspect.New(cfg)
	var got inspect.QueueStats
	require.Eventually(t, func() bool {
		rep, err := in.Stats(ctx, []inspect.Queue{{Name: "aged", URL: q.URL}}, &inspect.StatsOptions{Age: inspect.AgeCloudWatch})
		require.NoError(t, err)
		got = rep.Queues[0]
		return got.OldestAgeSource == inspect.AgeFromCloudWatch
	}, 45*time.Second, time.Second, "a datapoint within a few publishing rounds")
	require.LessOrEqual(t, got.OldestAge, time.Since(sent)+time.Second)
	require.Equal(t, int64(1), got.Visible, "the job is still there, never received")
	require.Equal(t, int64(0), got.InFlight)
}
