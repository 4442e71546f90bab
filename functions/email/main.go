// Command email is the sample stack's email worker: it runs SendEmail jobs from the Email queue,
// each at most once per idempotency key (DynamoDB idempotency store).
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
	if err != nil || err2 != nil || os.Getenv(jobs.EnvIdempotencyTable) == "" {
		slog.Error("email: bad configuration", "err", err, "aws_err", err2, "idempotency_table", os.Getenv(jobs.EnvIdempotencyTable))
		os.Exit(1)
	}
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(awsCfg), os.Getenv(jobs.EnvIdempotencyTable))

	workers := jobs.NewWorkers()
	workers.Use(idempotency.Middleware(store, nil))
	jobs.AddWorker(workers, &samplejobs.EmailWorker{Mailer: samplejobs.LogMailer{Logger: cfg.Logger}})
	lambda.Start(jobs.NewSQSHandler(workers, cfg))
}
