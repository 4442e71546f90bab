package tally

import "github.com/jobkit-go/jobkit/jobs/event"

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
	// EventCancelled: the job was cancelled (jobs.Client.Cancel) before this delivery ran it;
	// the mapping deletes its message.
	EventCancelled
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
// already is stale: it moves nothing but a dead-letter mark, though a failed attempt reported
// late (one abandoned at a deadline that failed after another delivery succeeded) still counts
// in Failures — the attempt failed.
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
		if e.Type == EventFailed {
			j.Retried = true
			j.Failures++
		}
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
	case EventCancelled:
		j.Cancelled, j.Note = true, ""
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

// ParseLine reads the runtime's outcome of a record from one line of a function's output: an
// event line (event.Write, asked for with JOBKIT_EVENTS=stdout; devstack.Config.Events), with
// or without a "[<function>] " prefix. ok is false for any other line, and for a start or a
// success, which the book learns from the queues.
func ParseLine(line []byte) (e Event, ok bool) {
	ev, ok := event.Parse(line)
	if !ok {
		return Event{}, false
	}
	e = Event{JobID: ev.JobID, Kind: ev.Kind, MessageID: ev.MessageID, Attempt: ev.Attempt,
		Error: ev.Error, Reason: ev.Reason, Note: ev.Note}
	switch ev.Type {
	case event.Retried:
		e.Type = EventFailed
	case event.Dead:
		e.Type = EventDeadLettered
	case event.NotRun:
		e.Type = EventReturned
		if ev.Note == event.NoteDeadlineNotStarted || ev.Note == event.NoteBatchDeadline {
			e.Type = EventNotStarted
		}
	case event.Snoozed:
		e.Type, e.Note = EventReturned, "snoozed"
	case event.Returned:
		e.Type = EventReturned
	case event.Cancelled:
		e.Type = EventCancelled
	default:
		return Event{}, false
	}
	return e, true
}
