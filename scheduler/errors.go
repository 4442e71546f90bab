package scheduler

import (
	"errors"
	"fmt"

	"github.com/jobkit-go/jobkit/jobs"
)

// ExpressionError reports a schedule expression that EventBridge Scheduler would reject, or one
// that can never fire. Field names the cron field at fault ("minutes", "hours", "day-of-month",
// "month", "day-of-week", "year"), or is empty when the expression as a whole is at fault.
type ExpressionError struct {
	Expression string // the expression as given
	Field      string // the cron field at fault, if any
	Value      string // the offending part of the expression, if any
	Reason     string // what is wrong, in words
}

func (e *ExpressionError) Error() string {
	msg := fmt.Sprintf("scheduler: invalid expression %q", e.Expression)
	if e.Field != "" {
		msg += ": " + e.Field
	}
	if e.Value != "" {
		msg += fmt.Sprintf(" %q", e.Value)
	}
	return msg + ": " + e.Reason
}

// ValidationError reports a Schedule (or a Delayer configuration) that cannot be deployed or run.
// Field is the Go field at fault; Err, when set, is the underlying error (an *ExpressionError for
// Field "Expression").
type ValidationError struct {
	Schedule string // the schedule's name (empty for a Delayer configuration)
	Field    string // the field at fault, e.g. "TimeZone" or "Retry.MaxEventAge"
	Reason   string // what is wrong, in words
	Err      error  // the underlying error, if any
}

func (e *ValidationError) Error() string {
	who := "schedule"
	if e.Schedule != "" {
		who = fmt.Sprintf("schedule %q", e.Schedule)
	}
	msg := fmt.Sprintf("scheduler: %s: %s: %s", who, e.Field, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ValidationError) Unwrap() error { return e.Err }

// ErrNotFound is matched (errors.Is) by the error CancelJob returns when the job has no schedule:
// it was never delayed past jobs.MaxSQSDelay, it has already been delivered (its schedule deletes
// itself after completion), or it was already cancelled.
var ErrNotFound = errors.New("scheduler: schedule not found")

// NotFoundError is the error CancelJob returns for a job without a schedule. It matches ErrNotFound.
type NotFoundError struct {
	JobID    string // the job id given to CancelJob
	Schedule string // the schedule name derived from it
	Group    string // the schedule group searched
	Err      error  // the service's error
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("scheduler: job %q has no schedule %q in group %q (already delivered, cancelled or never delayed): %v",
		e.JobID, e.Schedule, e.Group, e.Err)
}

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool {
	return target == ErrNotFound || target == jobs.ErrNoSchedule
}

// Unwrap returns the service's error.
func (e *NotFoundError) Unwrap() error { return e.Err }
