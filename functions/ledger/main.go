// Command ledger is the sample stack's ledger worker: it runs PostLedger jobs from the FIFO Ledger
// queue, in order per account, each posting applied exactly once (in one DynamoDB transaction
// with its idempotency record).
package main

import (
	"context"
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
	awsCfg, err2 := config.LoadDefaultConfig(context.Background())
	idemTable, ledgerTable := os.Getenv(jobs.EnvIdempotencyTable), os.Getenv(samplejobs.EnvLedgerTable)
	if err != nil || err2 != nil || idemTable == "" || ledgerTable == "" {
		slog.Error("ledger: bad configuration", "err", err, "aws_err", err2, "idempotency_table", idemTable, "ledger_table", ledgerTable)
		os.Exit(1)
	}
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(awsCfg), idemTable)

	workers := jobs.NewWorkers()
	workers.Use(idempotency.Middleware(store, nil))
	jobs.AddWorker(workers, &samplejobs.LedgerWorker{Table: ledgerTable})
	lambda.Start(jobs.NewSQSHandler(workers, cfg))
}
