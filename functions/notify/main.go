// Command notify is the sample stack's notification worker: it runs SendNotification jobs from
// one lane of the Notify queue — the same binary consumes every lane, each lane's function with
// its own queue and its own share of the concurrency (infra's PriorityQueue) — each job sent
// once while its idempotency record lasts.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
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
	jobs.AddWorker(workers, &samplejobs.NotifyWorker{Logger: cfg.Logger})
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}

func exitOn(err error) {
	if err != nil {
		slog.Error("notify: cannot start", "err", err)
		os.Exit(1)
	}
}
