package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// UntilDone never takes over a key whose holder has no recorded state: its producer reserves
// the key before it records the job, so "not found" may be a job on its way.
func TestUniqueUntilDoneKeepsAnUnrecordedHolder(t *testing.T) {
	t.Parallel()
	store := jobstest.NewStateStore()
	c, err := jobs.NewClient(jobstest.NewRecorder(), jobs.ClientOptions{DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/q", State: store})
	require.NoError(t, err)
	ctx := context.Background()
	now := time.Now()
	_, err = store.ReserveUnique(ctx, "card.charge", "order-1", "on-its-way", now.Add(time.Hour), now)
	require.NoError(t, err)
	res, err := c.Enqueue(ctx, chargeCard{Order: "order-1"}, &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: "order-1", Window: time.Hour, UntilDone: true}})
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	require.Equal(t, "on-its-way", res.ID)
}
