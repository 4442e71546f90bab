package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// keepDelayer is a LongDelayer that keeps the jobs it was given.
type keepDelayer struct{ jobs map[string]jobs.PreparedJob }

func (d *keepDelayer) ScheduleJob(_ context.Context, j jobs.PreparedJob) error {
	d.jobs[j.ID] = j
	return nil
}

func (d *keepDelayer) CancelJob(_ context.Context, id string) error {
	delete(d.jobs, id)
	return nil
}

// A job delayed beyond 15 minutes is recorded enqueued with its delivery time, and cancelled
// when CancelDelayed deletes its schedule; a unique key holds for it as for any job.
func TestStateOfDelayedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states, d := jobstest.NewStateStore(), &keepDelayer{jobs: map[string]jobs.PreparedJob{}}
	client, err := jobs.NewClient(jobstest.NewRecorder(), jobs.ClientOptions{
		DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", State: states, LongDelayer: d,
	})
	require.NoError(t, err)
	u := &jobs.UniqueOpts{Key: "k", Window: 3 * time.Hour}
	res, err := client.Enqueue(ctx, RebuildIndex{UserID: "1"}, &jobs.EnqueueOpts{Delay: 2 * time.Hour, Unique: u})
	require.NoError(t, err)
	require.True(t, res.Scheduled)
	dup, err := client.Enqueue(ctx, RebuildIndex{UserID: "1"}, &jobs.EnqueueOpts{Delay: 2 * time.Hour, Unique: u})
	require.NoError(t, err)
	assert.True(t, dup.Duplicate)
	assert.Equal(t, res.ID, dup.ID)
	assert.Len(t, d.jobs, 1, "one schedule")

	st, err := client.Status(ctx, res.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateEnqueued, st.State)
	assert.WithinDuration(t, time.Now().Add(2*time.Hour), st.DeliverAt, time.Minute)

	require.NoError(t, client.CancelDelayed(ctx, res.ID))
	st, err = client.Status(ctx, res.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateCancelled, st.State)
	assert.Empty(t, d.jobs)
}

// In EnqueueBatch a unique job's key is reserved before anything is sent: a second job of the
// key in the batch is a duplicate of the first, and a batch whose jobs all are duplicates sends
// nothing. Prepare (the outbox) refuses Unique; a key without a window is invalid.
func TestUniqueInEnqueueBatch(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	client, err := jobs.NewClient(rec, jobs.ClientOptions{DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", State: jobstest.NewStateStore()})
	require.NoError(t, err)
	u := &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: "k", Window: time.Minute}}
	res, err := client.EnqueueBatch(context.Background(), []jobs.BatchJob{{Args: RebuildIndex{}}, {Args: RebuildIndex{}, Opts: u}, {Args: RebuildIndex{}, Opts: u}})
	require.NoError(t, err)
	assert.False(t, res[1].Duplicate)
	assert.True(t, res[2].Duplicate)
	assert.Equal(t, res[1].ID, res[2].ID)
	require.Len(t, rec.Batches(), 1)
	assert.Len(t, rec.Batches()[0].Entries, 2)
	res, err = client.EnqueueBatch(context.Background(), []jobs.BatchJob{{Args: RebuildIndex{}, Opts: u}})
	require.NoError(t, err)
	assert.True(t, res[0].Duplicate)
	assert.Len(t, rec.Batches(), 1, "nothing sent")
	_, err = client.Prepare(context.Background(), RebuildIndex{}, u)
	assert.ErrorIs(t, err, jobs.ErrUniquePrepared)
	_, err = client.Enqueue(context.Background(), RebuildIndex{}, &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: "k"}})
	assert.ErrorIs(t, err, jobs.ErrInvalidUnique)
}
