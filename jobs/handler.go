package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
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
//   - A permanent error — Cancel, an undecodable or unknown-version envelope, an unknown kind,
//     args that do not decode (ArgsError), an error with a DeadLetterReason() string method, or a
//     retryable error on the last attempt (Config.MaxAttempts) — is sent to the dead-letter queue
//     by the runtime, with the attributes in dlq.go, and then reported as success. If that send
//     fails, the record is listed instead: nothing is lost.
//   - A panic fails only its record (retryable, *PanicError).
//
// On a FIFO queue the message groups of a batch run concurrently (up to Config.Concurrency) and
// each group in order; once a record of a group is listed, the rest of the group is listed
// without running (skip-group-on-error) and returns with it. On a Standard queue up to
// Config.Concurrency records run at once.
//
// While a batch runs, a heartbeat extends the visibility of all its messages (10 per call) every
// third of the visibility timeout, so none is handed to a second consumer while the batch is alive.
// Jobs' contexts end Config.SafetyMargin before the Lambda deadline (or after Config.JobTimeout);
// a job still running a little later is abandoned and listed. Retry and snooze delays are applied
// when the batch ends.
//
// Each batch writes one Embedded Metric Format line to Config.Metrics; log lines are JSON with the
// job id, kind, attempt and message id. NewSQSHandler panics on an invalid Config (see Validate).
func NewSQSHandler(workers *Workers, cfg Config) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	if workers == nil {
		panic("jobs: NewSQSHandler: nil Workers")
	}
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
	return h.handle
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
)

func (o outcome) listed() bool { return o != outSucceeded && o != outDead }

// Record states, moved by compare-and-swap so an abandoned record is never also finished.
const (
	statePending uint32 = iota
	stateRunning
	stateDone
	stateAbandoned
)

type record struct {
	msg   *events.SQSMessage
	row   JobRow
	pre   error // a decode or unknown-kind error found before running: dead-letter
	state atomic.Uint32

	// Written by the record's worker before it moves state to stateDone.
	out     outcome
	visible bool          // set the visibility to delay at the end of the batch
	ran     bool          // the job ran (dur is meaningful)
	delay   time.Duration // retry, snooze or skip delay
	dur     time.Duration // time spent in the job
}

// batch is one invocation's records and their workers. With its 10 inline records it fits a
// 3,456-byte allocation size class: mind the next one (4,096) when adding fields.
type batch struct {
	h        *sqsHandler
	ctx      context.Context // the invocation's context: AWS calls
	jobCtx   context.Context // jobs' context: ends SafetyMargin before the deadline
	deadline *jobContext     // jobCtx when the invocation has a deadline, else nil
	records  []record
	run      Handler
	next     atomic.Int32   // next record (Standard) or group (FIFO) to claim
	units    int32          // records (Standard) or groups (FIFO)
	limit    int32          // most workers at once
	started  atomic.Int32   // workers woken
	left     atomic.Int32   // workers still running
	finished atomic.Int32   // units (records or groups) finished
	done     sync.WaitGroup // done by release: every worker is done, or the batch is abandoned
	released atomic.Bool
	stop     atomic.Bool // abandon: workers start nothing more
	start    time.Time   // when the batch started running: the origin of workers' clocks
	endClock time.Time   // the last worker's last clock reading, set before it releases the batch

	// FIFO: record indexes ordered by group, and where each group starts in it.
	order  []int32
	starts []int32

	inline [10]record // the records of a batch of up to 10: one allocation for the batch

	times      batchTimes // heartbeat and deadlines, kept by the handler's watchdog
	jobContext jobContext // what deadline points to, if set

	hbMu      sync.Mutex
	hbStopped bool
}

