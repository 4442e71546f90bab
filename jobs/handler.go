package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/jobkit-go/jobkit/internal/awsarn"
	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// NewSQSHandler returns the Lambda handler for an SQS event source mapping with
// ReportBatchItemFailures: it runs every record of a batch as a job of workers and reports the
// records to retry.
//
//   - Success: the record is not listed, so the event source mapping deletes it.
//   - A retryable error (any error but those below): the message's visibility is set to the backoff
//     for its attempt (ApproximateReceiveCount) and it is listed, so it comes back after the backoff,
//     not after the queue's visibility timeout.
//   - Snooze(d): the same with d, and it does not count as a failure in the metrics.
//   - A permanent error — Cancel, an undecodable or unknown-version envelope, args that do not
//     decode (ArgsError), an error with a DeadLetterReason() string method, or a retryable error
//     on the last attempt (Config.MaxAttempts) — is sent to the dead-letter queue by the runtime,
//     with the attributes in dlq.go, and then reported as success. If that send fails, the record
//     is listed instead: nothing is lost. The copy always fits SQS's size limit: attributes are
//     left off, the error text first and the reason last, when the body leaves too little room.
//   - A kind this function has no worker for is retried with backoff (a producer may be deployed
//     before its consumer) and dead-lettered as ReasonUnknownKind on its last attempt.
//   - Retry and snooze delays end at most 12 h after the message's receipt, as SQS requires: 12 h
//     less the time since the invocation began and 6 minutes for the batching window.
//   - A panic fails only its record (retryable, *PanicError).
//   - Before anything runs (screen, receives.go): a record on the last receive the queue's redrive
//     policy allows (Config.MaxReceiveCount) is dead-lettered without running (ReceiveLimitError),
//     so SQS never moves a job unnamed; with a StartLedger, a job whose runs kept ending without
//     an outcome (a crash loop) is dead-lettered without running again (NoOutcomeError), and a job
//     whose earlier run died runs alone, after the rest of the batch (runPhases).
//
// On a FIFO queue the message groups of a batch run concurrently (up to Config.Concurrency) and
// each group in order; once a record of a group is listed, the rest of the group is listed
// without running (skip-group-on-error) and returns with it. On a Standard queue up to
// Config.Concurrency records run at once.
//
// While a batch runs, a heartbeat extends the visibility of all its messages (10 per call) every
// third of the visibility timeout, so none is handed to a second consumer while the batch is
// alive. The first is due a third of the timeout after the messages' receipt when every record is
// a first delivery (its ApproximateFirstReceiveTimestamp is that receipt), else 2 ms after the
// start of the invocation (the batching window has used an unknown part of the timeout). When SQS
// says a message is no longer ours (ReceiptHandleIsInvalid, MessageNotInflight), that job's
// context is cancelled with ErrMessageLost and the record is listed and left alone.
// Visibility changes and dead-letter sends use each record's own queue (its eventSourceARN), so
// one function may be fed by several queues.
//
// Jobs' contexts end Config.SafetyMargin before the Lambda deadline (or after Config.JobTimeout).
// After that no record starts: the rest are listed without running, visible again at once, and
// not dead-lettered. A job still running half the margin before the deadline is abandoned and
// listed — unless its worker has returned and only its middleware is still recording the outcome
// (an idempotency completion, a job state): that one is waited for until the post-job budget
// below ends, so a job whose work is done is not run again for want of time. Every AWS call after the jobs (retry and snooze delays, in calls of 10, 8 at once; a
// heartbeat in flight; dead-letter sends) ends a quarter of the margin before the deadline: what
// does not fit is listed, never lost.
//
// Each batch writes one Embedded Metric Format line to Config.Metrics; log lines are JSON with the
// job id, kind, attempt and message id. NewSQSHandler panics on an invalid Config (see Validate).
func NewSQSHandler(workers *Workers, cfg Config) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	if workers == nil {
		panic("jobs: NewSQSHandler: nil Workers")
	}
	return newSQSHandler(workers, cfg).handle
}

// newSQSHandler validates cfg and makes the runtime NewSQSHandler and NewLambdaHandler share.
func newSQSHandler(workers *Workers, cfg Config) *sqsHandler {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	h := &sqsHandler{
		workers:   workers,
		lookup:    workers.lookup,
		cfg:       cfg,
		log:       cfg.Logger,
		queueName: QueueName(cfg.QueueURL),
		fifo:      IsFIFOQueue(cfg.QueueURL),
		dlqFIFO:   IsFIFOQueue(cfg.DLQURL),
		vtSeconds: ceilSeconds(cfg.VisibilityTimeout),
	}
	return h
}

type sqsHandler struct {
	workers   *Workers
	cfg       Config
	log       *slog.Logger
	lookup    func(kind string) *registered // workers.lookup
	queueName string
	fifo      bool
	dlqFIFO   bool
	vtSeconds int32
	watchdog  watchdog
	queueURLs sync.Map // eventSourceARN → queue URL, for functions fed by several queues
	// container: the Consumer runs the batches; its drain (ErrDraining) releases what it stops.
	container bool
	// firstBeat, when set, replaces firstBeatAt's choice: the container Consumer receives each message
	// with the full visibility timeout just before its batch starts, so its first heartbeat is
	// due a third of the timeout later, like every other.
	firstBeat time.Duration
}

// outcome is what happened to a record.
type outcome uint8

