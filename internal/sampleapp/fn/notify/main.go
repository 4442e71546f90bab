// Command notify is functions/notify instrumented for the dev and chaos programs: the same
// NotifyWorker, wrapped with instrument.StartLog (outermost), instrument.FaultMiddleware and, when
// EFFECTS_TABLE is set, the effects count (instrument.Effects), both inside the idempotency
// middleware.
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
	"github.com/jobkit-go/jobkit/internal/sampleapp/instrument"
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
	db := dynamodb.NewFromConfig(awsCfg)
	store := idempotency.NewDynamoDBStore(db, table)
	cfg.Deliveries = store // as the sample function: attempts count real runs
	workers := jobs.NewWorkers()
	workers.Use(instrument.StartLog(os.Stdout), idempotency.Middleware(store, nil),
		instrument.FaultMiddleware(), instrument.EffectsFromEnv(db).Middleware())
	jobs.AddWorker(workers, &samplejobs.NotifyWorker{Logger: cfg.Logger})
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}

func exitOn(err error) {
	if err != nil {
		slog.Error("notify: cannot start", "err", err)
		os.Exit(1)
	}
}
