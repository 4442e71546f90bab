package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/internal/wire"
	"github.com/jobkit-go/jobkit/jobs/jobctx"
)

// defaultWaitTime is the long poll of each receive: SQS's longest, so an idle consumer makes 180
// receives an hour per poller.
const defaultWaitTime = 20 * time.Second

// ErrDraining is the cause (context.Cause) of a job's context ended by the Consumer's drain: the
// process is stopping. A job that returns a retryable error after it is released at once, with
// visibility 0 (on a FIFO queue, a group of several at 1 s, last record first), for another
// consumer; its attempt is not judged (no dead-letter for attempts).
var ErrDraining = errors.New("jobs: the consumer is draining (the process is stopping)")

// ConsumerOptions tune a Consumer; nil or zero fields mean defaults.
type ConsumerOptions struct {
	// Concurrency is the most messages the consumer holds at once: it never receives more than
	// it has room to run. Default Config.Concurrency.
	Concurrency int
	// Pollers is how many receive calls are in flight at once. Default one per 10 of
	// Concurrency (a receive returns at most 10 messages).
	Pollers int
	// WaitTime is each receive's long poll, 1 to 20 s. Default 20 s.
	WaitTime time.Duration
	// PauseCheck is how often the consumer reads its queue's tags to learn whether the queue is
	// paused (contract.TagPaused, set by inspect.Inspector.SetQueuePaused): while it is, the
	// consumer receives nothing, and its running jobs finish. Default 10 s; it needs an SQS
	// client with ListQueueTags (a *sqs.Client has it), else the consumer never pauses.
	PauseCheck time.Duration
	// DrainTimeout bounds the drain that begins when Run's context ends: receiving stops at
	// once; running jobs have three quarters of it to finish; then their contexts end
	// (ErrDraining); at seven eighths the jobs still running are given up and their messages
	// released with visibility 0 (a FIFO group of several: 1 s, last first); Run returns within
	// DrainTimeout, pending deletes done. Set the
	// container's stop timeout (the time between SIGTERM and SIGKILL) above it. Default 25 s.
	DrainTimeout time.Duration
}

// ConsumerOptionsFromEnv reads ConsumerOptions from JOBKIT_CONCURRENCY, JOBKIT_POLLERS and
// JOBKIT_DRAIN_TIMEOUT (a Go duration or seconds).
func ConsumerOptionsFromEnv(lookup func(string) (string, bool)) (ConsumerOptions, error) {
	var o ConsumerOptions
	var errs []error
	get := func(name string) string { v, _ := lookup(name); return v }
	for name, dst := range map[string]*int{contract.EnvConcurrency: &o.Concurrency, contract.EnvPollers: &o.Pollers} {
		if v := get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
			}
			*dst = n
		}
	}
	if v := get(contract.EnvDrainTimeout); v != "" {
		d, err := parseDurationOrSeconds(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive Go duration or seconds", contract.EnvDrainTimeout, v))
		}
		o.DrainTimeout = d
	}
	return o, errors.Join(errs...)
}

// parseDurationOrSeconds reads "25s" or "25".
func parseDurationOrSeconds(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(v)
}

// Consumer runs Workers in a long-running process (a container): it long-polls the queue and
// runs what it receives through the same runtime as NewLambdaHandler — middleware, outcomes,
// backoff, snoozes, FIFO skip-group-on-error, dead letters with reasons — and deletes what
// succeeded or was dead-lettered, in batch calls.
//
//   - Backpressure: it receives at most as many messages as it has free room for (Concurrency).
//   - Heartbeat: each message is received with Config.VisibilityTimeout and extended to it every
//     third of it while its job runs, until 12 h after its receipt (SQS's limit) less 6 minutes
//     and Config.SafetyMargin, when the job's context ends.
//   - Standard queue: each message runs as soon as it is received and is deleted when it is done.
//     FIFO queue: the messages of one group in a receive run in order, the first failure
//     returning the rest of the group with it.
//   - Drain: see ConsumerOptions.DrainTimeout. Nothing is lost: a job either finishes (and is
//     deleted, retried or dead-lettered as usual) or its message is made visible at once.
//
// A Consumer's Run is called once.
type Consumer struct {
	h           *sqsHandler
	sqs         SQSAPI
	queue       *string
	concurrency int
	pollers     int
	wait        int32
	drain       time.Duration
	pauseCheck  time.Duration
	fifo        bool
	log         *slog.Logger
	paused      atomic.Bool
	// pauseReadFailing: the last read of the pause tag failed (logged once).
	pauseReadFailing atomic.Bool

	slots   chan struct{}
	deletes chan deleteEntry
	started atomic.Bool

	mu    sync.Mutex
	units map[*unit]struct{}
	wg    sync.WaitGroup // running units

	stats consumerCounters
}