const (
	outPending    outcome = iota
	outSucceeded          // not listed: deleted by the event source mapping
	outRetry              // listed; visibility set to the backoff
	outSnoozed            // listed; visibility set to the snooze
	outDead               // dead-lettered; not listed
	outDeadFailed         // the dead-letter send failed; listed
	outSkipped            // FIFO: not run after an earlier failure in its group; listed
	outAbandoned          // still running at the hard stop; listed
	outNotStarted         // not started: the jobs' deadline had passed; listed, visible at once
)

func (o outcome) listed() bool { return o != outSucceeded && o != outDead }

// Record states, moved by compare-and-swap so an abandoned record is never also finished.
const (
	statePending uint32 = iota
	stateRunning
	stateDone
	stateAbandoned
	// The record's message is being sent to the DLQ: the hard stop does not abandon it (listing
	// it failed would bring it back to be dead-lettered twice) but waits for the send, which ends
	// with the post-job context, before the batch answers.
	stateDeadLettering
)

type record struct {
	msg   *wire.SQSMessage
	row   JobRow
	pre   error // a decode or unknown-kind error found before running: dead-letter
	state atomic.Uint32
	// The body is a claim-check pointer: the envelope is fetched from S3 when the record runs.
	pointer *claim

	// The heartbeat found the message no longer ours (deleted, or handed to another consumer):
	// lost is set and the job's context, if running, cancelled with errMessageLost.
	lostMu sync.Mutex
	lost   bool
	inner  context.Context // made on first need by rctx
	cancel context.CancelCauseFunc
	rctx   recordContext // the job's context

	// Written by the record's worker before it moves state to stateDone.
	out     outcome
	visible bool  // set the visibility to delay at the end of the batch
	ran     bool  // the job ran (dur is meaningful)
	notRun  bool  // abandoned before it started, or SnoozeNotRun: the delivery did not run the job
	counted bool  // Attempt already counts real runs (screen read the ledger)
	credit  int16 // earlier deliveries to record as not run: they ended with a crash-looping job (screen)
	started int16 // runs begun on earlier redeliveries that never reported (StartLedger), read by countRealRuns
	// Crash isolation (receives.go): suspect: an earlier run died, so it runs alone, after the
	// rest; marked: this delivery's run left a start mark; precredited: counted in advance as a
	// delivery that did not run (a suspect, before the first runs alone); ledgered: its ledger
	// counts for this delivery are written.
	suspect, marked, precredited, ledgered bool
	delay                                  time.Duration // retry, snooze or skip delay
	dur                                    time.Duration // time spent in the job
}

// batch is one invocation's records and their workers. With its 10 inline records it fits a
// 4,864-byte allocation size class: mind the next one (5,376) when adding fields.
type batch struct {
	h   *sqsHandler
	ctx context.Context // the invocation's context: logs
	// AWS calls after the jobs (dead-letter sends, visibility): post() makes their context, which
	// ends at postEnd (before the Lambda deadline), on first use — most batches make none.
	postParent context.Context
	postEnd    time.Time // zero: no deadline of its own
	postMu     sync.Mutex
	postCtx    context.Context
	postCancel context.CancelFunc
	postEnded  bool            // the batch has returned
	softOff    time.Duration   // the jobs' deadline as an offset from start; 0: none
	jobCtx     context.Context // jobs' context: ends SafetyMargin before the deadline
	deadline   *jobContext     // jobCtx when the invocation has a deadline, else nil
	records    []record
	run        Handler
	next       atomic.Int32   // next record (Standard) or group (FIFO) to claim
	units      int32          // records (Standard) or groups (FIFO)
	limit      int32          // most workers at once
	started    atomic.Int32   // workers woken
	left       atomic.Int32   // workers still running
	finished   atomic.Int32   // units (records or groups) finished
	done       sync.WaitGroup // done by release: every worker is done, or the batch is abandoned
	released   atomic.Bool
	stop       atomic.Bool // abandon: workers start nothing more
	start      time.Time   // when the batch started running: the origin of workers' clocks
	endClock   time.Time   // the last worker's last clock reading, set before it releases the batch

	// FIFO: record indexes ordered by group, and where each group starts in it.
	order  []int32
	starts []int32
	// unitMap, when set, is the units (records, or FIFO groups) of the current pass, in order
	// (runPass); nil means every unit.
	unitMap []int32

	inline [10]record // the records of a batch of up to 10: one allocation for the batch

	times      batchTimes // heartbeat and deadlines, kept by the handler's watchdog
	jobContext jobContext // what deadline points to, if set

	hbMu      sync.Mutex
	hbStopped bool
	hbCtx     context.Context // the heartbeat's calls, made by the first beat; hbCancel ends one in flight
	hbCancel  atomic.Pointer[context.CancelFunc]
	hbEnding  atomic.Bool // stopHeartbeat has begun: a beat that makes hbCtx now cancels it itself
}

// post returns the context of the AWS calls after the jobs, making it on first use.
func (b *batch) post() context.Context {
	b.postMu.Lock()
	defer b.postMu.Unlock()
	if b.postCtx == nil {
		switch {
		case b.postEnded:
			// A job abandoned at the hard stop, settling after the batch answered: its calls end
			// at once, as they would have with the batch's.
			ctx, cancel := context.WithCancel(b.postParent)
			cancel()
			b.postCtx = ctx
		case b.postEnd.IsZero():
			b.postCtx = b.postParent
		default:
			b.postCtx, b.postCancel = context.WithDeadline(b.postParent, b.postEnd)
		}
	}
	return b.postCtx
}

