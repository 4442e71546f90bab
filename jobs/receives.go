package jobs

import (
	"fmt"
	"log/slog"
	"sync"
)

// Receives and attempts. SQS counts every receive of a message (ApproximateReceiveCount) and its
// redrive policy moves the message to the dead-letter queue after maxReceiveCount of them; the
// runtime counts attempts, the deliveries that ran the job. With a DeliveryLedger the two are told
// apart: a delivery that did not run the job (a FIFO record skipped behind a failed one, one not
// started before the deadline, a SnoozeNotRun) or that ended in a Snooze is recorded, and Attempt
// is the receive count less those. What is left over beyond the real runs are deliveries that ended without an outcome:
// the process crashed or the whole invocation timed out.
//
// This file keeps the two counts from losing a job:
//   - countRealRuns and recordNotRun read and write the ledger;
//   - screen, before a batch runs, dead-letters a job whose attempts were all used by deliveries
//     without an outcome (ReasonNoOutcome: a crash loop), and credits the other jobs of the batch
//     with the receives that crash loop cost them, so they are not mistaken for it;
//   - preemptRedrive, after a batch ran, dead-letters a job that is about to go back to the queue
//     on its maxReceiveCount-th receive (ReasonReceiveLimit): SQS would move it unnamed next.

// NoOutcomeError is the error a job is dead-lettered with when its attempts were used by
// deliveries that ended without an outcome (ReasonNoOutcome).
type NoOutcomeError struct {
	Deliveries int // ApproximateReceiveCount
	NotRun     int // deliveries the ledger knows did not run the job
	Attempts   int // MaxAttempts
}

// Error describes the failure.
func (e *NoOutcomeError) Error() string {
	return fmt.Sprintf("jobs: %d deliveries ended without an outcome (the process crashed or was killed, or the invocation timed out), using all %d attempts; %d of %d deliveries did not run the job",
		e.Deliveries-e.NotRun-1, e.Attempts, e.NotRun, e.Deliveries)
}

// DeadLetterReason returns ReasonNoOutcome.
func (e *NoOutcomeError) DeadLetterReason() string { return ReasonNoOutcome }

// ReceiveLimitError is the error a job is dead-lettered with when it was received the queue's
// maxReceiveCount times and would have gone back to the queue (ReasonReceiveLimit).
type ReceiveLimitError struct {
	Deliveries      int   // ApproximateReceiveCount: the queue's maxReceiveCount or more
	MaxReceiveCount int   // Config.MaxReceiveCount
	Attempt         int   // real runs, as counted
	Err             error // what this delivery ended with (nil: it did not run the job)
}

// Error describes the failure.
func (e *ReceiveLimitError) Error() string {
	s := fmt.Sprintf("jobs: received %d times, the queue's maxReceiveCount of %d, after %d attempts: dead-lettered before the redrive policy moves it",
		e.Deliveries, e.MaxReceiveCount, e.Attempt)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns what the delivery ended with.
func (e *ReceiveLimitError) Unwrap() error { return e.Err }

// DeadLetterReason returns ReasonReceiveLimit.
func (e *ReceiveLimitError) DeadLetterReason() string { return ReasonReceiveLimit }

// countRealRuns makes r's Attempt the number of its real runs: ApproximateReceiveCount less the
// deliveries the ledger says did not run. Only a redelivery asks (the first delivery is a run).
// It reports whether the count is known (false: the ledger could not be read).
func (b *batch) countRealRuns(r *record) bool {
	ledger := b.h.cfg.Deliveries
	if r.counted {
		return true
	}
	if ledger == nil || r.row.Attempt <= 1 {
		return ledger != nil
	}
	n, err := ledger.NotRun(b.post(), r.msg.MessageID)
	if err != nil {
		b.logRecord(slog.LevelWarn, r, "delivery ledger: could not read deliveries that did not run; counting every receive", err)
		return false
	}
	r.counted = true
	if n > 0 {
		r.row.Attempt = max(1, r.row.Attempt-n)
	}
	return true
}

// screen runs before any job of the batch when a ledger is set and some record is a
// redelivery. It counts the real runs of every redelivery (visibilityCalls reads at once); a
// record whose attempts were all used by deliveries that ended without an outcome (Attempt above
// MaxAttempts: each of its runs ended in a crash, a kill or a timeout, or failed) is dead-lettered
// without running again, as NoOutcomeError. On a FIFO queue only the first record of a group can
// be one: the records behind it never ran while it was ahead of them.
//
// A crash ends every record of its batch, so the jobs delivered with a crash-looping one were
// charged for its crashes too. Each other record of the batch is credited with up to as many
// receives as the crash loop's (its earlier deliveries that did not end in a real run), recorded
// in the ledger if it goes back to the queue. A job delivered with a crash loop may so get more
// runs than MaxAttempts, never fewer: the runtime errs towards running a job, not losing it. A
// record delivered with the crash loop in every one of its deliveries cannot be told from it and
// is dead-lettered with it.
func (b *batch) screen() {
	if b.h.cfg.Deliveries == nil {
		return
	}
	var redelivered []*record
	for i := range b.records {
		if r := &b.records[i]; r.row.Attempt > 1 && r.pre == nil {
			redelivered = append(redelivered, r)
		}
	}
	if len(redelivered) == 0 {
		return
	}
	known := make([]bool, len(b.records))
	b.each(redelivered, func(r *record) { known[b.index(r)] = b.countRealRuns(r) })

	crashes := 0
	for i := range b.records {
		r := &b.records[i]
		if !known[i] || r.row.Attempt <= r.row.MaxAttempts || !b.headOfGroup(i) {
			continue
		}
		notRun := r.row.Deliveries - r.row.Attempt
		r.pre = &NoOutcomeError{Deliveries: r.row.Deliveries, NotRun: notRun, Attempts: r.row.MaxAttempts}
		crashes = max(crashes, r.row.Attempt-1)
	}
	if crashes == 0 {
		return
	}
	for i := range b.records {
		r := &b.records[i]
		if _, suspect := r.pre.(*NoOutcomeError); suspect || !known[i] || r.row.Attempt <= 1 {
			continue
		}
		c := min(r.row.Attempt-1, crashes)
		r.row.Attempt -= c
		r.credit = int16(c)
	}
}

// headOfGroup reports whether record i may have run ahead of the others of its FIFO group: it is
// the first of its group in the batch (every record, on a Standard queue).
func (b *batch) headOfGroup(i int) bool {
	if !b.h.fifo {
		return true
	}
	g := b.records[i].row.GroupID
	for j := 0; j < i; j++ {
		if b.records[j].row.GroupID == g {
			return false
		}
	}
	return true
}

// index returns r's index in the batch.
func (b *batch) index(r *record) int {
	for i := range b.records {
		if &b.records[i] == r {
			return i
		}
	}
	return -1
}

// each calls fn for every record, up to visibilityCalls at once.
func (b *batch) each(recs []*record, fn func(*record)) {
	if len(recs) == 1 {
		fn(recs[0])
		return
	}
	sem := make(chan struct{}, visibilityCalls)
	var wg sync.WaitGroup
	for _, r := range recs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(r)
		}()
	}
	wg.Wait()
}

