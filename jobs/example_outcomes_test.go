package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// Charge is a job that calls a payment provider.
type Charge struct {
	OrderID string `json:"order_id"`
	Cents   int    `json:"cents"`
}

func (Charge) Kind() string { return "order.charge" }

var errRateLimited = errors.New("rate limited")

// Snooze: try again later without it counting as a failure — here when the provider rate-limits.
// The runtime sets the message's visibility to the snooze and lists it for retry.
func ExampleSnooze() {
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[Charge](func(ctx context.Context, job *jobs.Job[Charge]) error {
		if err := charge(job.Args); errors.Is(err, errRateLimited) {
			return jobs.Snooze(30 * time.Second)
		}
		return nil
	}))
	rec := jobstest.NewRecorder()
	handler := jobs.NewLambdaHandler(workers, jobstest.Config(rec)).HandleSQS
	msg := jobstest.Message(Charge{OrderID: "o-1", Cents: 500}, &jobstest.MessageOpts{MessageID: "m-1"})
	resp, _ := handler(context.Background(), jobstest.Event(msg))
	visible, _ := rec.VisibilityOf(msg.ReceiptHandle)
	fmt.Println("retry:", jobstest.FailedIDs(resp), "after", visible)
	// Output:
	// retry: [m-1] after 30s
}

// Cancel: a job that can never succeed is dead-lettered at once, with the error attached, whatever
// attempts remain. (Any other error retries with backoff.)
func ExampleCancel() {
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[Charge](func(ctx context.Context, job *jobs.Job[Charge]) error {
		if job.Args.Cents <= 0 {
			return jobs.Cancel(fmt.Errorf("order %s: nothing to charge", job.Args.OrderID))
		}
		return charge(job.Args)
	}))
	rec := jobstest.NewRecorder()
	handler := jobs.NewLambdaHandler(workers, jobstest.Config(rec)).HandleSQS
	resp, _ := handler(context.Background(), jobstest.Event(jobstest.Message(Charge{OrderID: "o-2"}, nil)))
	fmt.Println("listed for retry:", len(resp.BatchItemFailures))
	for _, d := range rec.DeadLetters() {
		fmt.Printf("%s: %s (attempt %d)\n", d.Reason, d.Error, d.Attempts)
	}
	// Output:
	// listed for retry: 0
	// cancelled: jobs: cancelled: order o-2: nothing to charge (attempt 1)
}

func charge(c Charge) error {
	if c.OrderID == "o-1" {
		return errRateLimited
	}
	return nil
}
