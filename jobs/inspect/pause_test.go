package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A queue's pause is its tag and its event source mappings disabled; resuming undoes both; each
// call says whether it changed anything, and Stats shows the state.
func TestSetQueuePaused(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t)
	q := awstest.CreateQueue(t, cfg, "paused", nil)
	other := awstest.CreateQueue(t, cfg, "other", nil)
	uuid := awstest.EventSourceMapping(t, cfg, q, true)
	offBefore := awstest.EventSourceMapping(t, cfg, q, false) // disabled before the pause: stays so
	otherUUID := awstest.EventSourceMapping(t, cfg, other, true)
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	in := inspect.New(cfg, func(o *inspect.Options) { o.Now = func() time.Time { return now } })
	lam := lambda.NewFromConfig(cfg)
	mappingState := func(id string) string {
		got, err := lam.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(id)})
		require.NoError(t, err)
		return aws.ToString(got.State)
	}

	res, err := in.SetQueuePaused(ctx, q.URL, true)
	require.NoError(t, err)
	require.Equal(t, inspect.QueuePause{Changed: true, Mappings: []string{uuid}}, res)
	require.Contains(t, []string{"Disabled", "Disabling"}, mappingState(uuid))
	require.Contains(t, []string{"Enabled", "Enabling", "Creating"}, mappingState(otherUUID), "another queue's mapping is left alone")
	tags, err := sqs.NewFromConfig(cfg).ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(q.URL)})
	require.NoError(t, err)
	require.Equal(t, "2026-11-28T09:30:00Z", tags.Tags[contract.TagPaused])
	require.Equal(t, uuid, tags.Tags[contract.TagPausedMappings], "the mapping it disabled, to enable on resume")
	since, paused, err := in.QueuePaused(ctx, q.URL)
	require.NoError(t, err)
	require.True(t, paused)
	require.Equal(t, now, since)

	again, err := in.SetQueuePaused(ctx, q.URL, true)
	require.NoError(t, err)
	require.Equal(t, inspect.QueuePause{}, again, "a second pause changes nothing")

	rep, err := in.Stats(ctx, []inspect.Queue{{Name: "paused", URL: q.URL}, {Name: "other", URL: other.URL}}, &inspect.StatsOptions{Age: inspect.AgeOff})
	require.NoError(t, err)
	require.True(t, rep.Queues[0].Paused)
	require.Equal(t, now, rep.Queues[0].PausedSince)
	require.False(t, rep.Queues[1].Paused)

	res, err = in.SetQueuePaused(ctx, q.URL, false)
	require.NoError(t, err)
	require.Equal(t, inspect.QueuePause{Changed: true, Mappings: []string{uuid}}, res)
	require.Contains(t, []string{"Enabled", "Enabling"}, mappingState(uuid))
	require.Contains(t, []string{"Disabled", "Disabling"}, mappingState(offBefore), "a mapping disabled before the pause stays disabled")
	tags, err = sqs.NewFromConfig(cfg).ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(q.URL)})
	require.NoError(t, err)
	require.Empty(t, tags.Tags)
	_, paused, err = in.QueuePaused(ctx, q.URL)
	require.NoError(t, err)
	require.False(t, paused)
	again, err = in.SetQueuePaused(ctx, q.URL, false)
	require.NoError(t, err)
	require.Equal(t, inspect.QueuePause{}, again, "a second resume changes nothing")
}