func (h *sqsHandler) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	n := len(ev.Records)
	if n == 0 {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, nil
	}
	b := &batch{h: h, ctx: ctx, run: h.workers.handler()}
	if n <= len(b.inline) {
		b.records = b.inline[:n]
	} else {
		b.records = make([]record, n)
	}
	b.prepare(ev.Records)

	// Deadlines: jobs stop SafetyMargin before the Lambda deadline; the batch stops waiting for
	// them half the margin later. The heartbeat beats every third of the visibility timeout.
	now := time.Now()
	b.start, b.jobCtx = now, ctx
	b.times.beatAt = now.Add(h.cfg.VisibilityTimeout / 3)
	if deadline, ok := ctx.Deadline(); ok {
		margin := h.cfg.SafetyMargin
		if left := deadline.Sub(now); margin > left/2 {
			margin = max(left/2, 0)
		}
		b.jobContext = jobContext{parent: ctx, deadline: deadline.Add(-margin)}
		b.deadline = &b.jobContext
		b.jobCtx = b.deadline
		b.times.softAt, b.times.hardAt = b.deadline.deadline, deadline.Add(-margin/2)
		defer b.deadline.end()
	}

	h.watchdog.add(b, now)
	b.runAll()
	h.watchdog.remove(b)
	b.stopHeartbeat()

	b.applyVisibility()
	resp := b.response()
	end := b.endClock
	if end.IsZero() {
		end = time.Now()
	}
	h.writeMetrics(b.records, end)
	return resp, nil
}

