package jobs

import (
	"encoding/json"
	"time"
)

// EnvelopeVersion is the wire format version this package writes and reads.
const EnvelopeVersion = 1

// Envelope is the SQS message body of every job: everything a worker needs, because EventBridge
// Scheduler and rules can set only the body.
//
//	{"v":1,"id":"01J...","kind":"email.send","args":{...},"enqueued_at":"2026-11-21T12:00:00Z"}
type Envelope struct {
	V          int             `json:"v"`
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	Args       json.RawMessage `json:"args"`
	EnqueuedAt time.Time       `json:"enqueued_at"`
	// Key is the idempotency key; empty means ID.
	Key string `json:"key,omitempty"`
	// Trace is a W3C traceparent carried from the producer.
	Trace string `json:"trace,omitempty"`
	// Batch is the fan-out batch the job is a member of (jobs/state), if any.
	Batch string `json:"batch,omitempty"`
}

// IdempotencyKey returns Key, or ID when no key was set.
func (e *Envelope) IdempotencyKey() string {
	if e.Key != "" {
		return e.Key
	}
	return e.ID
}
