// Package storetest is the conformance suite every idempotency.Store passes. A store
// implementation runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) idempotency.Store { return newMyStore(t) })
//	}
//
// The suite checks the protocol's semantics — who may claim a key, what a failed claim returns,
// who may complete or delete it, expiry and leases honoured at the times passed in, and that
// concurrent claims of a key admit exactly one — using unique keys, so the stores newStore
// returns may share one table.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jobkit-go/jobkit/idempotency"
)

// Run runs the suite against the stores newStore returns (called once per subtest).
func Run(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore(t))
		})
	}
}

// base is the suite's clock: a fixed instant with a millisecond part, so precision is exercised.
var base = time.Date(2026, 11, 21, 12, 0, 0, 123_456_789, time.UTC)

func key(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "storetest/" + t.Name() + "/" + hex.EncodeToString(b[:])
}

func claimRec(key string, now time.Time, lease, expiry time.Duration) *idempotency.Record {
	return &idempotency.Record{
		Key:        key,
		Status:     idempotency.StatusInProgress,
		LeaseEnd:   now.Add(lease),
		ExpiresAt:  now.Add(expiry),
		Validation: "hash-1",
	}
}

func doneRec(claim *idempotency.Record, now time.Time, expiry time.Duration, data []byte) *idempotency.Record {
	return &idempotency.Record{
		Key:        claim.Key,
		Status:     idempotency.StatusCompleted,
		ExpiresAt:  now.Add(expiry),
		LeaseEnd:   claim.LeaseEnd,
		Validation: claim.Validation,
		Data:       data,
	}
}

var ctx = context.Background()

// mustClaim claims and fails the test on any error.
func mustClaim(t *testing.T, s idempotency.Store, rec *idempotency.Record, now time.Time) {
	t.Helper()
	if err := s.Claim(ctx, rec, now); err != nil {
		t.Fatalf("Claim(%q) at %s: %v", rec.Key, now, err)
	}
}

// mustHeld asserts Claim fails with *AlreadyExistsError and returns the holder.
func mustHeld(t *testing.T, s idempotency.Store, rec *idempotency.Record, now time.Time) *idempotency.Record {
	t.Helper()
	err := s.Claim(ctx, rec, now)
	var ae *idempotency.AlreadyExistsError
	if !errors.As(err, &ae) {
		t.Fatalf("Claim(%q) at %s: got %v, want *AlreadyExistsError", rec.Key, now, err)
	}
	if ae.Record == nil {
		t.Fatalf("AlreadyExistsError without a record")
	}
	return ae.Record
}

func mustGet(t *testing.T, s idempotency.Store, key string) *idempotency.Record {
	t.Helper()
	rec, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return rec
}

// sameRecord compares records at the stores' precision (seconds for expiry, ns for leases).
func sameRecord(t *testing.T, got, want *idempotency.Record) {
	t.Helper()
	if got.Key != want.Key || got.Status != want.Status || got.Validation != want.Validation ||
		got.ExpiresAt.Unix() != want.ExpiresAt.Unix() || !got.LeaseEnd.Equal(want.LeaseEnd) ||
		!bytes.Equal(got.Data, want.Data) || (got.Data == nil) != (want.Data == nil) {
		t.Fatalf("record:\n got  %+v\n want %+v", got, want)
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s idempotency.Store)
}

