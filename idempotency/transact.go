package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxTransactItems is the most business items TransactWrite takes: DynamoDB's limit of 100
// items per transaction, less the COMPLETED record.
const MaxTransactItems = 99

// TransactionalStore is a Store that can complete a claim in the same transaction as other
// DynamoDB writes. DynamoDBStore is one.
type TransactionalStore interface {
	Store
	// CompleteWith writes items and replaces the claim on rec.Key whose lease ends at leaseEnd
	// with rec (COMPLETED), all or nothing, in one TransactWriteItems call. When the transaction
	// is cancelled it returns a *TransactionError.
	CompleteWith(ctx context.Context, rec *Record, leaseEnd time.Time, items []types.TransactWriteItem) error
}

// TransactOptions configures TransactWrite. A nil *TransactOptions means the defaults.
type TransactOptions struct {
	// Result is recorded (as JSON) as the key's data, returned to duplicates of Do. Nil records
	// no data.
	Result any
}

// TransactWrite commits items (Put, Update, Delete, ConditionCheck on any tables) together with
// the COMPLETED record of the claim in ctx, in one DynamoDB transaction: either the business
// writes and the COMPLETED record are both written, or neither is. Call it inside the function
// run by Do, or inside a job handler run by Middleware, with the context they pass; the store
// must be a TransactionalStore. Once it succeeds the key is completed, whatever the function
// returns afterwards, so a side effect written this way happens exactly once. Items registered
// with OnComplete are written in the same transaction, after items.
//
// It returns ErrNoClaim outside a run, and a *TransactionError when DynamoDB cancels the
// transaction (a business condition failed, or the claim was lost: errors.Is(err, ErrLeaseLost)).
func TransactWrite(ctx context.Context, items []types.TransactWriteItem, opts *TransactOptions) error {
	st, ts, err := openTransaction(ctx, "TransactWrite", len(items))
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if n := len(items) + len(st.pending); n > MaxTransactItems {
		return fmt.Errorf("idempotency: TransactWrite with %d items (%d of them from OnComplete); at most %d fit beside the record",
			n, len(st.pending), MaxTransactItems)
	}
	rec := Record{
		Key:        st.claim.Key,
		Status:     StatusCompleted,
		ExpiresAt:  st.now().Add(st.expiry),
		LeaseEnd:   st.claim.LeaseEnd,
		Validation: st.claim.Validation,
	}
	if st.claim.JobID != "" {
		// Middleware with RecordJobs: the completion is also the job's succeeded state.
		rec.JobID, rec.Attempt, rec.StartedAt, rec.FinishedAt = st.claim.JobID, st.claim.Attempt, st.claim.StartedAt, st.now()
		rec.Queue, rec.Kind = st.claim.Queue, st.claim.Kind
	}
	if opts != nil && opts.Result != nil {
		data, err := json.Marshal(opts.Result)
		if err != nil {
			return fmt.Errorf("idempotency: encode result: %w", err)
		}
		rec.Data = data
	}
	all := append(items[:len(items):len(items)], st.pending...)
	if err := ts.CompleteWith(ctx, &rec, st.claim.LeaseEnd, all); err != nil {
		return err
	}
	st.done, st.pending = &rec, nil
	return nil
}

// CancellationReason is why DynamoDB cancelled one item of a transaction.
type CancellationReason struct {
	// Code is DynamoDB's code: "None" (this item was fine), "ConditionalCheckFailed",
	// "TransactionConflict", "ThrottlingError", "ValidationError", ...
	Code    string
	Message string
	// Item is the item as it was, when the item asked for ReturnValuesOnConditionCheckFailure.
	Item map[string]types.AttributeValue
}

// TransactionError reports a transaction DynamoDB cancelled: nothing was written.
type TransactionError struct {
	Key string // the idempotency key
	// Reasons has one entry per business item, in the order they were passed (TransactWrite's
	// items, then those registered with OnComplete).
	Reasons []CancellationReason
	// ClaimLost is set when the COMPLETED record's condition failed: the claim had ended.
	ClaimLost bool
	// Err is the SDK's error (a *types.TransactionCanceledException).
	Err error
}

func (e *TransactionError) Error() string {
	var parts []string
	for i, r := range e.Reasons {
		if r.Code != "" && r.Code != "None" {
			parts = append(parts, fmt.Sprintf("item %d: %s", i, r.Code))
		}
	}
	if e.ClaimLost {
		parts = append(parts, "idempotency record: claim no longer held")
	}
	if len(parts) == 0 {
		return fmt.Sprintf("idempotency: transaction for key %q cancelled: %v", e.Key, e.Err)
	}
	return fmt.Sprintf("idempotency: transaction for key %q cancelled (%s)", e.Key, strings.Join(parts, "; "))
}

func (e *TransactionError) Unwrap() error { return e.Err }

// Is reports ErrLeaseLost when the claim was lost.
func (e *TransactionError) Is(target error) bool { return target == ErrLeaseLost && e.ClaimLost }

// ConditionFailed reports whether business item i was cancelled because its condition failed.
func (e *TransactionError) ConditionFailed(i int) bool {
	return i >= 0 && i < len(e.Reasons) && e.Reasons[i].Code == "ConditionalCheckFailed"
}

// CompleteWith implements TransactionalStore: one TransactWriteItems call with items and an
// Update of the record conditioned on the claim.
func (s *DynamoDBStore) CompleteWith(ctx context.Context, rec *Record, leaseEnd time.Time, items []types.TransactWriteItem) error {
	update, err := s.completeUpdate(rec, leaseEnd)
	if err != nil {
		return err
	}
	update.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	all := make([]types.TransactWriteItem, 0, len(items)+1)
	all = append(all, items...)
	all = append(all, types.TransactWriteItem{Update: update})
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: all})
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return fmt.Errorf("idempotency: transaction for key %q: %w", rec.Key, err)
	}
	if n := len(tce.CancellationReasons); n == len(all) && completedBy(tce.CancellationReasons[n-1].Item, leaseEnd) {
		// The SDK retried a transaction whose first attempt committed (its response was lost):
		// the record is COMPLETED by this claim, so the business writes committed with it.
		return nil
	}
	te := &TransactionError{Key: rec.Key, Err: err}
	for i, r := range tce.CancellationReasons {
		reason := CancellationReason{Code: aws.ToString(r.Code), Message: aws.ToString(r.Message), Item: r.Item}
		if i < len(items) {
			te.Reasons = append(te.Reasons, reason)
		} else if i == len(items) && reason.Code == "ConditionalCheckFailed" {
			te.ClaimLost = true
		}
	}
	return te
}
