package esm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// SQSAPI is the part of the SQS client the poller calls.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Invoker runs the function synchronously; *lambdaruntime.Runtime is one.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) (lambdaruntime.Result, error)
}

var _ Invoker = (*lambdaruntime.Runtime)(nil)

// Limits and defaults of an SQS event source mapping, as Lambda documents them.
const (
	DefaultBatchSize          = 10
	MaxBatchSizeStandard      = 10000
	MaxBatchSizeFIFO          = 10
	MaxBatchingWindow         = 300 * time.Second
	DefaultMaximumConcurrency = 5 // Lambda's initial pollers; AWS scales further, locally this is the cap
	MinMaximumConcurrency     = 2
	MaxMaximumConcurrency     = 1000
	maxReceive                = 10 // messages per ReceiveMessage
	maxPayload                = lambdaruntime.MaxResponseSize
)

// Mapping is an SQS event source mapping: AWS::Lambda::EventSourceMapping's settings that matter here.
type Mapping struct {
	QueueURL string // required
	QueueARN string // the records' eventSourceARN; required
	// BatchSize: 1-10 for FIFO, 1-10000 for Standard; zero means 10. Above 10 needs a batching window.
	BatchSize int
	// MaximumBatchingWindow: how long to keep gathering a batch after its first message (0-300 s).
	MaximumBatchingWindow time.Duration
	// MaximumConcurrency: concurrent invocations (2-1000); zero means DefaultMaximumConcurrency.
	MaximumConcurrency int
	// ReportBatchItemFailures is FunctionResponseTypes [ReportBatchItemFailures].
	ReportBatchItemFailures bool
}

// ConfigError reports an invalid mapping, as CreateEventSourceMapping would refuse it.
type ConfigError struct{ Reason string }

func (e *ConfigError) Error() string { return "esm: invalid mapping: " + e.Reason }

// IsFIFO reports whether the mapping's queue is a FIFO queue.
func (m Mapping) IsFIFO() bool {
	return strings.HasSuffix(m.QueueARN, ".fifo") || strings.HasSuffix(m.QueueURL, ".fifo")
}

func (m *Mapping) validate() error {
	if m.QueueURL == "" || m.QueueARN == "" {
		return &ConfigError{Reason: "QueueURL and QueueARN are required"}
	}
	m.BatchSize = cmp.Or(m.BatchSize, DefaultBatchSize)
	max := MaxBatchSizeStandard
	if m.IsFIFO() {
		max = MaxBatchSizeFIFO
	}
	if m.BatchSize < 1 || m.BatchSize > max {
		return &ConfigError{Reason: fmt.Sprintf("BatchSize %d is outside 1-%d", m.BatchSize, max)}
	}
	if m.MaximumBatchingWindow < 0 || m.MaximumBatchingWindow > MaxBatchingWindow {
		return &ConfigError{Reason: fmt.Sprintf("MaximumBatchingWindow %s is outside 0-300s", m.MaximumBatchingWindow)}
	}
	if m.BatchSize > maxReceive && m.MaximumBatchingWindow < time.Second {
		return &ConfigError{Reason: "a BatchSize above 10 needs a MaximumBatchingWindow of at least 1s"}
	}
	m.MaximumConcurrency = cmp.Or(m.MaximumConcurrency, DefaultMaximumConcurrency)
	if m.MaximumConcurrency < MinMaximumConcurrency || m.MaximumConcurrency > MaxMaximumConcurrency {
		return &ConfigError{Reason: fmt.Sprintf("MaximumConcurrency %d is outside 2-1000", m.MaximumConcurrency)}
	}
	return nil
}

