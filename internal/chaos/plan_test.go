package chaos_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/internal/chaos"
)

func TestNewPlanDefaults(t *testing.T) {
	t.Parallel()
	p, err := chaos.NewPlan(chaos.PlanConfig{})
	require.NoError(t, err)
	require.Equal(t, 10000, p.Len())
	require.Len(t, p.Ledger, 100*20)
	require.Len(t, p.Email, 10000-2000-1)
	require.True(t, p.Long.Long)
	require.Equal(t, samplejobs.TranscodeVideo{VideoID: "chaos-long", Seconds: 60}, p.Long.Args)

	poison, transient := p.Counts()
	require.Equal(t, 100, poison, "exactly 1%")
	require.Equal(t, 1000, transient, "exactly 10%")
	overrun, duplicated := p.ExtraCounts()
	require.Equal(t, 10, overrun, "exactly 0.1%")
	bursts, rest := p.LedgerBursts()
	require.Len(t, bursts, 10)
	for _, b := range bursts {
		require.Len(t, b, 20, "a burst is a whole group")
		for i, j := range b {
			require.Equal(t, b[0].Group, j.Group)
			require.Equal(t, i+1, j.Seq, "in order")
		}
		require.Positive(t, b[0].OverrunMS)
	}
	require.Len(t, rest, 2000-200)
	require.Equal(t, 200, duplicated, "exactly 2%")
	ids := map[string]bool{}
	for _, j := range p.All() {
		require.False(t, ids[j.ID], "ids are unique: %s", j.ID)
		ids[j.ID] = true
		require.False(t, j.Poison && j.FailAttempts > 0, "a job is poison or transient, not both")
		require.GreaterOrEqual(t, j.FailAttempts, 0)
		require.LessOrEqual(t, j.FailAttempts, 2)
		raw, err := json.Marshal(j.Enqueued())
		require.NoError(t, err)
		require.Equal(t, instrument.Faults{FailAttempts: j.FailAttempts, Poison: j.Poison, OverrunMS: j.OverrunMS}, instrument.FaultsOf(raw), "the planned faults are enqueued")
		if j.OverrunMS > 0 {
			require.True(t, j.Seq == 1 && !j.Poison && j.FailAttempts == 0, "overruns are first postings without other faults: %s", j.ID)
			require.Equal(t, 300, j.OverrunMS)
		}
		if j.Duplicate {
			require.True(t, j.Group == "" && !j.Long && !j.Poison, "duplicates are emails that are not poison: %s", j.ID)
		}
		if a, ok := j.Args.(samplejobs.PostLedger); ok {
			require.Equal(t, j.Group, a.Account)
		}
		require.Same(t, j, p.Job(j.ID))
	}
	// Each group's postings are enqueued in order.
	last := map[string]int{}
	for _, j := range p.Ledger {
		require.Equal(t, last[j.Group]+1, j.Seq, j.ID)
		last[j.Group] = j.Seq
	}
	require.Len(t, last, 100)

	require.Equal(t, 100, p.ExpectedDead(map[string]int{samplejobs.KindSendEmail: 5, samplejobs.KindPostLedger: 5}))
	// With fewer attempts, the transient jobs failing as often die too.
	dead2 := 0
	for _, j := range p.All() {
		if j.Poison || j.FailAttempts >= 2 {
			dead2++
		}
	}
	require.Equal(t, dead2, p.ExpectedDead(map[string]int{samplejobs.KindSendEmail: 2, samplejobs.KindPostLedger: 2, samplejobs.KindTranscodeVideo: 2}))
}

func TestNewPlanIsRepeatable(t *testing.T) {
	t.Parallel()
	faults := func(seed uint64) string {
		p, err := chaos.NewPlan(chaos.PlanConfig{Jobs: 500, Groups: 5, GroupJobs: 4, Seed: seed})
		require.NoError(t, err)
		var b strings.Builder
		for _, j := range p.All() {
			fmt.Fprintf(&b, "%s:%v:%d:%d:%v ", j.ID, j.Poison, j.FailAttempts, j.OverrunMS, j.Duplicate)
		}
		return b.String()
	}
	require.Equal(t, faults(7), faults(7))
	require.NotEqual(t, faults(7), faults(8))
}

func TestNewPlanRejectsWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	_, err := chaos.NewPlan(chaos.PlanConfig{Jobs: 100, Groups: 10, GroupJobs: 10})
	require.ErrorContains(t, err, "cannot hold")
	_, err = chaos.NewPlan(chaos.PlanConfig{Jobs: 100, Groups: 1, GroupJobs: 1, TransientRate: 0.9, PoisonRate: 0.2})
	require.ErrorContains(t, err, "do not fit")
}

// Negative rates turn the overrun and duplicate faults off.
func TestNewPlanWithoutExtras(t *testing.T) {
	t.Parallel()
	p, err := chaos.NewPlan(chaos.PlanConfig{Jobs: 500, Groups: 5, GroupJobs: 4, OverrunRate: -1, DuplicateRate: -1})
	require.NoError(t, err)
	overrun, duplicated := p.ExtraCounts()
	require.Zero(t, overrun)
	require.Zero(t, duplicated)
}

// Failing heads fail the first two postings of their groups on every attempt, so the rest of the
// group waits behind them; crash loops are emails that kill their process on every delivery. Both
// are drawn exactly, travel in the enqueued args and are expected dead.
func TestNewPlanFailingHeadsAndCrashLoops(t *testing.T) {
	t.Parallel()
	base := chaos.PlanConfig{Jobs: 600, Groups: 8, GroupJobs: 22, OverrunRate: -1, DuplicateRate: -1, Seed: 5}
	plain, err := chaos.NewPlan(base)
	require.NoError(t, err)
	cfg := base
	cfg.FailingHeads, cfg.CrashLoops = 3, 2
	p, err := chaos.NewPlan(cfg)
	require.NoError(t, err)

	heads := map[string]int{}
	crashes := 0
	for _, j := range p.All() {
		if j.FailAttempts >= 99 {
			require.LessOrEqual(t, j.Seq, 2, "%s: only the first two postings of a group", j.ID)
			heads[j.Group]++
		}
		if j.Crash {
			crashes++
			require.True(t, j.Group == "" && !j.Poison && j.FailAttempts == 0, "%s: a crash loop is an email without other faults", j.ID)
			raw, err := json.Marshal(j.Enqueued())
			require.NoError(t, err)
			require.True(t, instrument.FaultsOf(raw).Crash)
		}
	}
	require.Len(t, heads, 3)
	for g, n := range heads {
		require.Equal(t, 2, n, "group %s: two failing heads, 20 postings behind them", g)
	}
	require.Equal(t, 2, crashes)
	attempts := map[string]int{samplejobs.KindPostLedger: 5, samplejobs.KindSendEmail: 5}
	replaced := 0 // failing heads that were dead in the plain plan already
	for g := range heads {
		for _, j := range plain.All() {
			if j.Group == g && j.Seq <= 2 && (j.Poison || j.FailAttempts >= 5) {
				replaced++
			}
		}
	}
	require.Equal(t, plain.ExpectedDead(attempts)+3*2-replaced+2, p.ExpectedDead(attempts))

	_, err = chaos.NewPlan(chaos.PlanConfig{Jobs: 100, Groups: 2, GroupJobs: 5, FailingHeads: 3, OverrunRate: -1})
	require.ErrorContains(t, err, "failing heads")
}
