package jobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
)

type chargeCard struct {
	Order string `json:"order"`
}

func (chargeCard) Kind() string { return "card.charge" }

// A kind with its own attempts, timeout and backoff, beside the function's defaults.
func ExampleKindOpts() {
	workers := jobs.NewWorkers()
	chargeWorker := jobs.WorkFunc[chargeCard](func(ctx context.Context, job *jobs.Job[chargeCard]) error {
		return nil
	})
	jobs.AddWorker(workers, chargeWorker, jobs.KindOpts{
		MaxAttempts: 2,                // dead-lettered (attempts_exhausted) after 2 runs
		Timeout:     20 * time.Second, // each run's context ends after 20 s
		Backoff:     jobs.ExponentialBackoff(time.Minute, time.Hour),
	})
	fmt.Println(workers.Kinds())
	// Output: [card.charge]
}
