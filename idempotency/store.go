package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Status is the state of an idempotency record.
type Status string

// Record states, as stored in the status attribute.
const (
	StatusInProgress Status = "INPROGRESS" // claimed: a run holds the key until its lease ends
	StatusCompleted  Status = "COMPLETED"  // the run succeeded; duplicates get its result
	// StatusCancelled: the job was cancelled before any run claimed its key (Canceller): every
	// later claim of the key fails with *CancelledError until the record expires.
	StatusCancelled Status = "CANCELLED"
)

// Attribute names of a record, the same as Powertools for AWS Lambda uses.
const (
	AttrID                   = "id"                     // the key (partition key)
	AttrStatus               = "status"                 // INPROGRESS, COMPLETED or CANCELLED
	AttrExpiration           = "expiration"             // expiry, epoch seconds (the table's TTL attribute)
	AttrInProgressExpiration = "in_progress_expiration" // end of the claim's lease, epoch milliseconds
	AttrValidation           = "validation"             // hash of the payload, if validated
	AttrData                 = "data"                   // the recorded result, if any
	// The job run that holds or completed the key, recorded by Middleware with
	// Config.RecordJobs: the record then doubles as the job's running and succeeded state.
	AttrJobID      = "job_id"      // the job's id
	AttrAttempt    = "attempt"     // its attempt
	AttrStartedAt  = "started_at"  // when the run began, epoch milliseconds
	AttrFinishedAt = "finished_at" // when it succeeded, epoch milliseconds
	AttrQueue      = "queue"       // the job's queue URL
	AttrKind       = "kind"        // the job's kind
)

// Record is one idempotency record. Stores keep ExpiresAt to the second (expiration is epoch
// seconds, as DynamoDB TTL reads it) and LeaseEnd to the nanosecond (in_progress_expiration is
// epoch milliseconds with a fraction): the lease end identifies a claim, so Do makes it unique.
type Record struct {
	Key        string    // id
	Status     Status    // status
	ExpiresAt  time.Time // expiration: from then on the record counts as absent
	LeaseEnd   time.Time // in_progress_expiration: from then on an INPROGRESS claim counts as absent
	Validation string    // validation: the payload hash, empty when the payload is not validated
	Data       []byte    // data: the recorded result, nil when none

	// The job run, when Middleware records jobs (Config.RecordJobs); empty otherwise.
	JobID      string    // job_id
	Attempt    int       // attempt
	StartedAt  time.Time // started_at; for a CANCELLED record, when it was cancelled
	FinishedAt time.Time // finished_at: set by the completion
	Queue      string    // queue: the job's queue URL
	Kind       string    // kind: the job's kind
}

// Expired reports whether the record is past its expiration at now.
func (r *Record) Expired(now time.Time) bool {
	return r.ExpiresAt.Unix() <= now.Unix()
}

// LeaseExpired reports whether the record is an INPROGRESS claim whose lease has ended at now.
func (r *Record) LeaseExpired(now time.Time) bool {
	return r.Status == StatusInProgress && !r.LeaseEnd.After(now)
}

// Live reports whether the record holds its key at now: not expired, and not an INPROGRESS claim
// whose lease has ended. A record that is not live is treated as absent.
func (r *Record) Live(now time.Time) bool {
	return !r.Expired(now) && !r.LeaseExpired(now)
}

// Store persists idempotency records. Every method is safe for concurrent use, and its outcome
// depends only on the stored record and the times passed in, so that all processes sharing a
// store agree. Package storetest holds the conformance suite every implementation passes.
//
// A claim is identified by its lease end: a key can be claimed again only once the previous
// claim's lease has ended, so every later claim of a key has a later lease end. Complete and
// Delete name the claim they act for by it, and are safe to repeat (a request retried after a
// lost response must not turn a success into a failure).
type Store interface {
	// Claim stores rec, an INPROGRESS record, unless a live record (see Record.Live at now)
	// holds rec.Key. When one does, Claim stores nothing and returns an *AlreadyExistsError
	// carrying that record, read in the same call — unless that record is rec itself, written
	// by an earlier attempt of this same call, which is a success.
	Claim(ctx context.Context, rec *Record, now time.Time) error
	// Get returns the stored record for key, live or not, or ErrNotFound.
	Get(ctx context.Context, key string) (*Record, error)
	// Complete replaces the claim on rec.Key whose lease ends at leaseEnd with rec, a COMPLETED
	// record (keeping the lease end). It returns nil if that claim is already completed, and
	// ErrLeaseLost if the key is held by anything else or by nothing.
	Complete(ctx context.Context, rec *Record, leaseEnd time.Time) error
	// Delete removes the claim on key whose lease ends at leaseEnd. It returns nil if the key has
	// no record (nothing left to release), and ErrLeaseLost if another record holds the key (a
	// COMPLETED record is never deleted).
	Delete(ctx context.Context, key string, leaseEnd time.Time) error
}

// Renewer is a Store that can extend a claim's lease while its run goes on. DynamoDBStore and
// MemoryStore are Renewers; with another store, a run in a container holds its claim until its
// context's deadline (see jobctx.KeepAlive).
type Renewer interface {
	// Renew moves the lease end of the claim on key whose lease ends at leaseEnd to newEnd, and
	// its expiration to expiresAt (at least newEnd). It returns nil if the claim already ends at
	// newEnd (an earlier attempt renewed it), and ErrLeaseLost if that claim no longer holds the key.
	Renew(ctx context.Context, key string, leaseEnd, newEnd, expiresAt time.Time) error
}

