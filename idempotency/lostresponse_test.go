package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// errLostResponse stands for a response lost after DynamoDB applied the request (a connection
// closed while the body was read): the SDK retries it.
type errLostResponse struct{}

func (errLostResponse) Error() string        { return "response lost: use of closed network connection" }
func (errLostResponse) RetryableError() bool { return true }

// loseFirstResponse makes the first attempt of operation op reach DynamoDB, then fail as if its
// response had been lost, so the SDK sends it again.
func loseFirstResponse(op string, lost *atomic.Int32) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("loseFirstResponse",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleDeserialize(ctx, in)
					if err == nil && middleware.GetOperationName(ctx) == op && lost.CompareAndSwap(0, 1) {
						return out, md, errLostResponse{}
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

// A request the SDK sends twice because the first response was lost — which happens against
// DynamoDB itself and often against the emulator — must not turn a success into a failure: the
// retried claim finds its own claim, the retried completion its own completion, the retried
// release no record, the retried transaction its own commit.
func TestDynamoDBStoreSurvivesLostResponses(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "idem", idempotency.AttrID, "")
	for _, op := range []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			var lost atomic.Int32
			client := dynamodb.NewFromConfig(cfg, loseFirstResponse(op, &lost))
			store := idempotency.NewDynamoDBStore(client, table)
			var logs bytes.Buffer
			conf := &idempotency.Config{NoCache: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			ctx := context.Background()
			key := "lost-" + op
			runs := 0
			fail := errors.New("fails once")
			var l *ledger
			if op == "TransactWriteItems" {
				l = newLedger(t, dynamodb.NewFromConfig(cfg))
				l.open(t, "acct", 100)
			}
			fn := func(ctx context.Context) (int, error) {
				runs++
				switch {
				case op == "DeleteItem" && runs == 1:
					return 0, fail
				case l != nil:
					return runs, idempotency.TransactWrite(ctx, l.debit(t, "acct", "payment", 10), &idempotency.TransactOptions{Result: runs})
				}
				return runs, nil
			}
			got, err := idempotency.Do(ctx, store, key, fn, conf)
			if op == "DeleteItem" {
				require.ErrorIs(t, err, fail)
				_, gerr := store.Get(ctx, key)
				require.ErrorIs(t, gerr, idempotency.ErrNotFound)
				assert.NotContains(t, logs.String(), "not released")
				got, err = idempotency.Do(ctx, store, key, fn, conf)
			}
			require.NoError(t, err)
			require.EqualValues(t, 1, lost.Load(), "a response was lost")
			want := 1
			if op == "DeleteItem" {
				want = 2
			}
			assert.Equal(t, want, got)
			assert.Empty(t, logs.String())

			// A duplicate gets the recorded result and does not run.
			got, err = idempotency.Do(ctx, store, key, fn, conf)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, want, runs)
			if l != nil {
				assert.Equal(t, 90, l.balance(t, "acct"), "debited exactly once")
			}
		})
	}
}
