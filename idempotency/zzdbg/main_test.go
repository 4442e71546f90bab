package dbg

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/smithy-go/middleware"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/localstack/awstest"
)

type logRetryer struct{ aws.RetryerV2 }

func (r logRetryer) IsErrorRetryable(err error) bool {
	ok := r.RetryerV2.IsErrorRetryable(err)
	if ok {
		fmt.Printf("RETRYABLE: %T %v\n", err, err)
	}
	return ok
}

func TestDbg(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "idem", "id", "")
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.Retryer = logRetryer{retry.NewStandard()}
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("dbg",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleDeserialize(ctx, in)
					if err != nil {
						fmt.Println("OP", middleware.GetOperationName(ctx), "ctxErr", ctx.Err(), err)
					}
					return out, md, err
				}), middleware.Before)
		})
	})
	store := idempotency.NewDynamoDBStore(client, table)
	for i := range 300 {
		_, err := idempotency.Do(context.Background(), store, fmt.Sprint("k", i), func(ctx context.Context) (int, error) { return 1, nil }, &idempotency.Config{NoCache: true})
		if err != nil {
			t.Fatal(i, err)
		}
	}
}
