package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/jobkit-go/jobkit/jobs/jobctx"
)

// JobState is where a job is in its life, as the job state table records it.
type JobState string

// Job states.
const (
	StateEnqueued  JobState = "enqueued"  // sent (or scheduled), not yet run
	StateRunning   JobState = "running"   // an attempt is running (Attempt, Since)
	StateRetrying  JobState = "retrying"  // an attempt failed; the next is due at NextAttemptAt (LastError)
	StateSucceeded JobState = "succeeded" // done (FinishedAt, Result)
	StateDead      JobState = "dead"      // dead-lettered (Reason, LastError)
	StateCancelled JobState = "cancelled" // the worker returned Cancel, or the delayed job was cancelled
)

// JobStatus is what the job state table knows about one job.
type JobStatus struct {
	ID            string          `json:"id"`
	Kind          string          `json:"kind,omitempty"`
	State         JobState        `json:"state"`
	Queue         string          `json:"queue,omitempty"`
	Batch         string          `json:"batch,omitempty"`          // the fan-out batch the job belongs to
	Attempt       int             `json:"attempt,omitempty"`        // the attempt running, or the last one
	EnqueuedAt    time.Time       `json:"enqueued_at,omitzero"`     // when the producer sent it
	DeliverAt     time.Time       `json:"deliver_at,omitzero"`      // delayed jobs: when it becomes visible
	Since         time.Time       `json:"since,omitzero"`           // when the current state began
	NextAttemptAt time.Time       `json:"next_attempt_at,omitzero"` // retrying: when the next attempt is due
	FinishedAt    time.Time       `json:"finished_at,omitzero"`     // succeeded, dead, cancelled
	LastError     string          `json:"last_error,omitempty"`     // retrying, dead, cancelled
	Reason        string          `json:"reason,omitempty"`         // dead, cancelled: the dead-letter reason
	Result        json.RawMessage `json:"result,omitempty"`         // succeeded: what the worker set with SetResult
	DuplicateOf   string          `json:"duplicate_of,omitempty"`   // succeeded (or cancelled) as a duplicate of this job (same idempotency key)
	Progress      *Progress       `json:"progress,omitempty"`       // running: what it last reported (ReportProgress)
	// Receipt is the receipt handle of the delivery a retrying job waits out its backoff on
	// (Client.RetryNow makes that message visible). Never printed.
	Receipt string `json:"-"`
}

// Parked reports whether the job was handed to a LongDelayer: delayed more than MaxSQSDelay.
func (s JobStatus) Parked() bool {
	return !s.DeliverAt.IsZero() && s.DeliverAt.Sub(s.EnqueuedAt) > MaxSQSDelay
}

// StateStore keeps job states, unique keys and batch membership: package jobs/state implements
// it on the jobkit state table (DynamoDB). A Client with ClientOptions.State records each job it
// sends, honours EnqueueOpts.Unique and answers Status; the runtime with Config.States records
// retries and dead letters.
type StateStore interface {
	// JobsEnqueued records jobs as enqueued (their id, kind, key, queue, batch and times); the
	// Client calls it before sending them.
	JobsEnqueued(ctx context.Context, jobs []PreparedJob) error
	// JobsNotSent forgets jobs JobsEnqueued recorded that the Client then failed to send.
	JobsNotSent(ctx context.Context, ids []string) error
	// ReserveUnique reserves the unique key of kind for job id until until. It returns the id of
	// the job that holds the key: id itself when the reservation is new.
	ReserveUnique(ctx context.Context, kind, key, id string, until, now time.Time) (holder string, err error)
	// ReleaseUnique gives up id's reservation of the key (its job was not sent).
	ReleaseUnique(ctx context.Context, kind, key, id string) error
	// JobStatus returns the status of job id, or an error wrapping ErrJobNotFound.
	JobStatus(ctx context.Context, id string) (JobStatus, error)
	// JobSettled records a failed attempt's outcome: StateRetrying, StateDead or StateCancelled
	// (the runtime calls it; a dead job's batch is told before the dead-letter send).
	JobSettled(ctx context.Context, row *JobRow, st JobStatus) error
	// CancelJob cancels job id before any delivery runs it (Client.Cancel) and returns its
	// status: cancelled (now, or already), or the state that no longer allows it with an
	// *NotCancellableError.
	CancelJob(ctx context.Context, id, note string) (JobStatus, error)
	// JobRetryNow moves retrying job id's next attempt to now, on the condition that it still
	// waits on the delivery whose receipt is given (the receipt is then forgotten), and returns
	// an error matching ErrNotWaiting otherwise (Client.RetryNow).
	JobRetryNow(ctx context.Context, id, receipt string, now time.Time) error
}

