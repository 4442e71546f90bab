package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobctx"
)

// Defaults of Config.
const (
	// DefaultExpiry is how long a record holds its key.
	DefaultExpiry = time.Hour
	// DefaultLease is the lease of a claim when neither Config.Lease nor a ctx deadline sets one.
	DefaultLease = 15 * time.Minute
	// MinLease is the shortest lease a claim gets.
	MinLease = time.Second
)

// releaseTimeout bounds the store call that records or releases a claim after the function ran,
// which runs even when the function's context has ended.
const releaseTimeout = 10 * time.Second

// Config configures Do and Middleware. A nil *Config means the defaults.
type Config struct {
	// Expiry is how long a record holds its key after it is written: a duplicate arriving later
	// runs again. Default DefaultExpiry (1 h).
	Expiry time.Duration
	// Lease is how long a claim holds its key while the function runs; after it ends another run
	// may claim the key. The function's context ends with the lease. Default: the time left
	// before ctx's deadline (in Lambda, the invocation deadline; in a job, the job's deadline),
	// or DefaultLease (15 min) when ctx has none. At least MinLease.
	//
	// A job in a container (jobctx.KeepAlive: up to 12 h under heartbeats) instead holds its claim
	// for the keep-alive window (the queue's visibility timeout), renewed every third of it while
	// the job runs, when the store is a Renewer: a task that dies releases the key about when its
	// message comes back. The job's context then ends with its own deadline, or with
	// ErrLeaseLost if a renewal finds the claim taken. One UpdateItem per renewal.
	Lease time.Duration
	// Payload, when not nil, is hashed (see PayloadHash) and recorded as the validation hash: the
	// same key with a different payload fails with *PayloadMismatchError. Used by Do; Middleware
	// always validates the job's args.
	Payload any
	// NoResult stops Do from recording the function's result (data). Duplicates then get T's
	// zero value.
	NoResult bool
	// Cache holds completed keys in this process. Nil means DefaultCache.
	Cache *Cache
	// NoCache turns the warm-process cache off: every call asks the store.
	NoCache bool
	// Now returns the current time, used for expiry and leases (tests set it). Default time.Now.
	Now func() time.Time
	// Logger logs what the store could not do (a claim not released, a result not recorded).
	// Default slog.Default().
	Logger *slog.Logger
	// RecordJobs (Middleware) records the job's id, attempt and start in its claim, and its end
	// and the result it set with jobs.SetResult in its completion: the record is then the job's
	// running and succeeded state for jobs/state, at no extra write. Use it with the jobkit state
	// table (jobs/state) as the store's table.
	RecordJobs bool

	job *jobMark // the job Middleware runs, with RecordJobs
}

// jobMark is the job run a claim records (Config.RecordJobs).
type jobMark struct {
	id      string
	attempt int
	queue   string // its queue's URL
	kind    string
	result  *jobctx.ResultSlot
}

func (c *Config) jobMark() *jobMark {
	if c == nil {
		return nil
	}
	return c.job
}

func (c *Config) expiry() time.Duration {
	if c == nil || c.Expiry <= 0 {
		return DefaultExpiry
	}
	return c.Expiry
}

