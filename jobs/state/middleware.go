package state

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobctx"
)

// MiddlewareOptions configure Middleware.
type MiddlewareOptions struct {
	// Folded says idempotency.Middleware with Config.RecordJobs runs inside this middleware on the
	// same table: a job's running and succeeded states are then its idempotency record, and this
	// middleware writes nothing for them (it still counts batch members).
	Folded bool
	// ProgressInterval is the shortest time between two writes of a job's progress
	// (jobs.ReportProgress): reports in between are kept, the latest written when it ends.
	// 0 means DefaultProgressInterval.
	ProgressInterval time.Duration
}

// DefaultProgressInterval is how often a running job's progress is written at most.
const DefaultProgressInterval = 5 * time.Second

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
	every := DefaultProgressInterval
	if opts != nil && opts.ProgressInterval > 0 {
		every = opts.ProgressInterval
	}
	return func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			p := &progressWriter{t: t, ctx: ctx, id: row.ID, every: every, log: row.Logger()}
			defer p.stop()
			ctx = jobs.WithProgress(ctx, p.report)
			var slot *jobctx.ResultSlot
			if !folded {
				up := t.stateUpdate(row, jobs.StateRunning, t.o.Now()).Set(expression.Name(attrAttempt), expression.Value(row.Attempt))
				err := t.updateJobIf(ctx, row.ID, up, notCancelled())
				if errors.Is(err, errCondition) {
					return &cancelledJob{id: row.ID} // cancelled by an operator (Client.Cancel): not run
				}
				if err != nil {
					row.Logger().Warn("state: running state not recorded", jobs.LogString("error", err.Error()))
				}
				ctx, slot = jobctx.WithResultSlot(ctx)
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
				if errors.As(err, &pending) && !t.callbackSentSoon(ctx, pending) {
					// The run holding the lease may die before it sends: this member comes back
					// after the lease and sends the callback then if it is still unsent.
					return jobs.Snooze(max(pending.Until.Sub(t.o.Now()), 1))
				}
				if pending != nil {
					return nil
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

// callbackSentSoon waits a little for the run that holds a batch's callback lease to mark the
// callback sent — usually a few milliseconds away: the members that end last end together, and
// all but one find the lease taken. It reads the batch's item after 50 ms, then at doubling
// intervals of at most a second, for at most callbackWait, stopping at the lease's end or the
// job's deadline. Sent: the member is done. Else it is snoozed.
func (t *Table) callbackSentSoon(ctx context.Context, pending *CallbackPendingError) bool {
	wait, waited := callbackPollStart, time.Duration(0)
	for waited+wait <= callbackWait {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return false
		}
		if !pending.Until.IsZero() && t.o.Now().Add(wait).After(pending.Until) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		waited += wait
		meta, err := t.get(ctx, metaKey(pending.Batch))
		if err != nil {
			return false
		}
		if num(meta, attrCbSent) > 0 {
			return true
		}
		wait = min(2*wait, time.Second)
	}
	return false
}

// How a member that finds the callback lease taken waits for it to be sent (callbackSentSoon).
const (
	callbackPollStart = 50 * time.Millisecond
	callbackWait      = 5 * time.Second
)

// progressWriter writes a job's progress reports to its item, at most one write per every: a
// report within the interval is kept, and the latest is written when the interval ends (unless
// the run has ended by then).
type progressWriter struct {
	t     *Table
	ctx   context.Context
	id    string
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	last    time.Time      // the last write
	pending *jobs.Progress // a report waiting for the interval to end
	timer   *time.Timer
	done    bool
}

func (p *progressWriter) report(pr jobs.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	if wait := p.every - time.Since(p.last); wait > 0 {
		p.pending = &pr
		if p.timer == nil {
			p.timer = time.AfterFunc(wait, p.flush)
		}
		return
	}
	p.last = time.Now()
	go p.write(pr)
}

// flush writes the pending report when the interval ends.
func (p *progressWriter) flush() {
	p.mu.Lock()
	pr := p.pending
	p.pending, p.timer = nil, nil
	if p.done || pr == nil {
		p.mu.Unlock()
		return
	}
	p.last = time.Now()
	p.mu.Unlock()
	p.write(*pr)
}

func (p *progressWriter) write(pr jobs.Progress) {
	up := expression.Set(expression.Name(attrProgress), expression.Value(pr.Percent)).
		Set(expression.Name(attrProgressNote), expression.Value(pr.Note)).
		Set(expression.Name(attrProgressAt), expression.Value(pr.At.UnixMilli()))
	// Only on a job the table records: a job sent without job states has no item to show it on.
	cond := expression.Name(attrState).AttributeExists()
	if err := p.t.updateJobIf(p.ctx, p.id, up, &cond); err != nil && !errors.Is(err, errCondition) && p.ctx.Err() == nil {
		p.log.Warn("state: progress not recorded", jobs.LogString("error", err.Error()))
	}
}

// stop ends the writer with the run: a pending report is dropped (the job's state moves on).
func (p *progressWriter) stop() {
	p.mu.Lock()
	p.done = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
}

// cancelledJob is the error of a job an operator cancelled, found by the running write: the
// runtime deletes its message unrun; its state was recorded by the cancel.
type cancelledJob struct{ id string }

func (e *cancelledJob) Error() string        { return "state: job " + e.id + " was cancelled before it ran" }
func (e *cancelledJob) Is(target error) bool { return target == jobs.ErrCancelled }
func (e *cancelledJob) CancelledJob() string { return e.id }
