package state

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/jobkit-go/jobkit/jobs"
)

// MiddlewareOptions configure Middleware.
type MiddlewareOptions struct {
	// Folded says idempotency.Middleware with Config.RecordJobs runs inside this middleware on the
	// same table: a job's running and succeeded states are then its idempotency record, and this
	// middleware writes nothing for them (it still counts batch members).
	Folded bool
}

// Middleware records the running and succeeded states of every job (unless opts.Folded) and
// counts the batch members that succeed in their batch. Put it outside the idempotency
// middleware, so a member that succeeded but was not yet counted is counted on its next delivery
// (skipped as a duplicate by idempotency):
//
//	workers.Use(table.Middleware(&state.MiddlewareOptions{Folded: true}),
//		idempotency.Middleware(store, &idempotency.Config{RecordJobs: true}))
//
// A member whose batch callback is being sent by another run is snoozed until that run's lease
// ends (then it sends the callback itself if the other run did not).
func (t *Table) Middleware(opts *MiddlewareOptions) jobs.Middleware {
	folded := opts != nil && opts.Folded
	return func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			var slot *jobs.ResultSlot
			if !folded {
				up := t.stateUpdate(row, jobs.StateRunning, t.o.Now()).Set(expression.Name(attrAttempt), expression.Value(row.Attempt))
				if err := t.updateJob(ctx, row.ID, up); err != nil {
					row.Logger().Warn("state: running state not recorded", jobs.LogString("error", err.Error()))
				}
				ctx, slot = jobs.WithResultSlot(ctx)
			}
			if err := next(ctx, row); err != nil {
				return err
			}
			var up expression.UpdateBuilder
			hasUpdate := !folded
			if hasUpdate {
				now := t.o.Now()
				up = t.stateUpdate(row, jobs.StateSucceeded, now).
					Set(expression.Name(attrFinishedAt), expression.Value(now.UnixMilli())).
					Set(expression.Name(attrAttempt), expression.Value(row.Attempt))
				if r := slot.Get(); r != nil {
					up = up.Set(expression.Name(attrResult), expression.Value(string(r)))
				}
			}
			if row.Batch != "" {
				if !hasUpdate {
					up = expression.Set(expression.Name(attrBatch), expression.Value(row.Batch))
				}
				err := t.memberDone(ctx, row, up, true)
				var pending *CallbackPendingError
				if errors.As(err, &pending) {
					return jobs.Snooze(max(pending.Until.Sub(t.o.Now()), 1))
				}
				return err
			}
			if hasUpdate {
				if err := t.updateJob(ctx, row.ID, up); err != nil {
					row.Logger().Warn("state: succeeded state not recorded", jobs.LogString("error", err.Error()))
				}
			}
			return nil
		}
	}
}