// Canceller is a Store that can cancel a key before any run claims it: jobs.Client.Cancel writes
// the cancellation through jobs/state, and the claim that would have run the job fails instead
// (the check costs the run nothing: it is the claim's own condition). DynamoDBStore and
// MemoryStore are Cancellers.
type Canceller interface {
	// Cancel stores rec, a CANCELLED record, unless a live record that is not a cancellation
	// holds rec.Key (a claim in progress, a completed run): then it stores nothing and returns an
	// *AlreadyExistsError carrying that record. A cancellation already there is replaced, so
	// Cancel is safe to repeat.
	Cancel(ctx context.Context, rec *Record, now time.Time) error
}

var (
	// ErrNotFound is returned by Store.Get when no record exists for the key.
	ErrNotFound = errors.New("idempotency: record not found")
	// ErrLeaseLost is returned when a claim is no longer held: its lease ended and another run
	// claimed the key, or the record was completed or deleted.
	ErrLeaseLost = errors.New("idempotency: claim no longer held")
	// ErrNoClaim is returned by TransactWrite when ctx does not come from a Do or Middleware run.
	ErrNoClaim = errors.New("idempotency: no claim in context (call TransactWrite inside Do or a job run by Middleware)")
)

// AlreadyExistsError is returned by Store.Claim when a live record holds the key.
type AlreadyExistsError struct {
	Record *Record // the record that holds the key
}

func (e *AlreadyExistsError) Error() string {
	return fmt.Sprintf("idempotency: key %q is held by a %s record", e.Record.Key, e.Record.Status)
}

// InProgressError reports a key claimed by another run whose lease has not ended. Retry after
// LeaseEnd: by then the other run has completed the key, released it, or lost its claim.
type InProgressError struct {
	Key      string
	LeaseEnd time.Time // when the other run's claim ends
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("idempotency: key %q is in progress until %s", e.Key, e.LeaseEnd.UTC().Format(time.RFC3339Nano))
}

// RetryAfter returns how long after now the lease ends (at least one second), rounded up to a
// whole second.
func (e *InProgressError) RetryAfter(now time.Time) time.Duration {
	d := e.LeaseEnd.Sub(now)
	if d < time.Second {
		return time.Second
	}
	return (d + time.Second - 1) / time.Second * time.Second
}

// CancelledError reports a key whose job was cancelled before it ran (StatusCancelled): the
// function is not run. Middleware turns it into jobs.ErrCancelled, and the runtime deletes the
// job's message without running it or dead-lettering it.
type CancelledError struct {
	Key   string
	JobID string    // the job that was cancelled
	At    time.Time // when
}

func (e *CancelledError) Error() string {
	return fmt.Sprintf("idempotency: key %q was cancelled (job %s, at %s)", e.Key, e.JobID, e.At.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, jobs.ErrCancelled) hold.
func (e *CancelledError) Is(target error) bool { return target == jobs.ErrCancelled }

// CancelledJob returns the id of the job whose cancellation holds the key (the runtime records
// the state of another job sharing the key).
func (e *CancelledError) CancelledJob() string { return e.JobID }

// PayloadMismatchError reports a key reused with a different payload: a permanent error, since
// no retry can make the payloads agree. The jobs runtime dead-letters it with reason
// contract.ReasonPayloadMismatch.
type PayloadMismatchError struct {
	Key        string
	StoredHash string // the payload hash recorded with the key
	Hash       string // the hash of this call's payload
}

func (e *PayloadMismatchError) Error() string {
	return fmt.Sprintf("idempotency: key %q was used with a different payload (hash %s, this call %s)", e.Key, e.StoredHash, e.Hash)
}

// DeadLetterReason returns contract.ReasonPayloadMismatch (the jobs runtime reads it via errors.As).
func (e *PayloadMismatchError) DeadLetterReason() string { return contract.ReasonPayloadMismatch }

// KeyError reports an idempotency key the store cannot hold.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	k := e.Key
	if len(k) > 64 {
		k = k[:64] + "..."
	}
	return fmt.Sprintf("idempotency: invalid key %q: %s", k, e.Reason)
}

// StoreError reports a store failure during Do. Op is "claim" (the function did not run),
// "complete" (the function ran and succeeded, but its result was not recorded: a duplicate
// arriving after the lease ends runs it again) or "decode" (the recorded result does not decode).
type StoreError struct {
	Op  string
	Key string
	Err error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("idempotency: %s %q: %v", e.Op, e.Key, e.Err)
}

func (e *StoreError) Unwrap() error { return e.Err }

// MaxKeyBytes is the longest key a record can have (DynamoDB's limit for a partition key).
const MaxKeyBytes = 2048

func checkKey(key string) error {
	switch {
	case key == "":
		return &KeyError{Key: key, Reason: "empty"}
	case len(key) > MaxKeyBytes:
		return &KeyError{Key: key, Reason: fmt.Sprintf("%d bytes, more than %d", len(key), MaxKeyBytes)}
	}
	return nil
}
