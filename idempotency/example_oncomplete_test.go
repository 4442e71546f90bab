package idempotency_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// OnComplete lets a middleware count each job that ran, exactly once: the count is written in
// the same transaction as the job's COMPLETED record, so a job delivered twice, or a process
// that dies between the job and its record, never counts twice nor goes uncounted.
func ExampleOnComplete() {
	ctx := context.Background()
	cfg, err := awstest.LoadConfig(ctx) // aws config.LoadDefaultConfig(ctx) in production
	if err != nil {
		panic(err)
	}
	client := dynamodb.NewFromConfig(cfg)

	countRuns := func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			err := idempotency.OnComplete(ctx, types.TransactWriteItem{Update: &types.Update{
				TableName:                 aws.String("job-counts"),
				Key:                       map[string]types.AttributeValue{"kind": &types.AttributeValueMemberS{Value: row.Kind}},
				UpdateExpression:          aws.String("ADD runs :one"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
			}})
			if err != nil {
				return err
			}
			return next(ctx, row)
		}
	}

	workers := jobs.NewWorkers()
	// The counting middleware runs inside idempotency.Middleware, where the claim is.
	workers.Use(idempotency.Middleware(idempotency.NewDynamoDBStore(client, "idempotency"), nil), countRuns)
	fmt.Println("wired")
	// Output: wired
}
