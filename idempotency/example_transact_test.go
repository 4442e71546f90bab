package idempotency_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// TransactWrite debits an account exactly once: the debit and the COMPLETED record commit in one
// transaction, so a retry after a crash either finds the key completed or debits for the first
// time — never twice.
func ExampleTransactWrite() {
	ctx := context.Background()
	cfg, err := awstest.LoadConfig(ctx) // aws config.LoadDefaultConfig(ctx) in production
	if err != nil {
		panic(err)
	}
	client := dynamodb.NewFromConfig(cfg)
	store := idempotency.NewDynamoDBStore(client, "idempotency")

	debit := func(account string, amount int) (types.TransactWriteItem, error) {
		expr, err := expression.NewBuilder().
			WithUpdate(expression.Set(expression.Name("balance"), expression.Name("balance").Minus(expression.Value(amount)))).
			WithCondition(expression.Name("balance").GreaterThanEqual(expression.Value(amount))).
			Build()
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		return types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String("accounts"),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: account}},
			UpdateExpression:          expr.Update(),
			ConditionExpression:       expr.Condition(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		}}, nil
	}

	receipt, err := idempotency.Do(ctx, store, "payment-p-17", func(ctx context.Context) (string, error) {
		item, err := debit("acct-9", 25)
		if err != nil {
			return "", err
		}
		r := "debited 25"
		return r, idempotency.TransactWrite(ctx, []types.TransactWriteItem{item}, &idempotency.TransactOptions{Result: r})
	}, nil)
	fmt.Println(receipt, err)
}
