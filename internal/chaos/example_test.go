package chaos_test

import (
	"fmt"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/internal/chaos"
)

// Evaluate judges a run from the state it left: here, a run in which every job but the poison
// ones applied its effect once, the poison ones were dead-lettered after one run, each account's
// postings were applied in order, the long job started once, and the planned duplicates and
// overruns took place.
func ExampleEvaluate() {
	plan, err := chaos.NewPlan(chaos.PlanConfig{Jobs: 200, Groups: 2, GroupJobs: 5, PoisonRate: 0.02})
	if err != nil {
		panic(err)
	}
	st := chaos.State{Effects: map[string]instrument.EffectCount{}, Dead: map[string]int{}, Applied: map[string][]string{}, Runs: map[string]int{}}
	for _, j := range plan.All() {
		st.Runs[j.ID] = 1
		if j.Poison {
			st.Dead[j.ID]++
			continue
		}
		st.Effects[j.ID] = instrument.EffectCount{Applied: 1, Started: 1}
		if p, ok := j.Args.(samplejobs.PostLedger); ok {
			st.Applied[p.Account] = append(st.Applied[p.Account], p.PostingID)
		}
	}
	r := chaos.Evaluate(plan, st, nil)
	r.DuplicateDeliveries, r.DeadlineBatches = 4, 1 // measured by the run, not in the state
	fmt.Println(r.Line())
	fmt.Println(r.Check())
	// Output:
	// CHAOS jobs=200 lost=0 stranded=0 redriven=0 redrive_lost=0 duplicate_effects=0 dead=4 expected_dead=4 order_violations=0 long_job_runs=1 never_ran_dead=0 duplicate_deliveries=4 deadline_batches=1 seconds=0 batches=0 callbacks=0 duplicate_callbacks=0 missing_callbacks=0
	// <nil>
}
