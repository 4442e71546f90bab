package tally

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/jobkit-go/jobkit/offline/esm"
)

// OnBatch records an event source mapping's report of a settled batch of queue (the caller's name
// for the queue: the same as Track's): each message was received once more, then deleted, or left
// on the queue for another delivery. A message's job is Identify(body), or the message id when the
// report has no bodies.
func (b *Book) OnBatch(queue string, rep esm.BatchReport) {
	failed := map[string]bool{}
	for _, id := range rep.Failed {
		failed[id] = true
	}
	deleted := map[string]bool{}
	for _, id := range rep.Deleted {
		deleted[id] = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, mid := range rep.MessageIDs {
		id, kind := mid, ""
		if i < len(rep.Bodies) {
			id, kind = Identify(rep.Bodies[i])
		}
		m := b.message(mid, id, kind, queue)
		j := &m.job.job
		j.Deliveries++
		switch {
		case deleted[mid]:
			m.deleted = true
			j.Phase = Deleted
			if m.deadLettered {
				j.Phase = DeadLettered
			}
		case m.deleted:
			// A later delivery of a message already deleted (a duplicate receive): nothing new.
		case rep.Verdict == esm.BatchFailed:
			j.Phase, j.Retried = Retrying, true
			if rep.Reason != "" {
				j.LastError, j.Note = "the batch failed: "+rep.Reason, ""
			}
		case failed[mid]:
			j.Phase, j.Retried = Retrying, true
		default:
			j.Phase = Retrying
			if e, ok := rep.DeleteErrors[mid]; ok {
				j.Note = "its delete failed: " + e
			}
		}
	}
}

// Identify returns the job a message body carries: its envelope's id and kind, else a key of the
// body itself, "body:<hash>" — which a dead-letter or redriven copy of the message shares (their
// bodies are the original's, byte for byte), as it shares a job id.
func Identify(body string) (id, kind string) {
	if env, ok := envelopeOf(body); ok {
		return env.ID, env.Kind
	}
	sum := sha256.Sum256([]byte(body))
	return "body:" + hex.EncodeToString(sum[:8]), ""
}

// envelope is what Identify reads of a message body.
type envelope struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
}

func envelopeOf(body string) (envelope, bool) {
	var env envelope
	if len(body) == 0 || body[0] != '{' || json.Unmarshal([]byte(body), &env) != nil || env.ID == "" {
		return envelope{}, false
	}
	return env, true
}
