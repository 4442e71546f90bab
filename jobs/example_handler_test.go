package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// Welcome is a job: a plain struct with a Kind.
type Welcome struct {
	UserID int    `json:"user_id"`
	Email  string `json:"email"`
}

func (Welcome) Kind() string { return "user.welcome" }

// A Lambda worker: register workers, build the handler from the environment's config, start it.
// Here the SQS client is a jobstest.Recorder and the event is built in memory; in a function's
// main it is
//
//	cfg, err := jobs.ConfigFromEnv()
//	if err != nil { log.Fatal(err) }
//	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
func ExampleLambdaHandler_HandleSQS() {
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[Welcome](func(ctx context.Context, job *jobs.Job[Welcome]) error {
		if job.Args.Email == "" {
			return jobs.Cancel(fmt.Errorf("user %d has no email", job.Args.UserID))
		}
		fmt.Printf("welcome %s (attempt %d)\n", job.Args.Email, job.Attempt)
		return nil
	}))

	rec := jobstest.NewRecorder()
	handler := jobs.NewLambdaHandler(workers, jobstest.Config(rec)).HandleSQS
	resp, err := handler(context.Background(), jobstest.Event(
		jobstest.Message(Welcome{UserID: 1, Email: "ada@example.com"}, nil),
		jobstest.Message(Welcome{UserID: 2}, nil),
	))
	if err != nil {
		panic(err)
	}
	fmt.Println("failed records:", len(resp.BatchItemFailures))
	for _, d := range rec.DeadLetters() {
		fmt.Println("dead-lettered:", d.Kind, d.Reason, d.Error)
	}
	// Output:
	// welcome ada@example.com (attempt 1)
	// failed records: 0
	// dead-lettered: user.welcome cancelled jobs: cancelled: user 2 has no email
}

// NewLambdaHandler is the same runtime taking the event's bytes, as Lambda hands them over: a
// function's main starts it with lambda.Start(jobs.NewLambdaHandler(workers, cfg)).
func ExampleNewLambdaHandler() {
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[Welcome](func(ctx context.Context, job *jobs.Job[Welcome]) error {
		fmt.Printf("welcome %s\n", job.Args.Email)
		return nil
	}))
	handler := jobs.NewLambdaHandler(workers, jobstest.Config(jobstest.NewRecorder()))
	payload, err := json.Marshal(jobstest.Event(jobstest.Message(Welcome{UserID: 1, Email: "ada@example.com"}, nil)))
	if err != nil {
		panic(err)
	}
	out, err := handler.Invoke(context.Background(), payload)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output:
	// welcome ada@example.com
	// {"batchItemFailures":[]}
}
