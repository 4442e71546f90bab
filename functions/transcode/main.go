// Command transcode is the sample stack's long-job worker: it runs TranscodeVideo jobs from the
// Transcode queue, on Lambda or in a container (jobs.Start picks from the environment). While a
// job works, the runtime's heartbeat keeps its message invisible; when the job's context ends
// (the Lambda deadline, or the container's drain on SIGTERM), the job stops and is retried.
//
// Jobs run behind idempotency.Middleware: a task killed after a transcode finished and before its
// message was deleted does not transcode again. In a container the claim holds the key for the
// queue's visibility timeout and is renewed while the job runs (jobs.KeepAlive), so a job whose
// task died is taken again when its message comes back, not hours later.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
)

func main() {
	cfg, err := jobs.ConfigFromEnv()
	exitOn(err)
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	exitOn(err)
	table := os.Getenv(jobs.EnvIdempotencyTable)
	if table == "" {
		exitOn(errors.New(jobs.EnvIdempotencyTable + " is not set"))
	}
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(awsCfg), table)
	cfg.Deliveries = store // attempts count real runs, not skipped deliveries
	workers := jobs.NewWorkers()
	workers.Use(idempotency.Middleware(store, nil))
	jobs.AddWorker(workers, &samplejobs.TranscodeWorker{Logger: cfg.Logger})
	jobs.Start(workers, cfg)
}

func exitOn(err error) {
	if err != nil {
		slog.Error("transcode: cannot start", "err", err)
		os.Exit(1)
	}
}
