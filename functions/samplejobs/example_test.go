package samplejobs_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/setup"
	"github.com/jobkit-go/jobkit/scheduler"
)

// ResizeImage is a job: plain arguments with a Kind, which names it on the wire.
type ResizeImage struct {
	ImageID string `json:"image_id"`
	Width   int    `json:"width"`
}

// Kind implements jobs.JobArgs.
func (ResizeImage) Kind() string { return "image.resize" }

// ResizeWorker runs ResizeImage jobs.
type ResizeWorker struct{}

// Work returns nil on success, jobs.Cancel(err) to dead-letter at once, jobs.Snooze(d) to run
// again after d, and any other error to retry with backoff.
func (ResizeWorker) Work(ctx context.Context, job *jobs.Job[ResizeImage]) error {
	if job.Args.Width <= 0 {
		return jobs.Cancel(fmt.Errorf("width %d", job.Args.Width)) // retrying cannot fix it
	}
	fmt.Printf("resize %s to %dpx (attempt %d)\n", job.Args.ImageID, job.Args.Width, job.Attempt)
	return nil
}

// main is the main of a function running ResizeImage jobs (functions/resize/main.go).
func main() {
	m := setup.FromEnv("resize") // the environment the Worker construct sets: config, clients, idempotency
	jobs.AddWorker(m.Workers, ResizeWorker{})
	m.Start() // on Lambda, or as a container worker
}

// Writing a job handler: the args type, its worker and the function's main. In a test, jobstest
// runs a job through the registry as the runtime would.
func Example_jobHandler() {
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		main() // only inside Lambda
	}
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, ResizeWorker{})
	err := jobstest.Run(context.Background(), workers, ResizeImage{ImageID: "img-7", Width: 640}, nil)
	fmt.Println("err:", err)
	// Output:
	// resize img-7 to 640px (attempt 1)
	// err: <nil>
}

// Sending jobs from a service: route each kind to its queue (the stack outputs JobkitQueue<Name>
// hold the URLs) and enqueue typed args. A FIFO job names its message group.
func Example_enqueue() {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(awsCfg), jobs.ClientOptions{Queues: map[string]string{
		samplejobs.KindSendEmail:  os.Getenv("EMAIL_QUEUE_URL"),  // output JobkitQueueEmail
		samplejobs.KindPostLedger: os.Getenv("LEDGER_QUEUE_URL"), // output JobkitQueueLedger
	}})
	if err != nil {
		panic(err)
	}
	res, err := client.Enqueue(ctx, samplejobs.SendEmail{To: "ada@example.com", Subject: "Welcome"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("enqueued", res.ID)
	posting := samplejobs.PostLedger{Account: "acct-1", PostingID: "p-1001", AmountCents: 1250}
	_, err = client.Enqueue(ctx, posting, &jobs.EnqueueOpts{GroupID: posting.GroupID()})
	if err != nil {
		panic(err)
	}
}

// Recurring jobs are declared once in Go (samplejobs.Schedules): the CDK app renders each as an
// EventBridge Scheduler schedule and schedfire.Runner fires them offline. Every tick is an
// envelope whose id carries its scheduled time.
func Example_schedules() {
	after := time.Date(2026, 7, 15, 12, 0, 0, 0, time.UTC)
	for _, s := range samplejobs.Schedules {
		next, _, err := s.Next(after)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s %s -> %s, next %s, job %s\n", s.Name, s.Expression, s.TimeZoneName(), s.Queue,
			next.UTC().Format(time.RFC3339), scheduler.TickID(s.Name, next))
	}
	// Output:
	// daily-digest: cron(0 8 * * ? *) Europe/Berlin -> Email, next 2026-07-16T06:00:00Z, job sched:daily-digest:2026-07-16T06:00:00Z
	// ledger-interest: rate(1 hour) UTC -> Ledger, next 2026-07-15T13:00:00Z, job sched:ledger-interest:2026-07-15T13:00:00Z
}
