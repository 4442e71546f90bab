// Command ledger is functions/ledger instrumented for the dev and chaos programs: the same
// LedgerWorker, wrapped with instrument.StartLog (outermost), instrument.FaultMiddleware and, when EFFECTS_TABLE is set, the
// effects count, which commits in the posting's own transaction (instrument.Effects).
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
	idemTable, ledgerTable := os.Getenv(jobs.EnvIdempotencyTable), os.Getenv(samplejobs.EnvLedgerTable)
	if idemTable == "" || ledgerTable == "" {
		exitOn(errors.New(jobs.EnvIdempotencyTable + " and " + samplejobs.EnvLedgerTable + " must be set"))
	}

	db := dynamodb.NewFromConfig(awsCfg)
	workers := jobs.NewWorkers()
	store := idempotency.NewDynamoDBStore(db, idemTable)
	cfg.Deliveries = store // as the sample function: attempts count real runs
	workers.Use(instrument.StartLog(os.Stdout), idempotency.Middleware(store, nil),
		instrument.FaultMiddleware(), instrument.EffectsFromEnv(db).Middleware())
	jobs.AddWorker(workers, &samplejobs.LedgerWorker{Table: ledgerTable})
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}

func exitOn(err error) {
	if err != nil {
		slog.Error("ledger: cannot start", "err", err)
		os.Exit(1)
	}
}
