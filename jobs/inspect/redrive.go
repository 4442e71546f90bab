package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RedriveMethod is how Redrive moves messages.
type RedriveMethod string

// Redrive methods.
const (
	// RedriveAuto uses RedriveNative when no filter is set, the queues are Standard queues and the
	// endpoint implements StartMessageMoveTask, and RedriveManual otherwise (see
	// RedriveResult.FallbackReason).
	RedriveAuto RedriveMethod = ""
	// RedriveNative starts an SQS message move task (StartMessageMoveTask) and follows it with
	// ListMessageMoveTasks until it ends. SQS moves the messages itself. Refused on FIFO queues
	// (ErrNativeFIFO).
	RedriveNative RedriveMethod = "native"
	// RedriveManual moves messages with receive → send → delete (see Inspector.Redrive).
	RedriveManual RedriveMethod = "manual"
)

// ErrNativeUnsupported: the endpoint does not implement StartMessageMoveTask (the offline
// emulator, for one). RedriveAuto falls back to the manual move on it.
var ErrNativeUnsupported = errors.New("inspect: the endpoint does not support StartMessageMoveTask")

// DefaultRedriveConcurrency is the number of manual-move workers when RedriveOptions leaves it 0.
const DefaultRedriveConcurrency = 4

// redriveBatch is the number of messages one manual-move worker handles at a time (the SQS batch limit).
const redriveBatch = 10

// batchBytes caps the payload of one SendMessageBatch call (the long-standing SQS limit; newer
// limits are larger).
const batchBytes = 256 * 1024

// RedriveOptions tunes Redrive; nil means defaults.
type RedriveOptions struct {
	Method RedriveMethod

	// To sends every message to this queue URL, whatever the message says. The caller (an
	// operator's --to) vouches for it: it is not checked against the DLQ's source queues.
	To string
	// Source is the queue URL for messages that do not name their source queue
	// (contract.AttrSourceQueue). Empty means the one queue whose RedrivePolicy targets the DLQ, if
	// there is exactly one. The caller vouches for it: a message naming it is sent there.
	Source string
	// Sources are more queue URLs a message's contract.AttrSourceQueue may name, besides Source and
	// the queues ListDeadLetterSourceQueues returns for the DLQ: the deployed stack's queues that
	// use this DLQ, for one. See Inspector.Redrive.
	Sources []string

	// Filter selects the messages to move (manual method only; the rest stay in the DLQ).
	Filter Filter

	// Concurrency is the number of manual-move workers; 0 means DefaultRedriveConcurrency. Each
	// moves at most 10 messages at a time, so at most 10 × Concurrency messages are ever sent and
	// not yet deleted: the in-flight window (see RedriveOptions.Window).
	Concurrency int
	// Visibility is the visibility timeout of messages the manual move receives; a message whose
	// move is interrupted returns to the DLQ after it. 0 means 30 s.
	Visibility time.Duration
	// InFlightWait is how long the manual move waits, once the DLQ looks empty, for messages that
	// are in flight on it (an interrupted redrive's, a listing's) to come back so it can move them
	// too. 0 means Visibility + 15 s; negative means do not wait.
	InFlightWait time.Duration

	// MaxPerSecond caps a native move task's rate (MaxNumberOfMessagesPerSecond, ≤ 500); 0 lets SQS choose.
	MaxPerSecond int32
	// PollInterval is how often a native move task's progress is read; 0 means 2 s.
	PollInterval time.Duration

	// Progress, if set, is called after every batch (manual) or poll (native), never concurrently.
	Progress func(RedriveProgress)
}

// Window returns the manual move's in-flight window: the most messages that can be sent to their
// queue and not yet deleted from the DLQ at any moment (10 × Concurrency). A redrive killed
// outright (no chance to finish its batches) leaves at most this many messages that the next run
// sends a second time.
func (o *RedriveOptions) Window() int {
	c := DefaultRedriveConcurrency
	if o != nil && o.Concurrency > 0 {
		c = o.Concurrency
	}
	return redriveBatch * c
}

