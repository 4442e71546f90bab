// Command outbox is the sample stack's outbox forwarder: on the state table's stream (new
// images), it sends the jobs services wrote with package outbox in their own transactions, and
// deletes the outbox items it sent (see outbox.Forwarder).
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/outbox"
)

func main() {
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	exitOn(err)
	table := os.Getenv(contract.EnvIdempotencyTable)
	if table == "" {
		exitOn(errors.New(contract.EnvIdempotencyTable + " is not set"))
	}
	fw, err := outbox.NewForwarder(outbox.ForwarderConfig{
		SQS: sqs.NewFromConfig(awsCfg), DynamoDB: dynamodb.NewFromConfig(awsCfg), Table: table,
		Queues: strings.Fields(os.Getenv(outbox.EnvQueues)), // the queues its construct grants
	})
	exitOn(err)
	lambda.Start(fw.Handle)
}

func exitOn(err error) {
	if err != nil {
		slog.Error("outbox: cannot start", "err", err)
		os.Exit(1)
	}
}
