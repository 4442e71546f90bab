package jobs_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// The redrive recorder on a message SQS's redrive policy moved into the holding queue: the job is
// recorded dead (with a StateStore) and sent on to the dead-letter queue, naming the job queue as
// its source. The infra Worker construct deploys it as cmd/jobkit-recorder; this is its handler.
func ExampleNewRedriveRecorder() {
	client := jobstest.NewRecorder() // records what is sent; a *sqs.Client in a function
	states := jobstest.NewStateStore()
	rec := jobs.NewRedriveRecorder(jobs.RecorderConfig{
		QueueURL: jobstest.QueueURL, DLQURL: jobstest.DLQURL, MaxReceiveCount: 8, FunctionName: "mailer",
		SQS: client, States: states, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	moved := jobstest.Message(SendEmail{To: "ada@example.com"}, &jobstest.MessageOpts{ID: "job-1", Attempt: 9})
	resp, _ := rec.Handle(context.Background(), jobstest.Event(moved))

	st, _ := states.JobStatus(context.Background(), "job-1")
	dead := client.DeadLetters(jobstest.DLQURL)[0]
	fmt.Println("failed:", len(resp.BatchItemFailures))
	fmt.Println("state:", st.State, st.Reason)
	fmt.Println("dead letter:", dead.JobID, dead.Reason, dead.SourceQueue == jobstest.QueueURL)
	fmt.Println(dead.Error)
	// Output:
	// failed: 0
	// state: dead redrive_policy
	// dead letter: job-1 redrive_policy true
	// jobs: received 8 times with no outcome reported: moved by the queue's redrive policy (the function did not reach its handler: it failed at init, or its invocations were throttled or killed)
}
