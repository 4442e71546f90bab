package instrument

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
)

// ErrInjected is the retryable error Faults.FailAttempts injects.
var ErrInjected = errors.New("instrument: injected failure")

// ErrPoison is the cause of the cancellation Faults.Poison injects.
var ErrPoison = errors.New("instrument: poison job")

// Faults are fault instructions carried in a job's args JSON beside the job's own fields: they
// make the job fail on purpose, deterministically, so that retries and dead-lettering can be
// shown and tested.
type Faults struct {
	// FailAttempts makes attempts 1..FailAttempts fail with a retryable error (ErrInjected); the
	// next attempt runs normally. At or above the queue's max attempts the job is dead-lettered.
	FailAttempts int `json:"fail_attempts,omitempty"`
	// Poison cancels the job (jobs.Cancel(ErrPoison)): it is dead-lettered at once, never retried.
	Poison bool `json:"poison,omitempty"`
	// OverrunMS makes attempt 1 finish late: once the job's work has succeeded, it returns only
	// OverrunMS milliseconds after its context's deadline (the jobs' soft deadline, before the
	// Lambda deadline), as code that does not watch ctx does. Without a deadline it waits
	// OverrunMS. The records behind it in the batch then meet a passed deadline.
	OverrunMS int `json:"overrun_ms,omitempty"`
	// Crash kills the process on every delivery of the job, once its work has started — a crash
	// loop (a poison pill that makes the runtime die: a segfault in C code, an out-of-memory
	// kill). The runtime dead-letters it as contract.ReasonNoOutcome once those deliveries have used
	// its attempts. Only for a process of its own: never set it on a job run in a test binary.
	Crash bool `json:"crash,omitempty"`
}

// Inject returns the failure f asks for on this attempt, or nil.
func (f Faults) Inject(attempt int) error {
	switch {
	case f.Poison:
		return jobs.Cancel(ErrPoison)
	case attempt <= f.FailAttempts:
		return fmt.Errorf("%w on attempt %d (fail_attempts=%d)", ErrInjected, attempt, f.FailAttempts)
	}
	return nil
}

// FaultsOf reads the fault instructions from a job's raw args (jobs.JobRow.EncodedArgs). Args
// without them, or that are not a JSON object, have none.
func FaultsOf(args json.RawMessage) Faults {
	var f Faults
	if len(args) > 0 && json.Unmarshal(args, &f) != nil {
		return Faults{}
	}
	return f
}

// Overrun returns how long after the job's work attempt must wait before it returns, given the
// context's deadline and the time now: zero unless OverrunMS is set and attempt is 1.
func (f Faults) Overrun(ctx context.Context, attempt int, now time.Time) time.Duration {
	if f.OverrunMS <= 0 || attempt != 1 {
		return 0
	}
	late := time.Duration(f.OverrunMS) * time.Millisecond
	if deadline, ok := ctx.Deadline(); ok {
		return max(deadline.Sub(now)+late, 0)
	}
	return late
}

// FaultMiddleware returns the middleware that injects each job's faults (FaultsOf its raw args):
// a job asking for a failure on this attempt fails with it, without running; a job asking for an
// overrun (Faults.OverrunMS) runs, then returns late, whatever its context says. Put it inside
// idempotency.Middleware, as a fault of the worker's own would be.
func FaultMiddleware() jobs.Middleware {
	return func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			f := FaultsOf(row.EncodedArgs)
			if f.Crash {
				crash(row)
			}
			if err := f.Inject(row.Attempt); err != nil {
				return err
			}
			if err := next(ctx, row); err != nil {
				return err
			}
			time.Sleep(f.Overrun(ctx, row.Attempt, time.Now()))
			return nil
		}
	}
}

// Faulty is a job's args with fault instructions added: it enqueues as the job's kind, with
// Faults' fields after the job's own in its args JSON.
type Faulty struct {
	Args   jobs.JobArgs
	Faults Faults
}

// WithFaults returns args with faults f added to its JSON, or args itself when f is zero.
func WithFaults(args jobs.JobArgs, f Faults) jobs.JobArgs {
	if f == (Faults{}) {
		return args
	}
	return Faulty{Args: args, Faults: f}
}

// Kind implements jobs.JobArgs: the kind of the wrapped args.
func (a Faulty) Kind() string { return a.Args.Kind() }

// MarshalJSON encodes the wrapped args' JSON object with the fault fields appended.
func (a Faulty) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(a.Args)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("instrument: args of kind %s are not a JSON object", a.Args.Kind())
	}
	faults, err := json.Marshal(a.Faults) // its fields omitempty: {} when there is no fault
	if err != nil || len(faults) == 2 {
		return b, err
	}
	if len(b) > 2 {
		b = append(b[:len(b)-1:len(b)-1], ',')
	} else {
		b = b[:1:1]
	}
	return append(b, faults[1:]...), nil
}

// crash ends the process at once, as a kill does: no deferred function runs, nothing is answered.
// A variable so that a test can see it called.
var crash = func(row *jobs.JobRow) {
	fmt.Fprintf(os.Stderr, "instrument: crashing on job %s (attempt %d): crash fault\n", row.ID, row.Attempt)
	os.Exit(137)
}
