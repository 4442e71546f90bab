package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// A producer: route kinds to queues and enqueue typed jobs. Here the SQS client is a
// jobstest.Recorder; in a service it is sqs.NewFromConfig(awsCfg).
func ExampleNewClient() {
	rec := jobstest.NewRecorder()
	client, err := jobs.NewClient(rec, jobs.ClientOptions{
		DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/jobs",
		Queues: map[string]string{
			"user.welcome": "https://sqs.us-east-1.amazonaws.com/123456789012/emails.fifo",
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	// FIFO queue: a group keeps a user's jobs in order; the job id is the dedup id.
	res, err := client.Enqueue(ctx, Welcome{UserID: 7, Email: "ada@example.com"}, &jobs.EnqueueOpts{ID: "welcome-7", GroupID: "user-7"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.ID, "->", awsarn.QueueName(res.QueueURL))

	// Bad input is refused before any AWS call, with a typed error.
	_, err = client.Enqueue(ctx, Welcome{UserID: 8}, nil)
	fmt.Println(err)

	// Batches go 10 jobs (and at most 1 MiB) per call; a delay up to 15 minutes rides on SQS.
	var batch []jobs.BatchJob
	for i := 0; i < 12; i++ {
		batch = append(batch, jobs.BatchJob{Args: jobs.RawArgs{KindName: "report.build", JSON: []byte(`{"day":1}`)}, Opts: &jobs.EnqueueOpts{Delay: time.Minute}})
	}
	results, err := client.EnqueueBatch(ctx, batch)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(results), "jobs in", len(rec.Batches()), "calls")
	// Output:
	// welcome-7 -> emails.fifo
	// jobs: cannot enqueue user.welcome job: a FIFO queue needs a message group id (EnqueueOpts.GroupID)
	// 12 jobs in 2 calls
}

// A trace from an incoming request to the job: the request's traceparent goes into the context,
// the client continues it in the envelope, and the worker's context carries it.
func ExampleContextWithTrace() {
	rec := jobstest.NewRecorder()
	client, err := jobs.NewClient(rec, jobs.ClientOptions{DefaultQueueURL: jobstest.QueueURL})
	if err != nil {
		panic(err)
	}
	r, _ := http.NewRequest(http.MethodPost, "https://example.com/signup", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	ctx := r.Context()

	ctx = jobs.ContextWithTrace(ctx, r.Header.Get("traceparent")) // an invalid header is ignored
	res, err := client.Enqueue(ctx, samplejobs.SendEmail{To: "ada@example.com"}, nil)
	if err != nil {
		panic(err)
	}

	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[samplejobs.SendEmail](func(ctx context.Context, job *jobs.Job[samplejobs.SendEmail]) error {
		fmt.Println(job.ID == res.ID, "runs in trace", jobs.TraceID(jobs.TraceFromContext(ctx)))
		return nil
	}))
	sent := jobstest.RawMessage(*rec.Sent()[0].MessageBody, nil) // as the worker's function receives it
	if _, err := jobs.NewLambdaHandler(w, jobstest.Config(rec)).HandleSQS(context.Background(), jobstest.Event(sent)); err != nil {
		panic(err)
	}
	// Output:
	// true runs in trace 4bf92f3577b34da6a3ce929d0e0e4736
}
