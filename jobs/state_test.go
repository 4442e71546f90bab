package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
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

// failingReserve is a StateStore whose unique reservations fail.
type failingReserve struct{ *jobstest.StateStore }

func (failingReserve) ReserveUnique(context.Context, string, string, string, time.Time, time.Time) (string, error) {
	return "", errors.New("throttled")
}

// In a FIFO batch, a job whose unique key cannot be reserved fails before any send, and its
// group's later jobs are not sent (ErrGroupFailed); another group goes on.
func TestUniqueReservationFailureStopsItsFIFOGroup(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	const fifo = "https://sqs.us-east-1.amazonaws.com/1/q.fifo"
	client, err := jobs.NewClient(rec, jobs.ClientOptions{DefaultQueueURL: fifo, State: failingReserve{jobstest.NewStateStore()}})
	require.NoError(t, err)
	res, err := client.EnqueueBatch(context.Background(), []jobs.BatchJob{
		{Args: RebuildIndex{UserID: "0"}, Opts: &jobs.EnqueueOpts{GroupID: "g"}},
		{Args: RebuildIndex{UserID: "1"}, Opts: &jobs.EnqueueOpts{GroupID: "g", Unique: &jobs.UniqueOpts{Key: "k", Window: time.Minute}}},
		{Args: RebuildIndex{UserID: "2"}, Opts: &jobs.EnqueueOpts{GroupID: "g"}},
		{Args: RebuildIndex{UserID: "3"}, Opts: &jobs.EnqueueOpts{GroupID: "h"}},
	})
	require.Error(t, err)
	assert.NoError(t, res[0].Err, "before the failed job: sent")
	assert.ErrorContains(t, res[1].Err, "throttled")
	assert.ErrorIs(t, res[2].Err, jobs.ErrGroupFailed)
	assert.NoError(t, res[3].Err, "another group")
	var sent []string
	for _, b := range rec.Batches() {
		for _, e := range b.Entries {
			sent = append(sent, aws.ToString(e.MessageGroupId))
		}
	}
	for _, m := range rec.Sent() {
		sent = append(sent, aws.ToString(m.MessageGroupId))
	}
	assert.ElementsMatch(t, []string{"g", "h"}, sent)
}

// A duplicate of a job of the same batch that then failed to send is not reported enqueued: it
// carries ErrNotSent, and the key is free for the next try.
func TestUniqueDuplicateOfAFailedBatchJobFails(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	rec.SendMessageBatchFunc = func(_ context.Context, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		return nil, errors.New("connection reset")
	}
	rec.SendMessageFunc = func(_ context.Context, in *sqs.SendMessageInput) (*sqs.SendMessageOutput, error) {
		return nil, errors.New("connection reset")
	}
	client, err := jobs.NewClient(rec, jobs.ClientOptions{DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", State: jobstest.NewStateStore(), MaxRetries: -1})
	require.NoError(t, err)
	u := &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: "k", Window: time.Minute}}
	res, err := client.EnqueueBatch(context.Background(), []jobs.BatchJob{{Args: RebuildIndex{}, Opts: u}, {Args: RebuildIndex{}, Opts: u}})
	require.Error(t, err)
	require.Error(t, res[0].Err)
	assert.True(t, res[1].Duplicate)
	assert.ErrorIs(t, res[1].Err, jobs.ErrNotSent)
	rec.SendMessageBatchFunc, rec.SendMessageFunc = nil, nil
	again, err := client.Enqueue(context.Background(), RebuildIndex{}, u)
	require.NoError(t, err)
	assert.False(t, again.Duplicate, "the key was released")
}
