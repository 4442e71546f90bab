package jobs

// Running a batch's records: a pool of workers takes units (a record, or a FIFO group) in order,
// runs each record through the middleware chain, and stops at the deadline.

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/jobkit-go/jobkit/jobs/event"
)

// runAll runs the records on pooled goroutines and waits for them, or, once the jobs' context
// has ended, at most until the hard stop, when the watchdog abandons what is left. Workers fan
// out on demand: a worker that takes a record while others remain and every started worker is
// busy wakes one more (up to Concurrency), so slow jobs soon run Concurrency at once while a batch
// of quick ones costs few goroutine hand-offs.
func (b *batch) runAll() {
	b.runPass(nil, b.h.cfg.Concurrency)
}

// runPass runs units (nil: every record, or every FIFO group), up to limit at once, as runAll
// describes. A batch may run several passes (runPhases); a pass after the hard stop starts nothing.
func (b *batch) runPass(units []int32, limit int) {
	b.unitMap = units
	switch {
	case units != nil:
		b.units = int32(len(units))
	case b.h.fifo:
		b.units = int32(len(b.starts) - 1)
	default:
		b.units = int32(len(b.records))
	}
	b.next.Store(0)
	b.started.Store(0)
	b.left.Store(0)
	b.finished.Store(0)
	b.released.Store(false)
	b.limit = int32(max(1, min(limit, int(b.units))))
	b.done.Add(1)
	b.wake()
	b.done.Wait()
}

// release lets runAll return, with the time the jobs ended if known; only the first call counts.
func (b *batch) release(end time.Time) {
	if b.released.CompareAndSwap(false, true) {
		b.endClock = end
		b.done.Done()
	}
}

// wake starts one more worker on the batch, a parked one or a new goroutine, unless limit
// workers have started.
func (b *batch) wake() {
	for {
		n := b.started.Load()
		if n >= b.limit {
			return
		}
		if b.started.CompareAndSwap(n, n+1) {
			break
		}
	}
	b.left.Add(1)
	select {
	case pool <- b:
	default:
		go poolWorker(b)
	}
}

func poolWorker(b *batch) {
	for {
		b.work()
		b = <-pool
	}
}

// claim takes the next record (Standard) or group (FIFO) index, and wakes another worker when
// more remain and the limit allows.
func (b *batch) claim() (int, bool) {
	if b.stop.Load() {
		return 0, false
	}
	i := b.next.Add(1) - 1
	if i >= b.units {
		return 0, false
	}
	// Wake another worker only while every started one is busy: slow jobs soon run Concurrency
	// at once; a batch of quick ones is done by a worker or two.
	if i+1 < b.units {
		if started := b.started.Load(); started < b.limit && i+1-b.finished.Load() >= started {
			b.wake()
		}
	}
	return int(i), true
}

// work runs records (Standard) or groups (FIFO) until none is left, then signals the batch.
func (b *batch) work() {
	// Workers read only the monotonic clock, as an offset from the batch's start: on many
	// machines that costs a fraction of a full time.Now.
	clock := time.Since(b.start)
	defer func() {
		if b.left.Add(-1) == 0 {
			b.release(b.start.Add(clock))
		}
	}()
	for {
		i, ok := b.claim()
		if !ok {
			return
		}
		if b.unitMap != nil {
			i = int(b.unitMap[i])
		}
		if !b.h.fifo {
			b.runRecord(&b.records[i], &clock)
			b.finished.Add(1)
			continue
		}
		var failed *record
		for _, k := range b.order[b.starts[i]:b.starts[i+1]] {
			r := &b.records[k]
			if failed != nil {
				b.skip(r, failed)
				continue
			}
			if b.stop.Load() {
				return
			}
			if b.runRecord(r, &clock).listed() {
				failed = r
			}
		}
		b.finished.Add(1)
	}
}

// abandon stops waiting: records not finished are listed as failed (their visibility is left
// alone), workers start nothing more, and runAll returns.
// Records being dead-lettered are waited for (their send ends with the post-job context), so
// that a message copied to the DLQ is never also listed failed.
func (b *batch) abandon() {
	b.stop.Store(true)
	var sending []*record
	for i := range b.records {
		r := &b.records[i]
		if r.state.CompareAndSwap(statePending, stateAbandoned) {
			r.notRun = true // no worker touches r any more
			b.logRecord(slog.LevelError, r, "job not started near the Lambda deadline: reported failed", nil)
			b.event(r, event.NotRun, event.NoteDeadlineNotStarted, nil, "")
		} else if atomic.LoadUint32(&r.row.settling) == 1 && r.state.Load() == stateRunning {
			// The job's work is done; its middleware is recording it (an idempotency completion,
			// a job state). Abandoning it now would run the work again on the next delivery.
			sending = append(sending, r)
		} else if r.state.CompareAndSwap(stateRunning, stateAbandoned) {
			b.logRecord(slog.LevelError, r, "job still running near the Lambda deadline: reported failed", nil)
			b.event(r, event.Returned, event.NoteAbandoned, nil, "")
		} else if r.state.Load() == stateDeadLettering {
			sending = append(sending, r)
		}
	}
	if len(sending) == 0 {
		b.release(time.Time{})
		return
	}
	go func() { // not on the watchdog's goroutine, which keeps the time of other batches
		for _, r := range sending {
			b.waitSettled(r)
		}
		b.release(time.Time{})
	}()
}

