package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Errors a Client returns, before any AWS call, for a job it cannot send as asked. They arrive
// wrapped in an *InvalidJobError; test for them with errors.Is.
var (
	ErrEmptyKind = errors.New("jobs: the job kind is empty")
	ErrNoQueue   = errors.New("jobs: no queue for this kind and no default queue")
	// ErrBodyTooLarge: the encoded job does not fit in the queue's messages (1 MiB, or the
	// queue's own MaximumMessageSize) and the Client has no Payloads to store it in S3.
	ErrBodyTooLarge    = errors.New("jobs: the encoded job is larger than the 1 MiB SQS message limit")
	ErrGroupRequired   = errors.New("jobs: a FIFO queue needs a message group id (EnqueueOpts.GroupID)")
	ErrDedupOnStandard = errors.New("jobs: a deduplication id applies only to FIFO queues")
	ErrInvalidDelay    = errors.New("jobs: invalid delay")
	ErrDelayOnFIFO     = errors.New("jobs: SQS FIFO queues have no per-message delay; delays up to 15 minutes cannot be honoured there")
	ErrDelayTooLong    = errors.New("jobs: a delay over 15 minutes needs a LongDelayer (ClientOptions.LongDelayer)")
	ErrEncodeArgs      = errors.New("jobs: the job args do not encode as JSON")
	ErrInvalidTrace    = errors.New("jobs: EnqueueOpts.Trace is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)")
	// ErrInvalidGroupID and ErrInvalidDedupID: SQS takes 1 to 128 characters, each an ASCII
	// letter, digit or punctuation mark (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~). On FIFO queues the
	// deduplication id defaults to the job id, which must then follow the same rule.
	ErrInvalidGroupID = errors.New("jobs: invalid message group id (1-128 ASCII letters, digits or punctuation)")
	ErrInvalidDedupID = errors.New("jobs: invalid deduplication id (1-128 ASCII letters, digits or punctuation)")
	// ErrDedupScheduled: a job delayed beyond 15 minutes is delivered by the LongDelayer, whose
	// schedules cannot carry a deduplication id; the job id still makes it idempotent.
	ErrDedupScheduled = errors.New("jobs: a deduplication id cannot be honoured for a job delayed beyond 15 minutes")
)

// Errors about jobs that were valid but not sent.
var (
	// ErrNotSent marks the valid jobs of an EnqueueBatch that was not sent because another job
	// in it is invalid: a batch is checked whole before any AWS call.
	ErrNotSent = errors.New("jobs: not sent: another job of the batch is invalid")
	// ErrGroupFailed marks the jobs of a FIFO group that were not sent because an earlier job of
	// the same group failed to send: sending them would break the group's order. EnqueueBatch
	// puts at most one job of a group in each call and sends a queue's calls one after another,
	// so every job of a group that was enqueued was enqueued after all the group's earlier jobs
	// of the batch, and none is enqueued after a failed one.
	ErrGroupFailed = errors.New("jobs: not sent: an earlier job of the same FIFO group was not enqueued")
	// ErrNoLongDelayer is returned by CancelDelayed on a Client without a LongDelayer.
	ErrNoLongDelayer = errors.New("jobs: the client has no LongDelayer")
	// ErrUnknownPriority is an EnqueueOpts.Priority that is not a lane of the job's queue
	// (ClientOptions.Lanes).
	ErrUnknownPriority = errors.New("jobs: no such priority lane for this queue")
)

// InvalidJobError reports a job the Client refused before any AWS call. Err is one of the
// ErrXxx values above, possibly wrapped with detail.
type InvalidJobError struct {
	Kind string // the job kind (may be empty)
	ID   string // the job id, if one was set or made
	Err  error
}

// Error describes the failure.
func (e *InvalidJobError) Error() string {
	id := ""
	if e.ID != "" {
		id = fmt.Sprintf(" %q", e.ID)
	}
	return fmt.Sprintf("jobs: cannot enqueue %s job%s: %s", kindOrEmpty(e.Kind), id, strings.TrimPrefix(errString(e.Err), "jobs: "))
}