// endPost ends the context of the AWS calls after the jobs when the batch returns.
func (b *batch) endPost() {
	b.postMu.Lock()
	defer b.postMu.Unlock()
	b.postEnded = true
	if b.postCancel != nil {
		b.postCancel()
	}
}

func (h *sqsHandler) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return h.run(ctx, messagesOf(ev.Records)), nil
}

// runtimeAttributes are the system attributes the runtime reads.
var runtimeAttributes = [...]string{"ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp", "MessageGroupId", "AWSTraceHeader"}

// messagesOf converts aws-lambda-go's records to the runtime's, with the attributes it reads.
func messagesOf(recs []events.SQSMessage) []wire.SQSMessage {
	if len(recs) == 0 {
		return nil
	}
	out := make([]wire.SQSMessage, len(recs))
	attrs := make([]wire.SQSAttribute, 0, len(runtimeAttributes)*len(recs))
	for i := range recs {
		r := &recs[i]
		start := len(attrs)
		for _, name := range runtimeAttributes {
			if v, ok := r.Attributes[name]; ok {
				attrs = append(attrs, wire.SQSAttribute{Name: name, Value: v})
			}
		}
		out[i] = wire.SQSMessage{
			MessageID: r.MessageId, ReceiptHandle: r.ReceiptHandle, Body: r.Body, EventSourceARN: r.EventSourceARN,
			Attributes: attrs[start:len(attrs):len(attrs)],
		}
	}
	return out
}

// run runs a batch of records and returns the records to report failed.
func (h *sqsHandler) run(ctx context.Context, msgs []wire.SQSMessage) events.SQSEventResponse {
	return h.runBatch(ctx, ctx, msgs)
}

// runBatch is run with the parent of the AWS calls after the jobs (and of heartbeats) apart from
// the jobs' context: the container Consumer's drain ends the jobs' context, not those calls.
func (h *sqsHandler) runBatch(ctx, post context.Context, msgs []wire.SQSMessage) events.SQSEventResponse {
	n := len(msgs)
	if n == 0 {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	}
	b := &batch{h: h, ctx: ctx, run: h.workers.handler()}
	if n <= len(b.inline) {
		b.records = b.inline[:n]
	} else {
		b.records = make([]record, n)
	}
	b.prepare(msgs)

	// Deadlines: jobs stop SafetyMargin before the Lambda deadline; the batch stops waiting for
	// them half the margin later; every AWS call after the jobs (dead-letter sends, visibility
	// changes, a heartbeat in flight) ends a quarter of the margin before the deadline, so the
	// handler always answers in time — what did not fit is reported failed. The first heartbeat
	// is due when the visibility the messages were received with is a third used (firstBeatAt).
	now := time.Now()
	b.start, b.jobCtx, b.postParent = now, ctx, post
	b.times.beatAt = b.firstBeatAt(now)
	if deadline, ok := ctx.Deadline(); ok {
		margin := h.cfg.SafetyMargin
		if left := deadline.Sub(now); margin > left/2 {
			margin = max(left/2, 0)
		}
		b.jobContext = jobContext{parent: ctx, deadline: deadline.Add(-margin)}
		b.deadline = &b.jobContext
		b.jobCtx = b.deadline
		b.softOff = b.deadline.deadline.Sub(now)
		b.times.softAt, b.times.hardAt = b.deadline.deadline, deadline.Add(-margin/2)
		defer b.deadline.end()
		b.postEnd = deadline.Add(-margin / 4)
	}
	defer b.endPost()

	b.screen()
	h.watchdog.add(b, now)
	b.runPhases()
	h.watchdog.remove(b)
	b.stopHeartbeat()

	b.applyVisibility()
	b.recordNotRun(false)
	resp := b.response()
	end := b.endClock
	if end.IsZero() {
		end = time.Now()
	}
	h.writeMetrics(b.records, end)
	return resp
}

// firstBeatAt returns when the batch's first heartbeat is due. A message's visibility timeout
// runs from its receipt, which the event does not carry, and the batching window has used some
// of it; but on a first delivery (ApproximateReceiveCount 1) ApproximateFirstReceiveTimestamp is
// that receipt. When every record is a first delivery, the first beat is due a third of the
// visibility timeout after the earliest receipt, as every later beat is after the one before:
// a batch of quick jobs then makes no heartbeat call. A batch with a redelivery, whose receipt
// is unknown, beats almost at once (firstBeatDelay). The container Consumer, which receives
// each message just before its batch starts, sets its own delay (firstBeat).
func (b *batch) firstBeatAt(now time.Time) time.Time {
	h := b.h
	if h.firstBeat > 0 {
		return now.Add(h.firstBeat)
	}
	var earliest time.Time
	for i := range b.records {
		row := &b.records[i].row
		if row.Attempt != 1 || row.FirstReceivedAt.IsZero() || b.records[i].msg.Attribute("ApproximateReceiveCount") != "1" {
			return now.Add(firstBeatDelay)
		}
		if earliest.IsZero() || row.FirstReceivedAt.Before(earliest) {
			earliest = row.FirstReceivedAt
		}
	}
	// The receipt is a wall-clock time: the delay is measured on the wall clock, then kept on
	// the monotonic one.
	return now.Add(max(earliest.Add(h.cfg.VisibilityTimeout/3).Sub(now.Round(0)), firstBeatDelay))
}

