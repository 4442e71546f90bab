// Command lanework is the worker of the priority-lane test on the offline stack
// (TestPriorityLanesOnTheOfflineStack): the same code on every lane, wired by jobs/setup from the
// environment its Worker construct sets, running LaneJob jobs that take WorkMS milliseconds.
package main

import (
	"context"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

// LaneJob takes WorkMS milliseconds and succeeds.
type LaneJob struct {
	Lane   string `json:"lane"`
	N      int    `json:"n"`
	WorkMS int    `json:"work_ms,omitempty"`
}

// Kind implements jobs.JobArgs.
func (LaneJob) Kind() string { return "lanes.work" }

func main() {
	m := setup.FromEnv("lanework")
	jobs.AddWorker(m.Workers, jobs.WorkFunc[LaneJob](func(ctx context.Context, j *jobs.Job[LaneJob]) error {
		select {
		case <-time.After(time.Duration(j.Args.WorkMS) * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	m.Start()
}
