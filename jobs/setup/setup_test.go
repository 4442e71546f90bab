package setup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/setup"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type ping struct{ N int }

func (ping) Kind() string { return "setup.ping" }

// env sets what the Worker construct sets, pointing the SDK at the emulator.
func env(t *testing.T, table, states string) {
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint())
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", awstest.Region)
	t.Setenv(contract.EnvQueueURL, "http://127.0.0.1:1/000000000000/q")
	t.Setenv(contract.EnvDLQURL, "http://127.0.0.1:1/000000000000/q-dlq")
	t.Setenv(contract.EnvIdempotencyTable, table)
	t.Setenv(contract.EnvStateTable, states)
}

// The middleware wraps the workers in the documented order: Use's outside the idempotency claim,
// UseInside's within it, so a redelivered job that already succeeded runs neither the worker nor
// UseInside's middleware, and Use's sees every delivery.
func TestMainWiresIdempotencyBetweenUseAndUseInside(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "setup", idempotency.AttrID, "")
	env(t, table, table)
	ctx := context.Background()

	m, err := setup.New(ctx, "ping")
	require.NoError(t, err)
	require.NotNil(t, m.States, "JOBKIT_STATE_TABLE set: job states kept")
	assert.Same(t, m.Store, m.Config.Deliveries, "the idempotency store is the delivery ledger")

	var outside, inside, runs int
	var claimedOutside bool
	m.Use(func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			outside++
			rec, err := m.Store.Get(ctx, idempotency.JobKey(row))
			if !errors.Is(err, idempotency.ErrNotFound) {
				require.NoError(t, err)
				claimedOutside = claimedOutside || rec.Status == idempotency.StatusInProgress
			}
			return next(ctx, row)
		}
	})
	m.UseInside(func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			inside++
			rec, err := m.Store.Get(ctx, idempotency.JobKey(row))
			require.NoError(t, err)
			require.NotNil(t, rec, "inside: the claim is held")
			assert.Equal(t, idempotency.StatusInProgress, rec.Status)
			return next(ctx, row)
		}
	})
	jobs.AddWorker(m.Workers, jobs.WorkFunc[ping](func(context.Context, *jobs.Job[ping]) error { runs++; return nil }))
	m.Workers.Use(m.Middleware()...)

	opts := &jobstest.JobOpts{ID: "01JSETUP0000000000000000AA", Key: "ping-1"}
	require.NoError(t, m.States.JobsEnqueued(ctx, []jobs.PreparedJob{{ID: opts.ID, Kind: ping{}.Kind(), Key: opts.Key, EnqueuedAt: time.Now()}}))
	require.NoError(t, jobstest.Run(ctx, m.Workers, ping{N: 1}, opts))
	opts.Attempt = 2
	require.NoError(t, jobstest.Run(ctx, m.Workers, ping{N: 1}, opts))

	assert.Equal(t, 2, outside, "Use's middleware sees every delivery")
	assert.False(t, claimedOutside, "Use's middleware runs before the claim")
	assert.Equal(t, 1, inside, "UseInside's middleware runs once per key")
	assert.Equal(t, 1, runs)
	st, err := m.States.JobStatus(ctx, opts.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, st.State)
}

// Without an idempotency table the worker cannot start: a redelivered job would run twice.
func TestNewRefusesAMissingIdempotencyTable(t *testing.T) {
	env(t, "", "")
	_, err := setup.New(context.Background(), "ping")
	require.Error(t, err)
	assert.Contains(t, err.Error(), contract.EnvIdempotencyTable+" is not set")
}
