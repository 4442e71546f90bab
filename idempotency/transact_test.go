package idempotency_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// ledger is a business table of account balances, to debit exactly once.
type ledger struct {
	client *dynamodb.Client
	table  string
}

func newLedger(t *testing.T, client *dynamodb.Client) *ledger {
	t.Helper()
	table := awstest.CreateTable(t, awstest.Config(t), "ledger", "pk", "")
	return &ledger{client: client, table: table}
}

func (l *ledger) open(t *testing.T, account string, balance int) {
	l.put(t, account, "balance", balance)
}

func (l *ledger) balance(t *testing.T, account string) int { return l.number(t, account, "balance") }

func (l *ledger) exists(t *testing.T, pk string) bool { return l.item(t, pk) != nil }

// put writes item pk with the number attribute attr.
func (l *ledger) put(t *testing.T, pk, attr string, n int) {
	t.Helper()
	_, err := l.client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(l.table),
		Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, attr: &types.AttributeValueMemberN{Value: strconv.Itoa(n)},
		},
	})
	require.NoError(t, err)
}

// item reads item pk (strongly consistent), nil when there is none.
func (l *ledger) item(t *testing.T, pk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := l.client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(l.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
	})
	require.NoError(t, err)
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// number reads the number attribute attr of item pk, 0 when either is missing.
func (l *ledger) number(t *testing.T, pk, attr string) int {
	t.Helper()
	n, ok := l.item(t, pk)[attr].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	require.NoError(t, err)
	return v
}

// debit returns the transaction items of a debit: the balance decreases by amount if it covers
// it, and a payment item is written.
func (l *ledger) debit(t *testing.T, account, payment string, amount int) []types.TransactWriteItem {
	t.Helper()
	expr, err := expression.NewBuilder().
		WithUpdate(expression.Set(expression.Name("balance"), expression.Name("balance").Minus(expression.Value(amount)))).
		WithCondition(expression.Name("balance").GreaterThanEqual(expression.Value(amount))).
		Build()
	require.NoError(t, err)
	return []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:        aws.String(l.table),
			Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: account}},
			UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: &types.Put{
			TableName: aws.String(l.table),
			Item: map[string]types.AttributeValue{
				"pk":     &types.AttributeValueMemberS{Value: payment},
				"amount": &types.AttributeValueMemberN{Value: strconv.Itoa(amount)},
			},
		}},
	}
}

