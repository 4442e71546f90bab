package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The idempotency benchmark counts the DynamoDB requests of a first run, a duplicate from another
// process (a cold cache) and a duplicate in the same warm process, with SDK middleware on the
// client, then times each kind of call.
func init() {
	register("idempotency", 20, benchIdempotency)
}

func benchIdempotency(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	var requests atomic.Int64
	cfg.APIOptions = append(cfg.APIOptions, awstest.OnCall(func(string, any) { requests.Add(1) }))
	client := dynamodb.NewFromConfig(cfg)
	table, drop, err := createBenchTable(ctx, client)
	if err != nil {
		return err
	}
	defer drop()

	store := idempotency.NewDynamoDBStore(client, table)
	type result struct {
		ID string `json:"id"`
	}
	runs := 0
	fn := func(ctx context.Context) (result, error) { runs++; return result{ID: "r"}, nil }
	call := func(key string, cache *idempotency.Cache) (int64, error) {
		before := requests.Load()
		_, err := idempotency.Do(ctx, store, key, fn, &idempotency.Config{Cache: cache, NoCache: cache == nil, Payload: key})
		return requests.Load() - before, err
	}
	warm := idempotency.NewCache(idempotency.DefaultCacheSize)
	if err := benchRequestCounts(call, warm, emit); err != nil {
		return err
	}
	if runs != 1 {
		return fmt.Errorf("the function ran %d times for one key", runs)
	}
	if err := benchLatencies(call, warm, emit); err != nil {
		return err
	}
	if runs != 1+latencyCalls {
		return fmt.Errorf("the function ran %d times for %d keys", runs, 1+latencyCalls)
	}
	return nil
}

// createBenchTable creates an idempotency table on the emulator and waits until it is active;
// drop deletes it.
func createBenchTable(ctx context.Context, client *dynamodb.Client) (table string, drop func(), err error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	table = "jk-bench-idempotency-" + hex.EncodeToString(b[:])
	if _, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(idempotency.AttrID), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(idempotency.AttrID), KeyType: types.KeyTypeHash}},
	}); err != nil {
		return "", nil, fmt.Errorf("create table: %w", err)
	}
	drop = func() {
		_, _ = client.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute); err != nil {
		drop()
		return "", nil, fmt.Errorf("table %s not active: %w", table, err)
	}
	return table, drop, nil
}

// benchRequestCounts emits the DynamoDB requests of a first run, a duplicate in another process
// and a duplicate in the same (warm) process. call runs one key and returns its requests.
func benchRequestCounts(call func(string, *idempotency.Cache) (int64, error), warm *idempotency.Cache, emit func(string, any)) error {
	first, err := call("bench-counted", warm)
	if err != nil {
		return err
	}
	duplicate, err := call("bench-counted", nil) // another process: nothing cached
	if err != nil {
		return err
	}
	warmDuplicate, err := call("bench-counted", warm)
	if err != nil {
		return err
	}
	emit("idempotency_ddb_requests_first_run", first)
	emit("idempotency_ddb_requests_duplicate", duplicate)
	emit("idempotency_ddb_requests_warm_duplicate", warmDuplicate)
	return nil
}

// latencyCalls is how many calls of each kind benchLatencies times.
const latencyCalls = 100

// benchLatencies emits the latency of each kind of call against the emulator (a loopback HTTP
// round trip each), over latencyCalls new keys.
func benchLatencies(call func(string, *idempotency.Cache) (int64, error), warm *idempotency.Cache, emit func(string, any)) error {
	timed := func(cache *idempotency.Cache) (float64, error) {
		start := time.Now()
		for i := range latencyCalls {
			if _, err := call(fmt.Sprintf("bench-%d", i), cache); err != nil {
				return 0, err
			}
		}
		return float64(time.Since(start).Microseconds()) / 1000 / latencyCalls, nil
	}
	firstMS, err := timed(warm)
	if err != nil {
		return err
	}
	dupMS, err := timed(nil)
	if err != nil {
		return err
	}
	warmMS, err := timed(warm)
	if err != nil {
		return err
	}
	emit("idempotency_first_run_ms", firstMS)
	emit("idempotency_duplicate_ms", dupMS)
	emit("idempotency_warm_duplicate_ms", warmMS)
	return nil
}
