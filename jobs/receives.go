package jobs

import (
	"fmt"
	"log/slog"
	"sort"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Receives and attempts. SQS counts every receive of a message (ApproximateReceiveCount) and its
// redrive policy moves the message to the dead-letter queue after maxReceiveCount of them; the
// runtime counts attempts, the deliveries that ran the job. With a DeliveryLedger the two are told
// apart: a delivery that did not run the job (a FIFO record skipped behind a failed one, one not
// started before the deadline, a SnoozeNotRun) or that ended in a Snooze is recorded, and Attempt
// is the receive count less those. With the ledger, each run begun on a redelivery is marked
// too, so a run that ended without an outcome (the process crashed, the invocation timed out) is
// told from a receive that never reached the runtime (a throttled invocation).
//
// This file keeps the two counts from losing a job:
//   - countRealRuns, markStarted and recordNotRun read and write the ledger;
//   - screen, before a batch runs, dead-letters a job on the last receive the redrive policy
//     allows without running it (ReasonReceiveLimit: SQS would move it unnamed if this delivery
//     ended without an outcome), and a job whose runs kept ending without one (ReasonNoOutcome:
//     a crash loop), crediting the other jobs of the batch with the receives that crash loop cost
//     them.

// noOutcomeError is the error a job is dead-lettered with when its runs kept ending without an
// outcome the runtime could report (ReasonNoOutcome): it started MaxAttempts runs on redeliveries
// (the ledger), besides its first delivery, and came back after the last.
type noOutcomeError struct {
	Deliveries int // ApproximateReceiveCount
	Started    int // runs started: those the ledger marked, and the first delivery's
	Attempts   int // MaxAttempts
}

// Error describes the failure.
func (e *noOutcomeError) Error() string {
	return fmt.Sprintf("jobs: %d runs started without reporting an outcome (the process crashed or was killed, or the invocation timed out): a crash loop, dead-lettered after %d attempts, on delivery %d",
		e.Started, e.Attempts, e.Deliveries)
}

// DeadLetterReason returns ReasonNoOutcome.
func (e *noOutcomeError) DeadLetterReason() string { return contract.ReasonNoOutcome }

// receiveLimitError is the error a job is dead-lettered with, without running, on the last
// receive the queue's redrive policy allows (ReasonReceiveLimit): the runtime keeps that receive
// to dead-letter the job with its reason, so SQS never moves it unnamed.
type receiveLimitError struct {
	Deliveries      int // ApproximateReceiveCount: the queue's maxReceiveCount or more
	MaxReceiveCount int // Config.MaxReceiveCount
	Attempt         int // real runs before it, as counted
}

// Error describes the failure.
func (e *receiveLimitError) Error() string {
	return fmt.Sprintf("jobs: received %d times, the queue's maxReceiveCount of %d, after %d attempts: dead-lettered before the redrive policy moves it; raise the queue's redrive margin if its jobs snooze or wait for rate-limit tokens",
		e.Deliveries, e.MaxReceiveCount, e.Attempt-1)
}

// DeadLetterReason returns ReasonReceiveLimit.
func (e *receiveLimitError) DeadLetterReason() string { return contract.ReasonReceiveLimit }

// countRealRuns makes r's Attempt the number of its real runs: ApproximateReceiveCount less the
// deliveries the ledger says did not run; it also reads the runs started on
// earlier redeliveries (r.started), in the same read. Only a redelivery asks (the first delivery
// is a run). It reports whether the counts are known (false: the ledger could not be read).
func (b *batch) countRealRuns(r *record) bool {
	ledger := b.h.cfg.Deliveries
	if r.counted {
		return true
	}
	if ledger == nil || r.row.Deliveries <= 1 {
		return ledger != nil
	}
	n, started, err := ledger.Deliveries(b.post(), r.msg.MessageID)
	if err != nil {
		b.logRecord(slog.LevelWarn, r, "delivery ledger: could not read deliveries that did not run; counting every receive", err)
		return false
	}
	r.counted, r.started = true, int16(min(started, 1<<14))
	if n > 0 {
		r.row.Attempt = max(1, r.row.Attempt-n)
	}
	return true
}

// markStarted records, before a redelivered job runs, that a run is starting (in the ledger): if
// the process dies in it, the mark tells the next delivery that the job did run and never
// reported. A suspect counted in advance as not run (precredited) takes that back in the same
// write. A first delivery writes nothing. A failed write is logged and the job runs: unmarked, a
// crash loop is caught later (by the receive limit), never a job that did not run.
func (b *batch) markStarted(r *record) {
	sl := b.h.cfg.Deliveries
	if sl == nil || r.row.Deliveries <= 1 {
		return
	}
	notRun := 0
	if r.precredited {
		notRun, r.precredited = -1, false
	}
	if err := sl.AddDeliveries(b.post(), r.msg.MessageID, notRun, 1); err != nil {
		b.logRecord(slog.LevelWarn, r, "delivery ledger: could not record a run's start", err)
		return
	}
	r.marked = true
}

// screen runs before any job of the batch. A record on the last receive the queue's redrive
// policy allows (Config.MaxReceiveCount) is not run: it is dead-lettered with ReasonReceiveLimit,
// so that however its delivery ends — a crash, a timeout — SQS never moves it unnamed. With the
// ledger, it then counts the runs of every redelivery (visibilityCalls reads at once): a
// job that started MaxAttempts runs on redeliveries (and, before them, its first delivery) and is
// delivered again ended its last run without an outcome — a crash loop — and is dead-lettered
// without running again, as noOutcomeError. On a FIFO queue only the first record of a group can
// be one: the records behind it never ran while it was ahead of them.
//
// A crash ends every record of its batch, so the jobs delivered with a crash-looping one were
// charged for its crashes too. Each other record of the batch is credited with up to as many
// receives as the crash loop's runs, recorded in the ledger if it goes back to the queue. A job
// delivered with a crash loop may so get more runs than MaxAttempts, never fewer: the runtime
// errs towards running a job, not losing it.
func (b *batch) screen() {
	ledger := b.h.cfg.Deliveries
	var redelivered []*record
	for i := range b.records {
		if r := &b.records[i]; r.row.Deliveries > 1 && r.pre == nil {
			redelivered = append(redelivered, r)
		}
	}
	if ledger != nil && len(redelivered) > 0 {
		b.each(redelivered, func(r *record) { b.countRealRuns(r) }) // r.counted: the counts are known
	}
	if limit := b.h.cfg.MaxReceiveCount; limit > 0 {
		for i := range b.records {
			r := &b.records[i]
			if r.pre == nil && r.row.Deliveries >= limit {
				r.pre = &receiveLimitError{Deliveries: r.row.Deliveries, MaxReceiveCount: limit, Attempt: r.row.Attempt}
			}
		}
	}
	if ledger == nil {
		return
	}
	crashes := 0
	for i := range b.records {
		r := &b.records[i]
		if !r.counted || r.pre != nil || r.started == 0 {
			continue
		}
		if int(r.started) >= r.row.MaxAttempts && b.headOfGroup(i) {
			r.pre = &noOutcomeError{Deliveries: r.row.Deliveries, Started: int(r.started) + 1, Attempts: r.row.MaxAttempts}
			crashes = max(crashes, int(r.started)+1)
			continue
		}
		r.suspect = true
	}
	if crashes == 0 {
		return
	}
	for i := range b.records {
		r := &b.records[i]
		if r.pre != nil || !r.counted || r.row.Attempt <= 1 {
			continue
		}
		c := min(r.row.Attempt-1, crashes)
		r.row.Attempt -= c
		r.credit = int16(c)
	}
}

// runPhases runs the batch. When some record's earlier run died (a suspect: the process crashed
// or was killed while it ran, or its invocation timed out), the others run first, as usual; then
// each unit (record, or FIFO group) holding a suspect runs alone, those whose runs died fewest
// times first. Before the first of them, what has ended is recorded in the ledger and every
// suspect is counted in advance as a delivery that did not run, so that if one of them kills the
// process, the runs that ended stand and the jobs not yet run are not charged. A crash loop so
// dies alone: the jobs delivered with it are not taken for it.
func (b *batch) runPhases() {
	first, later := b.phaseUnits()
	if later == nil {
		b.runAll()
		return
	}
	b.runPass(first, b.h.cfg.Concurrency)
	b.recordNotRun(true)
	b.precredit()
	for _, u := range later {
		if b.stop.Load() {
			return
		}
		b.runPass([]int32{u}, 1)
		b.recordNotRun(true)
	}
}

// phaseUnits splits the batch's units (records, or FIFO groups) into those without a suspect and
// those with one, the latter by their most died runs, fewest first; later is nil without suspects.
func (b *batch) phaseUnits() (first, later []int32) {
	var died []int16
	n := len(b.records)
	if b.h.fifo {
		n = len(b.starts) - 1
	}
	for u := range n {
		recs := []int32{int32(u)}
		if b.h.fifo {
			recs = b.order[b.starts[u]:b.starts[u+1]]
		}
		worst, suspect := int16(0), false
		for _, k := range recs {
			if r := &b.records[k]; r.suspect {
				suspect, worst = true, max(worst, r.started)
			}
		}
		if !suspect {
			first = append(first, int32(u))
			continue
		}
		later, died = append(later, int32(u)), append(died, worst)
	}
	if later == nil {
		return nil, nil
	}
	idx := make([]int, len(later))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, c int) bool { return died[idx[a]] < died[idx[c]] })
	ordered := make([]int32, len(later))
	for i, j := range idx {
		ordered[i] = later[j]
	}
	if first == nil {
		first = []int32{}
	}
	return first, ordered
}