// firstBeatDelay is how long after its start a batch still running has its first heartbeat when
// its messages' receipt is unknown (see firstBeatAt). Not
// zero: a batch of quick jobs ends in microseconds, and a heartbeat due at once still ran in a
// quarter of such batches on a busy machine (the watchdog's timer fires on another thread before
// the batch ends), an SQS call that cost more than the batch. 2 ms is nothing next to the
// visibility a message can have left (seconds at least).
const firstBeatDelay = 2 * time.Millisecond

// prepare decodes every envelope before any job runs.
func (b *batch) prepare(msgs []wire.SQSMessage) {
	h := b.h
	pd := preDecoder{lookup: h.lookup}
	for i := range msgs {
		m := &msgs[i]
		r := &b.records[i]
		r.msg = m
		row := &r.row
		row.MessageID = m.MessageID
		row.QueueURL = h.queueURL(m.EventSourceARN)
		row.MaxAttempts = h.cfg.MaxAttempts
		row.baseLogger = h.log
		row.Attempt = 1
		if v := m.Attribute("ApproximateReceiveCount"); v != "" {
			if a, err := parseInt(v); err == nil && a > 0 {
				row.Attempt, row.Deliveries = int(a), int(a)
			}
		}
		if v := m.Attribute("ApproximateFirstReceiveTimestamp"); v != "" {
			if ms, err := parseInt(v); err == nil {
				row.FirstReceivedAt = time.UnixMilli(ms).UTC()
			}
		}
		row.GroupID = m.Attribute("MessageGroupId")
		pd.left = len(msgs) - i
		pd.reset()
		if isPointer(m.Body) {
			if ptr, ok := ParsePayloadPointer(m.Body); ok {
				r.pointer = &claim{PayloadPointer: ptr}
				continue
			}
		}
		var env Envelope
		argsSrc, err := decodeEnvelope(m.Body, &env, &pd)
		if err != nil {
			r.pre = err
			row.ID, row.Kind = env.ID, env.Kind
			continue
		}
		if r.pre = b.fillRow(r, &env, argsSrc, pd.registration(env.Kind)); r.pre != nil {
			continue
		}
		if pd.job != nil && pd.jobReg == row.reg {
			row.job, row.argsReady = pd.job, pd.ready
		} else {
			row.job = pd.newJob(row.reg)
		}
		*(**JobRow)(row.job) = row
	}
	if h.fifo {
		b.groupRecords()
	}
}

// fillRow sets r's row from its decoded envelope and the kind's registration (nil: an unknown
// kind, returned as the error).
func (b *batch) fillRow(r *record, env *Envelope, argsSrc string, reg *registered) error {
	row := &r.row
	row.ID, row.Kind, row.Key, row.EnqueuedAt, row.Trace, row.Batch = env.ID, env.Kind, env.Key, env.EnqueuedAt, env.Trace, env.Batch
	if row.Trace == "" {
		if xray := r.msg.Attribute("AWSTraceHeader"); xray != "" {
			row.Trace, _ = traceFromXRay(xray)
		}
	}
	row.argsSrc, row.EncodedArgs = argsSrc, bytesOf(argsSrc)
	if row.reg = reg; reg == nil {
		return &UnknownKindError{Kind: env.Kind}
	}
	row.Kind = reg.kind // the registry's string: no reference into the body
	return nil
}