// Unwrap returns Err.
func (e *InvalidJobError) Unwrap() error { return e.Err }

// SendError reports a job SQS did not accept: either the call failed (Err is set) or the batch
// entry was reported failed (Code, Message and SenderFault are set).
type SendError struct {
	Kind        string
	ID          string
	QueueURL    string
	Code        string // SQS error code of a failed batch entry
	Message     string // SQS error message of a failed batch entry
	SenderFault bool   // SQS says the entry itself is at fault: it was not retried
	Err         error  // the call's error, when the whole call failed
}

// Error describes the failure.
func (e *SendError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("jobs: send %s job %q to %s: %v", e.Kind, e.ID, e.QueueURL, e.Err)
	}
	return fmt.Sprintf("jobs: send %s job %q to %s: %s: %s (sender fault: %t)", e.Kind, e.ID, e.QueueURL, e.Code, e.Message, e.SenderFault)
}

// Unwrap returns Err.
func (e *SendError) Unwrap() error { return e.Err }

// BatchError is returned by EnqueueBatch when some jobs were not enqueued. Each job's own error is
// in its EnqueueResult; Failed lists their indexes.
type BatchError struct {
	Failed []int   // indexes into the batch of the jobs not enqueued, ascending
	Errs   []error // their errors, in the same order
}

// Error describes the failure.
func (e *BatchError) Error() string {
	if len(e.Errs) == 0 {
		return "jobs: batch failed"
	}
	return fmt.Sprintf("jobs: %d job(s) of the batch not enqueued; first (index %d): %v", len(e.Failed), e.Failed[0], e.Errs[0])
}

// Unwrap returns the jobs' errors, for errors.Is and errors.As.
func (e *BatchError) Unwrap() []error { return e.Errs }

// ClientOptions configure a Client.
type ClientOptions struct {
	// DefaultQueueURL receives every kind not listed in Queues.
	DefaultQueueURL string
	// Queues routes kinds to queue URLs. A URL ending in ".fifo" is a FIFO queue.
	Queues map[string]string
	// LongDelayer delivers jobs delayed by more than MaxSQSDelay; nil refuses such delays with
	// ErrDelayTooLong. scheduler.Delayer implements it.
	LongDelayer LongDelayer
	// MaxRetries is how many times EnqueueBatch re-sends entries SQS reports failed (and not the
	// sender's fault) before giving up on them; 0 means 3, negative means none.
	MaxRetries int
	// RetryBackoff is the first delay before such a retry, doubled each time with full jitter;
	// 0 means 100 ms.
	RetryBackoff time.Duration
	// BatchConcurrency is how many SendMessageBatch calls EnqueueBatch has in flight at once for a
	// Standard queue; 0 means 4. FIFO queues are always sent one call at a time, in order.
	BatchConcurrency int
	// Now returns the current time (EnqueuedAt, At); nil means time.Now.
	Now func() time.Time
	// MaxMessageSizes holds, by queue URL, a queue's own MaximumMessageSize attribute when it is
	// below SQS's 1 MiB: a larger job is refused with ErrBodyTooLarge before any AWS call.
	MaxMessageSizes map[string]int
	// Lanes holds the priority lanes of queues: by the URL a kind is routed to (its default
	// lane), lane name → the lane's queue URL. EnqueueOpts.Priority picks one. The PriorityQueue
	// construct exports them.
	Lanes map[string]map[string]string
	// Backpressure, when set, refuses or slows enqueues onto queues whose backlog passed a
	// threshold (see Backpressure).
	Backpressure *Backpressure
	// State, when set, records every job sent as enqueued in the job state table (one write per
	// job), reserves EnqueueOpts.Unique keys and answers Status. jobs/state.Table implements it.
	State StateStore
	// Payloads, when set, stores jobs whose envelope is over its Threshold (default: what does
	// not fit in the queue's messages) in S3 and sends a pointer in the extended clients' format
	// (the claim check; see Payloads). Without it such jobs are refused with ErrBodyTooLarge.
	Payloads *Payloads
	// Tracer, when set, starts a span per job enqueued, whose trace the job carries to its
	// worker (jobs/jobotel.NewTracer: OpenTelemetry). Nil costs nothing.
	Tracer EnqueueTracer
}

