package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

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
		DelaySeconds:      p.delaySeconds,
	}
	in.MessageGroupId, in.MessageDeduplicationId = p.groupAndDedup()
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
