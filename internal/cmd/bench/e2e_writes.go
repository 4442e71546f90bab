package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The stack's DynamoDB calls are one conditional write per item: an idempotency claim, then its
// completion. itemWrites measures, on the same emulator after the pairs, what one such write
// costs alone and what it costs as one of e2eBatchWrites in a TransactWriteItems — the only
// DynamoDB call that writes many items each under its own condition at AWS's documented
// semantics (all or nothing, two write units an item) — in alternating pairs of rounds:
//
//	e2e_item_write_ms           a conditional PutItem like the claim, per item
//	e2e_item_write_batched_ms   the same write as one of a TransactWriteItems of e2eBatchWrites, per item
//	e2e_item_write_batched_vs_single, _spread   batched / single
const (
	e2eBatchWrites    = 25 // the email mapping's batch size
	e2eRoundsPerSide  = 4  // batches of e2eBatchWrites a side writes in a pair
	e2eItemWritePairs = minPairs
)

func itemWrites(ctx context.Context, cfg aws.Config, emit func(string, any)) (singleMs, batchedMs float64, err error) {
	db := dynamodb.NewFromConfig(cfg)
	var b [4]byte
	_, _ = rand.Read(b[:])
	table := "e2e-writes-" + hex.EncodeToString(b[:])
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		return 0, 0, fmt.Errorf("e2e: create table: %w", err)
	}
	defer func() {
		_, _ = db.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()

	n := 0
	claim := func() *types.Put { // a fresh key, under the idempotency claim's condition
		n++
		now := time.Now()
		return &types.Put{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				"id":                     &types.AttributeValueMemberS{Value: "e2e#" + strconv.Itoa(n)},
				"status":                 &types.AttributeValueMemberS{Value: "INPROGRESS"},
				"expiration":             &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(time.Hour).Unix(), 10)},
				"in_progress_expiration": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(time.Minute).UnixMilli(), 10)},
			},
			ConditionExpression:      aws.String("attribute_not_exists(#id) OR #exp <= :now OR (#status = :inprogress AND #lease <= :nowms)"),
			ExpressionAttributeNames: map[string]string{"#id": "id", "#exp": "expiration", "#status": "status", "#lease": "in_progress_expiration"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now":        &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
				":nowms":      &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
				":inprogress": &types.AttributeValueMemberS{Value: "INPROGRESS"},
			},
		}
	}
	const items = e2eRoundsPerSide * e2eBatchWrites
	single, batched, err := alternate(e2eItemWritePairs, func(int) (float64, error) {
		start := time.Now()
		for range items {
			p := claim()
			if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item,
				ConditionExpression: p.ConditionExpression, ExpressionAttributeNames: p.ExpressionAttributeNames,
				ExpressionAttributeValues: p.ExpressionAttributeValues}); err != nil {
				return 0, fmt.Errorf("e2e: put: %w", err)
			}
		}
		return float64(time.Since(start).Microseconds()) / 1000 / items, nil
	}, func(int) (float64, error) {
		start := time.Now()
		for range e2eRoundsPerSide {
			writes := make([]types.TransactWriteItem, e2eBatchWrites)
			for i := range writes {
				writes[i].Put = claim()
			}
			if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: writes}); err != nil {
				return 0, fmt.Errorf("e2e: transact: %w", err)
			}
		}
		return float64(time.Since(start).Microseconds()) / 1000 / items, nil
	})
	if err != nil {
		return 0, 0, err
	}
	emit("e2e_item_write_ms", median(single))
	emit("e2e_item_write_batched_ms", median(batched))
	emitRatio(emit, "e2e_item_write_batched_vs_single", batched, single)
	return median(single), median(batched), nil
}
