package jobs

import (
	"errors"
	"fmt"
	"time"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// CancelError is returned by Cancel: the job is dead-lettered now, whatever attempts remain.
type CancelError struct{ Err error }

// Error describes the failure.
func (e *CancelError) Error() string { return "jobs: cancelled: " + errString(e.Err) }

// Unwrap returns the underlying error.
func (e *CancelError) Unwrap() error { return e.Err }

// Cancel marks err as permanent: the runtime dead-letters the job at once with err attached.
func Cancel(err error) error {
	if err == nil {
		err = errors.New("cancelled")
	}
	return &CancelError{Err: err}
}

// ErrCancelled is what a job's middleware returns for a job cancelled before this delivery ran it
// (Client.Cancel; the idempotency middleware's claim finds the cancellation): the runtime deletes
// the message without running the job or dead-lettering it. The cancellation recorded the job's
// state already; the delivery adds no call. A worker that wants its job dead-lettered returns
// Cancel(err) instead.
var ErrCancelled = errors.New("jobs: the job was cancelled before it ran")

// SnoozeError is returned by Snooze and SnoozeNotRun: the job is retried after Duration without
// counting as a failure in metrics.
type SnoozeError struct {
	Duration time.Duration
	// NotRun says the job's work did not start (a rate limit, a lease held elsewhere): the
	// runtime records the delivery in Config.Deliveries, so it is not charged as an attempt.
	NotRun bool
}

// Error describes the failure.
func (e *SnoozeError) Error() string { return fmt.Sprintf("jobs: snoozed for %s", e.Duration) }

// Snooze asks for the job to run again after d: at most 12 h after the message's receipt, SQS's
// visibility limit (in practice 12 h less the time since the invocation began and 6 minutes).
// With Config.Deliveries set, a snoozed delivery is recorded there and is not charged as an
// attempt (as river's JobSnooze); without, it counts as one. Every snooze is a receive of the
// message, which SQS's redrive policy counts: on the last receive it allows, the runtime
// dead-letters the job (ReasonReceiveLimit) rather than snoozing it again.
func Snooze(d time.Duration) error { return &SnoozeError{Duration: d} }

// SnoozeNotRun is Snooze for a job that did not start its work, e.g. a middleware that found no
// rate-limit token: with Config.Deliveries set, the delivery is recorded as one that did not run,
// so JobRow.Attempt (and the dead-lettering after MaxAttempts) counts only real runs.
func SnoozeNotRun(d time.Duration) error { return &SnoozeError{Duration: d, NotRun: true} }

// ArgsError reports args that do not decode into the worker's type; the job is dead-lettered.
type ArgsError struct {
	Kind string
	Err  error
}

// Error describes the failure.
func (e *ArgsError) Error() string {
	return fmt.Sprintf("jobs: decode args of kind %q: %v", e.Kind, e.Err)
}

// Unwrap returns the underlying error.
func (e *ArgsError) Unwrap() error { return e.Err }

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// UnknownKindError reports a job whose kind has no registered worker; it is dead-lettered with
// ReasonUnknownKind.
type UnknownKindError struct{ Kind string }

// Error describes the failure.
func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("jobs: no worker registered for kind %q", e.Kind)
}

// DeadLetterReason returns ReasonUnknownKind: an unknown kind is permanent.
func (e *UnknownKindError) DeadLetterReason() string { return contract.ReasonUnknownKind }

// PanicError is a panic in a worker, recovered by the runtime. It is retryable, like any error.
type PanicError struct {
	Value any    // what was passed to panic
	Stack string // the goroutine's stack at the panic
}

// Error describes the failure.
func (e *PanicError) Error() string { return fmt.Sprintf("jobs: worker panic: %v", e.Value) }

// deadLetterReasoner is an error that is permanent and names why: the runtime dead-letters a job
// whose error chain holds one, with that reason (the idempotency package's payload mismatch is one).
type deadLetterReasoner interface{ DeadLetterReason() string }
