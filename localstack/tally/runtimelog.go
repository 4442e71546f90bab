package tally

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// EventType is what the runtime did with one record.
type EventType int

// Event types.
const (
	// EventFailed: the attempt failed; the job is retried after its backoff.
	EventFailed EventType = iota + 1
	// EventDeadLettered: the runtime sent the job to its dead-letter queue.
	EventDeadLettered
	// EventNotStarted: the record was not started because its batch reached its deadline; it
	// is listed, visible again, and not charged an attempt.
	EventNotStarted
	// EventReturned: the record went back to its queue without a failed attempt: snoozed,
	// skipped behind a failed job of its FIFO group, abandoned at the deadline, released by a
	// consumer's drain, or its dead-letter send failed.
	EventReturned
)

// Event is the runtime's outcome of one record.
type Event struct {
	Type                   EventType
	JobID, Kind, MessageID string
	Attempt                int
	// Error is the job's error; Reason the dead-letter reason (EventDeadLettered).
	Error, Reason string
	// Note says what the runtime did, for EventNotStarted and EventReturned.
	Note string
}

// Record records an outcome the runtime reported. An outcome of a message the mapping deleted
// already is stale and changes nothing but a dead-letter mark.
func (b *Book) Record(e Event) {
	if e.JobID == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var m *message
	if e.MessageID != "" {
		m = b.message(e.MessageID, e.JobID, e.Kind, "")
	}
	en := b.entry(e.JobID, e.Kind, "")
	if m != nil {
		en = m.job
	}
	j := &en.job
	if m != nil && m.deleted && e.Type != EventDeadLettered {
		return
	}
	if e.Attempt > 0 {
		j.Attempt = e.Attempt
	}
	switch e.Type {
	case EventFailed:
		j.Phase, j.Retried, j.LastError, j.Note = Retrying, true, e.Error, ""
		j.Failures++
	case EventDeadLettered:
		if m != nil {
			m.deadLettered = true
		}
		j.Phase, j.Reason, j.Note = DeadLettered, e.Reason, ""
		if e.Error != "" {
			j.LastError = e.Error
		}
	case EventNotStarted, EventReturned:
		j.Phase, j.Note = Retrying, e.Note
		if e.Error != "" {
			j.LastError = e.Error
		}
	}
}

// ReadLine records the runtime's outcome in one line of a function's output, if it is one
// (ParseLine).
func (b *Book) ReadLine(line []byte) {
	if e, ok := ParseLine(line); ok {
		b.Record(e)
	}
}

// runtimeLines are the messages of the jobs runtime's log lines about a record's outcome
// (jobs/handler.go), with what each means. They are log text, which may change any day: the one
// copy is here, and goes when the runtime reports outcomes as typed events.
var runtimeLines = map[string]struct {
	typ  EventType
	note string
}{
	"job failed: will retry": {EventFailed, ""},
	"job dead-lettered":      {EventDeadLettered, ""},
	"job not started: the batch reached its deadline; reported failed":                 {EventNotStarted, "not started: its batch reached its deadline"},
	"job not started near the Lambda deadline: reported failed":                        {EventNotStarted, "not started: near the Lambda deadline"},
	"job still running near the Lambda deadline: reported failed":                      {EventReturned, "abandoned: still running at the Lambda deadline"},
	"job done but still recording its outcome at the Lambda deadline: reported failed": {EventReturned, "abandoned: still recording its outcome at the Lambda deadline"},
	"job snoozed": {EventReturned, "snoozed"},
	"job not run: an earlier job of its FIFO group failed":                                       {EventReturned, "not run: an earlier job of its FIFO group failed"},
	"job interrupted by the consumer's drain: released for another consumer":                     {EventReturned, "released by its consumer's drain"},
	"job failed after its message was lost: reported failed, left alone":                         {EventReturned, "failed after its message was lost to another delivery"},
	"dead-letter send failed: job reported failed":                                               {EventReturned, "dead, but its dead-letter send failed"},
	"job state not recorded: dead job reported failed, to be dead-lettered on its next delivery": {EventReturned, "dead, but its state was not recorded: to be dead-lettered on its next delivery"},
}

// needles: every runtime line ParseLine reads holds one of these.
var needles = [][]byte{[]byte(`"msg":"job `), []byte(`"msg":"dead-letter send failed`)}

// ParseLine reads the runtime's outcome of a record from one line of a function's output (JSON,
// with or without a "[<function>] " prefix). ok is false for any other line.
func ParseLine(line []byte) (e Event, ok bool) {
	if !bytes.Contains(line, needles[0]) && !bytes.Contains(line, needles[1]) {
		return Event{}, false
	}
	i := bytes.IndexByte(line, '{')
	if i < 0 {
		return Event{}, false
	}
	var l struct {
		Msg       string `json:"msg"`
		JobID     string `json:"job_id"`
		Kind      string `json:"kind"`
		Attempt   int    `json:"attempt"`
		MessageID string `json:"message_id"`
		Error     string `json:"error"`
		Reason    string `json:"reason"`
	}
	if json.Unmarshal(bytes.TrimSpace(line[i:]), &l) != nil {
		return Event{}, false
	}
	what, known := runtimeLines[strings.TrimSpace(l.Msg)]
	if !known {
		return Event{}, false
	}
	return Event{Type: what.typ, JobID: l.JobID, Kind: l.Kind, MessageID: l.MessageID, Attempt: l.Attempt,
		Error: l.Error, Reason: l.Reason, Note: what.note}, true
}

// RuntimeMessages returns the messages of the runtime's log lines ParseLine reads.
func RuntimeMessages() []string {
	out := make([]string, 0, len(runtimeLines))
	for msg := range runtimeLines {
		out = append(out, msg)
	}
	sort.Strings(out)
	return out
}
