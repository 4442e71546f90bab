package tally

import (
	"fmt"
	"strings"

	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// Phase is where a job was last known to be.
type Phase int

// Phases, from the events a Book records.
const (
	// Unseen: enqueued, never received by a worker.
	Unseen Phase = iota
	// InFlight: a run began, or a worker holds its message, and no outcome is known yet.
	InFlight
	// Retrying: its last delivery did not succeed and it waits on its queue for the next (a
	// failed attempt, a snooze, a record not started or skipped, a failed delete).
	Retrying
	// Deleted: the event source mapping deleted its message after a run that, as far as the
	// run knows, did not dead-letter it.
	Deleted
	// DeadLettered: the runtime sent it to a dead-letter queue.
	DeadLettered
)

// Job is what a run knows of one job.
type Job struct {
	ID, Kind string
	// Queue is the name of the job's queue, as the caller named it.
	Queue string
	Phase Phase
	// Attempt is the last attempt number known (0: none reported).
	Attempt int
	// Deliveries counts the receives by a worker, over all the job's messages.
	Deliveries int
	// Messages counts the distinct messages that carried the job (a redrive or a duplicate send
	// adds one).
	Messages int
	// Retried is set once an attempt failed; Failures counts the failed attempts the runtime
	// reported.
	Retried  bool
	Failures int
	// LastError is the last failed attempt's error; Reason is the dead-letter reason.
	LastError, Reason string
	// Note says what the runtime last did with a record of the job that came back without a
	// failed attempt ("snoozed", "not started: its batch reached its deadline").
	Note string
	// DeletedAfterRun is set when a message of the job was deleted after a run that did not
	// dead-letter it: success as the runtime reports it.
	DeletedAfterRun bool
	// Cancelled is set when a delivery found the job cancelled (jobs.Client.Cancel) and the
	// runtime let its message be deleted unrun.
	Cancelled bool
}

// errorWidth is how much of an error a job's description shows.
const errorWidth = 160

// State describes where the job was last known to be: "never seen by a worker", "in flight,
// attempt 2", "retrying, attempt 3, last error: …", "deleted after attempt 1 without a result",
// "dead-lettered on attempt 5 (attempts_exhausted), last error: …".
func (j Job) State() string {
	var b strings.Builder
	attempt := func(prefix string) {
		if j.Attempt > 0 {
			fmt.Fprintf(&b, "%s%d", prefix, j.Attempt)
		}
	}
	switch j.Phase {
	case Unseen:
		b.WriteString("never seen by a worker")
	case InFlight:
		b.WriteString("in flight")
		attempt(", attempt ")
	case Retrying:
		b.WriteString("retrying")
		attempt(", attempt ")
	case Deleted:
		if j.Cancelled {
			b.WriteString("cancelled before it ran")
			break
		}
		b.WriteString("deleted")
		attempt(" after attempt ")
		b.WriteString(" without a result")
	case DeadLettered:
		b.WriteString("dead-lettered")
		attempt(" on attempt ")
		if j.Reason != "" {
			b.WriteString(" (" + inspect.Printable(j.Reason, 40) + ")")
		}
	}
	if j.Note != "" && j.Phase == Retrying {
		b.WriteString(" (" + j.Note + ")")
	}
	if j.LastError != "" && j.Phase != Unseen && j.Phase != Deleted {
		b.WriteString(", last error: " + inspect.Printable(j.LastError, errorWidth))
	}
	return b.String()
}

// String names the job and its last known state: "<id> (<kind>, <queue>): <state>".
func (j Job) String() string {
	var about []string
	for _, s := range []string{j.Kind, j.Queue} {
		if s != "" {
			about = append(about, inspect.Printable(s, 60))
		}
	}
	id := inspect.Printable(j.ID, 100)
	if len(about) > 0 {
		id += " (" + strings.Join(about, ", ") + ")"
	}
	return id + ": " + j.State()
}

// onQueue reports whether the job was last known on its queue (waiting, in flight or retrying).
func (j Job) onQueue() bool { return j.Phase == Unseen || j.Phase == InFlight || j.Phase == Retrying }
