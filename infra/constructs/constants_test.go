package constructs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/scheduler"
)

// One owner per constant: where the constructs cannot import a name from the library (because
// the library declares it in a form the constructs cannot use, or in a package the constructs
// must not depend on), a test pins the two equal.
func TestConstantsPinnedToTheLibrary(t *testing.T) {
	// The offline stack (offline/deploy) reads the Go source of a function from this
	// metadata key; the constructs must not import the emulator, nor it the CDK module.
	require.Equal(t, deploy.SourceMetadataKey, SourceMetadataKey)

	// The idempotency grant's key prefixes are how idempotency.JobKey begins.
	for _, kind := range []string{"email.send", "ledger.post", "a"} {
		key := idempotency.JobKey(&jobs.JobRow{Kind: kind, ID: "01J0000000000000000000000", Key: "k"})
		require.True(t, strings.HasPrefix(key, IdempotencyKeyPrefix(kind)), "%q does not start with %q", key, IdempotencyKeyPrefix(kind))
		key = idempotency.JobKey(&jobs.JobRow{Kind: kind, ID: "id"})
		require.Equal(t, IdempotencyKeyPrefix(kind)+"id", key)
	}

	// The construct refuses a caller's variable by contract.EnvPrefix: every name it sets or the
	// runtime reads carries it.
	for _, name := range []string{
		contract.EnvQueueURL, contract.EnvDLQURL, contract.EnvMaxAttempts, contract.EnvVisibilityTimeout, contract.EnvConcurrency,
		contract.EnvBackoffBase, contract.EnvBackoffCap, contract.EnvIdempotencyTable, contract.EnvSafetyMargin, contract.EnvJobTimeout,
		scheduler.EnvScheduleGroup, scheduler.EnvSchedulerRoleARN, scheduler.EnvScheduleDLQARN,
		scheduler.EnvScheduleRetries, scheduler.EnvScheduleMaxAge,
	} {
		require.True(t, strings.HasPrefix(name, contract.EnvPrefix), name)
	}

	// The age alarm must not fire on a job that is only backing off: its threshold stays above
	// the runtime's longest default retry delay.
	require.Greater(t, DefaultAgeAlarmThreshold, contract.DefaultBackoffCap)
}
