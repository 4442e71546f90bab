// Command email is the sample stack's email worker: it runs SendEmail jobs from the Email queue,
// each at most once per idempotency key while its record lasts (DynamoDB idempotency store;
// JOBKIT_IDEMPOTENCY_EXPIRY, which the Worker construct sets to the queue's and DLQ's retention).
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
	store := idempotency.NewDynamoDBStore(db, table)
	workers := jobs.NewWorkers()
	// The provider's rate limit first, so a job waiting for a token holds no idempotency claim.
	workers.Use(ratelimit.Middleware(ratelimit.NewStore(db, table), samplejobs.EmailRateLimits(), nil))
	idem := &idempotency.Config{}
	if name := os.Getenv(jobs.EnvStateTable); name != "" {
		// Job states: running and succeeded in the idempotency records, batch members counted.
		st, err := state.New(db, name, &state.Options{SQS: sqs.NewFromConfig(awsCfg)})
		exitOn(err)
		workers.Use(st.Middleware(&state.MiddlewareOptions{Folded: true}))
		idem.RecordJobs, cfg.States = true, st
	}
	workers.Use(idempotency.Middleware(store, idem))
	cfg.Deliveries = store // attempts count real runs, not skipped deliveries
	jobs.AddWorker(workers, &samplejobs.EmailWorker{Mailer: samplejobs.LogMailer{Logger: cfg.Logger}})
	jobs.AddWorker(workers, &samplejobs.BatchDoneWorker{Logger: cfg.Logger})
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}

func exitOn(err error) {
	if err != nil {
		slog.Error("email: cannot start", "err", err)
		os.Exit(1)
	}
}
