package chaos_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/internal/chaos"
	"github.com/jobkit-go/jobkit/offline/tally"
)

var maxAttempts = map[string]int{samplejobs.KindSendEmail: 5, samplejobs.KindPostLedger: 5, samplejobs.KindTranscodeVideo: 3}

// goodState is the state of a perfect run of p: every job applied once, the poison jobs dead,
// the postings applied in order, the long job started once.
func goodState(p *chaos.Plan) chaos.State {
	st := chaos.State{Effects: map[string]instrument.EffectCount{}, Dead: map[string]int{}, Applied: map[string][]string{}, Runs: map[string]int{}}
	for _, j := range p.All() {
		st.Runs[j.ID] = 1
		if j.Poison {
			st.Dead[j.ID] = 1
			continue
		}
		st.Effects[j.ID] = instrument.EffectCount{Applied: 1}
	}
	st.Effects[p.Long.ID] = instrument.EffectCount{Applied: 1, Started: 1}
	for _, j := range p.Ledger {
		if !j.Poison {
			st.Applied[j.Group] = append(st.Applied[j.Group], j.Args.(samplejobs.PostLedger).PostingID)
		}
	}
	return st
}

func smallPlan(t *testing.T) *chaos.Plan {
	t.Helper()
	p, err := chaos.NewPlan(chaos.PlanConfig{Jobs: 400, Groups: 4, GroupJobs: 10, TransientRate: 0.1, PoisonRate: 0.05, OverrunRate: 0.005, Seed: 3})
	require.NoError(t, err)
	return p
}

func TestEvaluateGoodRun(t *testing.T) {
	t.Parallel()
	p := smallPlan(t)
	r := chaos.Evaluate(p, goodState(p), maxAttempts)
	r.Seconds, r.DuplicateDeliveries, r.DeadlineBatches = 42, 8, 2
	require.NoError(t, r.Check())
	require.Equal(t, "CHAOS jobs=400 lost=0 stranded=0 redriven=0 redrive_lost=0 duplicate_effects=0 dead=20 expected_dead=20 order_violations=0 long_job_runs=1 never_ran_dead=0 duplicate_deliveries=8 deadline_batches=2 seconds=42 batches=0 callbacks=0 duplicate_callbacks=0 missing_callbacks=0", r.Line())
}

// The planned overruns and duplicates must have happened.
func TestCheckWantsTheFaultsPlanned(t *testing.T) {
	t.Parallel()
	p := smallPlan(t)
	r := chaos.Evaluate(p, goodState(p), maxAttempts)
	require.Equal(t, 2, r.Faults.Overrun)
	require.Equal(t, 8, r.Faults.Duplicated)
	r.DeadlineBatches = 1
	require.ErrorContains(t, r.Check(), "no duplicate delivered")
	r.DuplicateDeliveries, r.DeadlineBatches = 8, 0
	require.ErrorContains(t, r.Check(), "no batch reached its deadline")

	none, err := chaos.NewPlan(chaos.PlanConfig{Jobs: 400, Groups: 4, GroupJobs: 10, OverrunRate: -1, DuplicateRate: -1, Seed: 3})
	require.NoError(t, err)
	r = chaos.Evaluate(none, goodState(none), maxAttempts)
	require.NoError(t, r.Check(), "none planned, none wanted")
}

// A poison job redriven at the end runs again and is dead-lettered again: dead, not lost, and
// not missing from the redrive.
func TestEvaluateRedrivenPoisonDeadAgain(t *testing.T) {
	t.Parallel()
	p := smallPlan(t)
	st := goodState(p)
	st.Redrive = &chaos.RedriveState{Before: map[string]bool{}, RunsBefore: map[string]int{}}
	for id := range st.Dead {
		st.Redrive.Before[id], st.Redrive.RunsBefore[id] = true, 1
		st.Runs[id] = 2
	}
	r := chaos.Evaluate(p, st, maxAttempts)
	r.DuplicateDeliveries, r.DeadlineBatches = 8, 2
	require.NoError(t, r.Check())
	require.Equal(t, 20, r.Redriven)
	require.Zero(t, r.RedriveLost)
	require.Equal(t, r.ExpectedDead, r.Dead)
}

