// Command email is functions/email instrumented for the dev and chaos programs: the same
// EmailWorker, wrapped with instrument.StartLog (outermost), instrument.FaultMiddleware and, when EFFECTS_TABLE is set, the
// effects count (instrument.Effects), both inside the idempotency middleware; its mail provider
// (instrument.KeyedMailer) honours idempotency keys, as real providers do.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/internal/sampleapp/instrument"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/jobs/state"
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
	workers := jobs.NewWorkers()
	store := idempotency.NewDynamoDBStore(db, table)
	cfg.Deliveries = store // as the sample function: attempts count real runs
	if os.Getenv(instrument.EnvNoRateLimit) != "1" {
		workers.Use(ratelimit.Middleware(ratelimit.NewStore(db, table), samplejobs.EmailRateLimits(), nil))
	}
	workers.Use(instrument.StartLog(os.Stdout))
	idem := &idempotency.Config{}
	if name := os.Getenv(jobs.EnvStateTable); name != "" {
		// As the sample function: job states, batch members counted.
		st, err := state.New(db, name, &state.Options{SQS: sqs.NewFromConfig(awsCfg)})
		exitOn(err)
		workers.Use(st.Middleware(&state.MiddlewareOptions{Folded: true}))
		idem.RecordJobs, cfg.States = true, st
	}
	workers.Use(idempotency.Middleware(store, idem),
		instrument.FaultMiddleware(), instrument.EffectsFromEnv(db).Middleware())
	// The mail provider honours the idempotency key the worker gives it, as real providers do.
	mailer := instrument.KeyedMailer{DB: db, Table: table, Next: samplejobs.LogMailer{Logger: cfg.Logger}}
	jobs.AddWorker(workers, &samplejobs.EmailWorker{Mailer: mailer})
	jobs.AddWorker(workers, &samplejobs.BatchDoneWorker{Logger: cfg.Logger})
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}

func exitOn(err error) {
	if err != nil {
		slog.Error("email: cannot start", "err", err)
		os.Exit(1)
	}
}