// RedriveProgress reports a redrive as it runs.
type RedriveProgress struct {
	Method  RedriveMethod
	Total   int64 // messages in the DLQ when the redrive began (approximate)
	Moved   int64 // sent to their queue and deleted from the DLQ
	Skipped int64 // left in the DLQ: filtered out, no destination, or came back during the run
	Failed  int64 // sends that failed so far (they stay in the DLQ)
	// InFlight is the number of messages sent and not yet deleted right now (manual).
	InFlight int
}

// RedriveResult is the outcome of a redrive.
type RedriveResult struct {
	Method RedriveMethod
	// FallbackReason says why RedriveAuto used the manual move ("" otherwise): a filter, a FIFO
	// queue, or an endpoint without StartMessageMoveTask.
	FallbackReason string
	// TaskHandle identifies the native move task.
	TaskHandle string
	// Total is the number of messages in the DLQ when the redrive began (approximate).
	Total int64
	// Moved messages were sent to their queue and deleted from the DLQ.
	Moved int64
	// Skipped messages stayed in the DLQ because the filter did not select them.
	Skipped int64
	// NoDestination messages stayed in the DLQ because they have no valid destination: their
	// contract.AttrSourceQueue names a queue that is not one of the DLQ's source queues (a forged or
	// stale attribute), or they name none and no Source applies.
	NoDestination int64
	// Returned messages are jobs this run had already moved that failed again and came back to the
	// DLQ while it ran; they stay there (moving them again would loop).
	Returned int64
	// Failed messages could not be sent; they stay in the DLQ.
	Failed int64
	// Unconfirmed messages were sent but their delete from the DLQ failed: they are still in the DLQ,
	// and the next redrive sends them again (a duplicate each; job ids keep them idempotent).
	Unconfirmed int64
	// LeftInFlight is the number of messages that were in flight on the DLQ at the end (held by
	// another reader or an interrupted run) and so not moved; run the redrive again for them.
	LeftInFlight int64
	// PossibleDuplicates counts messages whose send got no clear answer the first time (a
	// connection error, a timeout, a 5xx, a 200 whose body was lost) and was made again, by the SDK's retry or a later pass:
	// SQS may hold them twice. Like any SQS Standard queue delivery, the job id keeps them
	// idempotent.
	PossibleDuplicates int64
	// Window is the manual move's in-flight window (RedriveOptions.Window).
	Window int

	// Remaining is what is still in the dead-letter queue once the move ended: its depth
	// (visible, in flight and delayed; approximate, as SQS's counts are), read after the move.
	// It is set when the redrive returns no error.
	Remaining int64
	// RemainingReason says why Remaining messages are still in the DLQ, as far as the counts
	// above do not (Skipped, NoDestination, Returned, Failed, Unconfirmed, LeftInFlight): for a
	// native move, all of them. "" when nothing is left unexplained.
	RemainingReason string
}

