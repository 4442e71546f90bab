package ratelimit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
)

// Rule limits the jobs of one kind.
type Rule struct {
	// Name names the limiter (its buckets' ids); default the kind. Kinds that share a Name share
	// its buckets, e.g. two kinds that call the same API account.
	Name  string
	Limit Limit
	// Key, when set, gives each job's bucket within the limiter (a tenant, an API account):
	// every key has its own Limit. An error is returned as the job's (retried).
	Key func(row *jobs.JobRow) (string, error)
}

// Rules maps a job kind to its rule.
type Rules map[string]Rule

// Options configures Middleware. Nil means the defaults.
type Options struct {
	// MaxWait is how long a job may wait in its worker for a token due soon (Store.Reserve), so
	// the jobs of a batch, which arrive together, run at the tokens' pace rather than all but
	// one being snoozed. Default DefaultMaxWait; negative: never wait (Store.Take). It is cut to
	// leave at least half the job's time before its context's deadline.
	MaxWait time.Duration
	// MaxSnooze caps the snooze of a job that found no token. Default DefaultMaxSnooze.
	MaxSnooze time.Duration
}

// Defaults of Options.
const (
	DefaultMaxWait   = time.Second
	DefaultMaxSnooze = 5 * time.Minute
)

// Middleware takes a token for each job of a kind in rules before it runs, from the bucket of the
// rule's limiter and key in store: a token due within MaxWait is reserved and the job starts when
// it is due. A job that starts late (a starved CPU, a slow answer) still runs on the token it
// reserved — a reserved token is never let go — and, when later than 5% of Per (or half an
// interval), takes one more token without waiting for it, so starts keep the tokens' spacing: at
// most N + N/20, or N + 1 below 20, start in any window of length Per while the store answers
// within maxWait. With no such token the job is snoozed with jobs.SnoozeNotRun:
// not run, not a failure and, with jobs.Config.Deliveries set, not an attempt. The snooze is the
// time until the bucket refills plus a random spread between half and one and a half times how
// long the job has waited since its first receive (capped at MaxSnooze), so a backlog comes back
// spread out rather than in step: a job waiting time W is received about log2(W/1s) + 1 times.
// Those receives count against the queue's redrive maxReceiveCount: give a rate-limited queue a
// JobQueueProps.RedriveMargin that covers them.
//
// Kinds absent from rules run as usual. Middleware panics on an invalid rule (a programming error
// found at start-up). Put it before idempotency.Middleware, so a job that waits holds no claim:
//
//	workers.Use(ratelimit.Middleware(store, rules, nil), idempotency.Middleware(idem, nil))
//
// A DynamoDB error is not the job's failure: the job is snoozed (not run, not charged) for 5-10 s.
//
// Cost per job: one UpdateItem when a token is there (two when the job starts late); one more per
// refusal, plus, with a delivery ledger, its UpdateItem for the refused delivery and a GetItem on
// the next one.
func Middleware(store *Store, rules Rules, opts *Options) jobs.Middleware {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxSnooze <= 0 {
		o.MaxSnooze = DefaultMaxSnooze
	}
	switch {
	case o.MaxWait == 0:
		o.MaxWait = DefaultMaxWait
	case o.MaxWait < 0:
		o.MaxWait = 0
	}
	checked := make(Rules, len(rules))
	for kind, r := range rules {
		if r.Name == "" {
			r.Name = kind
		}
		if err := checkName(r.Name); err != nil {
			panic(fmt.Errorf("ratelimit: rule for kind %q: %w", kind, err))
		}
		if err := r.Limit.Validate(); err != nil {
			panic(fmt.Errorf("ratelimit: rule for kind %q: %w", kind, err))
		}
		checked[kind] = r
	}
	return func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			r, ok := checked[row.Kind]
			if !ok {
				return next(ctx, row)
			}
			key := ""
			if r.Key != nil {
				var err error
				if key, err = r.Key(row); err != nil {
					return fmt.Errorf("ratelimit: key of job %s: %w", row.ID, err)
				}
			}
			wait := o.MaxWait
			if deadline, ok := ctx.Deadline(); ok {
				wait = min(wait, time.Until(deadline)/2)
			}
			d, err := store.Reserve(ctx, r.Name, key, r.Limit, wait)
			if err != nil {
				// The bucket cannot be read: the job must not run unmetered, and must not be
				// charged an attempt for DynamoDB's trouble either. It comes back shortly.
				snooze := storeErrorSnooze + time.Duration(rand.Int64N(int64(storeErrorSnooze)))
				row.Logger().LogAttrs(ctx, slog.LevelWarn, "rate limit: bucket unavailable; snoozed",
					jobs.LogString("limiter", r.Name), jobs.LogString("error", err.Error()), slog.Float64("snooze_s", snooze.Seconds()))
				return jobs.SnoozeNotRun(snooze)
			}
			if d.OK {
				if err := sleepUntil(ctx, d.At, store.now); err != nil {
					return err // the deadline came first: retried as usual
				}
				if late := store.now().Sub(d.At); late > lateTolerance(r.Limit) {
					chargeLate(ctx, store, row, r, key, wait, late)
				}
				return next(ctx, row)
			}
			snooze := snoozeFor(d.Wait, store.now().Sub(row.FirstReceivedAt), row.FirstReceivedAt.IsZero(), o.MaxSnooze)
			row.Logger().LogAttrs(ctx, slog.LevelInfo, "rate limited: snoozed",
				jobs.LogString("limiter", r.Name), jobs.LogString("limit_key", key),
				slog.Float64("refill_s", d.Wait.Seconds()), slog.Float64("snooze_s", snooze.Seconds()))
			return jobs.SnoozeNotRun(snooze)
		}
	}
}

