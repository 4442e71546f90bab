package schedfire_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jobkit-go/jobkit/offline/schedfire"
	"github.com/jobkit-go/jobkit/scheduler"
)

type NightlyReport struct {
	Team string `json:"team"`
}

func (NightlyReport) Kind() string { return "report.nightly" }

// Offline, a Runner fires the declared schedules and the delayed jobs stored in a group.
func ExampleRunner() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	runner, err := schedfire.New(schedfire.Config{
		SQS:       sqs.NewFromConfig(cfg),
		Scheduler: awsscheduler.NewFromConfig(cfg),
		Groups:    []string{os.Getenv(scheduler.EnvScheduleGroup)},
		Schedules: []scheduler.Schedule{{
			Name: "nightly-report", Expression: "cron(30 2 * * ? *)", TimeZone: "Europe/Berlin",
			Args: NightlyReport{Team: "ops"}, Queue: "reports",
		}},
		Queues: map[string]string{"reports": os.Getenv("REPORTS_QUEUE_URL")},
		Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	})
	if err != nil {
		panic(err)
	}
	if err := runner.Run(ctx); err != nil { // until ctx ends
		panic(err)
	}
}
