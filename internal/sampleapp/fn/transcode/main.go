// Command transcode is functions/transcode instrumented for the dev and chaos programs: the same
// TranscodeWorker behind the same idempotency middleware, wrapped with instrument.StartLog,
// instrument.FaultMiddleware and, when EFFECTS_TABLE is set, the count of each transcode's
// effect, committed with its idempotency record (instrument.Effects).
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
	effects := instrument.EffectsFromEnv(db)
	if effects != nil {
		effects.CountStarts = true // the long job must start once
	}
	workers := jobs.NewWorkers()
	workers.Use(instrument.StartLog(os.Stdout), idempotency.Middleware(store, nil),
		instrument.FaultMiddleware(), effects.Middleware())
	jobs.AddWorker(workers, &samplejobs.TranscodeWorker{Logger: cfg.Logger})
	jobs.Start(workers, cfg)
}

func exitOn(err error) {
	if err != nil {
		slog.Error("transcode: cannot start", "err", err)
		os.Exit(1)
	}
}