// Options tune a poller. Nil means the defaults.
type Options struct {
	// Region is the records' awsRegion; default the region in QueueARN.
	Region string
	// Logger receives one line per batch and every error; default discards.
	Logger *slog.Logger
	// OnBatch, if set, is called after each batch is settled (messages deleted or left).
	OnBatch func(BatchReport)
	// LongPoll is ReceiveMessage's WaitTimeSeconds on a Standard queue (default 20 s, the maximum).
	LongPoll time.Duration
	// PauseCheck is how often the poller reads its queue's tags for contract.TagPaused (a queue
	// paused by inspect.Inspector.SetQueuePaused): while the queue carries it the poller receives
	// nothing, as Lambda does while the queue's event source mapping is disabled (the offline
	// stack's mappings are in no Lambda API to disable). Default 2 s; it needs an SQS client with
	// ListQueueTags (a *sqs.Client has it), else the poller never pauses.
	PauseCheck time.Duration
	// FIFOIdle is the longest pause between empty short polls on a FIFO queue (default 1 s). FIFO
	// queues are short-polled: the emulator's long poll spins while every visible message belongs
	// to a message group that is in flight.
	FIFOIdle time.Duration
}

// BatchReport describes one settled batch.
type BatchReport struct {
	Worker     int
	QueueURL   string    // the mapping's queue
	ReceivedAt time.Time // when the batch's first message was received
	MessageIDs []string  // in batch order
	Bodies     []string  // in batch order
	// Outcome is the invocation's outcome; zero when the invocation did not run (InvokeErr).
	Outcome   lambdaruntime.Outcome
	InvokeErr error
	// Verdict is what the mapping made of it.
	Verdict Verdict
	// Reason explains BatchFailed: the function's error, or why its response is invalid.
	Reason string
	// Failed are the ids listed in batchItemFailures (Partial); Deleted the ids deleted.
	Failed  []string
	Deleted []string
	// DeleteErrors maps ids whose delete failed to the error (they come back after the timeout).
	DeleteErrors map[string]string
	Duration     time.Duration
}

// Stats counts what a poller did since it started.
type Stats struct {
	Received, Invocations, Deleted, Returned int64
	Succeeded, PartialBatches, FailedBatches int64
}

// Poller is a running event source mapping: it polls the queue, invokes the function with batches
// and deletes what succeeded.
type Poller struct {
	sqs  SQSAPI
	fn   Invoker
	m    Mapping
	opts Options
	log  *slog.Logger

	paused           atomic.Bool
	pauseReadFailing atomic.Bool // the last read of the pause tag failed (logged once)

	groupsMu sync.Mutex
	groups   map[string]chan struct{} // FIFO message groups being invoked

	received, invocations, deleted, returned atomic.Int64
	succeeded, partial, failed               atomic.Int64
}

// New checks m and returns a poller; Run starts it.
func New(client SQSAPI, fn Invoker, m Mapping, opts *Options) (*Poller, error) {
	if client == nil || fn == nil {
		return nil, errors.New("esm: an SQS client and an invoker are required")
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Region == "" {
		if q, err := awsarn.ParseQueue(m.QueueARN); err == nil {
			o.Region = q.Region
		}
	}
	if o.LongPoll <= 0 || o.LongPoll > 20*time.Second {
		o.LongPoll = 20 * time.Second
	}
	if o.FIFOIdle <= 0 {
		o.FIFOIdle = time.Second
	}
	if o.PauseCheck <= 0 {
		o.PauseCheck = 2 * time.Second
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Poller{
		sqs: client, fn: fn, m: m, opts: o,
		log:    logger.With("queue", m.QueueARN),
		groups: map[string]chan struct{}{},
	}, nil
}

// Mapping returns the mapping with its defaults applied.
func (p *Poller) Mapping() Mapping { return p.m }

// Stats returns the counters so far.
func (p *Poller) Stats() Stats {
	return Stats{
		Received: p.received.Load(), Invocations: p.invocations.Load(),
		Deleted: p.deleted.Load(), Returned: p.returned.Load(),
		Succeeded: p.succeeded.Load(), PartialBatches: p.partial.Load(), FailedBatches: p.failed.Load(),
	}
}

// Run polls until ctx ends, with MaximumConcurrency workers each gathering a batch, invoking the
// function and settling the batch. When ctx ends, polling stops, a batch already gathered is still
// invoked, and Run returns once every invocation in flight has been settled. It returns nil after a
// cancellation.
func (p *Poller) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if tags, ok := p.sqs.(queueTagLister); ok {
		p.checkPause(ctx, tags)
		watchCtx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			t := time.NewTicker(p.opts.PauseCheck)
			defer t.Stop()
			for {
				select {
				case <-watchCtx.Done():
					return
				case <-t.C:
					p.checkPause(watchCtx, tags)
				}
			}
		}()
		defer func() { stopWatch(); <-watched }() // the workers may stop on their own (ErrClosed)
	}
	for i := range p.m.MaximumConcurrency {
		wg.Go(func() {
			p.work(ctx, i+1)
		})
	}
	wg.Wait()
	return nil
}