// parseInt is strconv.ParseInt(s, 10, 64), quicker for short plain numbers.
func parseInt(s string) (int64, error) {
	if n, ok := smallDecimal(s); ok {
		return n, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// groupRecords orders the records by message group, keeping the batch order within a group.
func (b *batch) groupRecords() {
	n := len(b.records)
	b.order = make([]int32, 0, n)
	b.starts = make([]int32, 0, n+1)
	taken := make([]bool, n)
	for i := 0; i < n; i++ {
		if taken[i] {
			continue
		}
		g := b.records[i].row.GroupID
		b.starts = append(b.starts, int32(len(b.order)))
		for j := i; j < n; j++ {
			if !taken[j] && b.records[j].row.GroupID == g {
				taken[j] = true
				b.order = append(b.order, int32(j))
			}
		}
	}
	b.starts = append(b.starts, int32(len(b.order)))
}

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

// pool hands batches to parked worker goroutines. Workers stay parked between batches, so a
// batch starts no goroutines (and pays for no stack growth) once the pool is warm; the pool grows
// only when every worker is busy, e.g. with an abandoned job.
var pool = make(chan *batch)

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
			b.event(r, EventNotRun, NoteDeadlineNotStarted, nil, "")
		} else if atomic.LoadUint32(&r.row.settling) == 1 && r.state.Load() == stateRunning {
			// The job's work is done; its middleware is recording it (an idempotency completion,
			// a job state). Abandoning it now would run the work again on the next delivery.
			sending = append(sending, r)
		} else if r.state.CompareAndSwap(stateRunning, stateAbandoned) {
			b.logRecord(slog.LevelError, r, "job still running near the Lambda deadline: reported failed", nil)
			b.event(r, EventReturned, NoteAbandoned, nil, "")
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
				b.event(r, EventReturned, NoteAbandonedRecording, nil, "")
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
		b.event(r, EventNotRun, NoteBatchDeadline, nil, "")
		r.state.CompareAndSwap(stateRunning, stateDone)
		return r.out
	}
	b.countRealRuns(r)
	err := r.pre
	if err == nil {
		b.markStarted(r)
	}
	if err == nil && r.pointer != nil {
		err = b.loadPayload(r)
	}
	if err == nil {
		b.event(r, EventStarted, "", nil, "")
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
	if r.out == outSucceeded && r.pointer != nil && r.pointer.loaded && !r.isLost() {
		// Only now: a record abandoned or lost comes back, and needs its payload then.
		b.deletePayload(r)
	}
	return r.out
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
	if t := b.h.cfg.JobTimeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	return b.run(ctx, &r.row)
}

// settle sets the record's outcome from the job's error, dead-lettering permanent failures.
func (b *batch) settle(r *record, err error) {
	h := b.h
	if err == nil {
		r.out = outSucceeded
		if h.log.Enabled(b.ctx, slog.LevelDebug) {
			b.logRecord(slog.LevelDebug, r, "job succeeded", nil, slog.Float64("duration_ms", ms(r.dur)))
		}
		b.event(r, EventSucceeded, "", nil, "")
		return
	}
	if r.isLost() {
		// Another consumer has it, or it is gone: neither retry delay nor dead-letter is ours.
		r.out = outRetry
		b.logRecord(slog.LevelWarn, r, "job failed after its message was lost: reported failed, left alone", err)
		b.event(r, EventReturned, NoteLost, err, "")
		return
	}
	var snooze *SnoozeError
	if errors.As(err, &snooze) {
		r.out, r.visible, r.delay = outSnoozed, true, b.clampVisibility(snooze.Duration)
		r.notRun = snooze.NotRun
		b.logRecord(slog.LevelInfo, r, "job snoozed", nil, slog.Float64("snooze_s", r.delay.Seconds()))
		b.event(r, EventSnoozed, "", nil, "")
		b.recordState(r, StateRetrying, "", err)
		return
	}
	reason := permanentReason(err)
	if reason == "" && b.draining() {
		r.out, r.visible, r.delay = outRetry, true, 0
		b.logRecord(slog.LevelWarn, r, "job interrupted by the consumer's drain: released for another consumer", err)
		b.event(r, EventReturned, NoteReleased, err, "")
		return
	}
	lastAttempt := r.row.Attempt >= r.row.MaxAttempts
	var unknown *UnknownKindError
	if reason == ReasonUnknownKind && !lastAttempt && errors.As(err, &unknown) {
		// Deploy skew: a producer may be deployed before the consumer that knows the kind. Retry
		// with backoff; dead-letter as unknown_kind only once the attempts are used.
		reason = ""
	}
	if reason == "" && lastAttempt {
		reason = ReasonAttemptsUsed
		if unknown != nil {
			reason = ReasonUnknownKind
		}
	}
	if reason != "" && r.state.Load() == stateAbandoned {
		// Already reported failed: it comes back, and is dead-lettered then.
		r.out = outRetry
		return
	}
	if reason == "" {
		r.out, r.visible, r.delay = outRetry, true, b.clampVisibility(h.cfg.Backoff(r.row.Attempt))
		b.logRecord(slog.LevelWarn, r, "job failed: will retry", err, slog.Float64("retry_in_s", r.delay.Seconds()))
		b.event(r, EventRetried, "", err, "")
		b.recordState(r, StateRetrying, "", err)
		return
	}
	state := StateDead
	if reason == ReasonCancelled {
		state = StateCancelled
	}
	if stErr := b.recordState(r, state, reason, err); stErr != nil {
		r.out = outDeadFailed
		b.logRecord(slog.LevelError, r, "job state not recorded: dead job reported failed, to be dead-lettered on its next delivery", err,
			slog.String("reason", reason), LogString("state_error", stErr.Error()))
		b.event(r, EventReturned, NoteDeadStateNotRecorded, err, reason)
		return
	}
	if !r.state.CompareAndSwap(stateRunning, stateDeadLettering) {
		// The hard stop came first and reported it failed: it comes back, and is dead-lettered then.
		r.out = outRetry
		return
	}
	defer r.state.Store(stateDone)
	if dlqErr := b.deadLetter(r, reason, err); dlqErr != nil {
		r.out = outDeadFailed
		b.logRecord(slog.LevelError, r, "dead-letter send failed: job reported failed", err,
			slog.String("reason", reason), LogString("dlq_error", dlqErr.Error()))
		b.event(r, EventReturned, NoteDeadLetterFailed, err, reason)
		return
	}
	r.out = outDead
	b.logRecord(slog.LevelError, r, "job dead-lettered", err, slog.String("reason", reason))
	b.event(r, EventDead, "", err, reason)
}

// permanentReason returns the dead-letter reason of a permanent error, or "" for a retryable one.
func permanentReason(err error) string {
	var dr deadLetterReasoner
	if errors.As(err, &dr) {
		if reason := dr.DeadLetterReason(); reason != "" {
			return reason
		}
	}
	var cancel *CancelError
	if errors.As(err, &cancel) {
		return ReasonCancelled
	}
	var args *ArgsError
	if errors.As(err, &args) {
		return ReasonBadArgs
	}
	return ""
}

// skip lists a FIFO record without running it, returning with the failed record before it.
func (b *batch) skip(r, failed *record) {
	if !r.state.CompareAndSwap(statePending, stateRunning) {
		return
	}
	r.out, r.visible, r.delay = outSkipped, failed.visible, failed.delay
	b.logRecord(slog.LevelWarn, r, "job not run: an earlier job of its FIFO group failed", nil,
		LogString("failed_job_id", failed.row.ID))
	b.event(r, EventNotRun, NoteFIFOSkipped, nil, "")
	r.state.CompareAndSwap(stateRunning, stateDone)
}

// deadLetter sends the record's message to the DLQ with the failure attached. The copy always
// fits SQS's size limit (see deadLetterAttributes).
func (b *batch) deadLetter(r *record, reason string, jobErr error) error {
	h := b.h
	firstReceived := ""
	if !r.row.FirstReceivedAt.IsZero() {
		firstReceived = r.row.FirstReceivedAt.Format(time.RFC3339Nano)
	}
	// Most important last: deadLetterAttributes sheds from the front when the body leaves too
	// little room, so the reason and the attempt count are the last to go.
	list := []dlqAttr{
		{name: AttrError, value: errString(jobErr), cut: true},
		{name: AttrSourceQueue, value: r.row.QueueURL},
		{name: AttrFunction, value: h.cfg.FunctionName},
		{name: AttrFirstFailureAt, value: firstReceived},
		{name: AttrFailedAt, value: time.Now().UTC().Format(time.RFC3339Nano)},
		{name: AttrSourceMessageID, value: r.msg.MessageID},
		{name: AttrJobID, value: r.row.ID},
		{name: AttrKind, value: r.row.Kind},
		{name: AttrAttempts, value: strconv.Itoa(r.row.Attempt), number: true},
		{name: AttrReason, value: reason},
	}
	if r.pointer != nil {
		// The copy keeps the pointer body (the object stays until the job succeeds) and the
		// extended clients' size attribute, so a redrive sends back a claim check they read too.
		// SQS allows 10 attributes: the function's name gives way.
		if size := r.pointer.sizeOf(r.msg); size != "" {
			list[2] = dlqAttr{name: AttrPayloadSize, value: size, number: true}
		}
	}
	attrs, shed := deadLetterAttributes(len(r.msg.Body), list)
	if shed > 0 {
		b.logRecord(slog.LevelWarn, r, "dead-letter copy too large for all its attributes: some left off", nil,
			slog.Int("attributes_left_off", shed), slog.Int("body_bytes", len(r.msg.Body)))
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(h.cfg.DLQURL),
		MessageBody:       aws.String(r.msg.Body),
		MessageAttributes: attrs,
	}
	if h.dlqFIFO {
		group := r.row.GroupID
		if group == "" {
			group = "jobkit"
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(dedupID(r.msg.MessageID))
	}
	_, err := h.cfg.SQS.SendMessage(b.post(), in)
	return err
}

// dlqAttr is one attribute of a dead-letter copy.
type dlqAttr struct {
	name, value string
	number      bool // DataType Number, else String
	cut         bool // may be cut to fit (the error text), else whole or left off
}

// deadLetterAttributes returns the attributes of a dead-letter copy of a bodyLen-byte body that
// fit with it in MaxMessageSize, counted as SQS counts them (body, and each attribute's name, data
// type and value), and how many it left off. Values are sanitised before they are measured
// (sanitising can grow a value: an invalid byte becomes a 3-byte U+FFFD). The error text is cut to
// at most 4 KiB and to the room left; when even the others do not fit, they are left off in the
// order given — the error first, then source queue, function, first receive, failure time,
// source message id, job id, kind, attempts and, last of all, the reason.
func deadLetterAttributes(bodyLen int, list []dlqAttr) (map[string]sqstypes.MessageAttributeValue, int) {
	size := func(a dlqAttr) int {
		typ := len("String")
		if a.number {
			typ = len("Number")
		}
		return len(a.name) + typ + len(a.value)
	}
	total := bodyLen
	for i := range list {
		list[i].value = sanitizeAttr(list[i].value)
		if list[i].cut {
			list[i].value = truncateUTF8(list[i].value, maxErrorAttr)
		}
		if list[i].value != "" {
			total += size(list[i])
		}
	}
	shed := 0
	for i := 0; i < len(list) && total > MaxMessageSize; i++ {
		a := &list[i]
		if a.value == "" {
			continue
		}
		total -= size(*a)
		if a.cut {
			if room := MaxMessageSize - total - size(dlqAttr{name: a.name}); room > 0 {
				a.value = truncateUTF8(a.value, room) // truncation never grows a sanitised value
				total += size(*a)
				if a.value != "" && total <= MaxMessageSize {
					break
				}
				total -= size(*a)
			}
		}
		a.value = ""
		shed++
	}
	attrs := make(map[string]sqstypes.MessageAttributeValue, len(list))
	for _, a := range list {
		if a.value == "" {
			continue
		}
		typ := "String"
		if a.number {
			typ = "Number"
		}
		attrs[a.name] = sqstypes.MessageAttributeValue{DataType: aws.String(typ), StringValue: aws.String(a.value)}
	}
	return attrs, shed
}

const maxErrorAttr = 4 << 10

// dedupID keeps a message id within SQS's 128-character deduplication id limit.
func dedupID(id string) string {
	if len(id) > 128 {
		return id[:128]
	}
	return id
}

// applyVisibility sets the visibility of retried, snoozed, skipped and not-started records.
func (b *batch) applyVisibility() {
	var pending []*record
	for i := range b.records {
		r := &b.records[i]
		if r.state.Load() == stateDone && r.visible && !r.isLost() {
			pending = append(pending, r)
		}
	}
	if len(pending) == 0 {
		return
	}
	b.changeAll(b.post(), pending, func(r *record) int32 { return ceilSeconds(r.delay) }, true,
		"could not set the retry delay: the message returns after the visibility timeout")
}

// visibilityCalls is how many visibility calls a batch has in flight at once: a batch of
// 10,000 records (1,000 calls) then takes 125 round trips, not 1,000.
const visibilityCalls = 8

// changeAll sets the visibility of recs to vt(r): per queue (a function may be fed by several),
// 10 per call (single: one record alone in the plain call), up to visibilityCalls calls at once,
// every call ending with ctx. A change that does
// not happen is logged: the message then returns after its visibility timeout.
func (b *batch) changeAll(ctx context.Context, recs []*record, vt func(*record) int32, single bool, failMsg string) {
	if len(recs) == 0 {
		return
	}
	var chunks [][]*record
	for len(recs) > 0 {
		q := recs[0].row.QueueURL
		chunk := make([]*record, 0, min(len(recs), MaxBatchEntries))
		rest := recs[:0:0]
		for _, r := range recs {
			if r.row.QueueURL == q && len(chunk) < MaxBatchEntries {
				chunk = append(chunk, r)
			} else {
				rest = append(rest, r)
			}
		}
		chunks, recs = append(chunks, chunk), rest
	}
	if len(chunks) == 1 {
		b.changeVisibility(ctx, chunks[0], vt, single, failMsg)
		return
	}
	sem := make(chan struct{}, visibilityCalls)
	var wg sync.WaitGroup
	for _, chunk := range chunks {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			b.changeVisibility(ctx, chunk, vt, single, failMsg)
		}()
	}
	wg.Wait()
}

// changeVisibility makes one visibility call for up to 10 records of one queue and logs the
// records it failed for; single allows the plain call for one record. A message SQS says is no
// longer ours is marked lost (see markLost).
func (b *batch) changeVisibility(ctx context.Context, chunk []*record, vt func(*record) int32, single bool, failMsg string) {
	h := b.h
	queue := aws.String(chunk[0].row.QueueURL)
	if len(chunk) == 1 && single {
		r := chunk[0]
		_, err := h.cfg.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: queue, ReceiptHandle: aws.String(r.msg.ReceiptHandle), VisibilityTimeout: vt(r),
		})
		if err != nil {
			var apiErr smithy.APIError
			if errors.As(err, &apiErr) && messageLost(apiErr.ErrorCode(), apiErr.ErrorMessage()) {
				b.markLost(r, err)
			}
			b.logRecord(slog.LevelWarn, r, failMsg, err)
		}
		return
	}
	entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
	for n, r := range chunk {
		entries[n] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(n)), ReceiptHandle: aws.String(r.msg.ReceiptHandle), VisibilityTimeout: vt(r),
		}
	}
	out, err := h.cfg.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: queue, Entries: entries})
	if err != nil {
		for _, r := range chunk {
			b.logRecord(slog.LevelWarn, r, failMsg, err)
		}
		return
	}
	for _, f := range out.Failed {
		if n, ok := entryIndex(f.Id, len(chunk)); ok {
			err := fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
			if messageLost(aws.ToString(f.Code), aws.ToString(f.Message)) {
				b.markLost(chunk[n], err)
			}
			b.logRecord(slog.LevelWarn, chunk[n], failMsg, err)
		}
	}
}

