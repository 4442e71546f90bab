// Package event is what the jobs runtime did with each delivery of a job, as values: the typed
// hook Config.OnEvent receives (for Lambda and container workers alike), and the JSON lines
// Write makes of them (JOBKIT_EVENTS=stdout) and Parse reads back, which the offline stack's job
// accounting counts instead of reading log text.
package event

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Type is what the runtime did with one delivery of a job.
type Type string

// Event types, in the order a delivery meets them: Started, then one outcome.
const (
	// Started: the runtime calls the job's middleware and worker: a run, charged as an
	// attempt.
	Started Type = "started"
	// Succeeded: the run succeeded (a duplicate the idempotency middleware skipped too);
	// the message is deleted.
	Succeeded Type = "succeeded"
	// Retried: the run failed; the job runs again after Delay.
	Retried Type = "retried"
	// Snoozed: the job asked to run again after Delay (jobs.Snooze); not a failure.
	Snoozed Type = "snoozed"
	// Dead: the runtime dead-lettered the job, for Reason (a contract.Reason* value;
	// contract.ReasonCancelled for a cancelled job).
	Dead Type = "dead"
	// Cancelled: the job was cancelled (jobs.Client.Cancel) before this delivery ran it; the
	// message is deleted, the job not run.
	Cancelled Type = "cancelled"
	// NotRun: the delivery did not run the job, which comes back with no attempt charged:
	// Note says why (not started before the deadline, behind a failed job of its FIFO group).
	NotRun Type = "not_run"
	// Returned: the job ran, or was dead, but no outcome could be kept for it: its message
	// goes back to the queue (abandoned at the deadline, released by a container's drain, its
	// dead-letter send or state write failed, its message lost to another delivery). Note says
	// which.
	Returned Type = "returned"
)

// Event is one thing the runtime did with a delivery of a job (jobs.Config.OnEvent), for Lambda and
// container workers alike. It is what the runtime's log lines say, as a value.
type Event struct {
	Type      Type          `json:"event"`
	Time      time.Time     `json:"time"`
	JobID     string        `json:"job_id,omitempty"`
	Kind      string        `json:"kind,omitempty"`
	Queue     string        `json:"queue,omitempty"`
	MessageID string        `json:"message_id,omitempty"`
	GroupID   string        `json:"group_id,omitempty"`
	Attempt   int           `json:"attempt,omitempty"`
	Error     string        `json:"error,omitempty"`  // the job's error (Retried, Dead, Returned)
	Reason    string        `json:"reason,omitempty"` // the dead-letter reason (Dead)
	Note      string        `json:"note,omitempty"`   // why (NotRun, Returned)
	Delay     time.Duration `json:"delay_ns,omitempty"`
	Duration  time.Duration `json:"duration_ns,omitempty"` // the run's (Succeeded, Retried, Dead)
}

// The notes of NotRun and Returned events.
const (
	NoteDeadlineNotStarted   = "not started: near the Lambda deadline"
	NoteBatchDeadline        = "not started: its batch reached its deadline"
	NoteFIFOSkipped          = "not run: an earlier job of its FIFO group failed"
	NoteAbandoned            = "abandoned: still running at the Lambda deadline"
	NoteAbandonedRecording   = "abandoned: still recording its outcome at the Lambda deadline"
	NoteReleased             = "released by its consumer's drain"
	NoteLost                 = "failed after its message was lost to another delivery"
	NoteDeadLetterFailed     = "dead, but its dead-letter send failed"
	NoteDeadStateNotRecorded = "dead, but its state was not recorded: to be dead-lettered on its next delivery"
)

// Marker is the key that opens an event's JSON line (Write); no log line of the runtime opens so.
const Marker = `"event"`

// Write returns an OnEvent that writes each event to w as one JSON object a line, whole
// even when jobs end at once. JOBKIT_EVENTS=stdout sets it on stdout (jobs.ConfigFromEnv): the
// offline stack's job accounting reads these lines, not the log text.
func Write(w io.Writer) func(Event) {
	var mu sync.Mutex
	return func(e Event) {
		line, err := json.Marshal(e)
		if err != nil {
			return
		}
		line = append(line, '\n')
		mu.Lock()
		_, _ = w.Write(line)
		mu.Unlock()
	}
}

// Parse reads a line Write wrote (after any prefix before its '{'). ok is false for any
// other line.
func Parse(line []byte) (e Event, ok bool) {
	i := bytes.IndexByte(line, '{')
	if i < 0 || !bytes.HasPrefix(line[i+1:], []byte(Marker)) {
		return Event{}, false
	}
	if json.Unmarshal(line[i:], &e) != nil || e.Type == "" {
		return Event{}, false
	}
	return e, true
}