// Paused reports whether the poller found its queue paused (Options.PauseCheck).
func (p *Poller) Paused() bool { return p.paused.Load() }

// queueTagLister is the call a poller makes to learn whether its queue is paused.
type queueTagLister interface {
	ListQueueTags(ctx context.Context, in *sqs.ListQueueTagsInput, optFns ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
}

// checkPause reads the queue's pause tag once; a failed read changes nothing.
func (p *Poller) checkPause(ctx context.Context, tags queueTagLister) {
	out, err := tags.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(p.m.QueueURL)})
	if err != nil {
		if ctx.Err() == nil && p.pauseReadFailing.CompareAndSwap(false, true) {
			p.log.Warn("pause state not read; the mapping runs on as it was", "error", err)
		}
		return
	}
	p.pauseReadFailing.Store(false)
	_, paused := out.Tags[contract.TagPaused]
	if p.paused.Swap(paused) != paused {
		p.log.Info(map[bool]string{true: "mapping paused", false: "mapping resumed"}[paused])
	}
}

func (p *Poller) work(ctx context.Context, worker int) {
	for ctx.Err() == nil {
		if p.paused.Load() {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		rep, _ := p.poll(ctx, worker)
		if errors.Is(rep.InvokeErr, lambdaruntime.ErrClosed) {
			p.log.Warn("the function's runtime is closed; worker stops", "worker", worker)
			return
		}
	}
}

// PollOnce gathers one batch, as one of Run's workers does, invokes the function with it and
// settles it. It reports false when no message arrived before the long poll ended or ctx ended.
// It is for tests and tools that want one batch at a time; do not mix it with Run.
func (p *Poller) PollOnce(ctx context.Context) (BatchReport, bool) {
	return p.poll(ctx, 0)
}

func (p *Poller) poll(ctx context.Context, worker int) (BatchReport, bool) {
	batch, receivedAt := p.gather(ctx, worker)
	if len(batch) == 0 {
		return BatchReport{}, false
	}
	// A batch in hand is finished even when shutting down: its messages were received.
	return p.process(context.WithoutCancel(ctx), worker, batch, receivedAt), true
}

// gather receives one batch: it waits for a first message, then, with a batching window, keeps
// receiving until the batch is full, the window has passed or the payload would pass 6 MB.
func (p *Poller) gather(ctx context.Context, worker int) ([]types.Message, time.Time) {
	fifo := p.m.IsFIFO()
	var (
		batch     []types.Message
		size      = len(`{"Records":[]}`)
		windowEnd time.Time
		idle      = 50 * time.Millisecond
		first     time.Time
	)
	for len(batch) < p.m.BatchSize {
		want := min(maxReceive, p.m.BatchSize-len(batch))
		var wait time.Duration
		if len(batch) == 0 {
			if p.paused.Load() {
				break // Run's worker waits out the pause
			}
			if !fifo {
				wait = p.opts.LongPoll
			}
		} else {
			if p.m.MaximumBatchingWindow == 0 || p.paused.Load() {
				break // a batch in hand is invoked; a paused mapping gathers no more
			}
			remaining := time.Until(windowEnd)
			if remaining <= 0 {
				break
			}
			if !fifo {
				wait = min(remaining, 20*time.Second).Truncate(time.Second)
			}
			// Stop before a receive could push the payload past 6 MB (256 KiB per message at most).
			if size+want*(256*1024+1024) > maxPayload {
				break
			}
		}
		out, err := p.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(p.m.QueueURL),
			MaxNumberOfMessages:         int32(want),
			WaitTimeSeconds:             int32(wait / time.Second),
			MessageSystemAttributeNames: lambdaAttributes,
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			p.log.Error("receive failed", "worker", worker, "error", err)
			if len(batch) > 0 {
				break
			}
			sleep(ctx, time.Second)
			continue
		}
		if len(out.Messages) == 0 {
			if ctx.Err() != nil {
				break
			}
			if wait == 0 { // a short poll came back empty: pause before the next one
				pause := idle
				if len(batch) > 0 {
					pause = min(time.Until(windowEnd), 100*time.Millisecond)
				} else {
					idle = min(idle*2, p.opts.FIFOIdle)
				}
				sleep(ctx, pause)
			}
			continue
		}
		idle = 50 * time.Millisecond
		if len(batch) == 0 {
			first = time.Now()
			windowEnd = first.Add(p.m.MaximumBatchingWindow)
		}
		batch = append(batch, out.Messages...)
		for _, m := range out.Messages {
			size += len(aws.ToString(m.Body)) + 1024
		}
	}
	p.received.Add(int64(len(batch)))
	return batch, first
}