// messageLost reports whether a visibility change failed because the message is no longer this
// consumer's: deleted, received again by another consumer, or its receipt handle expired. SQS
// says so with ReceiptHandleIsInvalid or MessageNotInflight, or with InvalidParameterValue and a
// reason: "The receipt handle has expired", or, for a message that was deleted, "Message does not
// exist or is not available for visibility timeout change".
func messageLost(code, message string) bool {
	switch {
	case strings.Contains(code, "ReceiptHandleIsInvalid"), strings.Contains(code, "MessageNotInflight"):
		return true
	case strings.Contains(code, "InvalidParameterValue"):
		m := strings.ToLower(message)
		return strings.Contains(m, "receipt handle has expired") ||
			strings.Contains(m, "not available for visibility timeout change")
	}
	return false
}

// ErrMessageLost is the cause of a job's context cancelled because the heartbeat found its
// message no longer the function's (deleted, or handed to another consumer after its visibility
// lapsed): the job's result could not be reported anyway.
var ErrMessageLost = errors.New("jobs: the message is no longer this function's (its visibility could not be extended)")

// markLost records that r's message is no longer ours and cancels the job's context.
func (b *batch) markLost(r *record, err error) {
	r.lostMu.Lock()
	first := !r.lost
	r.lost = true
	if r.cancel != nil {
		r.cancel(ErrMessageLost)
	}
	r.lostMu.Unlock()
	if first {
		b.logRecord(slog.LevelWarn, r, "message no longer ours: job context cancelled", err)
	}
}

