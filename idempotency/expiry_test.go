package idempotency_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Under the Worker construct JOBKIT_IDEMPOTENCY_EXPIRY covers the queue's and DLQ's retention:
// the middleware's records last that long by default, so a job redriven from the DLQ days
// later is still skipped; an explicit Expiry wins, and without either a record lasts one hour.
// (Not parallel: it sets the environment.)
func TestMiddlewareExpiryFromEnvironment(t *testing.T) {
	t.Setenv(contract.EnvIdempotencyExpiry, "432h") // 4 d + 14 d
	store := idempotency.NewMemoryStore()
	ctx := context.Background()
	var runs atomic.Int32
	h := idempotency.Middleware(store, &idempotency.Config{NoCache: true})(countingHandler(&runs, nil))
	row := jobRow("01A", "", `{"to":"a"}`)
	require.NoError(t, h(ctx, row))
	rec, err := store.Get(ctx, idempotency.JobKey(row))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(432*time.Hour), rec.ExpiresAt, time.Minute)

	// An explicit Expiry wins.
	h = idempotency.Middleware(store, &idempotency.Config{NoCache: true, Expiry: 2 * time.Hour})(countingHandler(&runs, nil))
	row = jobRow("01B", "", `{"to":"a"}`)
	require.NoError(t, h(ctx, row))
	rec, err = store.Get(ctx, idempotency.JobKey(row))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(2*time.Hour), rec.ExpiresAt, time.Minute)

	// Neither: one hour (docs/handlers.md, docs/operations.md).
	t.Setenv(contract.EnvIdempotencyExpiry, "")
	h = idempotency.Middleware(store, &idempotency.Config{NoCache: true})(countingHandler(&runs, nil))
	row = jobRow("01C", "", `{"to":"a"}`)
	require.NoError(t, h(ctx, row))
	rec, err = store.Get(ctx, idempotency.JobKey(row))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(time.Hour), rec.ExpiresAt, time.Minute)
}