// NotCancellableError is returned by Client.Cancel for a job that has started, succeeded or died:
// Status says which. HeldBy names another job that holds the same idempotency key, running or
// succeeded, when it is that job that stands in the way.
type NotCancellableError struct {
	Status JobStatus
	HeldBy string
}

func (e *NotCancellableError) Error() string {
	st := e.Status
	if e.HeldBy != "" {
		return fmt.Sprintf("jobs: job %s shares its idempotency key with job %s, which is %s: it can no longer be cancelled", st.ID, e.HeldBy, st.State)
	}
	switch st.State {
	case StateRunning:
		return fmt.Sprintf("jobs: job %s is running (attempt %d, since %s): it can no longer be cancelled", st.ID, st.Attempt, st.Since.UTC().Format(time.RFC3339))
	case StateSucceeded:
		if st.DuplicateOf != "" {
			return fmt.Sprintf("jobs: job %s already succeeded as a duplicate of job %s: nothing to cancel", st.ID, st.DuplicateOf)
		}
		return fmt.Sprintf("jobs: job %s already succeeded (%s): nothing to cancel", st.ID, st.FinishedAt.UTC().Format(time.RFC3339))
	}
	if st.State == StateCancelled {
		return fmt.Sprintf("jobs: job %s was cancelled by its worker and dead-lettered (reason %s): redrive it to run it again", st.ID, st.Reason)
	}
	return fmt.Sprintf("jobs: job %s is %s: nothing to cancel", st.ID, st.State)
}

// ErrJobNotFound: the job state table holds no state for the job (never enqueued through a Client
// with a StateStore, or expired).
var ErrJobNotFound = errors.New("jobs: no state recorded for the job")

// ErrNoStateStore is returned by Status, and for EnqueueOpts.Unique, on a Client without
// ClientOptions.State.
var ErrNoStateStore = errors.New("jobs: the client has no StateStore (ClientOptions.State)")

// Errors about unique jobs, returned (in an *InvalidJobError) before any AWS call.
var (
	ErrInvalidUnique = errors.New("jobs: invalid unique options (a key of 1-512 bytes and a positive window)")
	// ErrUniquePrepared: Client.Prepare (the outbox) cannot honour Unique: the job is sent by
	// the forwarder, without the reservation.
	ErrUniquePrepared = errors.New("jobs: a prepared job cannot be unique (the outbox sends it without the reservation)")
)

// UniqueOpts make a job unique by key over a window, like river's UniqueOpts: a second enqueue of
// the same kind and key inside the window sends nothing and returns the first job's id, with
// EnqueueResult.Duplicate set. The key is reserved with a conditional write in the state table,
// so it holds across producers, on Standard and FIFO queues, and for delayed jobs alike.
type UniqueOpts struct {
	Key    string        // the uniqueness key (with the kind); 1-512 bytes
	Window time.Duration // how long the key holds from the first enqueue; > 0
	// UntilDone also frees the key as soon as the job holding it has ended (succeeded, dead or
	// cancelled): the job is unique while it is queued or running, as river's unique-by-state
	// jobs are, and the window bounds it still. It costs nothing while the key is free: an
	// enqueue that finds it held reads the holder's state (two reads) and, when that job has
	// ended, takes the key over (a conditional delete and put).
	UntilDone bool
}

// maxUniqueKey is the longest UniqueOpts.Key.
const maxUniqueKey = 512

func (u *UniqueOpts) check() error {
	if u.Key == "" || len(u.Key) > maxUniqueKey || u.Window <= 0 {
		return fmt.Errorf("%w: key %d bytes, window %s", ErrInvalidUnique, len(u.Key), u.Window)
	}
	return nil
}