// Client enqueues jobs onto SQS. It is safe for concurrent use.
type Client struct {
	api      SQSAPI
	opts     ClientOptions
	backlogs *backlogs // nil without Backpressure
}

// NewClient returns a Client that sends through api (an *sqs.Client, usually). It returns an
// error when opts route no kind anywhere, unless they set State: such a Client operates on jobs
// already sent (Status, Cancel, RetryNow), as an admin tool does, and sends none.
func NewClient(api SQSAPI, opts ClientOptions) (*Client, error) {
	if api == nil {
		return nil, errors.New("jobs: NewClient: nil SQS client")
	}
	if opts.DefaultQueueURL == "" && len(opts.Queues) == 0 && opts.State == nil {
		return nil, errors.New("jobs: NewClient: no DefaultQueueURL, no Queues and no State")
	}
	queues := make(map[string]string, len(opts.Queues))
	for k, v := range opts.Queues {
		if k == "" || v == "" {
			return nil, fmt.Errorf("jobs: NewClient: empty kind or queue URL in Queues (%q: %q)", k, v)
		}
		queues[k] = v
	}
	opts.Queues = queues
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 3
	} else if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = 100 * time.Millisecond
	}
	if opts.BatchConcurrency <= 0 {
		opts.BatchConcurrency = 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Payloads != nil {
		if err := opts.Payloads.validate(); err != nil {
			return nil, err
		}
	}
	c := &Client{api: api, opts: opts}
	if opts.Backpressure != nil {
		if err := opts.Backpressure.validate(); err != nil {
			return nil, err
		}
		c.backlogs = newBacklogs(*opts.Backpressure, opts.Now)
	}
	return c, nil
}

// EnqueueOpts shape one job. Nil means all defaults.
type EnqueueOpts struct {
	// ID is the job id; empty means a new ULID (NewID).
	ID string
	// Key is the idempotency key; empty means the id.
	Key string
	// GroupID is the FIFO message group id: required on FIFO queues, where the jobs of a group run
	// one at a time in order.
	GroupID string
	// DedupID is the FIFO deduplication id; empty means the job id, so sending the same job id
	// twice within SQS's 5-minute window enqueues it once.
	DedupID string
	// Delay postpones delivery. Up to MaxSQSDelay (15 min) it is SQS's DelaySeconds, rounded up
	// to whole seconds (Standard queues only); longer delays go to the LongDelayer.
	Delay time.Duration
	// At delivers the job at this time instead (the same rules as Delay); a past time means now.
	// Set Delay or At, not both.
	At time.Time
	// Queue overrides the queue URL the kind is routed to.
	Queue string
	// Trace is the W3C traceparent to carry to the worker; empty means the context's trace
	// (ContextWithTrace, or the job's own when enqueuing from a job), continued with a new parent
	// id, else a new trace. See ContextWithTrace.
	Trace string
	// Priority names a lane of the job's queue (ClientOptions.Lanes), e.g. "critical" or
	// "bulk"; empty means the queue itself (the default lane).
	Priority string
	// Unique, when set, makes the job unique by kind and key over a window (see UniqueOpts); it
	// needs ClientOptions.State.
	Unique *UniqueOpts
	// Batch is the fan-out batch the job is a member of; jobs/state's Batch.Add sets it.
	Batch string
}

