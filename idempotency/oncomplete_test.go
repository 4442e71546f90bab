package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
)

// count returns the item that adds one to counter pk of l's table, and, with cond, only while
// the counter is below 1 (so that a second write of it fails).
func (l *ledger) count(pk string, cond bool) types.TransactWriteItem {
	u := &types.Update{
		TableName:                 aws.String(l.table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}
	if cond {
		u.ConditionExpression = aws.String("attribute_not_exists(#n)")
	}
	return types.TransactWriteItem{Update: u}
}

func (l *ledger) setCounted(t *testing.T, pk string, n int) { l.put(t, pk, "n", n) }

func (l *ledger) counted(t *testing.T, pk string) int { return l.number(t, pk, "n") }

// A run that writes nothing itself: its completion becomes one transaction with the registered
// items, and a duplicate writes them no more.
func TestOnCompleteWithoutTransactWrite(t *testing.T) {
	t.Parallel()
	store, counter, client := newDynamoDBStore(t)
	l := newLedger(t, client)
	ctx := context.Background()
	runs := 0
	fn := func(ctx context.Context) (string, error) {
		runs++
		require.NoError(t, idempotency.OnComplete(ctx, l.count("c1", false)))
		return "ok", nil
	}
	counter.take()
	got, err := idempotency.Do(ctx, store, "k1", fn, &idempotency.Config{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, "ok", got)
	assert.Equal(t, []string{"PutItem", "TransactWriteItems"}, counter.take(), "the transaction is the completion")
	rec, err := store.Get(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusCompleted, rec.Status)
	assert.JSONEq(t, `"ok"`, string(rec.Data))

	got, err = idempotency.Do(ctx, store, "k1", fn, &idempotency.Config{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, "ok", got)
	assert.Equal(t, 1, runs)
	assert.Equal(t, 1, l.counted(t, "c1"))
}

// A run that calls TransactWrite: the registered items join its transaction, after its own.
func TestOnCompleteJoinsTransactWrite(t *testing.T) {
	t.Parallel()
	store, counter, client := newDynamoDBStore(t)
	l := newLedger(t, client)
	l.open(t, "acct-oc", 100)
	ctx := context.Background()
	counter.take()
	_, err := idempotency.Do(ctx, store, "pay-oc", func(ctx context.Context) (int, error) {
		require.NoError(t, idempotency.OnComplete(ctx, l.count("c2", false)))
		return 0, idempotency.TransactWrite(ctx, l.debit(t, "acct-oc", "pay-oc", 30), nil)
	}, &idempotency.Config{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"PutItem", "TransactWriteItems"}, counter.take(), "one transaction for both")
	assert.Equal(t, 70, l.balance(t, "acct-oc"))
	assert.Equal(t, 1, l.counted(t, "c2"))

	// When the run's own condition fails, the registered items are not written either; the
	// reasons list the run's items, then the registered ones.
	_, err = idempotency.Do(ctx, store, "pay-oc2", func(ctx context.Context) (int, error) {
		require.NoError(t, idempotency.OnComplete(ctx, l.count("c3", false)))
		return 0, idempotency.TransactWrite(ctx, l.debit(t, "acct-oc", "pay-oc2", 500), nil)
	}, &idempotency.Config{NoCache: true})
	var te *idempotency.TransactionError
	require.ErrorAs(t, err, &te)
	assert.True(t, te.ConditionFailed(0))
	assert.Len(t, te.Reasons, 3)
	assert.Equal(t, 0, l.counted(t, "c3"))
}

// A failed run drops the registered items; a failed completion transaction fails the run and
// releases the claim, so that a retry runs and writes them.
func TestOnCompleteFailures(t *testing.T) {
	t.Parallel()
	store, counter, client := newDynamoDBStore(t)
	l := newLedger(t, client)
	ctx := context.Background()
	cfg := &idempotency.Config{NoCache: true}
	boom := errors.New("boom")

	_, err := idempotency.Do(ctx, store, "k-fail", func(ctx context.Context) (int, error) {
		require.NoError(t, idempotency.OnComplete(ctx, l.count("c4", false)))
		return 0, boom
	}, cfg)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, 0, l.counted(t, "c4"))

	// c5 already counted: the conditional item cancels the completion.
	l.setCounted(t, "c5", 1)
	counter.take()
	runs := 0
	_, err = idempotency.Do(ctx, store, "k-cancel", func(ctx context.Context) (int, error) {
		runs++
		return 0, idempotency.OnComplete(ctx, l.count("c5", true))
	}, cfg)
	var te *idempotency.TransactionError
	require.ErrorAs(t, err, &te)
	assert.True(t, te.ConditionFailed(0))
	var se *idempotency.StoreError
	assert.False(t, errors.As(err, &se), "not a recording failure: the run failed")
	assert.Equal(t, []string{"PutItem", "TransactWriteItems", "DeleteItem"}, counter.take(), "claimed, cancelled, released")
	_, err = store.Get(ctx, "k-cancel")
	require.ErrorIs(t, err, idempotency.ErrNotFound)

	_, err = idempotency.Do(ctx, store, "k-cancel", func(ctx context.Context) (int, error) {
		runs++
		return 0, idempotency.OnComplete(ctx, l.count("c6", true))
	}, cfg)
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Equal(t, 1, l.counted(t, "c6"))
}

// Behind Middleware, a job whose registered items cannot be written fails (and retries) rather
// than succeeding unrecorded.
func TestOnCompleteMiddleware(t *testing.T) {
	t.Parallel()
	store, _, client := newDynamoDBStore(t)
	l := newLedger(t, client)
	ctx := context.Background()
	count := func(cond bool) jobs.Middleware {
		return func(next jobs.Handler) jobs.Handler {
			return func(ctx context.Context, row *jobs.JobRow) error {
				if err := idempotency.OnComplete(ctx, l.count("job-"+row.ID, cond)); err != nil {
					return err
				}
				return next(ctx, row)
			}
		}
	}
	ok := func(context.Context, *jobs.JobRow) error { return nil }
	h := idempotency.Middleware(store, &idempotency.Config{NoCache: true})(count(true)(ok))
	require.NoError(t, h(ctx, jobRow("m1", "", `{}`)))
	require.NoError(t, h(ctx, jobRow("m1", "", `{}`)), "a duplicate is skipped")
	assert.Equal(t, 1, l.counted(t, "job-m1"))

	l.setCounted(t, "job-m2", 1)
	err := h(ctx, jobRow("m2", "", `{}`))
	var te *idempotency.TransactionError
	require.ErrorAs(t, err, &te, "the job fails: its count was not written")
	_, err = store.Get(ctx, idempotency.JobKey(jobRow("m2", "", "")))
	require.ErrorIs(t, err, idempotency.ErrNotFound, "the claim is released for the retry")
}

// OnComplete needs a run's claim and a transactional store.
func TestOnCompleteMisuse(t *testing.T) {
	t.Parallel()
	item := types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t")}}
	require.ErrorIs(t, idempotency.OnComplete(context.Background(), item), idempotency.ErrNoClaim)
	_, err := idempotency.Do(context.Background(), plainStore{idempotency.NewMemoryStore()}, "k", func(ctx context.Context) (int, error) {
		return 0, idempotency.OnComplete(ctx, item)
	}, nil)
	require.ErrorContains(t, err, "cannot write transactions")
}

// plainStore is a Store that is not a TransactionalStore.
type plainStore struct{ idempotency.Store }

// The MemoryStore takes transactions as DynamoDB does, so code using OnComplete and TransactWrite
// runs in a test without DynamoDB: the claim completes with its items written, once — a duplicate
// of the key neither runs nor writes again —; an item whose condition fails cancels the whole
// transaction, claim included, so the run fails and nothing is written; a table the store does
// not have is refused.
func TestMemoryStoreTakesTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := idempotency.NewMemoryStore()
	for table, key := range map[string]string{"orders": "id", "counts": "name"} {
		require.NoError(t, store.CreateTable(&dynamodb.CreateTableInput{TableName: aws.String(table),
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(key), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: types.ScalarAttributeTypeS}}}))
	}
	countKey := map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: "orders"}}
	count := types.TransactWriteItem{Update: &types.Update{TableName: aws.String("counts"), Key: countKey,
		UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}}
	order := func(id string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String("orders"), ConditionExpression: aws.String("attribute_not_exists(id)"),
			Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}}}
	}
	runs := 0
	place := func(key, id string) (string, error) {
		return idempotency.Do(ctx, store, key, func(ctx context.Context) (string, error) {
			runs++
			if err := idempotency.OnComplete(ctx, count); err != nil {
				return "", err
			}
			return "placed", idempotency.TransactWrite(ctx, []types.TransactWriteItem{order(id)}, &idempotency.TransactOptions{Result: "placed"})
		}, nil)
	}
	for range 2 {
		got, err := place("order-7", "7")
		require.NoError(t, err)
		assert.Equal(t, "placed", got)
	}
	assert.Equal(t, 1, runs)
	assert.Equal(t, [][]types.TransactWriteItem{{order("7"), count}}, store.Transactions(), "the run's items, then OnComplete's, in one transaction")
	assert.Equal(t, &types.AttributeValueMemberN{Value: "1"}, store.Item("counts", countKey)["n"])
	rec, err := store.Get(ctx, "order-7")
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusCompleted, rec.Status)

	// Another key writing the same order: its condition fails, nothing of the run is written.
	_, err = place("order-7-again", "7")
	var te *idempotency.TransactionError
	require.ErrorAs(t, err, &te)
	assert.True(t, te.ConditionFailed(0), "the order's condition failed")
	assert.False(t, te.ClaimLost)
	assert.Equal(t, &types.AttributeValueMemberN{Value: "1"}, store.Item("counts", countKey)["n"], "the count of the cancelled run is not written")
	_, err = store.Get(ctx, "order-7-again")
	assert.ErrorIs(t, err, idempotency.ErrNotFound, "the claim is released: a retry runs again")

	// A table the store does not have: refused, as DynamoDB refuses it.
	_, err = idempotency.Do(ctx, store, "audit-1", func(ctx context.Context) (int, error) {
		return 1, idempotency.TransactWrite(ctx, []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String("audit"),
			Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "1"}}}}}, nil)
	}, nil)
	require.ErrorContains(t, err, `table "audit"`)
}