// Redrive moves dead jobs from the dead-letter queue back to the queue they came from.
//
// Native method: one StartMessageMoveTask (destination: To, else Source, else the DLQ's one source
// queue, else the messages' original source as SQS knows it), followed to its end. Then the DLQ's
// depth is read: RedriveResult.Remaining says what the task left there and RemainingReason why.
// A native move sends a message on with its deduplication id, so on FIFO queues SQS may drop a
// job redriven within 5 minutes of its send: RedriveNative is refused there (ErrNativeFIFO, before
// anything moves), and RedriveAuto uses the manual move.
//
// Manual method — what RedriveAuto falls back to where the endpoint lacks StartMessageMoveTask, and
// what filters and FIFO queues need. Workers receive up to 10 messages each with the Visibility
// timeout, send each to its queue (To, else the contract.AttrSourceQueue attribute, else Source) with
// SendMessageBatch, and only then delete the sent ones from the DLQ. Its counts say what it left
// in the DLQ and why; Remaining, read at the end, adds what arrived meanwhile.
//
// A message's attribute is data from whoever could send to the DLQ, so it only picks among the
// queues the caller trusts: those ListDeadLetterSourceQueues returns for the DLQ (the queues whose
// RedrivePolicy targets it), Source and Sources. The message goes to that queue's trusted URL
// (queues are matched by account and name, as one queue has several URL spellings). A message
// naming any other queue is left in the DLQ and counted in RedriveResult.NoDestination. To, set by
// the caller, is not checked. So:
//   - an interruption never loses a message: one not yet sent is still in the DLQ (visible again
//     after Visibility), and one sent is in its queue;
//   - a run sends each DLQ message at most once: it remembers what it sent and what it is sending,
//     so a message that comes back (its delete failed, or its visibility ran out mid-move) is
//     deleted or left alone, not sent again — except after a send that got no clear answer (a
//     connection error, a timeout, a 5xx, a 200 whose body was lost: it may have gone through),
//     which is made again and counted in RedriveResult.PossibleDuplicates;
//   - a run killed outright leaves at most Window() messages sent but not deleted; the next run
//     sends those again, so each may arrive twice — never more, unless it is caught that way by a
//     second kill too. The envelope id keeps a duplicated job idempotent. A cancelled ctx
//     (Ctrl-C) instead lets every batch in progress finish its send and delete: no duplicates.
//
// On FIFO queues a message keeps its message group id, and its deduplication id is derived from the
// envelope id and the DLQ message id ("<job id>:redrive:<message id>", hashed when too long): a
// second send of the same dead message within SQS's 5-minute deduplication window is dropped by
// SQS, and the id differs from the producer's (the bare job id), so SQS never mistakes the redriven
// job for the original enqueue and drops it. Order within a group is kept: a worker holds a group's
// messages until they are deleted, so the next ones of the group are received only after them.
// A filtered-out message stays in flight until the run ends, which holds back the rest of its group.
//
// Messages the jobs runtime dead-letters carry no other message attributes than jobkit's; any
// non-jobkit attributes are carried over, jobkit's dead-letter attributes are not.
func (i *Inspector) Redrive(ctx context.Context, dlqURL string, opts *RedriveOptions) (*RedriveResult, error) {
	o := redriveDefaults(opts)
	if o.To == dlqURL && dlqURL != "" {
		return nil, fmt.Errorf("inspect: redrive: the destination is the dead-letter queue itself")
	}
	start, err := i.Depth(ctx, dlqURL)
	if err != nil {
		return nil, err
	}
	res := &RedriveResult{Total: start.Visible + start.InFlight, Window: o.Window()}
	allowed, err := i.trustedDestinations(ctx, dlqURL, &o)
	if err != nil {
		return nil, err
	}
	method, err := chooseMethod(start, &o, res)
	if err != nil {
		return nil, err
	}
	if method == RedriveNative {
		res.Method = RedriveNative
		err := i.redriveNative(ctx, start, &o, res)
		if err == nil || o.Method == RedriveNative || !errors.Is(err, ErrNativeUnsupported) {
			return res, i.remaining(ctx, dlqURL, res, err)
		}
		res.FallbackReason = err.Error()
		res.TaskHandle = ""
	}
	res.Method = RedriveManual
	m := newMover(i, dlqURL, o, res, allowed)
	err = m.run(ctx)
	m.finish(ctx)
	return res, i.remaining(ctx, dlqURL, res, err)
}

// redriveDefaults returns opts (nil: the zero options) with every unset duration and count set.
func redriveDefaults(opts *RedriveOptions) RedriveOptions {
	var o RedriveOptions
	if opts != nil {
		o = *opts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultRedriveConcurrency
	}
	if o.Visibility <= 0 {
		o.Visibility = 30 * time.Second
	}
	if o.InFlightWait == 0 {
		o.InFlightWait = o.Visibility + 15*time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	return o
}

// trustedDestinations returns the queues a message's contract.AttrSourceQueue may name (by queueKey),
// none when To is set, and sets o.Source to the DLQ's one source queue when it is unset.
func (i *Inspector) trustedDestinations(ctx context.Context, dlqURL string, o *RedriveOptions) (map[string]string, error) {
	if o.To != "" {
		return nil, nil
	}
	sources, err := i.DeadLetterSources(ctx, dlqURL)
	if err == nil && o.Source == "" && len(sources) == 1 {
		o.Source = sources[0]
	}
	allowed := destinations(append(append(sources, o.Source), o.Sources...))
	if len(allowed) == 0 && err != nil {
		return nil, fmt.Errorf("inspect: redrive: no trusted destination (set To or Sources): %w", err)
	}
	return allowed, nil
}