// waitSettled waits for a record found dead-lettering or settling at the hard stop. A
// dead-letter send ends with the post-job context; a settling record gets until the end of the
// post-job budget (a quarter of the safety margin before the deadline) to record its outcome,
// and is then abandoned (listed) like any job still running.
func (b *batch) waitSettled(r *record) {
	for {
		switch st := r.state.Load(); {
		case st == stateDeadLettering:
		case st != stateRunning:
			return
		case !b.postEnd.IsZero() && !time.Now().Before(b.postEnd):
			if r.state.CompareAndSwap(stateRunning, stateAbandoned) {
				b.logRecord(slog.LevelError, r, "job done but still recording its outcome at the Lambda deadline: reported failed", nil)
				b.event(r, event.Returned, event.NoteAbandonedRecording, nil, "")
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// runRecord runs one record and decides its outcome.
// clock is the worker's last clock reading (time since the batch's start), updated.
func (b *batch) runRecord(r *record, clock *time.Duration) outcome {
	if !r.state.CompareAndSwap(statePending, stateRunning) {
		return outAbandoned
	}
	if b.softPassed(*clock) || b.draining() {
		// Starting now would run the job on an ended context and charge it an attempt it never
		// had (on its last, a dead-letter): list it untouched; it comes back at once.
		r.out, r.visible, r.delay = outNotStarted, true, 0
		b.logRecord(slog.LevelWarn, r, "job not started: the batch reached its deadline; reported failed", nil)
		b.event(r, event.NotRun, event.NoteBatchDeadline, nil, "")
		r.state.CompareAndSwap(stateRunning, stateDone)
		return r.out
	}
	b.countRealRuns(r)
	err := r.pre
	if err == nil {
		b.markStarted(r)
	}
	if err == nil && r.pointer != nil {
		err = safely(func() error { return b.loadPayload(r) })
	}
	if err == nil {
		b.event(r, event.Started, "", nil, "")
		// One clock read per job: a job starts when the worker's previous one ended.
		start := *clock
		err = b.call(r)
		*clock = time.Since(b.start)
		r.dur, r.ran = *clock-start, true
	}
	b.settle(r, err)
	if err != nil {
		*clock = time.Since(b.start) // settling may have called AWS
	}
	if !r.state.CompareAndSwap(stateRunning, stateDone) && r.state.Load() != stateDone { // done: dead-lettered
		return outAbandoned
	}
	if (r.out == outSucceeded || r.out == outCancelled) && r.pointer != nil && r.pointer.loaded && !r.isLost() {
		// Only now: a record abandoned or lost comes back, and needs its payload then.
		b.deletePayload(r)
	}
	return r.out
}

// safely runs fn, turning a panic into a *PanicError: a record's own failure, never the batch's.
func safely(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return fn()
}

// call runs the job through the middleware chain, turning a panic into a *PanicError.
func (b *batch) call(r *record) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	r.rctx.parent, r.rctx.r = b.jobCtx, r
	var ctx context.Context = &r.rctx
	defer r.release()
	t := b.h.cfg.JobTimeout
	if reg := r.row.reg; reg != nil && reg.opts.Timeout > 0 {
		t = reg.opts.Timeout
	}
	if t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	return b.run(ctx, &r.row)
}

// recordContext is a job's context: the batch's jobs' context, also cancelled when the message
// is lost. Like jobContext, the cancellable context behind it is made on first need, so a job
// that never looks costs nothing more.
type recordContext struct {
	parent context.Context
	r      *record
}

// Deadline returns the jobs' deadline.
func (c *recordContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Value returns the parent's value for key (through the cancellable context once made, so
// context.Cause finds ErrMessageLost).
func (c *recordContext) Value(key any) any {
	if _, ok := key.(traceKey); ok && validTraceparent(c.r.row.Trace) {
		return c.r.row.Trace
	}
	c.r.lostMu.Lock()
	inner := c.r.inner
	c.r.lostMu.Unlock()
	if inner != nil {
		return inner.Value(key)
	}
	return c.parent.Value(key)
}

// Done returns a channel closed when the parent ends or the message is lost.
func (c *recordContext) Done() <-chan struct{} { return c.get().Done() }

// Err reports why the context ended, or nil.
func (c *recordContext) Err() error {
	c.r.lostMu.Lock()
	inner, lost := c.r.inner, c.r.lost
	c.r.lostMu.Unlock()
	switch {
	case inner != nil:
		return inner.Err()
	case lost:
		return c.get().Err()
	}
	return c.parent.Err()
}

func (c *recordContext) String() string { return "jobs.recordContext" }

func (c *recordContext) get() context.Context {
	r := c.r
	r.lostMu.Lock()
	defer r.lostMu.Unlock()
	if r.inner == nil {
		r.inner, r.cancel = context.WithCancelCause(c.parent)
		if r.lost {
			r.cancel(ErrMessageLost)
		}
	}
	return r.inner
}