// EnqueueResult is what happened to one job.
type EnqueueResult struct {
	ID             string    // the job id
	Kind           string    // the job kind
	QueueURL       string    // the queue it was routed to
	MessageID      string    // the SQS message id; empty when scheduled or failed
	SequenceNumber string    // FIFO sequence number
	Scheduled      bool      // handed to the LongDelayer, delivered at DeliverAt
	DeliverAt      time.Time // when it becomes visible to workers (zero: now)
	Err            error     // why it was not enqueued (EnqueueBatch only); nil on success
	// Duplicate: EnqueueOpts.Unique found the key held; nothing was sent and ID is the id of the
	// job that holds it.
	Duplicate bool
}

// BatchJob is one job of an EnqueueBatch.
type BatchJob struct {
	Args JobArgs
	Opts *EnqueueOpts
}

// Enqueue sends one job. Invalid input returns an *InvalidJobError before any AWS call; a failed
// send returns a *SendError.
func (c *Client) Enqueue(ctx context.Context, args JobArgs, opts *EnqueueOpts) (res EnqueueResult, err error) {
	p, err := c.prepare(ctx, args, opts)
	if err != nil {
		return EnqueueResult{ID: p.id, Kind: p.kind}, err
	}
	if p.endSpan != nil { // a Tracer's span: ended with the outcome
		defer func() { p.finish(res, err) }()
	}
	res = p.result()
	if c.opts.State != nil {
		dup, err := c.reserve(ctx, &p, &res)
		if err != nil || dup {
			return res, err
		}
	}
	if err := c.send(ctx, &p, &res); err != nil {
		c.notSent(ctx, []*prepared{&p})
		return res, err
	}
	return res, nil
}

// send sends one prepared job, or hands it to the LongDelayer.
func (c *Client) send(ctx context.Context, p *prepared, res *EnqueueResult) error {
	if p.scheduled {
		return c.schedule(ctx, p)
	}
	if err := c.admit(ctx, p.queue); err != nil {
		return err
	}
	if err := c.store(ctx, p); err != nil {
		return err
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(p.queue),
		MessageBody:       aws.String(p.body),
		MessageAttributes: p.attributes(),
	}
	if p.delaySeconds > 0 {
		in.DelaySeconds = p.delaySeconds
	}
	if p.fifo {
		in.MessageGroupId = aws.String(p.group)
		in.MessageDeduplicationId = aws.String(p.dedup)
	} else if p.group != "" {
		in.MessageGroupId = aws.String(p.group) // fair queues: a tenant id on a Standard queue
	}
	out, err := c.api.SendMessage(ctx, in)
	if err != nil {
		return &SendError{Kind: p.kind, ID: p.id, QueueURL: p.queue, Err: err}
	}
	res.MessageID = aws.ToString(out.MessageId)
	res.SequenceNumber = aws.ToString(out.SequenceNumber)
	return nil
}

// admit applies Backpressure to an enqueue onto queue: nil without it.
func (c *Client) admit(ctx context.Context, queue string) error {
	if c.backlogs == nil {
		return nil
	}
	return c.backlogs.admit(ctx, queue)
}

// CancelDelayed cancels a job handed to the LongDelayer (a delay over 15 minutes) by its id.
// Jobs already on a queue cannot be cancelled this way.
func (c *Client) CancelDelayed(ctx context.Context, id string) error {
	if c.opts.LongDelayer == nil {
		return ErrNoLongDelayer
	}
	if err := c.opts.LongDelayer.CancelJob(ctx, id); err != nil {
		return fmt.Errorf("jobs: cancel delayed job %q: %w", id, err)
	}
	if c.opts.State != nil {
		now := c.opts.Now().UTC()
		st := JobStatus{ID: id, State: StateCancelled, Since: now, FinishedAt: now, Reason: contract.ReasonCancelled, LastError: "cancelled before delivery (CancelDelayed)"}
		if err := c.opts.State.JobSettled(ctx, &JobRow{ID: id}, st); err != nil {
			return fmt.Errorf("jobs: delayed job %q cancelled, but its state was not recorded: %w", id, err)
		}
	}
	return nil
}

// QueueFor returns the queue URL a kind is routed to ("" when none).
func (c *Client) QueueFor(kind string) string {
	if q, ok := c.opts.Queues[kind]; ok {
		return q
	}
	return c.opts.DefaultQueueURL
}

