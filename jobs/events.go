package jobs

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// EventType is what the runtime did with one delivery of a job.
type EventType string

// Event types, in the order a delivery meets them: Started, then one outcome.
const (
	// EventStarted: the runtime calls the job's middleware and worker: a run, charged as an
	// attempt.
	EventStarted EventType = "started"
	// EventSucceeded: the run succeeded (a duplicate the idempotency middleware skipped too);
	// the message is deleted.
	EventSucceeded EventType = "succeeded"
	// EventRetried: the run failed; the job runs again after Delay.
	EventRetried EventType = "retried"
	// EventSnoozed: the job asked to run again after Delay (jobs.Snooze); not a failure.
	EventSnoozed EventType = "snoozed"
	// EventDead: the runtime dead-lettered the job, for Reason (a Reason* value; ReasonCancelled
	// for a cancelled job).
	EventDead EventType = "dead"
	// EventNotRun: the delivery did not run the job, which comes back with no attempt charged:
	// Note says why (not started before the deadline, behind a failed job of its FIFO group).
	EventNotRun EventType = "not_run"
	// EventReturned: the job ran, or was dead, but no outcome could be kept for it: its message
	// goes back to the queue (abandoned at the deadline, released by a container's drain, its
	// dead-letter send or state write failed, its message lost to another delivery). Note says
	// which.
	EventReturned EventType = "returned"
)

// Event is one thing the runtime did with a delivery of a job (Config.OnEvent), for Lambda and
// container workers alike. It is what the runtime's log lines say, as a value.
type Event struct {
	Type      EventType     `json:"event"`
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

// EventMarker is the key that opens an event's JSON line (WriteEvents); no log line opens so.
const EventMarker = `"event"`

// WriteEvents returns an OnEvent that writes each event to w as one JSON object a line, whole
// even when jobs end at once. JOBKIT_EVENTS=stdout sets it on stdout (ConfigFromEnv): the
// offline stack's job accounting reads these lines, not the log text.
func WriteEvents(w io.Writer) func(Event) {
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

// ParseEvent reads a line WriteEvents wrote (after any prefix before its '{'). ok is false for any
// other line.
func ParseEvent(line []byte) (e Event, ok bool) {
	i := bytes.IndexByte(line, '{')
	if i < 0 || !bytes.HasPrefix(line[i+1:], []byte(EventMarker)) {
		return Event{}, false
	}
	if json.Unmarshal(line[i:], &e) != nil || e.Type == "" {
		return Event{}, false
	}
	return e, true
}

// event reports an event of r to Config.OnEvent, if set.
func (b *batch) event(r *record, typ EventType, note string, err error, reason string) {
	on := b.h.cfg.OnEvent
	if on == nil {
		return
	}
	e := Event{Type: typ, Time: time.Now(), JobID: r.row.ID, Kind: r.row.Kind, Queue: QueueName(r.row.QueueURL),
		MessageID: r.msg.MessageID, GroupID: r.row.GroupID, Attempt: r.row.Attempt, Reason: reason, Note: note}
	if err != nil {
		e.Error = err.Error()
	}
	switch typ {
	case EventRetried, EventSnoozed:
		e.Delay = r.delay
	}
	if r.ran {
		e.Duration = r.dur
	}
	on(e)
}
