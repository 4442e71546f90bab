package outbox_test

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/outbox"
)

// A service writes an order and the job that sends its receipt in one transaction: both or
// neither. The forwarder (below) sends the job from the state table's stream.
func ExampleOutbox_Write() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: os.Getenv("RECEIPTS_QUEUE_URL")})
	if err != nil {
		panic(err)
	}
	ob, err := outbox.New(outbox.Config{Table: os.Getenv(contract.EnvIdempotencyTable), Client: client})
	if err != nil {
		panic(err)
	}
	order := types.TransactWriteItem{Put: &types.Put{
		TableName:           aws.String("orders"),
		Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "order-1"}},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	}}
	ids, err := ob.Write(ctx, db, []types.TransactWriteItem{order}, outbox.Job{Args: SendReceipt{Order: "order-1"}})
	if err != nil {
		panic(err) // nothing was written: neither the order nor its job
	}
	_ = ids // the job ids, as Enqueue would have returned them
}

// The forwarder, as a Lambda function on the state table's stream (cmd/jobkit-outbox).
func ExampleForwarder() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	fw, err := outbox.NewForwarder(outbox.ForwarderConfig{
		SQS: sqs.NewFromConfig(cfg), DynamoDB: dynamodb.NewFromConfig(cfg), Table: os.Getenv(contract.EnvIdempotencyTable),
	})
	if err != nil {
		panic(err)
	}
	lambda.Start(fw.Handle)
}