// ConsumerStats counts what a Consumer did.
type ConsumerStats struct {
	Receives int64 // receive calls made (empty ones included)
	Received int64 // messages received
	Deleted  int64 // messages deleted after their job
	Released int64 // messages given up by the drain and made visible at once
	Paused   bool  // the queue is paused (ConsumerOptions.PauseCheck): nothing is received
}

type consumerCounters struct{ receives, received, deleted, released atomic.Int64 }

// Stats returns the consumer's counts so far.
func (c *Consumer) Stats() ConsumerStats {
	return ConsumerStats{
		Receives: c.stats.receives.Load(), Received: c.stats.received.Load(),
		Deleted: c.stats.deleted.Load(), Released: c.stats.released.Load(),
		Paused: c.paused.Load(),
	}
}

// unit is what the consumer runs as one runtime batch: one message (Standard) or the messages of
// one FIFO group from one receive.
type unit struct {
	msgs       []wire.SQSMessage
	cancel     context.CancelCauseFunc // ends the jobs' context (ErrDraining)
	postCancel context.CancelFunc      // ends the runtime's AWS calls: the unit is given up
	mu         sync.Mutex
	settled    bool // deleted/left as the runtime decided, or released by the drain
}

type deleteEntry struct{ receipt string }

// NewConsumer returns a Consumer of cfg.QueueURL running workers. It returns an error for an
// invalid Config or options.
func NewConsumer(workers *Workers, cfg Config, opts *ConsumerOptions) (*Consumer, error) {
	if workers == nil {
		return nil, errors.New("jobs: NewConsumer: nil Workers")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := workers.checkKinds(cfg.withDefaults()); err != nil {
		return nil, err
	}
	client := cfg.SQS
	var o ConsumerOptions
	if opts != nil {
		o = *opts
	}
	h := newSQSHandler(workers, cfg)
	h.container = true
	h.firstBeat = h.cfg.VisibilityTimeout / 3
	if o.Concurrency <= 0 {
		o.Concurrency = h.cfg.Concurrency
	}
	if o.Pollers <= 0 {
		o.Pollers = (o.Concurrency + MaxBatchEntries - 1) / MaxBatchEntries
	}
	o.Pollers = min(o.Pollers, o.Concurrency)
	if o.WaitTime <= 0 {
		o.WaitTime = defaultWaitTime
	}
	if o.WaitTime < time.Second || o.WaitTime > 20*time.Second {
		return nil, fmt.Errorf("jobs: NewConsumer: WaitTime %v: want 1s to 20s", o.WaitTime)
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = contract.DefaultDrainTimeout
	}
	if o.PauseCheck <= 0 {
		o.PauseCheck = defaultPauseCheck
	}
	if vt := h.cfg.VisibilityTimeout; vt < contract.MinConsumerVisibilityTimeout {
		return nil, fmt.Errorf("jobs: NewConsumer: VisibilityTimeout %v: want at least 3s (heartbeats every third)", vt)
	}
	return &Consumer{
		h: h, sqs: client, queue: aws.String(h.cfg.QueueURL),
		concurrency: o.Concurrency, pollers: o.Pollers, wait: int32(o.WaitTime / time.Second),
		drain: o.DrainTimeout, pauseCheck: o.PauseCheck, fifo: h.fifo, log: h.log,
		slots:   make(chan struct{}, o.Concurrency),
		deletes: make(chan deleteEntry, o.Concurrency),
		units:   map[*unit]struct{}{},
	}, nil
}

// Run consumes until ctx ends, then drains (see ConsumerOptions.DrainTimeout) and returns nil.
// It returns an error only when called a second time.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("jobs: Consumer.Run called twice")
	}
	base := context.WithoutCancel(ctx)
	delCtx, delCancel := context.WithCancel(base)
	defer delCancel()
	var deleters sync.WaitGroup
	for range 2 * c.pollers {
		deleters.Add(1)
		go func() { defer deleters.Done(); c.deleteLoop(delCtx) }()
	}
	var polls sync.WaitGroup
	if tags, ok := c.sqs.(queueTagLister); ok {
		c.checkPause(ctx, base, tags) // before the first receive: a paused queue starts paused
		polls.Add(1)
		go func() { defer polls.Done(); c.watchPause(ctx, base, tags) }()
	} else {
		c.log.LogAttrs(base, slog.LevelWarn, "consumer: its SQS client has no ListQueueTags: a pause of the queue (jobkit queues pause) does not reach it",
			slog.String("queue", c.h.queueName))
	}
	for range c.pollers {
		polls.Add(1)
		go func() { defer polls.Done(); c.poll(ctx, base) }()
	}
	<-ctx.Done()
	t0 := time.Now()
	c.log.LogAttrs(base, slog.LevelInfo, "consumer draining", slog.String("queue", c.h.queueName),
		slog.Float64("drain_timeout_s", c.drain.Seconds()))
	polls.Wait()
	c.drainUnits(base, t0)
	close(c.deletes) // no unit sends any more: each finished or was settled by the drain
	flushed := make(chan struct{})
	go func() { deleters.Wait(); close(flushed) }()
	timer := time.NewTimer(time.Until(t0.Add(c.drain)))
	defer timer.Stop()
	select {
	case <-flushed:
	case <-timer.C:
		delCancel() // undeleted messages come back after their visibility and are skipped then
		<-flushed
	}
	st := c.Stats()
	c.log.LogAttrs(base, slog.LevelInfo, "consumer stopped", slog.String("queue", c.h.queueName),
		slog.Int64("received", st.Received), slog.Int64("deleted", st.Deleted), slog.Int64("released", st.Released),
		slog.Float64("drain_s", time.Since(t0).Seconds()))
	return nil
}