// Status returns the state of job id from the job state table.
func (c *Client) Status(ctx context.Context, id string) (JobStatus, error) {
	if c.opts.State == nil {
		return JobStatus{}, ErrNoStateStore
	}
	if id == "" {
		return JobStatus{}, errors.New("jobs: Status: empty job id")
	}
	return c.opts.State.JobStatus(ctx, id)
}

// Cancel cancels job id so that it never runs, whatever its delay: on a queue (waiting, delayed
// or retrying after a failure, Standard or FIFO) or parked with the LongDelayer. It needs
// ClientOptions.State, and workers that run jobs/state's Middleware or the idempotency
// middleware with its records in the state table (as the constructs wire them): the
// cancellation is an idempotency record of the job's key that the next delivery's claim finds
// — the worker adds no call for it — so that delivery deletes the
// message unrun (ErrCancelled: the outcome is cancelled, never a dead letter, and a FIFO group
// moves on). A job parked with the LongDelayer also loses its schedule. Cancel returns the job's
// status, cancelled; repeated, it returns the same (FinishedAt says when). A job that has started,
// succeeded or died is not cancelled: the error is a *NotCancellableError with its status. A job
// sharing its idempotency key with others (EnqueueOpts.Key) cancels the key: its duplicates are
// not run either, as they would have been skipped after it ran.
//
// Cost: a GetItem and a PutItem of the state table, an UpdateItem of the job's item (a
// transaction, for a fan-out member, which counts it in its batch), and a DeleteSchedule for a
// parked job.
func (c *Client) Cancel(ctx context.Context, id string) (JobStatus, error) {
	if c.opts.State == nil {
		return JobStatus{}, ErrNoStateStore
	}
	if id == "" {
		return JobStatus{}, errors.New("jobs: Cancel: empty job id")
	}
	st, err := c.opts.State.CancelJob(ctx, id, "cancelled before it ran (Client.Cancel)")
	if err != nil {
		return st, err
	}
	if c.opts.LongDelayer != nil && st.Parked() {
		// Parked: its schedule would deliver it only to be deleted unrun.
		if err := c.opts.LongDelayer.CancelJob(ctx, id); err != nil && !errors.Is(err, ErrNoSchedule) {
			return st, fmt.Errorf("jobs: job %q cancelled; its schedule was not deleted (it will be delivered and deleted unrun): %w", id, err)
		}
	}
	return st, nil
}

// ErrNotWaiting is matched (errors.Is) by RetryNow's error for a job that is not waiting out a
// backoff: not retrying, or its message already received again.
var ErrNotWaiting = errors.New("jobs: the job is not waiting for a retry")

// RetryNow ends the backoff of job id, retrying after a failed attempt (or snoozed): its message
// becomes visible now, and the next receive runs it. It needs ClientOptions.State and workers
// with Config.States: the runtime records the delivery's receipt handle with the retrying state
// (in the write it makes anyway), and RetryNow moves the job's next attempt to now, on the
// condition that it still waits on that delivery, then sets the message's visibility to 0 (the
// status's reads — two with an idempotency record —, a conditional UpdateItem, a
// ChangeMessageVisibility). A job that is
// not retrying, or whose message was received again since, gets an error matching
// ErrNotWaiting; repeated, RetryNow says so.
func (c *Client) RetryNow(ctx context.Context, id string) (JobStatus, error) {
	if c.opts.State == nil {
		return JobStatus{}, ErrNoStateStore
	}
	if id == "" {
		return JobStatus{}, errors.New("jobs: RetryNow: empty job id")
	}
	st, err := c.opts.State.JobStatus(ctx, id)
	if err != nil {
		return st, err
	}
	now := c.opts.Now().UTC()
	switch {
	case st.State != StateRetrying:
		return st, fmt.Errorf("%w: job %s is %s", ErrNotWaiting, id, st.State)
	case st.Receipt == "" || st.Queue == "":
		return st, fmt.Errorf("%w: job %s is retrying, but no receipt was recorded (a worker without Config.States)", ErrNotWaiting, id)
	case !st.NextAttemptAt.After(now):
		return st, fmt.Errorf("%w: job %s was due at %s: its retry is not waiting", ErrNotWaiting, id, st.NextAttemptAt.Format(time.RFC3339))
	}
	// First the state, on the condition that the job still waits on this delivery: a run that
	// starts after the visibility change then records its own state over it, never under it.
	if err := c.opts.State.JobRetryNow(ctx, id, st.Receipt, now); err != nil {
		return st, err
	}
	_, err = c.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(st.Queue), ReceiptHandle: aws.String(st.Receipt), VisibilityTimeout: 0})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && messageLost(ae.ErrorCode(), ae.ErrorMessage()) {
			return st, fmt.Errorf("%w: job %s's message was received again (or deleted) since its retry was recorded", ErrNotWaiting, id)
		}
		return st, fmt.Errorf("jobs: retry job %s now: %w", id, err)
	}
	st.NextAttemptAt, st.Receipt = now, ""
	return st, nil
}