var cases = []testCase{
	{"ClaimAbsentKey", func(t *testing.T, s idempotency.Store) {
		rec := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, rec, base)
		got := mustGet(t, s, rec.Key)
		sameRecord(t, got, rec)
		if !got.ExpiresAt.Equal(time.Unix(rec.ExpiresAt.Unix(), 0)) {
			t.Fatalf("ExpiresAt %s not kept to the second", got.ExpiresAt)
		}
		if !got.LeaseEnd.Equal(rec.LeaseEnd) {
			t.Fatalf("LeaseEnd %s not kept to the nanosecond (want %s)", got.LeaseEnd, rec.LeaseEnd)
		}
	}},
	{"GetMissing", func(t *testing.T, s idempotency.Store) {
		if _, err := s.Get(ctx, key(t)); !errors.Is(err, idempotency.ErrNotFound) {
			t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
		}
	}},
	{"ClaimHeldReturnsHolder", func(t *testing.T, s idempotency.Store) {
		first := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, first, base)
		second := claimRec(first.Key, base.Add(time.Second), time.Minute, time.Hour)
		second.Validation = "hash-2"
		holder := mustHeld(t, s, second, base.Add(time.Second))
		sameRecord(t, holder, first)
		sameRecord(t, mustGet(t, s, first.Key), first) // nothing written
	}},
	{"LeaseBoundary", func(t *testing.T, s idempotency.Store) {
		first := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, first, base)
		justBefore := first.LeaseEnd.Add(-time.Microsecond)
		mustHeld(t, s, claimRec(first.Key, justBefore, time.Minute, time.Hour), justBefore)
		// At the lease end the claim no longer holds the key.
		second := claimRec(first.Key, first.LeaseEnd, time.Minute, time.Hour)
		mustClaim(t, s, second, first.LeaseEnd)
		sameRecord(t, mustGet(t, s, first.Key), second)
	}},
	{"ExpiredLeaseReclaimed", func(t *testing.T, s idempotency.Store) {
		first := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, first, base)
		later := base.Add(2 * time.Minute)
		second := claimRec(first.Key, later, time.Minute, time.Hour)
		mustClaim(t, s, second, later)
		// The first claim lost the key: it can neither complete nor delete it.
		if err := s.Complete(ctx, doneRec(first, later, time.Hour, nil), first.LeaseEnd); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by a lost claim: %v, want ErrLeaseLost", err)
		}
		if err := s.Delete(ctx, first.Key, first.LeaseEnd); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Delete by a lost claim: %v, want ErrLeaseLost", err)
		}
		sameRecord(t, mustGet(t, s, first.Key), second)
	}},
	{"TakenOverClaimCannotAct", func(t *testing.T, s idempotency.Store) {
		first := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, first, base)
		later := base.Add(2 * time.Minute)
		second := claimRec(first.Key, later, time.Minute, time.Hour)
		mustClaim(t, s, second, later)
		done := doneRec(second, later, time.Hour, []byte(`"second"`))
		if err := s.Complete(ctx, done, second.LeaseEnd); err != nil {
			t.Fatalf("Complete by the second claim: %v", err)
		}
		if err := s.Complete(ctx, doneRec(first, later, time.Hour, []byte(`"first"`)), first.LeaseEnd); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by the first claim after the second completed: %v, want ErrLeaseLost", err)
		}
		if err := s.Delete(ctx, first.Key, first.LeaseEnd); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Delete by the first claim after the second completed: %v, want ErrLeaseLost", err)
		}
		sameRecord(t, mustGet(t, s, first.Key), done)
	}},
	{"CancelBeforeAnyClaim", func(t *testing.T, s idempotency.Store) {
		c, ok := s.(idempotency.Canceller)
		if !ok {
			t.Skip("the store is not an idempotency.Canceller")
		}
		k := key(t)
		cancel := &idempotency.Record{Key: k, Status: idempotency.StatusCancelled, JobID: "j1", LeaseEnd: base, StartedAt: base, ExpiresAt: base.Add(time.Hour)}
		if err := c.Cancel(ctx, cancel, base); err != nil {
			t.Fatalf("Cancel of a free key: %v", err)
		}
		if err := c.Cancel(ctx, cancel, base.Add(time.Second)); err != nil {
			t.Fatalf("Cancel again: %v", err)
		}
		// Every claim until the record expires finds the cancellation.
		later := base.Add(30 * time.Minute)
		holder := mustHeld(t, s, claimRec(k, later, time.Minute, time.Hour), later)
		if holder.Status != idempotency.StatusCancelled || holder.JobID != "j1" {
			t.Fatalf("holder %+v, want the cancellation of j1", holder)
		}
		expired := base.Add(2 * time.Hour)
		mustClaim(t, s, claimRec(k, expired, time.Minute, time.Hour), expired)
	}},
	{"CancelRefusedWhileHeld", func(t *testing.T, s idempotency.Store) {
		c, ok := s.(idempotency.Canceller)
		if !ok {
			t.Skip("the store is not an idempotency.Canceller")
		}
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, claim, base)
		cancel := &idempotency.Record{Key: claim.Key, Status: idempotency.StatusCancelled, JobID: "j1", LeaseEnd: base, StartedAt: base, ExpiresAt: base.Add(time.Hour)}
		var held *idempotency.AlreadyExistsError
		if err := c.Cancel(ctx, cancel, base.Add(time.Second)); !errors.As(err, &held) || held.Record.Status != idempotency.StatusInProgress {
			t.Fatalf("Cancel of a key in progress: %v, want *AlreadyExistsError with the claim", err)
		}
		done := doneRec(claim, base.Add(2*time.Second), time.Hour, nil)
		if err := s.Complete(ctx, done, claim.LeaseEnd); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if err := c.Cancel(ctx, cancel, base.Add(3*time.Second)); !errors.As(err, &held) || held.Record.Status != idempotency.StatusCompleted {
			t.Fatalf("Cancel of a completed key: %v, want *AlreadyExistsError with the completion", err)
		}
		sameRecord(t, mustGet(t, s, claim.Key), done)
	}},
	{"CompleteThenDuplicate", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, claim, base)
		done := doneRec(claim, base.Add(time.Second), time.Hour, []byte(`{"n":1}`))
		if err := s.Complete(ctx, done, claim.LeaseEnd); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		sameRecord(t, mustGet(t, s, claim.Key), done)
		// Long after the lease, while not expired, the COMPLETED record still holds the key.
		later := base.Add(30 * time.Minute)
		holder := mustHeld(t, s, claimRec(claim.Key, later, time.Minute, time.Hour), later)
		sameRecord(t, holder, done)
	}},
	{"CompleteWithoutData", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		claim.Validation = ""
		mustClaim(t, s, claim, base)
		done := doneRec(claim, base, time.Hour, nil)
		if err := s.Complete(ctx, done, claim.LeaseEnd); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		sameRecord(t, mustGet(t, s, claim.Key), done)
	}},
	{"BinaryData", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, claim, base)
		done := doneRec(claim, base, time.Hour, []byte{0xff, 0x00, 0xfe, 'x'})
		if err := s.Complete(ctx, done, claim.LeaseEnd); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		sameRecord(t, mustGet(t, s, claim.Key), done)
	}},
	{"CompleteWrongLease", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, claim, base)
		err := s.Complete(ctx, doneRec(claim, base, time.Hour, nil), claim.LeaseEnd.Add(time.Microsecond))
		if !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete with another lease: %v, want ErrLeaseLost", err)
		}
		sameRecord(t, mustGet(t, s, claim.Key), claim)
	}},
	{"CompleteMissing", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		err := s.Complete(ctx, doneRec(claim, base, time.Hour, nil), claim.LeaseEnd)
		if !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete of a missing key: %v, want ErrLeaseLost", err)
		}
		if _, err := s.Get(ctx, claim.Key); !errors.Is(err, idempotency.ErrNotFound) {
			t.Fatalf("Complete of a missing key wrote a record (Get: %v)", err)
		}
	}},
	{"CompleteTwice", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, claim, base)
		done := doneRec(claim, base, time.Hour, []byte(`1`))
		if err := s.Complete(ctx, done, claim.LeaseEnd); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		// A repeat (a request retried after its response was lost) succeeds and changes nothing.
		if err := s.Complete(ctx, doneRec(claim, base, 2*time.Hour, []byte(`2`)), claim.LeaseEnd); err != nil {
			t.Fatalf("second Complete: %v, want nil", err)
		}
		sameRecord(t, mustGet(t, s, claim.Key), done)
	}},
	{"DeleteClaim", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, claim, base)
		if err := s.Delete(ctx, claim.Key, claim.LeaseEnd.Add(-time.Microsecond)); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Delete with another lease: %v, want ErrLeaseLost", err)
		}
		if err := s.Delete(ctx, claim.Key, claim.LeaseEnd); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := s.Get(ctx, claim.Key); !errors.Is(err, idempotency.ErrNotFound) {
			t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
		}
		// Nothing left to release: a repeat succeeds.
		if err := s.Delete(ctx, claim.Key, claim.LeaseEnd); err != nil {
			t.Fatalf("second Delete: %v, want nil", err)
		}
		// The key is free again at once.
		mustClaim(t, s, claimRec(claim.Key, base, time.Minute, time.Hour), base)
	}},
	{"DeleteNeverRemovesCompleted", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, claim, base)
		done := doneRec(claim, base, time.Hour, nil)
		if err := s.Complete(ctx, done, claim.LeaseEnd); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if err := s.Delete(ctx, claim.Key, claim.LeaseEnd); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Delete of a COMPLETED record: %v, want ErrLeaseLost", err)
		}
		sameRecord(t, mustGet(t, s, claim.Key), done)
	}},
	{"ExpiredCompletedIsAbsent", func(t *testing.T, s idempotency.Store) {
		claim := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, claim, base)
		done := doneRec(claim, base, time.Hour, []byte(`"old"`))
		if err := s.Complete(ctx, done, claim.LeaseEnd); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		// One second before expiry it still holds; at expiry it counts as absent.
		before := time.Unix(done.ExpiresAt.Unix()-1, 999_000_000)
		mustHeld(t, s, claimRec(claim.Key, before, time.Minute, time.Hour), before)
		at := time.Unix(done.ExpiresAt.Unix(), 0)
		again := claimRec(claim.Key, at, time.Minute, time.Hour)
		mustClaim(t, s, again, at)
		sameRecord(t, mustGet(t, s, claim.Key), again)
	}},
	{"ExpiredClaimIsAbsent", func(t *testing.T, s idempotency.Store) {
		// A claim whose record expired is absent even while its lease runs.
		claim := claimRec(key(t), base, time.Hour, time.Minute)
		mustClaim(t, s, claim, base)
		later := base.Add(2 * time.Minute)
		mustClaim(t, s, claimRec(claim.Key, later, time.Minute, time.Hour), later)
	}},
	{"ConcurrentClaimsAdmitOne", func(t *testing.T, s idempotency.Store) {
		k := key(t)
		const n = 20
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			won      int
			held     int
			failures []error
		)
		for i := range n {
			wg.Go(func() {
				rec := claimRec(k, base, time.Minute+time.Duration(i)*time.Millisecond, time.Hour)
				err := s.Claim(ctx, rec, base)
				var ae *idempotency.AlreadyExistsError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.As(err, &ae):
					held++
				default:
					failures = append(failures, err)
				}
			})
		}
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("claims failed: %v", failures)
		}
		if won != 1 || held != n-1 {
			t.Fatalf("%d claims won and %d were refused; want 1 and %d", won, held, n-1)
		}
	}},
	{"RenewMovesTheLease", func(t *testing.T, s idempotency.Store) {
		r, ok := s.(idempotency.Renewer)
		if !ok {
			return // the store does not renew: nothing to check
		}
		first := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, first, base)
		newEnd, expires := base.Add(3*time.Minute+time.Microsecond), base.Add(2*time.Hour)
		if err := r.Renew(ctx, first.Key, first.LeaseEnd, newEnd, expires); err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if err := r.Renew(ctx, first.Key, first.LeaseEnd, newEnd, expires); err != nil {
			t.Fatalf("Renew repeated: %v, want nil", err)
		}
		renewed := *first
		renewed.LeaseEnd, renewed.ExpiresAt = newEnd, expires
		sameRecord(t, mustGet(t, s, first.Key), &renewed)
		// Past the old lease end the renewed claim still holds the key; past the new one it does not.
		at := first.LeaseEnd.Add(time.Minute)
		mustHeld(t, s, claimRec(first.Key, at, time.Minute, time.Hour), at)
		// The old lease end names no claim now; the new one completes it.
		if err := s.Complete(ctx, doneRec(first, at, time.Hour, nil), first.LeaseEnd); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by the old lease end: %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, doneRec(&renewed, at, time.Hour, nil), newEnd); err != nil {
			t.Fatalf("Complete by the renewed lease end: %v", err)
		}
		if err := r.Renew(ctx, first.Key, newEnd, newEnd.Add(time.Minute), expires); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Renew of a completed claim: %v, want ErrLeaseLost", err)
		}
	}},
	{"RenewLostClaim", func(t *testing.T, s idempotency.Store) {
		r, ok := s.(idempotency.Renewer)
		if !ok {
			return
		}
		first := claimRec(key(t), base, time.Minute, time.Hour)
		mustClaim(t, s, first, base)
		later := base.Add(2 * time.Minute)
		second := claimRec(first.Key, later, time.Minute, time.Hour)
		mustClaim(t, s, second, later)
		if err := r.Renew(ctx, first.Key, first.LeaseEnd, later.Add(90*time.Second), later.Add(time.Hour)); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Renew by a lost claim: %v, want ErrLeaseLost", err)
		}
		if err := r.Renew(ctx, key(t), first.LeaseEnd, later, later); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Renew of a missing key: %v, want ErrLeaseLost", err)
		}
		sameRecord(t, mustGet(t, s, first.Key), second)
	}},
	{"RejectsBadRecords", func(t *testing.T, s idempotency.Store) {
		rec := claimRec("", base, time.Minute, time.Hour)
		var ke *idempotency.KeyError
		if err := s.Claim(ctx, rec, base); !errors.As(err, &ke) {
			t.Fatalf("Claim with an empty key: %v, want *KeyError", err)
		}
		rec = claimRec(key(t), base, time.Minute, time.Hour)
		rec.Status = idempotency.StatusCompleted
		if err := s.Claim(ctx, rec, base); err == nil {
			t.Fatalf("Claim of a COMPLETED record succeeded")
		}
		if _, err := s.Get(ctx, rec.Key); !errors.Is(err, idempotency.ErrNotFound) {
			t.Fatalf("a rejected claim wrote a record (Get: %v)", err)
		}
	}},
}
