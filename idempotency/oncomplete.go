package idempotency

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// OnComplete registers items (Put, Update, Delete, ConditionCheck on any tables) to be written
// in the same DynamoDB transaction as the COMPLETED record of the claim in ctx, so that they are
// written exactly once, when and only when the run succeeds. It suits code that wraps a run
// without knowing what the run writes, such as a jobs.Middleware inside Middleware that counts
// what jobs did.
//
// The items join the run's completion, whichever way it happens:
//
//   - if the run calls TransactWrite, they are written in that transaction, after its items;
//   - otherwise the completion itself becomes one TransactWriteItems call (the items and the
//     COMPLETED record) instead of an UpdateItem. If that transaction fails, nothing is written,
//     the claim is released and the run fails with the error (a *TransactionError when DynamoDB
//     cancelled it), so a retry runs again: items registered this way are never lost nor written
//     twice.
//
// If the run fails, the items are dropped with the claim. Call OnComplete inside the function run
// by Do, or inside a job handler run by Middleware, with the context they pass; the store must be
// a TransactionalStore. It returns ErrNoClaim outside a run.
func OnComplete(ctx context.Context, items ...types.TransactWriteItem) error {
	st, _, err := openTransaction(ctx, "OnComplete", len(items))
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if n := len(st.pending) + len(items); n > MaxTransactItems {
		return fmt.Errorf("idempotency: OnComplete: %d items; at most %d fit beside the record", n, MaxTransactItems)
	}
	st.pending = append(st.pending, items...)
	return nil
}

// openTransaction returns the claim of the run in ctx and its store, locked for op to add items
// to the key's completion transaction: the caller unlocks st.mu. It fails outside a run, on a
// store that cannot write transactions, with no items, and once a transaction completed the key.
func openTransaction(ctx context.Context, op string, items int) (*claimState, TransactionalStore, error) {
	st := claimFrom(ctx)
	if st == nil {
		return nil, nil, ErrNoClaim
	}
	ts, ok := st.store.(TransactionalStore)
	if !ok {
		return nil, nil, fmt.Errorf("idempotency: store %T cannot write transactions", st.store)
	}
	if items == 0 {
		return nil, nil, fmt.Errorf("idempotency: %s with no items", op)
	}
	st.mu.Lock()
	if st.done != nil {
		st.mu.Unlock()
		return nil, nil, fmt.Errorf("idempotency: key %q is already completed by a transaction", st.claim.Key)
	}
	return st, ts, nil
}
