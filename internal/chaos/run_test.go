package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/internal/chaos"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A small run of the real sample stack: throttling and latency on every AWS call, transient and
// poison jobs, a FIFO part with postings that overrun their deadline, envelopes sent twice and
// the long job. (Process kills are left to `make chaos`: a killed batch waits out
// the queue's one-minute visibility timeout.)
func TestRunSmall(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	cdkOut := filepath.Join("..", "..", "cdk.out")
	if _, err := os.Stat(filepath.Join(cdkOut, "manifest.json")); err != nil {
		if os.Getenv("JOBKIT_REQUIRE_EMULATOR") == "1" { // make test synthesizes first: no silent skip
			t.Fatal("no cloud assembly in cdk.out: run make synth")
		}
		t.Skip("no cloud assembly in cdk.out: run make synth")
	}
	rep, err := chaos.Run(context.Background(), chaos.Config{
		AWS: cfg, CDKOut: cdkOut, ModuleDir: filepath.Join("..", ".."), BuildDir: t.TempDir(),
		Plan:         chaos.PlanConfig{Jobs: 120, Groups: 3, GroupJobs: 5, PoisonRate: 0.05, OverrunRate: 0.02, DuplicateRate: 0.05},
		ThrottleRate: 0.1, LatencyRate: 0.1, KillRate: -1, LongJobVisibility: 6 * time.Second, LedgerTimeout: 8 * time.Second, Timeout: 3 * time.Minute,
	})
	require.NoError(t, err)
	t.Log(rep.Line())
	t.Log(rep.FaultLine())
	require.NoError(t, rep.Check())
	require.Equal(t, 120, rep.Jobs)
	require.Equal(t, 6, rep.ExpectedDead)
	require.Positive(t, rep.Faults.Throttled)
	require.Positive(t, rep.Faults.Slowed, "some AWS answers were slow")
	require.Equal(t, 2, rep.Faults.Overrun)
	require.Positive(t, rep.DeadlineBatches, "an overrun left records of its batch not started")
	require.Positive(t, rep.Faults.NotStarted)
	require.Equal(t, 6, rep.DuplicateDeliveries)
	require.Zero(t, rep.NeverRanDead)
	require.Positive(t, rep.Faults.TransientFailures, "injected failures were reported by the functions")
	require.Zero(t, rep.Faults.Kills)
}

// The transcode container under kills: short transcodes run once the long job is done, and the
// container's process is killed (SIGKILL) during some of them; it is restarted, the jobs come
// back after the queue's visibility timeout, and the invariants hold — nothing lost or applied
// twice, the long job run once.
func TestRunContainerKills(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	cdkOut := filepath.Join("..", "..", "cdk.out")
	if _, err := os.Stat(filepath.Join(cdkOut, "manifest.json")); err != nil {
		if os.Getenv("JOBKIT_REQUIRE_EMULATOR") == "1" {
			t.Fatal("no cloud assembly in cdk.out: run make synth")
		}
		t.Skip("no cloud assembly in cdk.out: run make synth")
	}
	rep, err := chaos.Run(context.Background(), chaos.Config{
		AWS: cfg, CDKOut: cdkOut, ModuleDir: filepath.Join("..", ".."), BuildDir: t.TempDir(),
		Plan:         chaos.PlanConfig{Jobs: 30, Groups: 1, GroupJobs: 2, TransientRate: 0.001, PoisonRate: 0.001, OverrunRate: -1, DuplicateRate: -1, Transcodes: 8},
		ThrottleRate: -1, LatencyRate: -1, KillRate: -1, ContainerKillRate: 0.25, LongJobVisibility: 4 * time.Second, Timeout: 3 * time.Minute,
	})
	require.NoError(t, err)
	t.Log(rep.Line())
	t.Log(rep.FaultLine())
	require.NoError(t, rep.Check())
	require.Equal(t, 30, rep.Jobs)
	require.Positive(t, rep.Faults.ContainerKills, "the container's process was killed mid-job")
	require.GreaterOrEqual(t, rep.Faults.TranscodeStarts, int64(8+rep.Faults.ContainerKills))
	require.Equal(t, 1, rep.LongJobRuns)
}