// The business writes and the COMPLETED record commit together: two requests for a first run,
// and a duplicate neither debits again nor runs.
func TestTransactWriteCommitsWithRecord(t *testing.T) {
	t.Parallel()
	store, counter, client := newDynamoDBStore(t)
	l := newLedger(t, client)
	l.open(t, "acct-1", 100)
	ctx := context.Background()
	runs := 0
	pay := func(ctx context.Context) (receipt, error) {
		runs++
		r := receipt{ID: "pay-1", Amount: 30}
		return r, idempotency.TransactWrite(ctx, l.debit(t, "acct-1", "pay-1", 30), &idempotency.TransactOptions{Result: r})
	}
	counter.take()
	got, err := idempotency.Do(ctx, store, "pay-1", pay, &idempotency.Config{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, receipt{ID: "pay-1", Amount: 30}, got)
	assert.Equal(t, []string{"PutItem", "TransactWriteItems"}, counter.take(), "the transaction is the completion")

	rec, err := store.Get(ctx, "pay-1")
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusCompleted, rec.Status)
	assert.JSONEq(t, `{"id":"pay-1","amount":30}`, string(rec.Data))

	got, err = idempotency.Do(ctx, store, "pay-1", pay, &idempotency.Config{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, receipt{ID: "pay-1", Amount: 30}, got)
	assert.Equal(t, 1, runs)
	assert.Equal(t, 70, l.balance(t, "acct-1"))
}

// When a business condition fails, neither the business writes nor the COMPLETED record are
// written, and the cancellation reasons come back as a *TransactionError.
func TestTransactWriteBusinessConditionFails(t *testing.T) {
	t.Parallel()
	store, _, client := newDynamoDBStore(t)
	l := newLedger(t, client)
	l.open(t, "acct-2", 20)
	ctx := context.Background()

	_, err := idempotency.Do(ctx, store, "pay-2", func(ctx context.Context) (int, error) {
		err := idempotency.TransactWrite(ctx, l.debit(t, "acct-2", "pay-2", 50), nil)
		var te *idempotency.TransactionError
		require.ErrorAs(t, err, &te)
		assert.True(t, te.ConditionFailed(0), "the balance condition failed: %v", te)
		assert.False(t, te.ConditionFailed(1))
		require.Len(t, te.Reasons, 2)
		assert.Equal(t, "ConditionalCheckFailed", te.Reasons[0].Code)
		assert.False(t, te.ClaimLost)
		assert.False(t, errors.Is(err, idempotency.ErrLeaseLost))
		var sdkErr *types.TransactionCanceledException
		assert.ErrorAs(t, err, &sdkErr)

		// Nothing was written: the record is still our claim, the ledger untouched.
		rec, gerr := store.Get(ctx, "pay-2")
		require.NoError(t, gerr)
		assert.Equal(t, idempotency.StatusInProgress, rec.Status)
		assert.Equal(t, 20, l.balance(t, "acct-2"))
		assert.False(t, l.exists(t, "pay-2"))
		return 0, err
	}, &idempotency.Config{NoCache: true})
	var te *idempotency.TransactionError
	require.ErrorAs(t, err, &te)

	// The failed run released its claim: a retry (after a top-up) debits.
	_, gerr := store.Get(ctx, "pay-2")
	require.ErrorIs(t, gerr, idempotency.ErrNotFound)
	l.open(t, "acct-2", 80)
	_, err = idempotency.Do(ctx, store, "pay-2", func(ctx context.Context) (int, error) {
		return 0, idempotency.TransactWrite(ctx, l.debit(t, "acct-2", "pay-2", 50), nil)
	}, &idempotency.Config{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, 30, l.balance(t, "acct-2"))
	assert.True(t, l.exists(t, "pay-2"))
}

// A run whose claim was taken over (its lease ended) cannot commit its side effect.
func TestTransactWriteClaimLost(t *testing.T) {
	t.Parallel()
	store, _, client := newDynamoDBStore(t)
	l := newLedger(t, client)
	l.open(t, "acct-3", 100)
	ctx := context.Background()
	clk := newClock()
	cfg := &idempotency.Config{Now: clk.Now, Lease: time.Minute, NoCache: true}

	_, err := idempotency.Do(ctx, store, "pay-3", func(ctx context.Context) (int, error) {
		// This run stalls past its lease, and another run claims the key.
		clk.Add(2 * time.Minute)
		require.NoError(t, store.Claim(ctx, &idempotency.Record{
			Key: "pay-3", Status: idempotency.StatusInProgress,
			LeaseEnd: clk.Now().Add(time.Minute), ExpiresAt: clk.Now().Add(time.Hour),
		}, clk.Now()))
		return 0, idempotency.TransactWrite(ctx, l.debit(t, "acct-3", "pay-3", 10), nil)
	}, cfg)
	var te *idempotency.TransactionError
	require.ErrorAs(t, err, &te)
	assert.True(t, te.ClaimLost)
	assert.ErrorIs(t, err, idempotency.ErrLeaseLost)
	assert.Equal(t, 100, l.balance(t, "acct-3"))
	assert.False(t, l.exists(t, "pay-3"))
	rec, err := store.Get(ctx, "pay-3")
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusInProgress, rec.Status, "the other run's claim stands")
}

// TransactWrite needs a run's claim and a transactional store.
func TestTransactWriteMisuse(t *testing.T) {
	t.Parallel()
	item := []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String("t")}}}
	require.ErrorIs(t, idempotency.TransactWrite(context.Background(), item, nil), idempotency.ErrNoClaim)

	_, err := idempotency.Do(context.Background(), plainStore{idempotency.NewMemoryStore()}, "k", func(ctx context.Context) (int, error) {
		return 0, idempotency.TransactWrite(ctx, item, nil)
	}, nil)
	require.ErrorContains(t, err, "cannot write transactions")

	store, counter, _ := newDynamoDBStore(t)
	counter.take()
	_, err = idempotency.Do(context.Background(), store, "k2", func(ctx context.Context) (int, error) {
		return 0, idempotency.TransactWrite(ctx, make([]types.TransactWriteItem, idempotency.MaxTransactItems+1), nil)
	}, nil)
	require.ErrorContains(t, err, "at most 99")
	assert.Equal(t, []string{"PutItem", "DeleteItem"}, counter.take(), "claimed, refused before any transaction, released")
}