func TestEvaluateFindsEachBreach(t *testing.T) {
	t.Parallel()
	p := smallPlan(t)
	var good, poisoned string // an email job that must succeed, and a poison one
	for _, j := range p.Email {
		if j.Poison && poisoned == "" {
			poisoned = j.ID
		}
		if !j.Poison && j.FailAttempts == 0 && good == "" {
			good = j.ID
		}
	}
	group := p.Ledger[0].Group

	cases := map[string]struct {
		change func(st *chaos.State)
		want   func(r chaos.Report) bool
		msg    string
	}{
		"lost": {func(st *chaos.State) { delete(st.Effects, good) }, func(r chaos.Report) bool {
			return r.Lost == 1 && r.LostJobs[0] == good+" (email.send, Email): never seen by a worker"
		}, "1 job(s) lost:\n  " + good + " (email.send, Email): never seen by a worker"},
		"lost with its last known state": {func(st *chaos.State) {
			delete(st.Effects, good)
			st.Last = map[string]tally.Job{good: {ID: good, Phase: tally.Retrying, Attempt: 3, LastError: "throttled"}}
		}, func(r chaos.Report) bool { return r.Lost == 1 }, good + " (email.send, Email): retrying, attempt 3, last error: throttled"},
		"still on its queue at the end is stranded, not lost": {func(st *chaos.State) {
			delete(st.Effects, good)
			st.Left = map[string]int{samplejobs.QueueEmail: 1}
		}, func(r chaos.Report) bool { return r.Lost == 0 && r.Stranded == 1 },
			"1 job(s) stranded, their state never ended:\n  " + good + " (email.send, Email): never seen by a worker"},
		"in a dead-letter queue when the redrive began, not since, without a run since: redrive lost": {func(st *chaos.State) {
			delete(st.Dead, poisoned)
			st.Redrive = &chaos.RedriveState{Before: map[string]bool{poisoned: true}, RunsBefore: map[string]int{poisoned: 1}, Moved: 1}
		}, func(r chaos.Report) bool {
			return r.Lost == 0 && r.Dead == r.ExpectedDead && r.Redriven == 1 && r.RedriveLost == 1
		}, "1 job(s) the redrive should have brought back neither ran nor are back in a dead-letter queue:\n  " + poisoned},
		"poison neither dead nor applied is lost": {func(st *chaos.State) { delete(st.Dead, poisoned) },
			func(r chaos.Report) bool { return r.Lost == 1 && r.Dead == r.ExpectedDead-1 }, "lost"},
		"duplicate": {func(st *chaos.State) { st.Effects[good] = instrument.EffectCount{Applied: 3} },
			func(r chaos.Report) bool { return r.DuplicateEffects == 2 }, "2 duplicate effect(s)"},
		"unexpected dead": {func(st *chaos.State) { st.Dead[good] = 1 },
			func(r chaos.Report) bool { return r.Dead == r.ExpectedDead+1 && r.UnexpectedDeadIDs[0] == good }, "unexpected: " + good},
		"order": {func(st *chaos.State) {
			a := st.Applied[group]
			a[1], a[2] = a[2], a[1]
		}, func(r chaos.Report) bool { return r.OrderViolations == 1 }, "1 order violation(s)"},
		"a posting applied twice is out of order": {func(st *chaos.State) {
			st.Applied[group] = append(st.Applied[group], st.Applied[group][0])
		}, func(r chaos.Report) bool { return r.OrderViolations == 1 }, "order violation"},
		"dead without a run": {func(st *chaos.State) { delete(st.Runs, poisoned) },
			func(r chaos.Report) bool { return r.NeverRanDead == 1 && r.NeverRanDeadIDs[0] == poisoned }, "1 job(s) dead-lettered without one real run"},
		"long job twice": {func(st *chaos.State) { st.Effects[p.Long.ID] = instrument.EffectCount{Applied: 1, Started: 2} },
			func(r chaos.Report) bool { return r.LongJobRuns == 2 }, "started 2 time(s)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := goodState(p)
			c.change(&st)
			r := chaos.Evaluate(p, st, maxAttempts)
			r.DuplicateDeliveries, r.DeadlineBatches = 8, 2
			require.True(t, c.want(r), "%+v", r)
			require.ErrorContains(t, r.Check(), c.msg)
		})
	}
}