// prepare decodes every envelope before any job runs.
func (b *batch) prepare(msgs []events.SQSMessage) {
	h := b.h
	pd := preDecoder{lookup: h.lookup}
	for i := range msgs {
		m := &msgs[i]
		r := &b.records[i]
		r.msg = m
		row := &r.row
		row.MessageID = m.MessageId
		row.QueueURL = h.cfg.QueueURL
		row.MaxAttempts = h.cfg.MaxAttempts
		row.baseLogger = h.log
		row.Attempt = 1
		if v, ok := m.Attributes["ApproximateReceiveCount"]; ok {
			if a, err := parseInt(v); err == nil && a > 0 {
				row.Attempt = int(a)
			}
		}
		if v, ok := m.Attributes["ApproximateFirstReceiveTimestamp"]; ok {
			if ms, err := parseInt(v); err == nil {
				row.FirstReceivedAt = time.UnixMilli(ms).UTC()
			}
		}
		row.GroupID = m.Attributes["MessageGroupId"]
		pd.left = len(msgs) - i
		pd.reset()
		var env Envelope
		argsSrc, err := decodeEnvelope(m.Body, &env, &pd)
		if err != nil {
			r.pre = err
			row.ID, row.Kind = env.ID, env.Kind
			continue
		}
		row.ID, row.Kind, row.Key, row.EnqueuedAt, row.Trace = env.ID, env.Kind, env.Key, env.EnqueuedAt, env.Trace
		row.argsSrc, row.EncodedArgs = argsSrc, bytesOf(argsSrc)
		if row.reg = pd.registration(env.Kind); row.reg == nil {
			r.pre = &UnknownKindError{Kind: env.Kind}
			continue
		}
		row.Kind = row.reg.kind // the registry's string: no reference into the body
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
	b.units = int32(len(b.records))
	if b.h.fifo {
		b.units = int32(len(b.starts) - 1)
	}
	b.limit = int32(max(1, min(b.h.cfg.Concurrency, int(b.units))))
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
func (b *batch) abandon() {
	defer b.release(time.Time{})
	b.stop.Store(true)
	for i := range b.records {
		r := &b.records[i]
		if r.state.CompareAndSwap(statePending, stateAbandoned) || r.state.CompareAndSwap(stateRunning, stateAbandoned) {
			b.logRecord(slog.LevelError, r, "job still running near the Lambda deadline: reported failed", nil)
		}
	}
}

// runRecord runs one record and decides its outcome.
// clock is the worker's last clock reading (time since the batch's start), updated.
func (b *batch) runRecord(r *record, clock *time.Duration) outcome {
	if !r.state.CompareAndSwap(statePending, stateRunning) {
		return outAbandoned
	}
	err := r.pre
	if err == nil {
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
	if !r.state.CompareAndSwap(stateRunning, stateDone) {
		return outAbandoned
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
	ctx := b.jobCtx
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
		return
	}
	var snooze *SnoozeError
	if errors.As(err, &snooze) {
		r.out, r.visible, r.delay = outSnoozed, true, clampVisibility(snooze.Duration)
		b.logRecord(slog.LevelInfo, r, "job snoozed", nil, slog.Float64("snooze_s", r.delay.Seconds()))
		return
	}
	reason := permanentReason(err)
	if reason == "" && r.row.Attempt >= r.row.MaxAttempts {
		reason = ReasonAttemptsUsed
	}
	if reason != "" && r.state.Load() == stateAbandoned {
		// Already reported failed: it comes back, and is dead-lettered then.
		r.out = outRetry
		return
	}
	if reason == "" {
		r.out, r.visible, r.delay = outRetry, true, clampVisibility(h.cfg.Backoff(r.row.Attempt))
		b.logRecord(slog.LevelWarn, r, "job failed: will retry", err, slog.Float64("retry_in_s", r.delay.Seconds()))
		return
	}
	if dlqErr := b.deadLetter(r, reason, err); dlqErr != nil {
		r.out = outDeadFailed
		b.logRecord(slog.LevelError, r, "dead-letter send failed: job reported failed", err,
			slog.String("reason", reason), slog.String("dlq_error", dlqErr.Error()))
		return
	}
	r.out = outDead
	b.logRecord(slog.LevelError, r, "job dead-lettered", err, slog.String("reason", reason))
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
		slog.String("failed_job_id", failed.row.ID))
	r.state.CompareAndSwap(stateRunning, stateDone)
}

// deadLetter sends the record's message to the DLQ with the failure attached.
func (b *batch) deadLetter(r *record, reason string, jobErr error) error {
	h := b.h
	now := time.Now().UTC()
	attrs := make(map[string]sqstypes.MessageAttributeValue, 10)
	set := func(name, value string) {
		if value = sanitizeAttr(value); value != "" {
			attrs[name] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
		}
	}
	set(AttrReason, reason)
	set(AttrKind, r.row.Kind)
	set(AttrJobID, r.row.ID)
	set(AttrFunction, h.cfg.FunctionName)
	set(AttrSourceMessageID, r.msg.MessageId)
	set(AttrSourceQueue, h.cfg.QueueURL)
	set(AttrFailedAt, now.Format(time.RFC3339Nano))
	if !r.row.FirstReceivedAt.IsZero() {
		set(AttrFirstFailureAt, r.row.FirstReceivedAt.Format(time.RFC3339Nano))
	}
	attrs[AttrAttempts] = sqstypes.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(r.row.Attempt))}
	// The error goes last, cut to what fits in the message (and at most 4 KiB).
	size := len(r.msg.Body)
	for k, v := range attrs {
		size += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue))
	}
	room := MaxMessageSize - size - len(AttrError) - len("String")
	if room > maxErrorAttr {
		room = maxErrorAttr
	}
	if room > 0 {
		set(AttrError, truncateUTF8(errString(jobErr), room))
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
		in.MessageDeduplicationId = aws.String(dedupID(r.msg.MessageId))
	}
	_, err := h.cfg.SQS.SendMessage(b.ctx, in)
	return err
}

const maxErrorAttr = 4 << 10

// dedupID keeps a message id within SQS's 128-character deduplication id limit.
func dedupID(id string) string {
	if len(id) > 128 {
		return id[:128]
	}
	return id
}