// recordNotRun tells the ledger about the deliveries of this batch that did not run their job,
// and the credits screen gave (for records going back to the queue), up to visibilityCalls at
// once, within the post-job budget.
func (b *batch) recordNotRun() {
	ledger := b.h.cfg.Deliveries
	if ledger == nil {
		return
	}
	var recs []*record
	adds := make(map[*record]int)
	for i := range b.records {
		r := &b.records[i]
		st := r.state.Load()
		n := 0
		if st == stateDone && (r.out == outSkipped || r.out == outNotStarted || r.out == outSnoozed) ||
			st == stateAbandoned && r.notRun {
			n = 1
		}
		if r.credit > 0 && (st == stateAbandoned || r.out.listed()) {
			n += int(r.credit)
		}
		if n > 0 {
			recs = append(recs, r)
			adds[r] = n
		}
	}
	b.each(recs, func(r *record) {
		for range adds[r] {
			if err := ledger.AddNotRun(b.post(), r.msg.MessageID); err != nil {
				b.logRecord(slog.LevelWarn, r, "delivery ledger: could not record a delivery that did not run; it counts as an attempt", err)
				return
			}
		}
	})
}

// preemptRedrive dead-letters, with ReasonReceiveLimit, each record about to go back to the queue
// on its Config.MaxReceiveCount-th receive or later: SQS's redrive policy would move it on its
// next receive, with no reason attached and its job state left as it is. A record whose job is
// still running (abandoned at the hard stop) or whose message is no longer ours is left alone, and
// so is one whose state or dead-letter send fails: SQS then moves it, nothing is lost.
func (b *batch) preemptRedrive() {
	limit := b.h.cfg.MaxReceiveCount
	if limit <= 0 {
		return
	}
	for i := range b.records {
		r := &b.records[i]
		if r.state.Load() != stateDone || r.row.Deliveries < limit || r.isLost() {
			continue
		}
		switch r.out {
		case outRetry, outSnoozed, outSkipped, outNotStarted:
		default:
			continue
		}
		err := &ReceiveLimitError{Deliveries: r.row.Deliveries, MaxReceiveCount: limit, Attempt: r.row.Attempt, Err: r.err}
		if stErr := b.recordState(r, StateDead, ReasonReceiveLimit, err); stErr != nil {
			b.logRecord(slog.LevelError, r, "job state not recorded: the redrive policy will move the job", err, LogString("state_error", stErr.Error()))
			continue
		}
		if dlqErr := b.deadLetter(r, ReasonReceiveLimit, err); dlqErr != nil {
			b.logRecord(slog.LevelError, r, "dead-letter send failed: the redrive policy will move the job", err, LogString("dlq_error", dlqErr.Error()))
			continue
		}
		r.out, r.visible = outDead, false
		b.logRecord(slog.LevelError, r, "job dead-lettered", err, slog.String("reason", ReasonReceiveLimit))
	}
}
