package jobs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// watchdog keeps the time for every running batch of a handler with one timer: each batch's
// heartbeats, the end of its jobs' context and the hard stop at which its unfinished jobs are
// abandoned. A batch costs no timer of its own: registering it re-arms the shared timer only when
// it needs the timer earlier than it is armed, which in steady use is rarely.
type watchdog struct {
	mu      sync.Mutex
	timer   *time.Timer // calls fire; made on first use
	armed   time.Time   // when the timer fires; zero when it is not armed
	batches []*batch    // running batches; a batch's wdIndex is its place here
}

// Times of the batch's next events, guarded by its handler's watchdog.mu. Zero: no such event.
type batchTimes struct {
	beatAt  time.Time // the next heartbeat (zero while one runs)
	softAt  time.Time // the jobs' context ends
	hardAt  time.Time // unfinished jobs are abandoned
	wdIndex int       // the batch's place in watchdog.batches
}

func (t *batchTimes) next() time.Time {
	n := t.beatAt
	for _, at := range [...]time.Time{t.softAt, t.hardAt} {
		if !at.IsZero() && (n.IsZero() || at.Before(n)) {
			n = at
		}
	}
	return n
}

// add registers b, whose times are set; now is the current time.
func (w *watchdog) add(b *batch, now time.Time) {
	w.mu.Lock()
	b.times.wdIndex = len(w.batches)
	w.batches = append(w.batches, b)
	if next := b.times.next(); !next.IsZero() && (w.armed.IsZero() || next.Before(w.armed)) {
		w.arm(next, now)
	}
	w.mu.Unlock()
}

// remove unregisters b. The timer is left as it is: if it then fires with nothing due, it only
// re-arms for the batches left, if any.
func (w *watchdog) remove(b *batch) {
	w.mu.Lock()
	i, last := b.times.wdIndex, len(w.batches)-1
	w.batches[i] = w.batches[last]
	w.batches[i].times.wdIndex = i
	w.batches[last] = nil
	w.batches = w.batches[:last]
	w.mu.Unlock()
}

// arm makes the timer fire at next. w.mu is held.
func (w *watchdog) arm(next, now time.Time) {
	w.armed = next
	d := next.Sub(now)
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
		return
	}
	w.timer.Reset(d)
}

// fire handles the events that are due and re-arms the timer for the next one.
func (w *watchdog) fire() {
	now := time.Now()
	var hard, beat []*batch
	w.mu.Lock()
	w.armed = time.Time{}
	var next time.Time
	for _, b := range w.batches {
		t := &b.times
		if !t.softAt.IsZero() && !now.Before(t.softAt) {
			t.softAt = time.Time{}
			b.deadline.expire()
		}
		if !t.hardAt.IsZero() && !now.Before(t.hardAt) {
			t.hardAt = time.Time{}
			hard = append(hard, b)
		}
		if !t.beatAt.IsZero() && !now.Before(t.beatAt) {
			t.beatAt = time.Time{} // the next is set when this one is done
			beat = append(beat, b)
		}
		if n := t.next(); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	if !next.IsZero() {
		w.arm(next, now)
	}
	w.mu.Unlock()
	for _, b := range hard {
		b.abandon()
	}
	for _, b := range beat {
		go w.beat(b)
	}
}

// beat runs b's heartbeat and schedules the next one a third of the visibility timeout later.
func (w *watchdog) beat(b *batch) {
	b.beat()
	now := time.Now()
	w.mu.Lock()
	if i := b.times.wdIndex; i < len(w.batches) && w.batches[i] == b {
		b.times.beatAt = now.Add(b.h.cfg.VisibilityTimeout / 3)
		if w.armed.IsZero() || b.times.beatAt.Before(w.armed) {
			w.arm(b.times.beatAt, now)
		}
	}
	w.mu.Unlock()
}

// jobContext is the jobs' context of a batch: the invocation's context with an earlier deadline.
// The timer-backed context behind it is made on first need — a job asking for Done, deriving a
// context from it, or asking for Err once the deadline has passed — so a batch of jobs that never
// look costs no timer and no registration with the invocation's context.
type jobContext struct {
	parent   context.Context
	deadline time.Time
	expired  atomic.Bool // the deadline has passed (set by the watchdog)
	inner    atomic.Pointer[context.Context]

	ended  atomic.Bool // the batch returned: the context is cancelled
	mu     sync.Mutex  // guards making inner and cancel
	cancel context.CancelFunc
}

var _ context.Context = (*jobContext)(nil)

// Deadline returns the jobs' deadline.
func (c *jobContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done returns a channel closed at the deadline, when the invocation's context ends, or when the
// batch returns.
func (c *jobContext) Done() <-chan struct{} { return c.get().Done() }

// Err reports why the context ended, or nil.
func (c *jobContext) Err() error {
	if in := c.inner.Load(); in != nil {
		return (*in).Err()
	}
	if c.expired.Load() || c.ended.Load() || c.parent.Err() != nil {
		return c.get().Err()
	}
	return nil
}

// Value returns the invocation context's value for key.
func (c *jobContext) Value(key any) any {
	if in := c.inner.Load(); in != nil {
		return (*in).Value(key)
	}
	if c.expired.Load() {
		return c.get().Value(key)
	}
	return c.parent.Value(key)
}

func (c *jobContext) String() string { return "jobs.jobContext" }

// get returns the timer-backed context, making it on first use.
func (c *jobContext) get() context.Context {
	if in := c.inner.Load(); in != nil {
		return *in
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inner.Load(); in != nil {
		return *in
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	if c.ended.Load() {
		cancel()
	} else {
		c.cancel = cancel
	}
	c.inner.Store(&ctx)
	return ctx
}

// expire records that the deadline has passed.
func (c *jobContext) expire() { c.expired.Store(true) }

// end cancels the context: the batch has returned.
func (c *jobContext) end() {
	c.mu.Lock()
	c.ended.Store(true)
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
