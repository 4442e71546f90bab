package instrument_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// A producer adds fault instructions to a sample job's args; the middleware wrapped around the
// unchanged sample worker injects them.
func ExampleFaultMiddleware() {
	ctx := context.Background()
	workers := jobs.NewWorkers()
	workers.Use(instrument.FaultMiddleware())
	jobs.AddWorker(workers, &samplejobs.TranscodeWorker{Step: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})

	job := instrument.WithFaults(samplejobs.TranscodeVideo{VideoID: "v1", Seconds: 1}, instrument.Faults{FailAttempts: 1})
	args, _ := json.Marshal(job)
	fmt.Println(string(args))
	fmt.Println(jobstest.Run(ctx, workers, job, &jobstest.JobOpts{Attempt: 1}))
	fmt.Println(jobstest.Run(ctx, workers, job, &jobstest.JobOpts{Attempt: 2}))
	// Output:
	// {"video_id":"v1","seconds":1,"fail_attempts":1}
	// instrument: injected failure on attempt 1 (fail_attempts=1)
	// <nil>
}
