package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

func jobRow(id, key, args string) *jobs.JobRow {
	return &jobs.JobRow{ID: id, Kind: "email.send", Key: key, EncodedArgs: json.RawMessage(args), Attempt: 1, MaxAttempts: 5}
}

// countingHandler counts its runs and returns what fail says for each run (nil: succeed).
func countingHandler(runs *atomic.Int32, fail func(run int32) error) jobs.Handler {
	return func(ctx context.Context, row *jobs.JobRow) error {
		n := runs.Add(1)
		if fail != nil {
			return fail(n)
		}
		return nil
	}
}

// A COMPLETED key skips the job as a success; the key is the envelope key, else the id.
func TestMiddlewareSkipsCompleted(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	var runs atomic.Int32
	h := idempotency.Middleware(store, &idempotency.Config{NoCache: true})(countingHandler(&runs, nil))

	require.NoError(t, h(ctx, jobRow("01A", "", `{"to":"a"}`)))
	require.NoError(t, h(ctx, jobRow("01A", "", `{"to":"a"}`)), "the same envelope again")
	assert.EqualValues(t, 1, runs.Load())

	require.NoError(t, h(ctx, jobRow("01B", "", `{"to":"a"}`)), "another id is another job")
	assert.EqualValues(t, 2, runs.Load())

	require.NoError(t, h(ctx, jobRow("01C", "order-9", `{"to":"a"}`)))
	require.NoError(t, h(ctx, jobRow("01D", "order-9", `{"to":"a"}`)), "another envelope, same key")
	assert.EqualValues(t, 3, runs.Load())

	other := jobRow("01E", "order-9", `{"to":"a"}`)
	other.Kind = "sms.send"
	require.NoError(t, h(ctx, other), "the same key on another kind is another job")
	assert.EqualValues(t, 4, runs.Load())

	rec, err := store.Get(ctx, idempotency.JobKey(jobRow("01D", "order-9", "")))
	require.NoError(t, err)
	assert.Equal(t, "email.send#order-9", rec.Key)
	assert.Equal(t, idempotency.StatusCompleted, rec.Status)
	assert.Nil(t, rec.Data)
	assert.NotEmpty(t, rec.Validation)
}

// An INPROGRESS key snoozes the job until the other run's lease ends.
func TestMiddlewareSnoozesInProgress(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	clk := newClock()
	row := jobRow("01A", "", `{"to":"a"}`)
	require.NoError(t, store.Claim(ctx, &idempotency.Record{
		Key: idempotency.JobKey(row), Status: idempotency.StatusInProgress,
		LeaseEnd: clk.Now().Add(90 * time.Second), ExpiresAt: clk.Now().Add(time.Hour),
	}, clk.Now()))

	var runs atomic.Int32
	h := idempotency.Middleware(store, &idempotency.Config{Now: clk.Now})(countingHandler(&runs, nil))
	err := h(ctx, row)
	var snooze *jobs.SnoozeError
	require.ErrorAs(t, err, &snooze)
	assert.Equal(t, 90*time.Second, snooze.Duration)
	assert.True(t, snooze.NotRun, "the delivery did not run the job: not an attempt, with a delivery ledger")
	assert.Zero(t, runs.Load())
}

// The same key with different args is cancelled (dead-lettered) with the payload-mismatch reason.
func TestMiddlewareCancelsPayloadMismatch(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	var runs atomic.Int32
	h := idempotency.Middleware(store, nil)(countingHandler(&runs, nil))
	require.NoError(t, h(ctx, jobRow("01A", "welcome-42", `{"to":"a@example.com"}`)))

	err := h(ctx, jobRow("01B", "welcome-42", `{"to":"b@example.com"}`))
	var cancel *jobs.CancelError
	require.ErrorAs(t, err, &cancel)
	var mismatch *idempotency.PayloadMismatchError
	require.ErrorAs(t, err, &mismatch)
	var reasoned interface{ DeadLetterReason() string }
	require.ErrorAs(t, err, &reasoned)
	assert.Equal(t, contract.ReasonPayloadMismatch, reasoned.DeadLetterReason())
	assert.EqualValues(t, 1, runs.Load())
}