func (c *Config) now() time.Time {
	if c == nil || c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

func (c *Config) cache() *Cache {
	switch {
	case c == nil:
		return DefaultCache
	case c.NoCache:
		return nil
	case c.Cache != nil:
		return c.Cache
	}
	return DefaultCache
}

func (c *Config) logger() *slog.Logger {
	if c == nil || c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// lease returns the lease for a run under ctx.
func (c *Config) lease(ctx context.Context) time.Duration {
	d := DefaultLease
	if c != nil && c.Lease > 0 {
		d = c.Lease
	} else if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	return max(d, MinLease)
}

// PayloadHash returns the validation hash of payload: the hex SHA-256 of its canonical JSON
// (object keys sorted, insignificant space removed), so two encodings of the same value agree.
// A []byte or json.RawMessage holding JSON is canonicalised; other bytes are hashed as they are.
func PayloadHash(payload any) (string, error) {
	var raw []byte
	switch p := payload.(type) {
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	default:
		b, err := json.Marshal(payload)
		if err != nil {
			return "", fmt.Errorf("idempotency: encode payload: %w", err)
		}
		raw = b
	}
	if canon, err := canonicalJSON(raw); err == nil {
		raw = canon
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	return json.Marshal(v)
}

// Do runs fn once for key. The first call claims key in store, runs fn and records its result;
// a duplicate returns the recorded result without running fn. A duplicate of a key another call
// is running fails with *InProgressError (retry after its LeaseEnd); a duplicate with a different
// cfg.Payload fails with *PayloadMismatchError. If fn fails or panics, the claim is deleted so a
// retry runs fn again, and fn's error is returned.
//
// The result is recorded as JSON (unless cfg.NoResult), so T must round-trip through
// encoding/json for duplicates to get it back.
//
// Costs: a first run is two store requests (claim, complete), a duplicate one (the failed claim
// returns the record), a duplicate of a key completed in this process none (cfg.Cache).
//
// If fn succeeds but its result cannot be recorded, Do returns the result together with a
// *StoreError whose Op is "complete". Items fn registered with OnComplete are the exception: if they cannot
// be written with the record, the claim is released and Do returns their error, so a retry runs
// fn again.
func Do[T any](ctx context.Context, store Store, key string, fn func(ctx context.Context) (T, error), cfg *Config) (T, error) {
	var hash string
	if cfg != nil && cfg.Payload != nil {
		h, err := PayloadHash(cfg.Payload)
		if err != nil {
			var zero T
			return zero, err
		}
		hash = h
	}
	res, _, err := run(ctx, store, key, hash, fn, cfg)
	return res, err
}

// run is Do with the payload already hashed; ran reports whether fn ran. It answers from the
// cache or a failed claim, or claims key and hands over to runClaimed.
func run[T any](ctx context.Context, store Store, key, hash string, fn func(ctx context.Context) (T, error), cfg *Config) (res T, ran bool, err error) {
	var zero T
	if store == nil {
		return zero, false, errors.New("idempotency: nil store")
	}
	if err := checkKey(key); err != nil {
		return zero, false, err
	}
	if err := ctx.Err(); err != nil {
		return zero, false, err
	}
	now := cfg.now()
	cache := cfg.cache()
	if rec, ok := cache.get(store, key, now); ok {
		res, err := duplicate[T](rec, key, hash)
		return res, false, err
	}

	lease, renew := cfg.lease(ctx), false
	if w, ok := jobctx.KeepAlive(ctx); ok && (cfg == nil || cfg.Lease <= 0) && w < lease {
		// A job in a container: hold the key for the window its message would take to come back
		// if the process died, and renew the lease while the job runs.
		if _, ok := store.(Renewer); ok {
			lease, renew = max(w, MinLease), true
		}
	}
	claim := Record{
		Key:    key,
		Status: StatusInProgress,
		// The lease end identifies the claim: a random part below the millisecond keeps two
		// claims computed at the same instant (say, from equal deadlines) apart.
		LeaseEnd:   now.Add(lease - time.Duration(rand.Int64N(int64(time.Millisecond)))),
		ExpiresAt:  now.Add(cfg.expiry()),
		Validation: hash,
	}
	if j := cfg.jobMark(); j != nil {
		claim.JobID, claim.Attempt, claim.StartedAt, claim.Queue, claim.Kind = j.id, j.attempt, now, j.queue, j.kind
	}
	// A claim never expires before its lease ends (nor would TTL delete it).
	if end := claim.LeaseEnd.Truncate(time.Second).Add(time.Second); claim.ExpiresAt.Before(end) {
		claim.ExpiresAt = end
	}
	err = store.Claim(ctx, &claim, now)
	var exists *AlreadyExistsError
	switch {
	case errors.As(err, &exists):
		rec := exists.Record
		if rec.Status == StatusCompleted {
			cache.add(store, rec)
		}
		res, err := duplicate[T](rec, key, hash)
		return res, false, err
	case err != nil:
		return zero, false, &StoreError{Op: "claim", Key: key, Err: err}
	}
	st := &claimState{store: store, claim: claim, expiry: cfg.expiry(), now: cfg.now}
	if renew {
		st.renewEvery = lease
	}
	res, err = runClaimed(ctx, st, lease, fn, cfg)
	return res, true, err
}

// runClaimed runs fn under the claim st holds, then completes the claim (unless a transaction
// of fn's did) or, when fn fails or panics, releases it.
func runClaimed[T any](ctx context.Context, st *claimState, lease time.Duration, fn func(ctx context.Context) (T, error), cfg *Config) (res T, err error) {
	var runCtx context.Context
	var cancel context.CancelFunc
	stopRenewing := func() {}
	if st.renewEvery > 0 {
		// The run ends with ctx, its lease renewed until then.
		var cancelCause context.CancelCauseFunc
		runCtx, cancelCause = context.WithCancelCause(withClaim(ctx, st))
		cancel = func() { cancelCause(nil) }
		stopRenewing = st.keepRenewing(runCtx, cancelCause, cfg.logger())
	} else {
		runCtx, cancel = context.WithTimeout(withClaim(ctx, st), lease)
	}
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			stopRenewing()
			st.release(ctx, cfg.logger())
			panic(p)
		}
	}()
	res, err = fn(runCtx)
	stopRenewing()
	if err != nil {
		st.release(ctx, cfg.logger())
		return res, err
	}
	if done := st.committed(); done != nil {
		cfg.cache().add(st.store, done)
		return res, nil
	}
	return res, complete(ctx, st, res, cfg)
}

// complete records the COMPLETED record of st's claim with res as its data (unless
// cfg.NoResult), together with the items registered by OnComplete. A failure to record a plain
// completion is a *StoreError (the run's work stands); a failed transaction of OnComplete items
// releases the claim and fails the run, since the items were not written.
func complete[T any](ctx context.Context, st *claimState, res T, cfg *Config) error {
	key, log := st.claim.Key, cfg.logger()
	done := Record{
		Key:        key,
		Status:     StatusCompleted,
		ExpiresAt:  cfg.now().Add(cfg.expiry()),
		LeaseEnd:   st.claim.LeaseEnd,
		Validation: st.claim.Validation,
		JobID:      st.claim.JobID,
		Attempt:    st.claim.Attempt,
		StartedAt:  st.claim.StartedAt,
		Queue:      st.claim.Queue,
		Kind:       st.claim.Kind,
	}
	if j := cfg.jobMark(); j != nil {
		done.FinishedAt = cfg.now()
		if j.result != nil {
			done.Data = j.result.Get()
		}
	}
	if cfg == nil || !cfg.NoResult {
		data, err := json.Marshal(res)
		if err != nil {
			st.release(ctx, log)
			return &StoreError{Op: "complete", Key: key, Err: fmt.Errorf("encode result: %w", err)}
		}
		done.Data = data
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer ccancel()
	if pending := st.takePending(); len(pending) > 0 {
		// OnComplete checked that the store is transactional.
		if err := st.store.(TransactionalStore).CompleteWith(cctx, &done, st.claim.LeaseEnd, pending); err != nil {
			st.release(ctx, log)
			return err
		}
	} else if err := st.store.Complete(cctx, &done, st.claim.LeaseEnd); err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "idempotency: result not recorded; a duplicate after the lease runs again",
			jobs.LogString("idempotency_key", key), jobs.LogString("error", err.Error()))
		return &StoreError{Op: "complete", Key: key, Err: err}
	}
	cfg.cache().add(st.store, &done)
	return nil
}