// poll receives while ctx lasts, never more messages than there are free slots.
func (c *Consumer) poll(ctx, base context.Context) {
	failures := 0
	for {
		for c.paused.Load() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pausedPoll):
			}
		}
		n := c.acquire(ctx)
		if n == 0 {
			return
		}
		if c.paused.Load() { // paused while this poller waited for room
			c.releaseSlots(n)
			continue
		}
		out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            c.queue,
			MaxNumberOfMessages: int32(n),
			WaitTimeSeconds:     c.wait,
			VisibilityTimeout:   c.h.vtSeconds,
			// A claim check's size, kept on its dead-letter copy.
			MessageAttributeNames: []string{contract.AttrPayloadSize, contract.AttrLegacyPayloadSize},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{
				sqstypes.MessageSystemAttributeNameApproximateReceiveCount,
				sqstypes.MessageSystemAttributeNameApproximateFirstReceiveTimestamp,
				sqstypes.MessageSystemAttributeNameMessageGroupId,
			},
		})
		received := time.Now()
		c.stats.receives.Add(1)
		var msgs []sqstypes.Message
		if err == nil {
			msgs = out.Messages
		}
		c.releaseSlots(n - len(msgs))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			c.log.LogAttrs(base, slog.LevelWarn, "consumer: receive failed", slog.String("queue", c.h.queueName),
				LogString("error", err.Error()))
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(time.Duration(failures)*time.Second, 20*time.Second)):
			}
			continue
		}
		failures = 0
		c.stats.received.Add(int64(len(msgs)))
		c.dispatch(base, msgs, received)
	}
}

// defaultPauseCheck is how often a Consumer reads its queue's pause tag; pausedPoll how often a
// paused poller looks at what the last read found.
const (
	defaultPauseCheck = 10 * time.Second
	pausedPoll        = 100 * time.Millisecond
)

// queueTagLister is the call a Consumer makes to learn whether its queue is paused.
type queueTagLister interface {
	ListQueueTags(ctx context.Context, in *sqs.ListQueueTagsInput, optFns ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
}

// watchPause reads the queue's pause tag every pauseCheck (±10%, so a fleet of tasks started
// together does not read in step) until ctx ends.
func (c *Consumer) watchPause(ctx, base context.Context, tags queueTagLister) {
	for {
		jitter := time.Duration(rand.Int64N(int64(c.pauseCheck/5)+1)) - c.pauseCheck/10
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.pauseCheck + jitter):
			c.checkPause(ctx, base, tags)
		}
	}
}

// checkPause reads the queue's pause tag once. A failed read changes nothing: the consumer goes
// on as it was, and says so once until a read succeeds again.
func (c *Consumer) checkPause(ctx, base context.Context, tags queueTagLister) {
	out, err := tags.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: c.queue})
	if err != nil {
		if ctx.Err() == nil && c.pauseReadFailing.CompareAndSwap(false, true) {
			c.log.LogAttrs(base, slog.LevelWarn, "consumer: pause state not read (sqs:ListQueueTags); the consumer runs on as it was",
				slog.String("queue", c.h.queueName), LogString("error", err.Error()))
		}
		return
	}
	c.pauseReadFailing.Store(false)
	_, paused := out.Tags[contract.TagPaused]
	if c.paused.Swap(paused) != paused {
		msg := map[bool]string{true: "consumer paused", false: "consumer resumed"}[paused]
		c.log.LogAttrs(base, slog.LevelInfo, msg, slog.String("queue", c.h.queueName))
	}
}

