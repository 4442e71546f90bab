package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// Lanes of one logical queue: a job goes to the lane its Priority names (each lane a queue with
// its own DLQ and its own share of the workers: the PriorityQueue construct).
func ExampleEnqueueOpts_priority() {
	const jobsURL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
	client, err := jobs.NewClient(jobstest.NewRecorder(), jobs.ClientOptions{
		DefaultQueueURL: jobsURL, // output JobkitQueueJobsDefault
		Lanes: map[string]map[string]string{jobsURL: {
			"critical": "https://sqs.us-east-1.amazonaws.com/123456789012/jobs-critical",
			"bulk":     "https://sqs.us-east-1.amazonaws.com/123456789012/jobs-bulk",
		}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, _ := client.Enqueue(ctx, SendEmail{To: "ada@example.com"}, &jobs.EnqueueOpts{Priority: "critical"})
	fmt.Println(awsarn.QueueName(res.QueueURL))
	res, _ = client.Enqueue(ctx, SendEmail{To: "list@example.com"}, &jobs.EnqueueOpts{Priority: "bulk"})
	fmt.Println(awsarn.QueueName(res.QueueURL))
	_, err = client.Enqueue(ctx, SendEmail{To: "ada@example.com"}, &jobs.EnqueueOpts{Priority: "urgent"})
	fmt.Println(errors.Is(err, jobs.ErrUnknownPriority))
	// Output:
	// jobs-critical
	// jobs-bulk
	// true
}

// A web tier sheds load when the queue's backlog passes a threshold: the client reads the
// backlog once per Refresh (5 s) and refuses with an *OverloadedError, answered as 429.
func ExampleBackpressure() {
	api := sqs.New(sqs.Options{Region: "us-east-1"}) // sqs.NewFromConfig(awsCfg)
	client, err := jobs.NewClient(api, jobs.ClientOptions{
		DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/jobs",
		Backpressure:    &jobs.Backpressure{API: api, MaxBacklog: 50000, SlowFrom: 20000, MaxSlowdown: 200 * time.Millisecond},
	})
	if err != nil {
		panic(err)
	}
	http.HandleFunc("/signup", func(w http.ResponseWriter, r *http.Request) {
		_, err := client.Enqueue(r.Context(), SendEmail{To: r.FormValue("email")}, nil)
		var over *jobs.OverloadedError
		switch {
		case errors.As(err, &over):
			w.Header().Set("Retry-After", strconv.Itoa(int(over.RetryAfter.Seconds())+1))
			http.Error(w, "busy, try again shortly", http.StatusTooManyRequests)
		case err != nil:
			http.Error(w, "could not enqueue", http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
}