// duplicate answers a call whose key is held by the live record rec.
func duplicate[T any](rec *Record, key, hash string) (T, error) {
	var zero T
	if rec.Status == StatusCancelled {
		return zero, &CancelledError{Key: key, JobID: rec.JobID, At: rec.StartedAt}
	}
	if hash != "" && rec.Validation != "" && hash != rec.Validation {
		return zero, &PayloadMismatchError{Key: key, StoredHash: rec.Validation, Hash: hash}
	}
	if rec.Status != StatusCompleted {
		return zero, &InProgressError{Key: key, LeaseEnd: rec.LeaseEnd}
	}
	if rec.Data == nil {
		return zero, nil
	}
	var res T
	if err := json.Unmarshal(rec.Data, &res); err != nil {
		return zero, &StoreError{Op: "decode", Key: key, Err: err}
	}
	return res, nil
}

// claimState is the claim of a running Do, carried in the function's context for TransactWrite.
type claimState struct {
	store  Store
	claim  Record
	expiry time.Duration
	now    func() time.Time

	// renewEvery, when set, is the lease a claim in a container holds: renewed every third of it
	// while the run goes on (keepRenewing).
	renewEvery time.Duration

	mu      sync.Mutex
	done    *Record                   // set when a transaction completed the claim
	pending []types.TransactWriteItem // items OnComplete registered, written with the completion
}

