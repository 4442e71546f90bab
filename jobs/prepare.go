package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

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

// groupAndDedup returns the message group and deduplication ids p is sent with: both on a FIFO
// queue; on a Standard queue the group alone when p has one (fair queues: a tenant id), else
// neither.
func (p *prepared) groupAndDedup() (group, dedup *string) {
	switch {
	case p.fifo:
		return aws.String(p.group), aws.String(p.dedup)
	case p.group != "":
		return aws.String(p.group), nil
	}
	return nil, nil
}