// batchLinger is how long the consumer waits to fill a receive or a delete call once it has
// something for it: slots and finished jobs come in bursts, and a call of 10 costs SQS (and the
// bill) what a call of 1 does.
const batchLinger = 2 * time.Millisecond

// acquire waits for one free slot, then takes more, up to 10 (or its share of Concurrency), as
// they come within batchLinger; 0 when ctx ends first.
func (c *Consumer) acquire(ctx context.Context) int {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	want := min(MaxBatchEntries, max(1, c.concurrency/c.pollers))
	n := 1
	var linger <-chan time.Time
	for n < want {
		select {
		case c.slots <- struct{}{}:
			n++
			continue
		default:
		}
		if linger == nil {
			t := time.NewTimer(batchLinger)
			defer t.Stop()
			linger = t.C
		}
		select {
		case c.slots <- struct{}{}:
			n++
		case <-linger:
			return n
		case <-ctx.Done():
			return n
		}
	}
	return n
}

func (c *Consumer) releaseSlots(n int) {
	for range n {
		<-c.slots
	}
}

// dispatch starts the units of a receive: each message (Standard) or each group in order (FIFO).
func (c *Consumer) dispatch(base context.Context, msgs []sqstypes.Message, received time.Time) {
	if len(msgs) == 0 {
		return
	}
	converted := make([]wire.SQSMessage, len(msgs))
	for i := range msgs {
		converted[i] = wireMessage(&msgs[i])
	}
	if !c.fifo {
		for i := range converted {
			c.start(base, converted[i:i+1:i+1], received)
		}
		return
	}
	var groups []string
	byGroup := map[string][]wire.SQSMessage{}
	for _, m := range converted {
		g := m.Attribute("MessageGroupId")
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], m)
	}
	for _, g := range groups {
		c.start(base, byGroup[g], received)
	}
}

// wireMessage converts a received message to the runtime's record.
func wireMessage(m *sqstypes.Message) wire.SQSMessage {
	attrs := make([]wire.SQSAttribute, 0, len(runtimeAttributes))
	for _, name := range runtimeAttributes {
		if v, ok := m.Attributes[name]; ok {
			attrs = append(attrs, wire.SQSAttribute{Name: name, Value: v})
		}
	}
	msg := wire.SQSMessage{
		MessageID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body: aws.ToString(m.Body), MD5OfBody: aws.ToString(m.MD5OfBody), Attributes: attrs,
	}
	for name, v := range m.MessageAttributes {
		msg.MessageAttributes = append(msg.MessageAttributes, wire.SQSMessageAttribute{Name: name,
			Value: events.SQSMessageAttribute{StringValue: v.StringValue, DataType: aws.ToString(v.DataType)}})
	}
	return msg
}

// start runs a unit on its own goroutine. Its jobs' context ends 12 h after the receipt less
// receiptSlack (the runtime then applies its SafetyMargin), or with the drain.
func (c *Consumer) start(base context.Context, msgs []wire.SQSMessage, received time.Time) {
	deadline := received.Add(MaxVisibility - receiptSlack)
	drainable, cancel := context.WithCancelCause(base)
	jobsCtx, cancelDeadline := context.WithDeadline(jobctx.WithKeepAlive(drainable, c.h.cfg.VisibilityTimeout), deadline)
	postCtx, postCancel := context.WithDeadline(base, deadline)
	u := &unit{msgs: msgs, cancel: cancel, postCancel: postCancel}
	c.mu.Lock()
	c.units[u] = struct{}{}
	c.mu.Unlock()
	c.wg.Go(func() {
		defer cancel(nil)
		defer cancelDeadline()
		defer postCancel()
		resp := c.h.runBatch(jobsCtx, postCtx, msgs)
		c.finish(u, resp.BatchItemFailures)
	})
}

// finish deletes the unit's messages the runtime did not list (succeeded or dead-lettered) and
// leaves the listed ones as the runtime set them (retry or snooze delay; 0 when drained); a unit
// the drain gave up is left alone.
func (c *Consumer) finish(u *unit, listed []events.SQSBatchItemFailure) {
	// Settled before it leaves c.units: the drain, which settles every unit it finds there,
	// then knows no unit sends a delete after it.
	u.mu.Lock()
	if !u.settled {
		u.settled = true
		for i := range u.msgs {
			m := &u.msgs[i]
			if !isListed(listed, m.MessageID) {
				c.deletes <- deleteEntry{receipt: m.ReceiptHandle}
			}
		}
		c.releaseSlots(len(u.msgs))
	}
	u.mu.Unlock()
	c.mu.Lock()
	delete(c.units, u)
	c.mu.Unlock()
}

func isListed(listed []events.SQSBatchItemFailure, id string) bool {
	for _, f := range listed {
		if f.ItemIdentifier == id {
			return true
		}
	}
	return false
}