// lateTolerance is how late a job may start after its token was due without a charge: half an
// interval, or 5% of the limit's period if that is more. A window of length Per then sees at most
// N + N/20 starts (N + 1 for N < 20) from the jobs within it: tokens due up to lateTolerance
// before the window may start in it.
func lateTolerance(l Limit) time.Duration {
	return max(l.interval()/2, l.Per/20)
}

// chargeLate takes one more token for a job that starts later than lateTolerance after its token
// was due, without waiting for it: the job runs now on the token it holds, and the token taken
// leaves a gap at the bucket's next free time (within maxWait) in place of the one its late
// start fills, so the window it starts in does not gain a start. Nothing is waited for or let go:
// an earlier version let a late token go and took another to wait for, and on a busy machine or
// behind slow answers the next one was late too — the bucket ran ahead of the jobs, snoozes
// grew, and a limit of 100/s delivered a few jobs a second. A bucket already reserved beyond
// maxWait is not charged (it has no gap to give within the window), nor is a failed call retried:
// the charge bounds bursts, it never holds the job.
func chargeLate(ctx context.Context, store *Store, row *jobs.JobRow, r Rule, key string, maxWait, late time.Duration) {
	d, err := store.Reserve(ctx, r.Name, key, r.Limit, maxWait)
	attrs := []slog.Attr{jobs.LogString("limiter", r.Name), slog.Float64("late_s", late.Seconds()), slog.Bool("charged", err == nil && d.OK)}
	if err != nil {
		attrs = append(attrs, jobs.LogString("error", err.Error()))
	}
	row.Logger().LogAttrs(ctx, slog.LevelInfo, "rate limit: started late", attrs...)
}

// storeErrorSnooze is the least snooze of a job whose bucket could not be read (up to twice it).
const storeErrorSnooze = 5 * time.Second

// snoozeFor is the time until the bucket refills plus a random spread of 0.5-1.5 times the job's
// age (0 when unknown), at most ceiling.
func snoozeFor(wait, age time.Duration, unknownAge bool, ceiling time.Duration) time.Duration {
	if unknownAge || age < 0 {
		age = 0
	}
	spread := age/2 + time.Duration(rand.Int64N(int64(age)+1))
	return min(wait+spread, ceiling)
}

// KeyFromArgs returns a Rule.Key that decodes the job's args as T and calls key, e.g. a tenant:
//
//	Key: ratelimit.KeyFromArgs(func(a SyncAccount) string { return a.TenantID })
func KeyFromArgs[T jobs.JobArgs](key func(args T) string) func(row *jobs.JobRow) (string, error) {
	return func(row *jobs.JobRow) (string, error) {
		var args T
		if err := json.Unmarshal(row.EncodedArgs, &args); err != nil {
			return "", err
		}
		return key(args), nil
	}
}

// sleepUntil returns at t (by now's clock), or with ctx's error if it ends first.
func sleepUntil(ctx context.Context, t time.Time, now func() time.Time) error {
	d := t.Sub(now())
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
