package jobs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Parallel()
	cfg, err := configFromLookup(lookup(map[string]string{
		contract.EnvQueueURL: "https://sqs/q.fifo", contract.EnvDLQURL: "https://sqs/dlq.fifo",
		contract.EnvMaxAttempts: "7", contract.EnvVisibilityTimeout: "45", contract.EnvConcurrency: "3",
		contract.EnvBackoffBase: "250ms", contract.EnvBackoffCap: "2m", contract.EnvSafetyMargin: "3s", contract.EnvJobTimeout: "30",
		contract.EnvFunctionName: "worker-fn", contract.EnvLogLevel: "DEBUG", contract.EnvMaxReceiveCount: "10",
	}))
	require.NoError(t, err)
	assert.Equal(t, 10, cfg.MaxReceiveCount)
	assert.Equal(t, "https://sqs/q.fifo", cfg.QueueURL)
	assert.Equal(t, "https://sqs/dlq.fifo", cfg.DLQURL)
	assert.Equal(t, 7, cfg.MaxAttempts)
	assert.Equal(t, 45*time.Second, cfg.VisibilityTimeout)
	assert.Equal(t, 3, cfg.Concurrency)
	assert.Equal(t, 250*time.Millisecond, cfg.BackoffBase)
	assert.Equal(t, 2*time.Minute, cfg.BackoffCap)
	assert.Equal(t, 3*time.Second, cfg.SafetyMargin)
	assert.Equal(t, 30*time.Second, cfg.JobTimeout)
	assert.Equal(t, "worker-fn", cfg.FunctionName)
	assert.True(t, cfg.Logger.Enabled(context.Background(), slog.LevelDebug))

	cfg, err = configFromLookup(lookup(map[string]string{contract.EnvQueueURL: "q", contract.EnvDLQURL: "d"}))
	require.NoError(t, err)
	assert.Equal(t, contract.DefaultMaxAttempts, cfg.MaxAttempts)
	assert.Equal(t, contract.DefaultVisibilityTimeout, cfg.VisibilityTimeout)
	assert.Equal(t, contract.DefaultConcurrency, cfg.Concurrency)
	assert.Equal(t, contract.DefaultBackoffBase, cfg.BackoffBase)
	assert.Equal(t, contract.DefaultBackoffCap, cfg.BackoffCap)
	assert.Equal(t, time.Duration(0), cfg.JobTimeout)
	// The values docs/handlers.md, docs/operations.md and docs/sending.md state.
	assert.Equal(t, 10, cfg.Concurrency, "JOBKIT_CONCURRENCY default")
	assert.Equal(t, 2*time.Second, cfg.SafetyMargin, "JOBKIT_SAFETY_MARGIN default")
	assert.Equal(t, int64(64<<20), cfg.MaxPayloadSize, "JOBKIT_MAX_PAYLOAD_SIZE default: 64 MiB")
	assert.Zero(t, cfg.MaxReceiveCount, "unknown unless set")
	assert.False(t, cfg.Logger.Enabled(context.Background(), slog.LevelDebug))

	_, err = configFromLookup(lookup(map[string]string{contract.EnvMaxAttempts: "zero", contract.EnvBackoffCap: "soon", contract.EnvLogLevel: "LOUD"}))
	require.Error(t, err)
	for _, want := range []string{contract.EnvQueueURL, contract.EnvDLQURL, contract.EnvMaxAttempts, contract.EnvBackoffCap, contract.EnvLogLevel} {
		assert.Contains(t, err.Error(), want)
	}
}

// The last receive the redrive allows is never a run: a MaxReceiveCount of MaxAttempts or less
// would take a job's last attempt.
func TestConfigMaxReceiveCountExceedsAttempts(t *testing.T) {
	t.Parallel()
	c := Config{QueueURL: "q", DLQURL: "d", SQS: noSQS{}, MaxAttempts: 5, MaxReceiveCount: 5}
	require.ErrorContains(t, c.Validate(), "MaxReceiveCount 5 must exceed MaxAttempts 5")
	c.MaxReceiveCount = 6
	require.NoError(t, c.Validate())
	c.MaxAttempts, c.MaxReceiveCount = 0, contract.DefaultMaxAttempts // the default attempts count
	require.ErrorContains(t, c.Validate(), "must exceed MaxAttempts")
}

type noSQS struct{ SQSAPI }

func TestConfigFromEnvMakesAnSQSClient(t *testing.T) {
	t.Setenv(contract.EnvQueueURL, "https://sqs/q")
	t.Setenv(contract.EnvDLQURL, "https://sqs/dlq")
	cfg, err := ConfigFromEnv()
	require.NoError(t, err)
	require.NotNil(t, cfg.SQS)
	require.NoError(t, cfg.Validate())
}

func TestBackoffIsFullJitterCappedExponential(t *testing.T) {
	t.Parallel()
	b := ExponentialBackoff(time.Second, 10*time.Second)
	for attempt, ceiling := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		var lo, hi time.Duration = ceiling, 0
		for i := 0; i < 2000; i++ {
			d := b(attempt)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceiling, "attempt %d", attempt)
			lo, hi = min(lo, d), max(hi, d)
		}
		// Full jitter spreads over the whole range.
		assert.Less(t, lo, ceiling/10, "attempt %d", attempt)
		assert.Greater(t, hi, ceiling*9/10, "attempt %d", attempt)
	}
	huge := ExponentialBackoff(time.Hour, 100*time.Hour)
	for i := 0; i < 100; i++ {
		assert.LessOrEqual(t, huge(40), MaxVisibility, "never above 12 h")
	}
	assert.Equal(t, int32(43200), ceilSeconds(48*time.Hour))
	assert.Equal(t, int32(2), ceilSeconds(1001*time.Millisecond))
}

func TestBackoffDrawsWholeSecondsIncludingZero(t *testing.T) {
	t.Parallel()
	b := ExponentialBackoff(time.Second, time.Minute)
	seen := map[time.Duration]int{}
	for i := 0; i < 4000; i++ {
		d := b(2) // range [0, 2 s]
		require.Zero(t, d%time.Second, "SQS takes whole seconds: %s", d)
		seen[d]++
	}
	// 0, 1 and 2 s each about a third of the time: no bias from rounding up.
	for _, d := range []time.Duration{0, time.Second, 2 * time.Second} {
		assert.InDelta(t, 4000/3, seen[d], 250, "%s drawn %d times", d, seen[d])
	}
	sub := ExponentialBackoff(100*time.Millisecond, time.Minute)
	for i := 0; i < 100; i++ {
		assert.LessOrEqual(t, sub(1), 100*time.Millisecond)
	}
}