// maxResultSize is the largest result SetResult keeps (its JSON): results share the job's state
// item, which DynamoDB bills per KiB.
const maxResultSize = 1024

// ErrResultTooLarge is returned by SetResult for a result whose JSON exceeds maxResultSize.
var ErrResultTooLarge = fmt.Errorf("jobs: a job result is at most %d bytes of JSON", maxResultSize)

// ErrNoResultSlot is returned by SetResult outside a job run by a middleware that records results
// (idempotency.Middleware with RecordJobs, or jobs/state's middleware).
var ErrNoResultSlot = errors.New("jobs: no job result is recorded here (SetResult outside a job with job states)")

// SetResult records v (encoded as JSON, at most maxResultSize bytes) as the running job's result:
// Client.Status shows it once the job has succeeded. The last call wins.
func SetResult(ctx context.Context, v any) error {
	s := jobctx.Result(ctx)
	if s == nil {
		return ErrNoResultSlot
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("jobs: SetResult: %w", err)
	}
	if len(raw) > maxResultSize {
		return fmt.Errorf("%w: %d bytes", ErrResultTooLarge, len(raw))
	}
	s.Set(raw)
	return nil
}

// enqueued is p as the state table records it.
func (p *prepared) enqueued() PreparedJob {
	return PreparedJob{ID: p.id, Kind: p.kind, Key: p.key, QueueURL: p.queue, Batch: p.batch, EnqueuedAt: p.now, DeliverAt: p.at}
}

// reserve reserves p's unique key, if any, and records p as enqueued. dup reports a unique key
// held by another job: res then names that job and nothing is to be sent.
func (c *Client) reserve(ctx context.Context, p *prepared, res *EnqueueResult) (dup bool, err error) {
	if dup, err := c.reserveUnique(ctx, p, res); err != nil || dup {
		return dup, err
	}
	if err := c.opts.State.JobsEnqueued(ctx, []PreparedJob{p.enqueued()}); err != nil {
		c.releaseUnique(ctx, p)
		return false, &SendError{Kind: p.kind, ID: p.id, QueueURL: p.queue, Err: fmt.Errorf("record job state: %w", err)}
	}
	return false, nil
}

// takeOverUnique frees a unique key whose holder has ended (UniqueOpts.UntilDone) and reserves it
// again; it returns the key's holder then (another producer's job may have taken it first).
func (c *Client) takeOverUnique(ctx context.Context, p *prepared, holder string) (string, error) {
	st, err := c.opts.State.JobStatus(ctx, holder)
	switch {
	case errors.Is(err, ErrJobNotFound):
		// Not recorded yet (its producer reserves the key, then records the job) or expired: it
		// holds the key until the window ends.
		return holder, nil
	case err != nil:
		return "", fmt.Errorf("read the state of job %s, which holds the key: %w", holder, err)
	case st.State != StateSucceeded && st.State != StateDead && st.State != StateCancelled:
		return holder, nil // queued or running
	}
	if err := c.opts.State.ReleaseUnique(ctx, p.kind, p.unique.Key, holder); err != nil {
		return "", fmt.Errorf("free the key of job %s, which has ended: %w", holder, err)
	}
	return c.opts.State.ReserveUnique(ctx, p.kind, p.unique.Key, p.id, p.now.Add(p.unique.Window), p.now)
}

