package inspect_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// Queue stats for every queue a deployed stack names in its outputs.
func ExampleInspector_Stats() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	in := inspect.New(cfg)
	queues, err := in.Resolve(ctx, inspect.Target{Stack: "JobkitState"})
	if err != nil {
		log.Fatal(err)
	}
	rep, err := in.Stats(ctx, queues, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range rep.Queues {
		fmt.Printf("%s: %d visible, %d in flight, %d delayed\n", q.Name, q.Visible, q.InFlight, q.Delayed)
		if q.DLQ != nil {
			fmt.Printf("  dead: %d\n", q.DLQ.Visible)
		}
	}
}

// Redrive the dead jobs of one kind back to their queue, with progress.
func ExampleInspector_Redrive() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	in := inspect.New(cfg)
	queues, err := in.Resolve(ctx, inspect.Target{Queues: []string{"email"}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := in.Redrive(ctx, queues[0].DLQURL, &inspect.RedriveOptions{
		Source:   queues[0].URL,
		Filter:   inspect.Filter{Kind: "email.send"},
		Progress: func(p inspect.RedriveProgress) { log.Printf("moved %d of %d", p.Moved, p.Total) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("moved %d (%s); %d still in the DLQ %s\n", res.Moved, res.Method, res.Remaining, res.RemainingReason)
}

// A message received from a dead-letter queue, read back as a DeadJob.
func ExampleParseDeadJob() {
	str := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	msg := sqstypes.Message{
		MessageId: aws.String("7c9e6679-7425-40de-944b-e07fc1f90ae7"),
		Body:      aws.String(`{"v":1,"id":"01JD3Q7X2V","kind":"email.send","args":{"to":"a@example.com"},"enqueued_at":"2026-11-21T12:00:00Z"}`),
		Attributes: map[string]string{
			"SentTimestamp":           "1795262700000",
			"ApproximateReceiveCount": "1",
		},
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			contract.AttrReason:   str(contract.ReasonAttemptsUsed),
			contract.AttrError:    str("smtp: 421 try again later"),
			contract.AttrAttempts: {DataType: aws.String("Number"), StringValue: aws.String("5")},
			contract.AttrFailedAt: str("2026-11-21T12:05:00Z"),
		},
	}
	j := inspect.ParseDeadJob(msg)
	fmt.Println(j.JobID, j.Kind, j.Reason, j.Attempts)
	fmt.Println(j.Error)
	fmt.Println(j.FailedAt)
	fmt.Println(string(j.Envelope.Args))
	fmt.Println(inspect.Filter{Kind: "email.send", ErrorContains: "TRY AGAIN"}.Match(&j))
	// Output:
	// 01JD3Q7X2V email.send attempts_exhausted 5
	// smtp: 421 try again later
	// 2026-11-21 12:05:00 +0000 UTC
	// {"to":"a@example.com"}
	// true
}

// The FIFO deduplication id a manual redrive gives a message: stable for one dead message, and
// never the job id the producer used.
func ExampleRedriveDeduplicationID() {
	fmt.Println(inspect.RedriveDeduplicationID("01JD3Q7X2V", "7c9e6679-7425-40de-944b-e07fc1f90ae7"))
	// Output:
	// 01JD3Q7X2V:redrive:7c9e6679-7425-40de-944b-e07fc1f90ae7
}