// process invokes the function with batch and settles it.
func (p *Poller) process(ctx context.Context, worker int, batch []types.Message, receivedAt time.Time) BatchReport {
	start := time.Now()
	records := make([]Record, len(batch))
	inBatch := make(map[string]bool, len(batch))
	rep := BatchReport{Worker: worker, QueueURL: p.m.QueueURL, ReceivedAt: receivedAt, MessageIDs: make([]string, len(batch)), Bodies: make([]string, len(batch))}
	var groups []string
	for i, m := range batch {
		records[i] = NewRecord(m, p.m.QueueARN, p.opts.Region)
		rep.MessageIDs[i] = records[i].MessageID
		rep.Bodies[i] = records[i].Body
		inBatch[records[i].MessageID] = true
		if g := records[i].Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]; g != "" {
			groups = append(groups, g)
		}
	}
	payload, err := json.Marshal(Event{Records: records})
	if err != nil { // cannot happen for strings and maps
		rep.Verdict, rep.Reason = BatchFailed, "encode event: "+err.Error()
		return p.settle(ctx, batch, rep, start)
	}
	// FIFO: never two batches of one message group at once (SQS's group lock gives this unless a
	// visibility timeout lapses during an invocation).
	if len(groups) > 0 {
		release := p.lockGroups(groups)
		defer release()
	}
	p.invocations.Add(1)
	res, err := p.fn.Invoke(ctx, payload)
	rep.Outcome = res.Outcome
	switch {
	case err != nil:
		rep.InvokeErr = err
		rep.Verdict, rep.Reason = BatchFailed, "invoke: "+err.Error()
	case res.Outcome != lambdaruntime.Success:
		// A function error or timeout fails the whole batch: its messages reappear after the
		// queue's visibility timeout ("Backoff strategy for failed invocations", same page).
		rep.Verdict, rep.Reason = BatchFailed, res.Outcome.String()
		if res.Error != nil {
			rep.Reason += ": " + res.Error.Error()
		}
	case !p.m.ReportBatchItemFailures:
		rep.Verdict = AllSucceeded // without ReportBatchItemFailures the response is not read
	default:
		failed, perr := ParseBatchResponse(res.Payload, inBatch)
		switch {
		case perr != nil:
			rep.Verdict, rep.Reason = BatchFailed, perr.Error()
		case len(failed) == 0:
			rep.Verdict = AllSucceeded
		default:
			rep.Verdict, rep.Failed = Partial, failed
		}
	}
	return p.settle(ctx, batch, rep, start)
}

