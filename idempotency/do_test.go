package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// clock is a settable time source for Config.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 21, 12, 0, 0, 500_000_000, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type receipt struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// 50 goroutines calling Do with one key: the function runs exactly once; every other call gets
// the recorded result or an in-progress error.
func TestDoConcurrentCallsRunOnce(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	cache := idempotency.NewCache(16)
	var runs atomic.Int32
	fn := func(ctx context.Context) (receipt, error) {
		runs.Add(1)
		time.Sleep(300 * time.Millisecond) // keep the key in progress while the others arrive
		return receipt{ID: "r-1", Amount: 42}, nil
	}
	const n = 50
	var (
		wg                  sync.WaitGroup
		mu                  sync.Mutex
		results, inProgress int
		unexpected          []error
		start               = make(chan struct{})
		key                 = "charge-" + t.Name()
		want                = receipt{ID: "r-1", Amount: 42}
		leaseEndsSeen       = map[time.Time]bool{}
		wrongResults        []receipt
	)
	for i := range n {
		wg.Go(func() {
			<-start
			// Spread the calls over twice the run's length: early ones meet the claim, later ones
			// the recorded result (half from the warm cache, half from the store).
			time.Sleep(time.Duration(i) * 12 * time.Millisecond)
			cfg := &idempotency.Config{Cache: cache, NoCache: i%2 == 1, Lease: time.Minute}
			got, err := idempotency.Do(ctx, store, key, fn, cfg)
			var ipe *idempotency.InProgressError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && got == want:
				results++
			case err == nil:
				wrongResults = append(wrongResults, got)
			case errors.As(err, &ipe):
				inProgress++
				leaseEndsSeen[ipe.LeaseEnd] = true
			default:
				unexpected = append(unexpected, err)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Empty(t, unexpected)
	require.Empty(t, wrongResults)
	assert.EqualValues(t, 1, runs.Load(), "the function must run exactly once")
	assert.Equal(t, n, results+inProgress)
	assert.GreaterOrEqual(t, results, 1) // the run itself
	assert.LessOrEqual(t, len(leaseEndsSeen), 1, "every in-progress error names the one claim")
	t.Logf("%d calls got the result, %d an in-progress error", results, inProgress)

	// Afterwards every call gets the result, from the store as well as from the cache.
	got, err := idempotency.Do(ctx, store, key, fn, &idempotency.Config{NoCache: true})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.EqualValues(t, 1, runs.Load())
}

// A first run costs two DynamoDB requests, a duplicate one, a duplicate in the same warm process
// none — counted by SDK middleware on the client.
func TestDoRequestCounts(t *testing.T) {
	t.Parallel()
	store, counter, _ := newDynamoDBStore(t)
	ctx := context.Background()
	warm := idempotency.NewCache(16)
	var runs atomic.Int32
	fn := func(ctx context.Context) (receipt, error) {
		runs.Add(1)
		return receipt{ID: "r-7", Amount: 7}, nil
	}
	payload := map[string]any{"order": "o-7", "amount": 7}
	cfg := func(c *idempotency.Cache) *idempotency.Config {
		return &idempotency.Config{Cache: c, Payload: payload}
	}
	counter.take()

	got, err := idempotency.Do(ctx, store, "order-7", fn, cfg(warm))
	require.NoError(t, err)
	assert.Equal(t, receipt{ID: "r-7", Amount: 7}, got)
	assert.Equal(t, []string{"PutItem", "UpdateItem"}, counter.take(), "first run")

	// Another process (a cold cache) gets the recorded result from the failed claim alone.
	got, err = idempotency.Do(ctx, store, "order-7", fn, cfg(idempotency.NewCache(16)))
	require.NoError(t, err)
	assert.Equal(t, receipt{ID: "r-7", Amount: 7}, got)
	assert.Equal(t, []string{"PutItem"}, counter.take(), "duplicate")

	// The same warm process answers from its cache.
	got, err = idempotency.Do(ctx, store, "order-7", fn, cfg(warm))
	require.NoError(t, err)
	assert.Equal(t, receipt{ID: "r-7", Amount: 7}, got)
	assert.Empty(t, counter.take(), "warm duplicate")

	// ... and catches a different payload without a request too.
	_, err = idempotency.Do(ctx, store, "order-7", fn, &idempotency.Config{Cache: warm, Payload: map[string]any{"order": "o-7", "amount": 8}})
	var mismatch *idempotency.PayloadMismatchError
	require.ErrorAs(t, err, &mismatch)
	assert.Empty(t, counter.take(), "warm mismatch")
	assert.EqualValues(t, 1, runs.Load())
}

// An in-progress key fails with the claim's lease end; once the lease ends the key is reclaimed.
func TestDoExpiredLeaseIsReclaimed(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	clk := newClock()
	// A run that claimed the key and died (its process killed) left its claim behind.
	crashed := &idempotency.Record{
		Key: "job-1", Status: idempotency.StatusInProgress,
		LeaseEnd: clk.Now().Add(time.Minute), ExpiresAt: clk.Now().Add(time.Hour),
	}
	require.NoError(t, store.Claim(ctx, crashed, clk.Now()))

	var runs atomic.Int32
	fn := func(ctx context.Context) (int, error) { runs.Add(1); return 1, nil }
	cfg := &idempotency.Config{Now: clk.Now, NoCache: true, Lease: time.Minute}

	_, err := idempotency.Do(ctx, store, "job-1", fn, cfg)
	var ipe *idempotency.InProgressError
	require.ErrorAs(t, err, &ipe)
	assert.Equal(t, crashed.LeaseEnd.UnixMilli(), ipe.LeaseEnd.UnixMilli())
	assert.Equal(t, time.Minute, ipe.RetryAfter(clk.Now()))

	clk.Add(59 * time.Second)
	_, err = idempotency.Do(ctx, store, "job-1", fn, cfg)
	require.ErrorAs(t, err, &ipe, "a second before the lease ends the key is still held")

	clk.Add(time.Second)
	got, err := idempotency.Do(ctx, store, "job-1", fn, cfg)
	require.NoError(t, err)
	assert.Equal(t, 1, got)
	assert.EqualValues(t, 1, runs.Load())
	rec, err := store.Get(ctx, "job-1")
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusCompleted, rec.Status)
}

// An expired COMPLETED record runs again, whether the duplicate comes to the warm process or
// another one. The emulator never deletes expired items, so this is the code's own check.
func TestDoExpiredCompletedRunsAgain(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	clk := newClock()
	warm := idempotency.NewCache(16)
	var runs atomic.Int32
	fn := func(ctx context.Context) (int32, error) { return runs.Add(1), nil }
	cfg := func(cache *idempotency.Cache) *idempotency.Config {
		return &idempotency.Config{Now: clk.Now, Cache: cache, Expiry: time.Hour, NoCache: cache == nil}
	}

	got, err := idempotency.Do(ctx, store, "report", fn, cfg(warm))
	require.NoError(t, err)
	assert.EqualValues(t, 1, got)

	clk.Add(59 * time.Minute)
	got, err = idempotency.Do(ctx, store, "report", fn, cfg(warm))
	require.NoError(t, err)
	assert.EqualValues(t, 1, got, "within the expiry: the recorded result")
	got, err = idempotency.Do(ctx, store, "report", fn, cfg(nil))
	require.NoError(t, err)
	assert.EqualValues(t, 1, got, "within the expiry, from the store")

	clk.Add(time.Minute + time.Second)
	got, err = idempotency.Do(ctx, store, "report", fn, cfg(warm))
	require.NoError(t, err)
	assert.EqualValues(t, 2, got, "expired in the warm cache and the store: runs again")

	clk.Add(2 * time.Hour)
	got, err = idempotency.Do(ctx, store, "report", fn, cfg(nil))
	require.NoError(t, err)
	assert.EqualValues(t, 3, got, "expired in the store: runs again")
	assert.EqualValues(t, 3, runs.Load())
}

// A failing function deletes its claim, so the retry runs it.
func TestDoErrorReleasesClaim(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	boom := errors.New("smtp: connection refused")
	var runs atomic.Int32
	fn := func(ctx context.Context) (string, error) {
		if runs.Add(1) == 1 {
			return "", boom
		}
		return "sent", nil
	}
	_, err := idempotency.Do(ctx, store, "email-1", fn, nil)
	require.ErrorIs(t, err, boom)
	_, err = store.Get(ctx, "email-1")
	require.ErrorIs(t, err, idempotency.ErrNotFound, "the claim is deleted")

	got, err := idempotency.Do(ctx, store, "email-1", fn, nil)
	require.NoError(t, err)
	assert.Equal(t, "sent", got)
	assert.EqualValues(t, 2, runs.Load())
}

// A panicking function releases its claim and the panic goes on.
func TestDoPanicReleasesClaim(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	func() {
		defer func() { assert.Equal(t, "kaboom", recover()) }()
		_, _ = idempotency.Do(ctx, store, "panics", func(ctx context.Context) (int, error) { panic("kaboom") }, nil)
	}()
	_, err := store.Get(ctx, "panics")
	require.ErrorIs(t, err, idempotency.ErrNotFound)
}

// The default lease is the time left before ctx's deadline, or DefaultLease without one; the
// function's context ends with the lease.
func TestDoLease(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	cases := []struct {
		name     string
		deadline time.Duration // 0: none
		lease    time.Duration // Config.Lease
		want     time.Duration
	}{
		{"ctx deadline", 40 * time.Second, 0, 40 * time.Second},
		{"no deadline", 0, 0, idempotency.DefaultLease},
		{"configured", 40 * time.Second, 5 * time.Second, 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			start := time.Now()
			_, err := idempotency.Do(ctx, store, "lease-"+tc.name, func(ctx context.Context) (int, error) {
				rec, err := store.Get(ctx, "lease-"+tc.name)
				require.NoError(t, err)
				lease := rec.LeaseEnd.Sub(start)
				// Generous margins: only the order of magnitude is under test.
				assert.InDelta(t, tc.want.Seconds(), lease.Seconds(), 3)
				dl, ok := ctx.Deadline()
				require.True(t, ok, "the function's context ends with the lease")
				assert.InDelta(t, tc.want.Seconds(), dl.Sub(start).Seconds(), 3)
				assert.False(t, rec.ExpiresAt.Before(rec.LeaseEnd.Truncate(time.Second)), "a claim outlives its lease")
				return 0, nil
			}, &idempotency.Config{Lease: tc.lease, NoCache: true})
			require.NoError(t, err)
		})
	}
}

// The same key with a different payload is a permanent error that names its dead-letter reason;
// the same payload encoded differently is the same payload.
func TestDoPayloadValidation(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	var runs atomic.Int32
	fn := func(ctx context.Context) (int, error) { runs.Add(1); return 5, nil }
	cfg := func(p any) *idempotency.Config { return &idempotency.Config{Payload: p, NoCache: true} }

	_, err := idempotency.Do(ctx, store, "pay-1", fn, cfg(json.RawMessage(`{"to":"a@example.com","n":1}`)))
	require.NoError(t, err)
	got, err := idempotency.Do(ctx, store, "pay-1", fn, cfg(json.RawMessage("{ \"n\": 1,\n \"to\": \"a@example.com\" }")))
	require.NoError(t, err, "key order and spacing do not change the payload")
	assert.Equal(t, 5, got)
	got, err = idempotency.Do(ctx, store, "pay-1", fn, cfg(map[string]any{"to": "a@example.com", "n": 1}))
	require.NoError(t, err, "a Go value encodes to the same payload")
	assert.Equal(t, 5, got)

	_, err = idempotency.Do(ctx, store, "pay-1", fn, cfg(json.RawMessage(`{"to":"b@example.com","n":1}`)))
	var mismatch *idempotency.PayloadMismatchError
	require.ErrorAs(t, err, &mismatch)
	assert.Equal(t, "pay-1", mismatch.Key)
	assert.NotEqual(t, mismatch.StoredHash, mismatch.Hash)
	var reasoned interface{ DeadLetterReason() string }
	require.ErrorAs(t, err, &reasoned)
	assert.Equal(t, contract.ReasonPayloadMismatch, reasoned.DeadLetterReason())
	assert.EqualValues(t, 1, runs.Load())
}

// A call while another run holds the key fails with that run's lease end.
func TestDoInProgress(t *testing.T) {
	t.Parallel()
	store, _, _ := newDynamoDBStore(t)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := idempotency.Do(ctx, store, "slow", func(ctx context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		}, &idempotency.Config{Lease: time.Minute})
		done <- err
	}()
	<-started
	_, err := idempotency.Do(ctx, store, "slow", func(ctx context.Context) (int, error) {
		t.Error("ran while the key was in progress")
		return 2, nil
	}, nil)
	var ipe *idempotency.InProgressError
	require.ErrorAs(t, err, &ipe)
	rec, gerr := store.Get(ctx, "slow")
	require.NoError(t, gerr)
	assert.Equal(t, rec.LeaseEnd.UnixMilli(), ipe.LeaseEnd.UnixMilli())
	close(release)
	require.NoError(t, <-done)
}

