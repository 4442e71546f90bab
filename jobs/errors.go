package jobs

import (
	"errors"
	"fmt"
	"time"
)

// CancelError is returned by Cancel: the job is dead-lettered now, whatever attempts remain.
type CancelError struct{ Err error }

func (e *CancelError) Error() string { return "jobs: cancelled: " + errString(e.Err) }
func (e *CancelError) Unwrap() error { return e.Err }

// Cancel marks err as permanent: the runtime dead-letters the job at once with err attached.
func Cancel(err error) error {
	if err == nil {
		err = errors.New("cancelled")
	}
	return &CancelError{Err: err}
}

// SnoozeError is returned by Snooze: the job is retried after Duration without counting as a
// failure in metrics.
type SnoozeError struct{ Duration time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("jobs: snoozed for %s", e.Duration) }

// Snooze asks for the job to run again after d (at most 12 h, SQS's visibility limit).
func Snooze(d time.Duration) error { return &SnoozeError{Duration: d} }

// ArgsError reports args that do not decode into the worker's type; the job is dead-lettered.
type ArgsError struct {
	Kind string
	Err  error
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("jobs: decode args of kind %q: %v", e.Kind, e.Err)
}
func (e *ArgsError) Unwrap() error { return e.Err }

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
