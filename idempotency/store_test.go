package idempotency_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/idempotency/storetest"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) idempotency.Store { return idempotency.NewMemoryStore() })
}

func TestDynamoDBStoreConformance(t *testing.T) {
	t.Parallel()
	runOnTable(t, awstest.Config(t))
}

// The suite again on DynamoDB Local, AWS's own engine: the store's conditions and the ALL_OLD
// answers it relies on, judged by the implementation that runs in AWS rather than by moto alone.
func TestDynamoDBStoreConformanceOnDynamoDBLocal(t *testing.T) {
	t.Parallel()
	runOnTable(t, awstest.DynamoDBLocalConfig(t))
}

// runOnTable runs the store suite on a DynamoDBStore of a new table at cfg's endpoint.
func runOnTable(t *testing.T, cfg aws.Config) {
	table := awstest.CreateTable(t, cfg, "idem", idempotency.AttrID, "")
	client := dynamodb.NewFromConfig(cfg)
	storetest.Run(t, func(t *testing.T) idempotency.Store { return idempotency.NewDynamoDBStore(client, table) })
}

// requestCounter counts the DynamoDB requests a client makes, by operation: one per call (the SDK
// resending a request after a lost response is the same request).
type requestCounter struct {
	mu  sync.Mutex
	ops []string
}

func (c *requestCounter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, awstest.OnCall(func(op string, _ any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.ops = append(c.ops, op)
	}))
}

// take returns the operations counted since the last take.
func (c *requestCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

// newDynamoDBStore returns a store on a fresh table of the emulator, its client's request counter
// and the raw client.
func newDynamoDBStore(t *testing.T) (*idempotency.DynamoDBStore, *requestCounter, *dynamodb.Client) {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "idem", idempotency.AttrID, "")
	counter := &requestCounter{}
	client := dynamodb.NewFromConfig(cfg, counter.option)
	return idempotency.NewDynamoDBStore(client, table), counter, client
}

// The delivery ledger counts, per message id, deliveries that did not run and runs started on a
// redelivery, apart; one read returns both. The same on DynamoDB and in memory.
func TestDeliveryLedgerCounts(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "idem", idempotency.AttrID, "")
	for name, l := range map[string]jobs.DeliveryLedger{
		"dynamodb": idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), table),
		"memory":   idempotency.NewMemoryStore(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			require.NoError(t, l.AddDeliveries(ctx, "m1", 1, 0))
			require.NoError(t, l.AddDeliveries(ctx, "m1", 1, 0))
			require.NoError(t, l.AddDeliveries(ctx, "m1", 0, 2))
			require.NoError(t, l.AddDeliveries(ctx, "m1", 0, -1))
			require.NoError(t, l.AddDeliveries(ctx, "m2", 0, 1))
			notRun, started, err := l.Deliveries(ctx, "m1")
			require.NoError(t, err)
			require.Equal(t, [2]int{2, 1}, [2]int{notRun, started})
			notRun, started, err = l.Deliveries(ctx, "m2")
			require.NoError(t, err)
			require.Equal(t, [2]int{0, 1}, [2]int{notRun, started})
			notRun, started, err = l.Deliveries(ctx, "unknown")
			require.NoError(t, err)
			require.Equal(t, [2]int{0, 0}, [2]int{notRun, started})
		})
	}
}
