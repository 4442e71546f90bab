// Command worker is taskrun's test container: jobs.Start with one kind, taskrun.test, whose job
// prints "start <n> <pid>", sleeps its seconds (returning early when its context ends, unless it
// is stubborn) and prints "done <n>".
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
)

type testJob struct {
	N        int     `json:"n"`
	Seconds  float64 `json:"seconds"`
	Stubborn bool    `json:"stubborn,omitempty"`
}

func (testJob) Kind() string { return "taskrun.test" }

func main() {
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[testJob](func(ctx context.Context, job *jobs.Job[testJob]) error {
		fmt.Printf("start %d %d\n", job.Args.N, os.Getpid())
		d := time.Duration(job.Args.Seconds * float64(time.Second))
		if job.Args.Stubborn {
			time.Sleep(d)
		} else {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				fmt.Printf("interrupted %d\n", job.Args.N)
				return ctx.Err()
			}
		}
		fmt.Printf("done %d\n", job.Args.N)
		return nil
	}))
	jobs.Start(workers, cfg)
}
