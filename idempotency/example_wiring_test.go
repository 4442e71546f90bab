package idempotency_test

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// A worker function's wiring: every job runs once per key, and attempts count real runs.
func Example_wiring() {
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		panic(err)
	}
	table := os.Getenv(contract.EnvIdempotencyTable)
	db := dynamodb.NewFromConfig(awsCfg)
	store := idempotency.NewDynamoDBStore(db, table) // table: JOBKIT_IDEMPOTENCY_TABLE
	workers := jobs.NewWorkers()
	workers.Use(idempotency.Middleware(store, nil))
	cfg.Deliveries = store // attempts count real runs, not skipped deliveries
	_ = jobs.NewLambdaHandler(workers, cfg).HandleSQS
}
