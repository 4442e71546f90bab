package idempotency

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobctx"
)

// maxSnooze is the longest snooze SQS can honour (its visibility timeout limit).
const maxSnooze = 12 * time.Hour

// JobKey returns the record key Middleware uses for a job: "<kind>#<idempotency key>", where the
// idempotency key is the envelope's key, or its id when the producer set none. The kind keeps
// jobs of different kinds that share a key apart.
func JobKey(row *jobs.JobRow) string {
	key := row.Key
	key = cmp.Or(key, row.ID)
	return row.Kind + "#" + key
}

// Middleware makes every job run at most once per idempotency key (see JobKey) while its record
// lasts: cfg.Expiry, else the duration in JOBKIT_IDEMPOTENCY_EXPIRY (contract.EnvIdempotencyExpiry),
// else 1 h. The Worker construct sets that variable to the queue's retention plus its DLQ's, so a
// job that succeeded and is redriven from the DLQ is still skipped; with a shorter expiry it runs
// again. The outcomes:
//
//   - a key already COMPLETED: the job is skipped and succeeds;
//   - a key in progress in another run: jobs.SnoozeNotRun until that run's lease ends (the
//     delivery did not run the job: with a delivery ledger it is not an attempt);
//   - the same key with different args: jobs.Cancel(*PayloadMismatchError), dead-lettered with
//     reason contract.ReasonPayloadMismatch;
//   - the handler fails (or panics): the claim is deleted and the handler's error returned, so the
//     runtime retries the job as usual. If the delete fails the job still retries: the retry is
//     snoozed until the claim's lease ends, then claims the key and runs.
//   - the handler succeeds but the store cannot record it: the job succeeds (it ran) and a
//     warning is logged.
//   - the handler succeeds but items registered with OnComplete cannot be written with its
//     record: the claim is released and the error returned, so the job retries.
//
// The lease is the time left before the job's deadline unless cfg.Lease sets it. Wire it with
//
//	workers.Use(idempotency.Middleware(store, nil))
func Middleware(store Store, cfg *Config) jobs.Middleware {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c.NoResult = true
	c.Payload = nil
	if c.Expiry <= 0 {
		c.Expiry = expiryFromEnv()
	}
	return func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			key := JobKey(row)
			hash, err := PayloadHash(json.RawMessage(row.EncodedArgs))
			if err != nil {
				return err
			}
			jc := c // this job's config: its logger carries the job's identity
			if jc.Logger == nil {
				jc.Logger = row.Logger()
			}
			if c.RecordJobs {
				var slot *jobctx.ResultSlot
				ctx, slot = jobctx.WithResultSlot(ctx)
				jc.job = &jobMark{id: row.ID, attempt: row.Attempt, queue: row.QueueURL, kind: row.Kind, result: slot}
			}
			log := jc.Logger.With(jobs.LogString("idempotency_key", key))
			var handlerErr error
			_, ran, err := run(ctx, store, key, hash, func(ctx context.Context) (json.RawMessage, error) {
				handlerErr = next(ctx, row)
				return nil, handlerErr
			}, &jc)
			var (
				inProgress *InProgressError
				mismatch   *PayloadMismatchError
				keyErr     *KeyError
				storeErr   *StoreError
			)
			switch {
			case err == nil:
				if !ran {
					log.LogAttrs(ctx, slog.LevelInfo, "idempotency: duplicate job skipped")
				}
				return nil
			case !ran && errors.As(err, &inProgress):
				d := min(inProgress.RetryAfter(c.now()), maxSnooze)
				log.LogAttrs(ctx, slog.LevelInfo, "idempotency: job in progress elsewhere; snoozed",
					slog.Time("lease_end", inProgress.LeaseEnd), slog.Duration("snooze", d))
				return jobs.SnoozeNotRun(d)
			case !ran && errors.As(err, &mismatch):
				return jobs.Cancel(mismatch)
			case !ran && errors.As(err, &keyErr):
				return jobs.Cancel(keyErr)
			case ran && handlerErr == nil && errors.As(err, &storeErr):
				// The handler succeeded; only recording it failed. (A failed transaction of
				// OnComplete items is not a *StoreError: it released the claim, and the job retries.)
				log.LogAttrs(ctx, slog.LevelWarn, "idempotency: job succeeded but its record was not completed",
					jobs.LogString("error", err.Error()))
				return nil
			}
			return err
		}
	}
}

// expiryFromEnv reads contract.EnvIdempotencyExpiry, a Go duration; 0 (the default expiry) when it is
// unset or invalid (then with a warning).
func expiryFromEnv() time.Duration {
	v := strings.TrimSpace(os.Getenv(contract.EnvIdempotencyExpiry))
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		slog.Warn("idempotency: ignoring an invalid expiry; using the default",
			slog.String("variable", contract.EnvIdempotencyExpiry), slog.String("value", v), slog.Duration("default", DefaultExpiry))
		return 0
	}
	return d
}