func (s *claimState) committed() *Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// takePending returns the items registered by OnComplete and forgets them.
func (s *claimState) takePending() []types.TransactWriteItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending
	s.pending = nil
	return p
}

// keepRenewing renews the claim's lease to renewEvery from now, every third of renewEvery, until
// ctx ends or the returned stop is called (which waits for a renewal under way). A claim found
// lost ends the run's context with ErrLeaseLost: another run holds the key now.
func (s *claimState) keepRenewing(ctx context.Context, cancel context.CancelCauseFunc, log *slog.Logger) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	renewer := s.store.(Renewer)
	go func() {
		defer close(done)
		t := time.NewTicker(s.renewEvery / 3)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := s.renew(ctx, renewer)
			switch {
			case errors.Is(err, ErrLeaseLost):
				log.LogAttrs(ctx, slog.LevelWarn, "idempotency: claim lost while the job ran; its run is cancelled",
					jobs.LogString("idempotency_key", s.claim.Key))
				cancel(ErrLeaseLost)
				return
			case err != nil && ctx.Err() == nil:
				log.LogAttrs(ctx, slog.LevelWarn, "idempotency: claim not renewed; trying again",
					jobs.LogString("idempotency_key", s.claim.Key), jobs.LogString("error", err.Error()))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// renew moves the claim's lease end to renewEvery from now (under s.mu, so that TransactWrite
// sees one lease end), unless a transaction completed it.
func (s *claimState) renew(ctx context.Context, r Renewer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return nil
	}
	end := s.now().Add(s.renewEvery - time.Duration(rand.Int64N(int64(time.Millisecond))))
	expires := s.claim.ExpiresAt
	if min := end.Truncate(time.Second).Add(time.Second); expires.Before(min) {
		expires = min
	}
	rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	if err := r.Renew(rctx, s.claim.Key, s.claim.LeaseEnd, end, expires); err != nil {
		return err
	}
	s.claim.LeaseEnd, s.claim.ExpiresAt = end, expires
	return nil
}

// release deletes the claim, unless a transaction completed it, so that a retry can run.
func (s *claimState) release(ctx context.Context, log *slog.Logger) {
	if s.committed() != nil {
		return
	}
	s.takePending()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := s.store.Delete(rctx, s.claim.Key, s.claim.LeaseEnd); err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "idempotency: claim not released; the key stays in progress until the lease ends",
			jobs.LogString("idempotency_key", s.claim.Key), slog.Time("lease_end", s.claim.LeaseEnd), jobs.LogString("error", err.Error()))
	}
}

type claimCtxKey struct{}

func withClaim(ctx context.Context, s *claimState) context.Context {
	return context.WithValue(ctx, claimCtxKey{}, s)
}

func claimFrom(ctx context.Context) *claimState {
	s, _ := ctx.Value(claimCtxKey{}).(*claimState)
	return s
}