// reserveUnique reserves p's unique key, if it has one. dup reports the key held by another job:
// res then names that job.
func (c *Client) reserveUnique(ctx context.Context, p *prepared, res *EnqueueResult) (dup bool, err error) {
	if p.unique == nil {
		return false, nil
	}
	holder, err := c.opts.State.ReserveUnique(ctx, p.kind, p.unique.Key, p.id, p.now.Add(p.unique.Window), p.now)
	if err == nil && holder != p.id && p.unique.UntilDone {
		holder, err = c.takeOverUnique(ctx, p, holder)
	}
	if err != nil {
		return false, &SendError{Kind: p.kind, ID: p.id, QueueURL: p.queue, Err: fmt.Errorf("reserve unique key: %w", err)}
	}
	if holder != p.id {
		res.ID, res.Duplicate, res.Scheduled, res.DeliverAt = holder, true, false, time.Time{}
		return true, nil
	}
	p.reserved = true
	return false, nil
}

// recordBatch reserves the unique keys of an EnqueueBatch's jobs, in input order, and records
// the jobs as enqueued. It returns which jobs are to be sent: not a duplicate (its result says
// whose), not one whose key could not be reserved (its result carries the error). When the
// record fails, every job to be sent carries the error, its key is released, and none is sent.
func (c *Client) recordBatch(ctx context.Context, preps []prepared, results []EnqueueResult) (send []bool) {
	send = make([]bool, len(preps))
	var list []PreparedJob
	for i := range preps {
		dup, err := c.reserveUnique(ctx, &preps[i], &results[i])
		if err != nil {
			results[i].Err = err
		}
		if send[i] = err == nil && !dup; send[i] {
			list = append(list, preps[i].enqueued())
		}
	}
	if len(list) == 0 {
		return send
	}
	if err := c.opts.State.JobsEnqueued(ctx, list); err != nil {
		for i := range preps {
			if send[i] {
				results[i].Err = &SendError{Kind: preps[i].kind, ID: preps[i].id, QueueURL: preps[i].queue, Err: fmt.Errorf("record job state: %w", err)}
				c.releaseUnique(ctx, &preps[i])
				send[i] = false
			}
		}
	}
	return send
}

// notSent forgets the states and unique keys of jobs that were not sent. It is best effort: a job
// left "enqueued" that was never sent is the one inaccuracy a failure here leaves.
func (c *Client) notSent(ctx context.Context, ps []*prepared) {
	if c.opts.State == nil || len(ps) == 0 {
		return
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.id
		c.releaseUnique(ctx, p)
	}
	_ = c.opts.State.JobsNotSent(context.WithoutCancel(ctx), ids)
}

func (c *Client) releaseUnique(ctx context.Context, p *prepared) {
	if p.reserved {
		_ = c.opts.State.ReleaseUnique(context.WithoutCancel(ctx), p.kind, p.unique.Key, p.id)
		p.reserved = false
	}
}

// recordState records a failed attempt's outcome in Config.States, if set. A retry's failure to
// record is logged and ignored (the state catches up on the next attempt); the caller decides
// what a dead job's failure means.
func (b *batch) recordState(r *record, state JobState, reason string, jobErr error) error {
	st := b.h.cfg.States
	if st == nil || r.row.ID == "" {
		return nil
	}
	now := time.Now().UTC()
	js := JobStatus{
		ID: r.row.ID, Kind: r.row.Kind, State: state, Queue: r.row.QueueURL, Batch: r.row.Batch,
		Attempt: r.row.Attempt, Since: now, Reason: reason,
	}
	if jobErr != nil {
		js.LastError = truncateUTF8(errString(jobErr), maxStateError)
	}
	if state == StateRetrying {
		js.NextAttemptAt = now.Add(r.delay)
		js.Receipt = r.msg.ReceiptHandle
	} else {
		js.FinishedAt = now
	}
	err := st.JobSettled(b.post(), &r.row, js)
	if err != nil && state == StateRetrying {
		b.logRecord(slog.LevelWarn, r, "job state not recorded", err)
	}
	return err
}

// maxStateError is the most of an error's text a job state keeps.
const maxStateError = 1024
