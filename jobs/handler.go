package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// newSQSHandler validates cfg and makes the runtime of NewLambdaHandler and NewConsumer.
func newSQSHandler(workers *Workers, cfg Config) *sqsHandler {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	if err := workers.checkKinds(cfg); err != nil {
		panic(err)
	}
	h := &sqsHandler{
		workers:   workers,
		lookup:    workers.lookup,
		cfg:       cfg,
		log:       cfg.Logger,
		queueName: awsarn.QueueName(cfg.QueueURL),
		fifo:      awsarn.IsFIFO(cfg.QueueURL),
		dlqFIFO:   awsarn.IsFIFO(cfg.DLQURL),
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
	outCancelled          // cancelled before it ran (ErrCancelled): not listed, deleted
)

func (o outcome) listed() bool { return o != outSucceeded && o != outDead && o != outCancelled }

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
	started int16 // runs begun on earlier redeliveries that never reported (Config.Deliveries), read by countRealRuns
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
	if reg.opts.MaxAttempts > 0 {
		row.MaxAttempts = reg.opts.MaxAttempts
	}
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

// pool hands batches to parked worker goroutines. Workers stay parked between batches, so a
// batch starts no goroutines (and pays for no stack growth) once the pool is warm; the pool grows
// only when every worker is busy, e.g. with an abandoned job.
var pool = make(chan *batch)

const maxErrorAttr = 4 << 10

// visibilityCalls is how many visibility calls a batch has in flight at once: a batch of
// 10,000 records (1,000 calls) then takes 125 round trips, not 1,000.
const visibilityCalls = 8

// ErrMessageLost is the cause of a job's context cancelled because the heartbeat found its
// message no longer the function's (deleted, or handed to another consumer after its visibility
// lapsed): the job's result could not be reported anyway.
var ErrMessageLost = errors.New("jobs: the message is no longer this function's (its visibility could not be extended)")

var _ context.Context = (*recordContext)(nil)

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

// receiptSlack is kept below SQS's 12-hour limit, which counts from when the message was
// received. The event does not say when that was: before the invocation started, by up to the
// event source mapping's batching window (at most 5 minutes), plus the poller's own time.
const receiptSlack = 6 * time.Minute

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