// PreparedJob is a job checked and encoded for sending: as Client.Prepare returns it, what a
// transactional outbox stores and its forwarder sends (see package outbox); and what the Client
// hands a LongDelayer for a job more than MaxSQSDelay away.
type PreparedJob struct {
	ID       string // the job id
	Kind     string // the job kind
	Key      string // the idempotency key (EnqueueOpts.Key; empty: the id)
	Batch    string // the fan-out batch it belongs to, if any
	QueueURL string // the queue it is routed to
	Body     string // the envelope
	GroupID  string // the message group id (FIFO; on a Standard queue, a fair-queue tenant)
	DedupID  string // the FIFO deduplication id
	// EnqueuedAt is when the Client took the job (the envelope's enqueued_at).
	EnqueuedAt time.Time
	// DeliverAt is when the job becomes visible (zero: at once). From Prepare it is at most
	// MaxSQSDelay away, and the sender sets DelaySeconds to what is left of it; a LongDelayer
	// gets jobs further away.
	DeliverAt time.Time
	// PayloadSize, when not 0, says Body is a claim-check pointer to the envelope Prepare
	// stored in S3 (PayloadSize bytes): send it with MessageAttributes.
	PayloadSize int
}

// MessageAttributes returns the message attributes to send the job with: ExtendedPayloadSize
// for a claim check (what the extended clients look for), else nil. jobkit's runtime recognises
// a pointer by its body alone.
func (j PreparedJob) MessageAttributes() map[string]sqstypes.MessageAttributeValue {
	if j.PayloadSize == 0 {
		return nil
	}
	return payloadAttributes(j.PayloadSize)
}

// Prepare checks and encodes a job exactly as Enqueue does, without sending it; errors are the
// same *InvalidJobError values. A job delayed beyond MaxSQSDelay is refused (ErrDelayTooLong):
// only Enqueue hands those to the LongDelayer. It makes no AWS call, except for a job over the
// Payloads threshold: its envelope is stored in S3 here (a failure is a *SendError wrapping a
// *PayloadError) and Body is the pointer, with PayloadSize set. If the job is then never sent,
// the bucket's lifecycle rule removes the object.
func (c *Client) Prepare(ctx context.Context, args JobArgs, opts *EnqueueOpts) (_ PreparedJob, err error) {
	p, err := c.prepare(ctx, args, opts)
	if err != nil {
		return PreparedJob{ID: p.id, Kind: p.kind}, err
	}
	if p.endSpan != nil { // a Tracer's span: ended with the outcome
		defer func() { p.finish(p.result(), err) }()
	}
	if p.scheduled {
		return PreparedJob{ID: p.id, Kind: p.kind}, p.invalid(fmt.Errorf("%w: a prepared job goes to SQS, whose delays end at 15 minutes", ErrDelayTooLong))
	}
	if p.unique != nil {
		return PreparedJob{ID: p.id, Kind: p.kind}, p.invalid(fmt.Errorf("%w: a prepared job is sent by someone else, without the reservation", ErrUniquePrepared))
	}
	if err := c.store(ctx, &p); err != nil {
		return PreparedJob{ID: p.id, Kind: p.kind}, err
	}
	j := p.enqueued()
	j.Body, j.GroupID, j.PayloadSize = p.body, p.group, len(p.payload)
	if p.fifo {
		j.DedupID = p.dedup
	}
	return j, nil
}

// prepared is a validated, encoded job.
type prepared struct {
	id, kind, queue, group, dedup, body string
	key, batch                          string
	fifo, scheduled                     bool
	delaySeconds                        int32
	at                                  time.Time // delivery time when delayed
	now                                 time.Time // when it was prepared: its enqueued_at
	unique                              *UniqueOpts
	reserved                            bool // the unique key was reserved for this job

	endSpan func(EnqueueResult) // ends the Tracer's span (finish); nil without one

	// A claim check (see offload): the envelope, stored at pointer before the pointer body is sent.
	payload string
	pointer PayloadPointer
	stored  bool
}

