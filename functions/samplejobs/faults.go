package samplejobs

import (
	"errors"
	"fmt"

	"github.com/jobkit-go/jobkit/jobs"
)

// ErrInjected is the retryable error Faults.FailAttempts injects.
var ErrInjected = errors.New("samplejobs: injected failure")

// ErrPoison is the cause of the cancellation Faults.Poison injects.
var ErrPoison = errors.New("samplejobs: poison job")

// Faults is demo behaviour embedded in every sample job's args: it makes the job fail on purpose,
// deterministically, so retries and dead-lettering can be shown and tested. Real jobs have no such
// fields.
type Faults struct {
	// FailAttempts makes attempts 1..FailAttempts fail with a retryable error (ErrInjected); the
	// next attempt runs normally. At or above the queue's max attempts the job is dead-lettered.
	FailAttempts int `json:"fail_attempts,omitempty"`
	// Poison cancels the job (jobs.Cancel(ErrPoison)): it is dead-lettered at once, never retried.
	Poison bool `json:"poison,omitempty"`
}

// Inject returns the failure f asks for on this attempt, or nil.
func (f Faults) Inject(row *jobs.JobRow) error {
	switch {
	case f.Poison:
		return jobs.Cancel(ErrPoison)
	case row != nil && row.Attempt <= f.FailAttempts:
		return fmt.Errorf("%w on attempt %d (fail_attempts=%d)", ErrInjected, row.Attempt, f.FailAttempts)
	}
	return nil
}