// settle deletes what succeeded and reports the batch.
func (p *Poller) settle(ctx context.Context, batch []types.Message, rep BatchReport, start time.Time) BatchReport {
	var toDelete []types.Message
	switch rep.Verdict {
	case AllSucceeded:
		toDelete = batch
	case Partial:
		failed := make(map[string]bool, len(rep.Failed))
		for _, id := range rep.Failed {
			failed[id] = true
		}
		for _, m := range batch {
			if !failed[aws.ToString(m.MessageId)] {
				toDelete = append(toDelete, m)
			}
		}
	}
	rep.Deleted, rep.DeleteErrors = p.deleteAll(ctx, toDelete)
	rep.Duration = time.Since(start)
	p.deleted.Add(int64(len(rep.Deleted)))
	p.returned.Add(int64(len(batch) - len(rep.Deleted)))
	switch rep.Verdict {
	case AllSucceeded:
		p.succeeded.Add(1)
	case Partial:
		p.partial.Add(1)
	default:
		p.failed.Add(1)
	}
	level := slog.LevelDebug
	if rep.Verdict == BatchFailed || len(rep.DeleteErrors) > 0 {
		level = slog.LevelWarn
	}
	p.log.Log(ctx, level, "batch settled", "worker", rep.Worker, "size", len(batch), "verdict", rep.Verdict.String(),
		"deleted", len(rep.Deleted), "failed", len(rep.Failed), "reason", rep.Reason, "duration_ms", rep.Duration.Milliseconds())
	if p.opts.OnBatch != nil {
		p.opts.OnBatch(rep)
	}
	return rep
}

// deleteAll deletes msgs with DeleteMessageBatch, ten at a time.
func (p *Poller) deleteAll(ctx context.Context, msgs []types.Message) ([]string, map[string]string) {
	var deleted []string
	var failed map[string]string
	for start := 0; start < len(msgs); start += maxReceive {
		chunk := msgs[start:min(start+maxReceive, len(msgs))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := p.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.m.QueueURL), Entries: entries})
		if failed == nil && (err != nil || (out != nil && len(out.Failed) > 0)) {
			failed = map[string]string{}
		}
		if err != nil {
			for _, m := range chunk {
				failed[aws.ToString(m.MessageId)] = err.Error()
			}
			continue
		}
		bad := map[string]string{}
		for _, f := range out.Failed {
			bad[aws.ToString(f.Id)] = aws.ToString(f.Code) + ": " + aws.ToString(f.Message)
		}
		for i, m := range chunk {
			if why, ok := bad[strconv.Itoa(i)]; ok {
				failed[aws.ToString(m.MessageId)] = why
			} else {
				deleted = append(deleted, aws.ToString(m.MessageId))
			}
		}
	}
	return deleted, failed
}

// lockGroups waits until none of groups is being invoked, claims them all, and returns their release.
func (p *Poller) lockGroups(groups []string) func() {
	for {
		p.groupsMu.Lock()
		var busy chan struct{}
		for _, g := range groups {
			if ch, ok := p.groups[g]; ok {
				busy = ch
				break
			}
		}
		if busy == nil {
			done := make(chan struct{})
			for _, g := range groups {
				p.groups[g] = done
			}
			p.groupsMu.Unlock()
			return func() {
				p.groupsMu.Lock()
				for _, g := range groups {
					if p.groups[g] == done {
						delete(p.groups, g)
					}
				}
				p.groupsMu.Unlock()
				close(done)
			}
		}
		p.groupsMu.Unlock()
		<-busy
	}
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
