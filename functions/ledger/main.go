// Command ledger is the sample stack's ledger worker: it runs PostLedger jobs from the FIFO Ledger
// queue, in order per account, each posting applied exactly once (in one DynamoDB transaction
// with its idempotency record, which holds its key for JOBKIT_IDEMPOTENCY_EXPIRY: the queue's and
// DLQ's retention under the Worker construct).
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
	idemTable, ledgerTable := os.Getenv(jobs.EnvIdempotencyTable), os.Getenv(samplejobs.EnvLedgerTable)
	if idemTable == "" || ledgerTable == "" {
		exitOn(errors.New(jobs.EnvIdempotencyTable + " and " + samplejobs.EnvLedgerTable + " must be set"))
	}

	db := dynamodb.NewFromConfig(awsCfg)
	workers := jobs.NewWorkers()
	store := idempotency.NewDynamoDBStore(db, idemTable)
	workers.Use(idempotency.Middleware(store, nil))
	cfg.Deliveries = store // attempts count real runs, not FIFO skips
	jobs.AddWorker(workers, &samplejobs.LedgerWorker{Table: ledgerTable})
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}

func exitOn(err error) {
	if err != nil {
		slog.Error("ledger: cannot start", "err", err)
		os.Exit(1)
	}
}
