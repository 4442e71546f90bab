package ratelimit

import (
	"cmp"
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
// it is due. A job that wakes later than 5% of Per (or half an interval) after its token was due
// lets it go once and waits for the next free token, which it runs on however late it wakes (or
// on the first, if no second is free within MaxWait): a delivery takes at most two tokens and,
// once it has a token, always runs. Starts keep the
// tokens' spacing — at most N + N/20, or N + 1 below 20, in any window of length Per — but for
// jobs late twice in a row. The store's lead follows its answers' latency (StoreOptions.Lead), so
// a slow DynamoDB does not make every job late. With no token the job is snoozed with jobs.SnoozeNotRun:
// not run, not a failure and, with jobs.Config.Deliveries set, not an attempt. The snooze is the
// time until the bucket refills plus a random spread between half and one and a half times how
// long the job has waited since its first receive — counted up to 2^(deliveries-1) seconds, so a
// job that aged for other reasons is not sent away for its whole age — capped at MaxSnooze: a
// backlog comes back spread out rather than in step, a job waiting time W received about
// log2(W/1s) + 1 times.
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
// Cost per job: at most one UpdateItem when a token is there (two when the job wakes late), and
// less in a batch: the jobs of an invocation that reserve together share a call (Store.Reserve).
// A refusal costs at most one more, none when the bucket's last answer already implies it, plus,
// with a delivery ledger, its UpdateItem for the refused delivery and a GetItem on the next one.
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
		r.Name = cmp.Or(r.Name, kind)
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
			var d Reservation
			for try := 1; ; try++ {
				var err error
				if d, err = store.Reserve(ctx, r.Name, key, r.Limit, wait); err != nil {
					// The bucket cannot be read: the job must not run unmetered, and must not be
					// charged an attempt for DynamoDB's trouble either. It comes back shortly.
					snooze := storeErrorSnooze + time.Duration(rand.Int64N(int64(storeErrorSnooze)))
					row.Logger().LogAttrs(ctx, slog.LevelWarn, "rate limit: bucket unavailable; snoozed",
						jobs.LogString("limiter", r.Name), jobs.LogString("error", err.Error()), slog.Float64("snooze_s", snooze.Seconds()))
					return jobs.SnoozeNotRun(snooze)
				}
				if !d.OK && try > 1 {
					return next(ctx, row) // no second token within maxWait: it runs on its first
				}
				if !d.OK {
					break
				}
				if err := sleepUntil(ctx, d.At, store.now); err != nil {
					return err // the deadline came first: retried as usual
				}
				// A job that wakes later than lateTolerance after its token was due (a starved
				// CPU, a slow answer) would start among the next tokens' jobs: once, it lets that
				// token go and waits for the next free one. The second token it runs on however
				// late it wakes, so a delivery costs at most two tokens and always runs.
				late := store.now().Sub(d.At)
				if late <= lateTolerance(r.Limit) {
					return next(ctx, row)
				}
				row.Logger().LogAttrs(ctx, slog.LevelInfo, "rate limit: woke late",
					jobs.LogString("limiter", r.Name), slog.Float64("late_s", late.Seconds()), slog.Int("token", try))
				if try == maxTokens {
					return next(ctx, row)
				}
			}
			snooze := snoozeFor(d.Wait, waitedFor(row, store.now()), o.MaxSnooze)
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

// maxTokens is how many tokens a delivery takes at most: a job that wakes late lets its first
// go and runs on the second. An earlier version let up to three go and then snoozed the job: on a
// busy machine behind slow answers every one was late, the bucket ran seconds ahead of the jobs,
// snoozes grew, and a limit of 100/s delivered a few jobs a second.
const maxTokens = 2

// storeErrorSnooze is the least snooze of a job whose bucket could not be read (up to twice it).
const storeErrorSnooze = 5 * time.Second

// snoozeFor is the time until the bucket refills plus a random spread of 0.5-1.5 times waited,
// at most ceiling.
func snoozeFor(wait, waited, ceiling time.Duration) time.Duration {
	waited = max(waited, 0)
	spread := waited/2 + time.Duration(rand.Int64N(int64(waited)+1))
	return min(wait+spread, ceiling)
}

// waitedFor is how long the job has waited for the purpose of spreading its snooze: the time
// since its first receive, but no more than 2^(deliveries-1) seconds. A job snoozed for tokens
// again and again has a delivery for each snooze and an age about the sum of them, so the bound
// rarely bites there; a job that aged for other reasons (a slow store, retries, a late
// invocation) and finds the bucket busy once is not sent away for 1.5 times its whole age.
// 0 when the first receive is unknown.
func waitedFor(row *jobs.JobRow, now time.Time) time.Duration {
	if row.FirstReceivedAt.IsZero() {
		return 0
	}
	age := now.Sub(row.FirstReceivedAt)
	if row.Deliveries > 0 {
		age = min(age, time.Duration(1<<min(row.Deliveries-1, 30))*time.Second)
	}
	return age
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