// A result that cannot be recorded comes back with a *StoreError: the function did run.
func TestDoCompleteFailure(t *testing.T) {
	t.Parallel()
	store := &failingStore{Store: idempotency.NewMemoryStore(), complete: errors.New("throttled")}
	got, err := idempotency.Do(context.Background(), store, "k", func(ctx context.Context) (int, error) { return 9, nil }, &idempotency.Config{NoCache: true})
	assert.Equal(t, 9, got)
	var se *idempotency.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "complete", se.Op)
}

// Invalid keys and a cancelled context stop Do before it claims anything.
func TestDoRejectsBadInput(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	fn := func(ctx context.Context) (int, error) { t.Error("ran"); return 0, nil }
	var ke *idempotency.KeyError
	_, err := idempotency.Do(context.Background(), store, "", fn, nil)
	require.ErrorAs(t, err, &ke)
	_, err = idempotency.Do(context.Background(), store, string(make([]byte, idempotency.MaxKeyBytes+1)), fn, nil)
	require.ErrorAs(t, err, &ke)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = idempotency.Do(ctx, store, "k", fn, nil)
	require.ErrorIs(t, err, context.Canceled)
	_, err = idempotency.Do(context.Background(), store, "bad-payload", fn, &idempotency.Config{Payload: make(chan int)})
	require.Error(t, err)
}

// failingStore wraps a store and fails the operations given an error.
type failingStore struct {
	idempotency.Store
	complete, delete error
}

func (s *failingStore) Complete(ctx context.Context, rec *idempotency.Record, leaseEnd time.Time) error {
	if s.complete != nil {
		return s.complete
	}
	return s.Store.Complete(ctx, rec, leaseEnd)
}

func (s *failingStore) Delete(ctx context.Context, key string, leaseEnd time.Time) error {
	if s.delete != nil {
		return s.delete
	}
	return s.Store.Delete(ctx, key, leaseEnd)
}
