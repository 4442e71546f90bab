package jobstest_test

import (
	"context"
	"fmt"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// Test a handler end to end without AWS: build the event from typed args, run it, and read back
// what was retried and dead-lettered.
func Example() {
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[Resize](func(ctx context.Context, job *jobs.Job[Resize]) error {
		switch {
		case job.Args.Width <= 0:
			return jobs.Cancel(fmt.Errorf("width %d", job.Args.Width))
		case job.Args.URL == "":
			return fmt.Errorf("no image yet")
		}
		return nil
	}))
	rec := jobstest.NewRecorder()
	handler := jobs.NewLambdaHandler(workers, jobstest.Config(rec)).HandleSQS
	resp, _ := handler(context.Background(), jobstest.Event(
		jobstest.Message(Resize{URL: "a.png", Width: 64}, &jobstest.MessageOpts{MessageID: "ok"}),
		jobstest.Message(Resize{Width: 64}, &jobstest.MessageOpts{MessageID: "later"}),
		jobstest.Message(Resize{URL: "b.png"}, &jobstest.MessageOpts{MessageID: "bad", Attempt: 2}),
	))
	fmt.Println("retry:", jobstest.FailedIDs(resp))
	for _, d := range rec.DeadLetters() {
		fmt.Println("dead:", d.SourceMessageID, d.Reason, d.Attempts)
	}
	// Output:
	// retry: [later]
	// dead: bad cancelled 2
}