func (p *prepared) result() EnqueueResult {
	return EnqueueResult{ID: p.id, Kind: p.kind, QueueURL: p.queue, Scheduled: p.scheduled, DeliverAt: p.at}
}

// prepare validates and encodes a job: every check happens here, before any AWS call. The steps:
// the kind, the route (queue, FIFO group, dedup id), the delay, then the id and the body.
func (c *Client) prepare(ctx context.Context, args JobArgs, opts *EnqueueOpts) (prepared, error) {
	return c.prepareEntry(ctx, args, opts, false)
}

// prepareEntry is prepare, for an entry of EnqueueBatch when batch is true. With a Tracer, a job
// that passes its route's checks has a span, which ends here if a later check fails.
func (c *Client) prepareEntry(ctx context.Context, args JobArgs, opts *EnqueueOpts, batch bool) (p prepared, err error) {
	defer func() {
		if err != nil {
			p.finish(EnqueueResult{ID: p.id, Kind: p.kind, QueueURL: p.queue}, err)
		}
	}()
	var o EnqueueOpts
	if opts != nil {
		o = *opts
	}
	p = prepared{id: o.ID}
	if args == nil {
		return p, &InvalidJobError{ID: p.id, Err: fmt.Errorf("%w: nil args", ErrEmptyKind)}
	}
	p.kind = args.Kind()
	if p.kind == "" {
		return p, &InvalidJobError{ID: p.id, Err: ErrEmptyKind}
	}
	if err := c.route(&p, &o); err != nil {
		return p, p.invalid(err)
	}
	if o.Trace != "" && !validTraceparent(o.Trace) {
		return p, p.invalid(fmt.Errorf("%w: %q", ErrInvalidTrace, o.Trace))
	}
	switch span := c.startSpan(ctx, &p, o.Trace, batch); {
	case span != "":
		o.Trace = span
	case o.Trace != "":
	case validTraceparent(TraceFromContext(ctx)):
		o.Trace = childTraceparent(TraceFromContext(ctx))
	default:
		o.Trace = newTraceparent()
	}
	if o.Unique != nil {
		if c.opts.State == nil {
			return p, p.invalid(ErrNoStateStore)
		}
		if err := o.Unique.check(); err != nil {
			return p, p.invalid(err)
		}
		u := *o.Unique
		p.unique = &u
	}
	p.key, p.batch = o.Key, o.Batch
	now := c.opts.Now()
	p.now = now
	if err := c.delivery(&p, &o, now); err != nil {
		return p, p.invalid(err)
	}
	if err := p.encode(args, &o, now); err != nil {
		return p, p.invalid(err)
	}
	if err := p.offload(c.opts.Payloads, c.maxMessageSize(p.queue)); err != nil {
		return p, p.invalid(err)
	}
	return p, nil
}

// invalid wraps err, the reason p cannot be enqueued, in an InvalidJobError.
func (p *prepared) invalid(err error) error {
	return &InvalidJobError{Kind: p.kind, ID: p.id, Err: err}
}

// route sets p's queue, and its message group and dedup id on a FIFO queue.
func (c *Client) route(p *prepared, o *EnqueueOpts) error {
	p.queue = o.Queue
	if p.queue == "" {
		p.queue = c.QueueFor(p.kind)
	}
	if p.queue == "" {
		return ErrNoQueue
	}
	if o.Priority != "" {
		lane, ok := c.opts.Lanes[p.queue][o.Priority]
		if !ok {
			return fmt.Errorf("%w: %q", ErrUnknownPriority, o.Priority)
		}
		p.queue = lane
	}
	p.fifo = awsarn.IsFIFO(p.queue)
	p.group = o.GroupID
	if p.group != "" && !validMessageID(p.group) {
		return fmt.Errorf("%w: %q", ErrInvalidGroupID, p.group)
	}
	if p.fifo {
		if p.group == "" {
			return ErrGroupRequired
		}
		p.dedup = o.DedupID // the job id when empty, set once the id is known
	} else if o.DedupID != "" {
		return ErrDedupOnStandard
	}
	return nil
}