// precredit counts every record of a unit still to run alone as a delivery that did not run (one
// ledger write each); markStarted takes it back for those that run.
func (b *batch) precredit() {
	sl := b.h.cfg.Deliveries
	if sl == nil {
		return
	}
	var recs []*record
	for i := range b.records {
		if r := &b.records[i]; r.state.Load() == statePending {
			recs = append(recs, r)
		}
	}
	b.each(recs, func(r *record) {
		if err := sl.AddDeliveries(b.post(), r.msg.MessageID, 1, 0); err != nil {
			b.logRecord(slog.LevelWarn, r, "delivery ledger: could not count a delivery in advance", err)
			return
		}
		r.precredited = true
	})
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

// each calls fn for every record, up to visibilityCalls at once.
func (b *batch) each(recs []*record, fn func(*record)) {
	if len(recs) == 1 {
		fn(recs[0])
		return
	}
	eachAtMost(visibilityCalls, recs, fn)
}

// recordNotRun tells the ledger, for each record not yet told, what this delivery was: one that
// did not run its job (skipped, not started, snoozed, abandoned before it started), the credits
// screen gave, and the start mark of a run that reported and goes back to the queue (taken back,
// so that only a run that died keeps its mark; a success's too with unmarkSucceeded, while a later
// run of the batch may still kill the process) — up to visibilityCalls writes at once, within the
// post-job budget. A record still running or being dead-lettered is left for a later call.
func (b *batch) recordNotRun(unmarkSucceeded bool) {
	ledger := b.h.cfg.Deliveries
	if ledger == nil {
		return
	}
	var recs []*record
	adds := make(map[*record][2]int)
	for i := range b.records {
		r := &b.records[i]
		st := r.state.Load()
		if r.ledgered || (st != stateDone && st != stateAbandoned) {
			continue
		}
		r.ledgered = true
		notRun, started := 0, 0
		if st == stateDone && (r.out == outSkipped || r.out == outNotStarted || r.out == outSnoozed) ||
			st == stateAbandoned && r.notRun {
			notRun = 1
		}
		if r.precredited {
			notRun = 0 // counted already
		}
		if r.credit > 0 && (st == stateAbandoned || r.out.listed()) {
			notRun += int(r.credit)
		}
		if r.marked && st == stateDone && (r.out != outSucceeded && r.out != outCancelled || unmarkSucceeded) {
			started = -1 // it reported (a success needs it only while a later run may kill the process)
		}
		if notRun != 0 || started != 0 {
			recs = append(recs, r)
			adds[r] = [2]int{notRun, started}
		}
	}
	b.each(recs, func(r *record) {
		a := adds[r]
		if err := ledger.AddDeliveries(b.post(), r.msg.MessageID, a[0], a[1]); err != nil {
			b.logRecord(slog.LevelWarn, r, "delivery ledger: could not record a delivery that did not run; it counts as an attempt", err)
		}
	})
}
