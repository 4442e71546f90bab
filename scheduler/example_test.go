package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/scheduler"
)

type NightlyReport struct {
	Team string `json:"team"`
}

func (NightlyReport) Kind() string { return "report.nightly" }

// A schedule is declared once in Go; the CDK construct deploys it and the local runner fires it.
func ExampleSchedule() {
	nightly := scheduler.Schedule{
		Name:       "nightly-report",
		Expression: "cron(30 2 * * ? *)", // 02:30 every day...
		TimeZone:   "Europe/Berlin",      // ...Berlin time
		Args:       NightlyReport{Team: "ops"},
		Queue:      "reports",
		Retry:      &scheduler.RetryPolicy{MaxRetries: 3, MaxEventAge: time.Hour},
	}
	if err := nightly.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	input, _ := nightly.Input()
	fmt.Println(input)

	// Berlin skips 02:00-03:00 on 2026-03-29: that night has no tick.
	after := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 2; i++ {
		after, _, _ = nightly.Next(after)
		fmt.Println(after.UTC().Format(time.RFC3339))
	}
	body, _ := nightly.Envelope(after)
	fmt.Println(body)
	// Output:
	// {"v":1,"id":"sched:nightly-report:<aws.scheduler.scheduled-time>","kind":"report.nightly","args":{"team":"ops"},"enqueued_at":"<aws.scheduler.scheduled-time>"}
	// 2026-03-28T01:30:00Z
	// 2026-03-30T00:30:00Z
	// {"v":1,"id":"sched:nightly-report:2026-03-30T00:30:00Z","kind":"report.nightly","args":{"team":"ops"},"enqueued_at":"2026-03-30T00:30:00Z"}
}

func ExampleParseExpression() {
	for _, expr := range []string{
		"cron(0 18 ? * 6L *)",     // the last Friday of the month, 18:00
		"cron(0 9 ? * MON-FRI *)", // weekdays, 09:00
		"cron(0 9 * * * *)",       // invalid: one of the day fields must be ?
		"rate(1 minutes)",         // invalid: 1 takes the singular
	} {
		e, err := scheduler.ParseExpression(expr)
		if err != nil {
			fmt.Println(err)
			continue
		}
		next, _ := e.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC)
		fmt.Println(e.Kind(), next.Format(time.RFC3339))
	}
	// Output:
	// cron 2026-01-30T18:00:00Z
	// cron 2026-01-01T09:00:00Z
	// scheduler: invalid expression "cron(0 9 * * * *)": day-of-week "*": one of day-of-month and day-of-week must be ? (EventBridge does not combine them), e.g. cron(0 9 ? * MON *) or cron(0 9 1 * ? *)
	// scheduler: invalid expression "rate(1 minutes)" "minutes": a value of 1 takes the singular unit, e.g. rate(1 minute)
}

func ExampleScheduleNameForJob() {
	fmt.Println(scheduler.ScheduleNameForJob("01JD3XK5Q7W0000000000000AB"))
	fmt.Println(scheduler.ScheduleNameForJob("order:42"))
	// Output:
	// job-01JD3XK5Q7W0000000000000AB
	// job-order-42-da68380de022bac7
}

func ExampleQueueARN() {
	arn, _ := scheduler.QueueARN("https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo", "")
	fmt.Println(arn)
	arn, _ = scheduler.QueueARN("http://127.0.0.1:4566/123456789012/jobs", "us-east-1")
	fmt.Println(arn)
	// Output:
	// arn:aws:sqs:eu-west-1:123456789012:jobs.fifo
	// arn:aws:sqs:us-east-1:123456789012:jobs
}

// A producer delays jobs past 15 minutes with one-time schedules.
func ExampleDelayer() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	delayCfg, err := scheduler.DelayerConfigFromEnv() // set by the DelayedJobs construct
	if err != nil {
		panic(err)
	}
	delayer, err := scheduler.NewDelayer(awsscheduler.NewFromConfig(cfg), delayCfg)
	if err != nil {
		panic(err)
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{
		DefaultQueueURL: os.Getenv("JOBS_QUEUE_URL"),
		LongDelayer:     delayer,
	})
	if err != nil {
		panic(err)
	}
	res, err := client.Enqueue(ctx, NightlyReport{Team: "ops"}, &jobs.EnqueueOpts{Delay: 72 * time.Hour})
	if err != nil {
		panic(err)
	}
	// Changed our mind:
	if err := client.CancelDelayed(ctx, res.ID); err != nil {
		panic(err)
	}
}