// delivery sets when p is delivered: an SQS delay up to MaxSQSDelay, a one-time schedule beyond.
func (c *Client) delivery(p *prepared, o *EnqueueOpts, now time.Time) error {
	var delay time.Duration
	switch {
	case o.Delay < 0:
		return fmt.Errorf("%w: negative delay %s", ErrInvalidDelay, o.Delay)
	case o.Delay > 0 && !o.At.IsZero():
		return fmt.Errorf("%w: both Delay and At are set", ErrInvalidDelay)
	case o.Delay > 0:
		delay = o.Delay
	case !o.At.IsZero():
		delay = max(o.At.Sub(now), 0)
	}
	if delay <= 0 {
		return nil
	}
	p.at = now.Add(delay)
	switch {
	case delay > MaxSQSDelay:
		if c.opts.LongDelayer == nil {
			return fmt.Errorf("%w: delay %s", ErrDelayTooLong, delay)
		}
		if o.DedupID != "" {
			return fmt.Errorf("%w: delay %s", ErrDedupScheduled, delay)
		}
		p.scheduled = true
	case p.fifo:
		return fmt.Errorf("%w: delay %s on %s", ErrDelayOnFIFO, delay, awsarn.QueueName(p.queue))
	default:
		// Round up: never deliver early.
		p.delaySeconds = int32((delay + time.Second - 1) / time.Second)
	}
	return nil
}

// maxMessageSize is the largest body queue takes: MaxMessageSize, or the queue's own smaller
// MaximumMessageSize from ClientOptions.MaxMessageSizes.
func (c *Client) maxMessageSize(queue string) int {
	if n, ok := c.opts.MaxMessageSizes[queue]; ok && n > 0 && n < MaxMessageSize {
		return n
	}
	return MaxMessageSize
}

// encode gives p its id (a new one unless set) and FIFO dedup id, and its body: the envelope of
// args, enqueued now (offload then checks its size).
func (p *prepared) encode(args JobArgs, o *EnqueueOpts, now time.Time) error {
	if p.id == "" {
		p.id = NewID() // only for a job that passed the checks before
	}
	if p.fifo && !p.scheduled {
		p.dedup = cmp.Or(p.dedup, p.id)
		if !validMessageID(p.dedup) {
			return fmt.Errorf("%w: %q (the job id unless EnqueueOpts.DedupID is set)", ErrInvalidDedupID, p.dedup)
		}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEncodeArgs, err)
	}
	body, err := json.Marshal(&Envelope{
		V:          EnvelopeVersion,
		ID:         p.id,
		Kind:       p.kind,
		Args:       raw,
		EnqueuedAt: now.UTC().Truncate(time.Millisecond),
		Key:        o.Key,
		Trace:      o.Trace,
		Batch:      o.Batch,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEncodeArgs, err)
	}
	p.body = string(body)
	return nil
}

// validMessageID reports whether s is a valid FIFO message group or deduplication id: 1 to 128
// characters, each an ASCII letter, digit or punctuation mark.
func validMessageID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '!' || c > '~' { // printable ASCII without space: letters, digits, punctuation
			return false
		}
	}
	return true
}

func (c *Client) schedule(ctx context.Context, p *prepared) error {
	err := c.opts.LongDelayer.ScheduleJob(ctx, PreparedJob{
		ID: p.id, Kind: p.kind, Body: p.body, QueueURL: p.queue, GroupID: p.group, DeliverAt: p.at,
	})
	if err != nil {
		return fmt.Errorf("jobs: schedule %s job %q for %s: %w", p.kind, p.id, p.at.Format(time.RFC3339), err)
	}
	return nil
}

func kindOrEmpty(kind string) string {
	if strings.TrimSpace(kind) == "" {
		return "(no kind)"
	}
	return kind
}
