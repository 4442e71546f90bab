package idempotency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency/internal/memddb"
)

// MemoryStore is a Store in process memory: for tests, and for programs that run as one process.
// Records are lost when the process ends.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]Record
	written [][]types.TransactWriteItem // CompleteWith's items, one slice a transaction
	tables  memddb.Tables               // the tables CompleteWith writes (CreateTable)
	notRun  notRunCounts                // jobs.DeliveryLedger (ledger.go)
}

var (
	_ TransactionalStore = (*MemoryStore)(nil)
	_ Canceller          = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{records: map[string]Record{}}
}

// stored returns rec as a store holds it: expiry to the second, lease end to the nanosecond,
// data copied.
func stored(rec *Record) Record {
	r := *rec
	r.ExpiresAt = time.Unix(rec.ExpiresAt.Unix(), 0).UTC()
	r.LeaseEnd = time.Unix(0, rec.LeaseEnd.UnixNano()).UTC()
	if rec.Data != nil {
		r.Data = append([]byte{}, rec.Data...)
	}
	return r
}

// Claim implements Store.
func (s *MemoryStore) Claim(ctx context.Context, rec *Record, now time.Time) error {
	if err := checkWrite(rec, StatusInProgress); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[rec.Key]; ok && old.Live(now) {
		c := stored(&old)
		return &AlreadyExistsError{Record: &c}
	}
	s.records[rec.Key] = stored(rec)
	return nil
}

// Cancel implements Canceller.
func (s *MemoryStore) Cancel(ctx context.Context, rec *Record, now time.Time) error {
	if err := checkWrite(rec, StatusCancelled); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[rec.Key]; ok && old.Live(now) && old.Status != StatusCancelled {
		c := stored(&old)
		return &AlreadyExistsError{Record: &c}
	}
	s.records[rec.Key] = stored(rec)
	return nil
}

// Get implements Store.
func (s *MemoryStore) Get(ctx context.Context, key string) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[key]
	if !ok {
		return nil, ErrNotFound
	}
	c := stored(&old)
	return &c, nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(ctx context.Context, rec *Record, leaseEnd time.Time) error {
	if err := checkWrite(rec, StatusCompleted); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.Key]
	switch {
	case ok && old.Status == StatusCompleted && old.LeaseEnd.Equal(leaseEnd):
		return nil // this claim is already completed
	case !ok || !heldBy(&old, leaseEnd):
		return ErrLeaseLost
	}
	r := stored(rec)
	r.LeaseEnd = old.LeaseEnd
	s.records[rec.Key] = r
	return nil
}

// CompleteWith implements TransactionalStore, so that code using TransactWrite and OnComplete
// runs in tests without DynamoDB, with DynamoDB's semantics: the items are one transaction with
// the claim's completion, on the tables made with CreateTable. Every item's condition is evaluated
// against its item as it stands, and either the claim completes and every item is written, or
// nothing is and CompleteWith returns a *TransactionError (the claim lost, or the reason of each
// item, ConditionalCheckFailed for a condition that failed). A request DynamoDB refuses whole (a
// table not created, an expression it cannot parse, a reserved word used as a name, an unused
// placeholder, two items on one item) is an error, as the DynamoDB store's would be. The
// expression language evaluated is DynamoDB's condition and update expressions, checked case by
// case against DynamoDB Local (idempotency/internal/memddb).
func (s *MemoryStore) CompleteWith(ctx context.Context, rec *Record, leaseEnd time.Time, items []types.TransactWriteItem) error {
	if err := checkWrite(rec, StatusCompleted); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[rec.Key]
	if ok && old.Status == StatusCompleted && old.LeaseEnd.Equal(leaseEnd) {
		return nil // this claim is already completed, with its items
	}
	if n := len(items) + 1; n > memddb.MaxItems {
		return fmt.Errorf("idempotency: transaction for key %q: %d items with the record; at most %d", rec.Key, n, memddb.MaxItems)
	}
	s.tables.Lock()
	defer s.tables.Unlock()
	plan, reasons, held, err := s.tables.Prepare(items)
	if err != nil {
		return fmt.Errorf("idempotency: transaction for key %q: %w", rec.Key, err)
	}
	claimHeld := ok && heldBy(&old, leaseEnd)
	if !held || !claimHeld {
		record := types.CancellationReason{Code: aws.String("None")}
		if !claimHeld {
			record = types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Message: aws.String("The conditional request failed")}
		}
		te := &TransactionError{Key: rec.Key, ClaimLost: !claimHeld, Err: memddb.Cancelled(append(reasons, record))}
		for _, r := range reasons {
			te.Reasons = append(te.Reasons, CancellationReason{Code: aws.ToString(r.Code), Message: aws.ToString(r.Message), Item: r.Item})
		}
		return te
	}
	plan.Commit()
	r := stored(rec)
	r.LeaseEnd = old.LeaseEnd
	s.records[rec.Key] = r
	s.written = append(s.written, slices.Clone(items))
	return nil
}

// CreateTable makes a table for the items CompleteWith writes, from the input DynamoDB's
// CreateTable takes (its TableName, KeySchema and AttributeDefinitions; the rest is DynamoDB's
// business): a test creates the table in memory as its program creates it on DynamoDB. Creating a
// table again empties it.
func (s *MemoryStore) CreateTable(in *dynamodb.CreateTableInput) error {
	if in == nil {
		return errors.New("idempotency: CreateTable: nil input")
	}
	defs := map[string]string{}
	for _, d := range in.AttributeDefinitions {
		defs[aws.ToString(d.AttributeName)] = string(d.AttributeType)
	}
	var pk, sk string
	for _, k := range in.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			pk = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			sk = aws.ToString(k.AttributeName)
		}
	}
	if err := s.tables.Define(aws.ToString(in.TableName), pk, defs[pk], sk, defs[sk]); err != nil {
		return fmt.Errorf("idempotency: CreateTable: %w", err)
	}
	return nil
}

// Item returns a copy of the item of table with key, as the transactions left it, or nil.
func (s *MemoryStore) Item(table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	return s.tables.Get(table, key)
}

// Transactions returns the items of each transaction CompleteWith took, in order.
func (s *MemoryStore) Transactions() [][]types.TransactWriteItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.written)
}

// Delete implements Store.
func (s *MemoryStore) Delete(ctx context.Context, key string, leaseEnd time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[key]
	switch {
	case !ok:
		return nil // nothing left to release
	case !heldBy(&old, leaseEnd):
		return ErrLeaseLost
	}
	delete(s.records, key)
	return nil
}

// Renew implements Renewer.
func (s *MemoryStore) Renew(ctx context.Context, key string, leaseEnd, newEnd, expiresAt time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[key]
	switch {
	case ok && heldBy(&old, newEnd):
		return nil
	case !ok || !heldBy(&old, leaseEnd):
		return ErrLeaseLost
	}
	old.LeaseEnd, old.ExpiresAt = newEnd, expiresAt
	s.records[key] = old
	return nil
}

// heldBy reports whether rec is the INPROGRESS claim whose lease ends at leaseEnd.
func heldBy(rec *Record, leaseEnd time.Time) bool {
	return rec.Status == StatusInProgress && rec.LeaseEnd.Equal(leaseEnd)
}

// checkWrite validates a record a store is asked to write.
func checkWrite(rec *Record, want Status) error {
	if rec == nil {
		return fmt.Errorf("idempotency: nil record")
	}
	if err := checkKey(rec.Key); err != nil {
		return err
	}
	if rec.Status != want {
		return fmt.Errorf("idempotency: record %q has status %q, want %q", rec.Key, rec.Status, want)
	}
	return nil
}