func (r *record) isLost() bool {
	r.lostMu.Lock()
	defer r.lostMu.Unlock()
	return r.lost
}

// release ends the record's cancellable context, if one was made.
func (r *record) release() {
	r.lostMu.Lock()
	if r.cancel != nil {
		r.cancel(context.Canceled)
	}
	r.lostMu.Unlock()
}

// recordContext is a job's context: the batch's jobs' context, also cancelled when the message
// is lost. Like jobContext, the cancellable context behind it is made on first need, so a job
// that never looks costs nothing more.
type recordContext struct {
	parent context.Context
	r      *record
}

var _ context.Context = (*recordContext)(nil)

// Deadline returns the jobs' deadline.
func (c *recordContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Value returns the parent's value for key (through the cancellable context once made, so
// context.Cause finds ErrMessageLost).
func (c *recordContext) Value(key any) any {
	if _, ok := key.(traceKey); ok && ValidTraceparent(c.r.row.Trace) {
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

// response lists the records the event source mapping must not delete.
func (b *batch) response() events.SQSEventResponse {
	// An empty list, not null, when every record succeeded: unambiguous to any reader.
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i := range b.records {
		r := &b.records[i]
		if r.state.Load() != stateDone || r.out.listed() {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.msg.MessageID})
		}
	}
	return resp
}

// stopHeartbeat stops the heartbeat: a beat in flight is cancelled and has returned when this
// does, and none follows.
func (b *batch) stopHeartbeat() {
	b.hbEnding.Store(true)
	if cancel := b.hbCancel.Load(); cancel != nil {
		(*cancel)()
	}
	b.hbMu.Lock()
	b.hbStopped = true
	b.hbMu.Unlock()
}

// beat extends the visibility of every message of the batch to the visibility timeout (the
// watchdog calls it at the start and every third of the visibility timeout until stopHeartbeat).
func (b *batch) beat() {
	b.hbMu.Lock()
	defer b.hbMu.Unlock()
	if b.hbStopped {
		return
	}
	recs := make([]*record, 0, len(b.records))
	for i := range b.records {
		if r := &b.records[i]; !r.isLost() {
			recs = append(recs, r)
		}
	}
	if b.hbCtx == nil {
		ctx, cancel := context.WithCancel(b.post())
		b.hbCtx = ctx
		b.hbCancel.Store(&cancel)
		if b.hbEnding.Load() { // stopHeartbeat may have looked before the store
			cancel()
		}
	}
	vt := ceilSeconds(b.clampVisibility(b.h.cfg.VisibilityTimeout))
	b.changeAll(b.hbCtx, recs, func(*record) int32 { return vt }, false, "heartbeat: could not extend visibility")
}

// softPassed reports whether the jobs' deadline has passed; clock is the worker's last reading.
func (b *batch) softPassed(clock time.Duration) bool {
	return b.deadline != nil && (clock >= b.softOff || b.deadline.expired.Load())
}

// receiptSlack is kept below SQS's 12-hour limit, which counts from when the message was
// received. The event does not say when that was: before the invocation started, by up to the
// event source mapping's batching window (at most 5 minutes), plus the poller's own time.
const receiptSlack = 6 * time.Minute

// clampVisibility keeps a delay within what SQS accepts for a message of this batch: from 0 to
// 12 h after its receipt, that is 12 h less the time since the invocation started and
// receiptSlack.
func (b *batch) clampVisibility(d time.Duration) time.Duration {
	limit := MaxVisibility - receiptSlack - time.Since(b.start)
	if d > limit {
		d = limit
	}
	return max(d, 0)
}

// queueURL returns the URL of the queue a record came from, by its eventSourceARN: one function
// may be fed by several queues.
func (h *sqsHandler) queueURL(arn string) string {
	if arn == "" {
		return h.cfg.QueueURL
	}
	if u, ok := h.queueURLs.Load(arn); ok {
		return u.(string)
	}
	u := awsarn.QueueURL(h.cfg.QueueURL, arn)
	h.queueURLs.Store(arn, u)
	return u
}

// logRecord writes one log line about a record, with the job attributes every line carries.
func (b *batch) logRecord(level slog.Level, r *record, msg string, err error, extra ...slog.Attr) {
	log := b.h.log
	ctx := b.ctx
	if !log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 6+len(extra))
	attrs = append(attrs,
		LogString("job_id", r.row.ID), LogString("kind", r.row.Kind), slog.Int("attempt", r.row.Attempt),
		slog.String("message_id", r.msg.MessageID))
	if r.row.GroupID != "" {
		attrs = append(attrs, LogString("group_id", r.row.GroupID))
	}
	if id := TraceID(r.row.Trace); id != "" {
		attrs = append(attrs, slog.String("trace_id", id))
	}
	if r.pointer != nil {
		attrs = append(attrs, LogString("payload_key", r.pointer.Key))
	}
	if err != nil {
		attrs = append(attrs, LogString("error", err.Error()))
	}
	attrs = append(attrs, extra...)
	log.LogAttrs(ctx, level, msg, attrs...)
}

// ceilSeconds rounds a delay up to whole seconds, the unit of SQS visibility timeouts.
func ceilSeconds(d time.Duration) int32 {
	s := (d + time.Second - 1) / time.Second
	if s > time.Duration(MaxVisibility/time.Second) {
		s = time.Duration(MaxVisibility / time.Second)
	}
	return int32(s)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