// applyVisibility sets the visibility of retried, snoozed and skipped records (10 per call).
func (b *batch) applyVisibility() {
	var pending []*record
	for i := range b.records {
		r := &b.records[i]
		if r.state.Load() == stateDone && r.visible {
			pending = append(pending, r)
		}
	}
	h := b.h
	for len(pending) > 0 {
		chunk := pending[:min(len(pending), MaxBatchEntries)]
		pending = pending[len(chunk):]
		if len(chunk) == 1 {
			r := chunk[0]
			_, err := h.cfg.SQS.ChangeMessageVisibility(b.ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(h.cfg.QueueURL), ReceiptHandle: aws.String(r.msg.ReceiptHandle),
				VisibilityTimeout: ceilSeconds(r.delay),
			})
			if err != nil {
				b.logRecord(slog.LevelWarn, r, "could not set the retry delay: the message returns after the visibility timeout", err)
			}
			continue
		}
		entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for n, r := range chunk {
			entries[n] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(n)), ReceiptHandle: aws.String(r.msg.ReceiptHandle),
				VisibilityTimeout: ceilSeconds(r.delay),
			}
		}
		b.changeVisibility(chunk, entries, "could not set the retry delay: the message returns after the visibility timeout")
	}
}

// changeVisibility makes one ChangeMessageVisibilityBatch call and logs the records it failed for.
func (b *batch) changeVisibility(chunk []*record, entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry, failMsg string) {
	h := b.h
	out, err := h.cfg.SQS.ChangeMessageVisibilityBatch(b.ctx, &sqs.ChangeMessageVisibilityBatchInput{
		QueueUrl: aws.String(h.cfg.QueueURL), Entries: entries,
	})
	if err != nil {
		for _, r := range chunk {
			b.logRecord(slog.LevelWarn, r, failMsg, err)
		}
		return
	}
	for _, f := range out.Failed {
		if n, ok := entryIndex(f.Id, len(chunk)); ok {
			b.logRecord(slog.LevelWarn, chunk[n], failMsg,
				fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
}

// response lists the records the event source mapping must not delete.
func (b *batch) response() events.SQSEventResponse {
	// An empty list, not null, when every record succeeded: unambiguous to any reader.
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i := range b.records {
		r := &b.records[i]
		if r.state.Load() != stateDone || r.out.listed() {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.msg.MessageId})
		}
	}
	return resp
}

// stopHeartbeat stops the heartbeat: a beat still running finishes first, and none follows.
func (b *batch) stopHeartbeat() {
	b.hbMu.Lock()
	b.hbStopped = true
	b.hbMu.Unlock()
}

// beat extends the visibility of every message of the batch to the visibility timeout (the
// watchdog calls it every third of the visibility timeout until stopHeartbeat).
func (b *batch) beat() {
	b.hbMu.Lock()
	defer b.hbMu.Unlock()
	if b.hbStopped {
		return
	}
	vt := b.h.vtSeconds
	for start := 0; start < len(b.records); start += MaxBatchEntries {
		end := min(start+MaxBatchEntries, len(b.records))
		chunk := make([]*record, 0, end-start)
		entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, 0, end-start)
		for i := start; i < end; i++ {
			r := &b.records[i]
			chunk = append(chunk, r)
			entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i - start)), ReceiptHandle: aws.String(r.msg.ReceiptHandle),
				VisibilityTimeout: vt,
			})
		}
		b.changeVisibility(chunk, entries, "heartbeat: could not extend visibility")
	}
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
		slog.String("job_id", r.row.ID), slog.String("kind", r.row.Kind), slog.Int("attempt", r.row.Attempt),
		slog.String("message_id", r.msg.MessageId))
	if r.row.GroupID != "" {
		attrs = append(attrs, slog.String("group_id", r.row.GroupID))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	attrs = append(attrs, extra...)
	log.LogAttrs(ctx, level, msg, attrs...)
}

// clampVisibility keeps a delay within what SQS accepts: 0 to 12 h.
func clampVisibility(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	if d > MaxVisibility {
		return MaxVisibility
	}
	return d
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
