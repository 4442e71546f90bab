package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs/jobctx"
)

// In a container (jobctx.KeepAlive), a claim holds the key for the keep-alive window, not until
// the job's distant deadline, and is renewed while the job runs: a duplicate during the run is
// refused, and the run is not cut at the first lease end.
func TestClaimInAContainerIsRenewedWhileTheJobRuns(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	const window = 1200 * time.Millisecond
	ctx, cancel := context.WithTimeout(jobctx.WithKeepAlive(context.Background(), window), time.Hour)
	defer cancel()

	started := time.Now()
	type seen struct {
		lease time.Time
		err   error
	}
	checks := make(chan seen, 8)
	res, err := idempotency.Do(ctx, store, "renew/long", func(ctx context.Context) (string, error) {
		for range 4 { // 4 × 900 ms: three windows' worth of work
			select {
			case <-ctx.Done():
				return "", context.Cause(ctx)
			case <-time.After(900 * time.Millisecond):
			}
			rec, err := store.Get(ctx, "renew/long")
			require.NoError(t, err)
			_, dup := idempotency.Do(context.Background(), store, "renew/long", func(context.Context) (string, error) {
				return "duplicate ran", nil
			}, nil)
			checks <- seen{rec.LeaseEnd, dup}
		}
		return "done", nil
	}, nil)
	require.NoError(t, err)
	require.Equal(t, "done", res)
	close(checks)

	first := true
	for c := range checks {
		var inProgress *idempotency.InProgressError
		require.True(t, errors.As(c.err, &inProgress), "a duplicate during the run is refused: %v", c.err)
		if first {
			// Held for the window from the claim, not for the hour of the context.
			require.Less(t, c.lease.Sub(started), 2*window)
			first = false
		}
	}
	rec, err := store.Get(context.Background(), "renew/long")
	require.NoError(t, err)
	require.Equal(t, idempotency.StatusCompleted, rec.Status)
	require.True(t, rec.LeaseEnd.After(started.Add(window+time.Second)), "the lease was renewed past its first end")
}

// Outside a container the claim holds until the context's deadline, and nothing renews it.
func TestClaimOnLambdaHoldsUntilTheDeadline(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := idempotency.Do(ctx, store, "renew/lambda", func(ctx context.Context) (int, error) {
		rec, err := store.Get(ctx, "renew/lambda")
		require.NoError(t, err)
		require.Greater(t, time.Until(rec.LeaseEnd), 59*time.Minute)
		return 1, nil
	}, nil)
	require.NoError(t, err)
}