// A handler error deletes the claim and is returned as it is, so the runtime retries the job and
// the retry runs.
func TestMiddlewareHandlerErrorReleasesClaim(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	boom := errors.New("smtp: 451 try again")
	var runs atomic.Int32
	h := idempotency.Middleware(store, nil)(countingHandler(&runs, func(n int32) error {
		switch n {
		case 1:
			return boom
		case 2:
			return jobs.Cancel(boom)
		}
		return nil
	}))
	row := jobRow("01A", "", `{}`)
	require.ErrorIs(t, h(ctx, row), boom)
	_, err := store.Get(ctx, idempotency.JobKey(row))
	require.ErrorIs(t, err, idempotency.ErrNotFound)

	err = h(ctx, row)
	var cancel *jobs.CancelError
	require.ErrorAs(t, err, &cancel, "outcomes pass through unchanged")
	_, err = store.Get(ctx, idempotency.JobKey(row))
	require.ErrorIs(t, err, idempotency.ErrNotFound)

	require.NoError(t, h(ctx, row))
	require.NoError(t, h(ctx, row))
	assert.EqualValues(t, 3, runs.Load())
}

// If the claim cannot be deleted after a handler error, the job is not lost: the error is still
// returned (the job stays retryable), the retry is snoozed until the claim's lease ends, and then
// it reclaims the key and runs.
func TestMiddlewareFailedDeleteKeepsJobRetryable(t *testing.T) {
	t.Parallel()
	ddb, _, _ := newDynamoDBStore(t)
	store := &failingStore{Store: ddb, delete: errors.New("dynamodb: throttled")}
	ctx := context.Background()
	clk := newClock()
	boom := errors.New("payment gateway timeout")
	var runs atomic.Int32
	h := idempotency.Middleware(store, &idempotency.Config{Now: clk.Now, Lease: 2 * time.Minute})(
		countingHandler(&runs, func(n int32) error {
			if n == 1 {
				return boom
			}
			return nil
		}))
	row := jobRow("01A", "", `{"amount":10}`)

	require.ErrorIs(t, h(ctx, row), boom, "the job fails (and is retried), not skipped")
	rec, err := ddb.Get(ctx, idempotency.JobKey(row))
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusInProgress, rec.Status, "the claim is left behind")

	clk.Add(30 * time.Second) // the runtime's backoff
	err = h(ctx, row)
	var snooze *jobs.SnoozeError
	require.ErrorAs(t, err, &snooze, "the retry waits for the lease")
	assert.Equal(t, 90*time.Second, snooze.Duration)
	assert.EqualValues(t, 1, runs.Load())

	clk.Add(snooze.Duration)
	require.NoError(t, h(ctx, row), "after the lease the retry reclaims the key and runs")
	assert.EqualValues(t, 2, runs.Load())
	rec, err = ddb.Get(ctx, idempotency.JobKey(row))
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusCompleted, rec.Status)
}

// A handler that succeeds is a success even when its record cannot be completed.
func TestMiddlewareCompleteFailureStillSucceeds(t *testing.T) {
	t.Parallel()
	store := &failingStore{Store: idempotency.NewMemoryStore(), complete: errors.New("throttled")}
	var runs atomic.Int32
	h := idempotency.Middleware(store, &idempotency.Config{NoCache: true})(countingHandler(&runs, nil))
	require.NoError(t, h(context.Background(), jobRow("01A", "", `{}`)))
	assert.EqualValues(t, 1, runs.Load())
}

// A duplicate in the same warm process is skipped without a DynamoDB request.
func TestMiddlewareWarmDuplicateCostsNothing(t *testing.T) {
	t.Parallel()
	store, counter, _ := newDynamoDBStore(t)
	ctx := context.Background()
	var runs atomic.Int32
	h := idempotency.Middleware(store, &idempotency.Config{Cache: idempotency.NewCache(8)})(countingHandler(&runs, nil))
	counter.take()
	require.NoError(t, h(ctx, jobRow("01A", "", `{}`)))
	assert.Equal(t, []string{"PutItem", "UpdateItem"}, counter.take())
	require.NoError(t, h(ctx, jobRow("01A", "", `{}`)))
	assert.Empty(t, counter.take())
	assert.EqualValues(t, 1, runs.Load())
}

// A panicking handler releases its claim; the panic goes on to the runtime.
func TestMiddlewarePanicReleasesClaim(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	h := idempotency.Middleware(store, nil)(func(ctx context.Context, row *jobs.JobRow) error { panic("nil map") })
	row := jobRow("01A", "", `{}`)
	assert.PanicsWithValue(t, "nil map", func() { _ = h(context.Background(), row) })
	_, err := store.Get(context.Background(), idempotency.JobKey(row))
	require.ErrorIs(t, err, idempotency.ErrNotFound)
}
