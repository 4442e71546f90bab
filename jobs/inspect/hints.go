package inspect

import "github.com/jobkit-go/jobkit/jobs/contract"

// reasonHints are the one-line hints of ReasonHint, by jobs.Reason* value ("" is the queue's
// RedrivePolicy).
var reasonHints = map[string]string{
	"":                             "received maxReceiveCount times without an answer, moved by SQS unrecorded (no redrive recorder, or it failed too): the function fails before it runs jobs; fix it, then redrive; see docs/operations.md",
	contract.ReasonMalformed:       "the body is not a jobkit envelope: something other than a jobkit producer sent it; fix the sender, then purge (a redrive fails again)",
	contract.ReasonVersion:         "the envelope's version is newer than the runtime reads: deploy a runtime that reads it, then redrive",
	contract.ReasonUnknownKind:     "no worker is registered for the kind: deploy its worker (or an alias for a renamed kind), then redrive",
	contract.ReasonBadArgs:         "the args do not decode into the worker's type: fix the producer or the type (compatibly), then redrive; purge what can never decode",
	contract.ReasonCancelled:       "the worker gave up on it with jobs.Cancel: read the error; redrive only once what it says is fixed",
	contract.ReasonAttemptsUsed:    "every attempt failed: read the error, fix the cause (a bug, a dependency that is down), then redrive",
	contract.ReasonPayloadMismatch: "its idempotency key was used before with other args: two different jobs share a key; fix the producer's keys; a redrive fails again",
	contract.ReasonNoOutcome:       "its runs kept killing the process or timing out (a crash loop: out of memory, a crash, a job past the timeout): read the function's logs, fix, then redrive",
	contract.ReasonReceiveLimit:    "received as often as the queue's redrive allows, mostly without running (snoozes, rate-limit waits, FIFO skips, throttles): raise RedriveMargin, then redrive",
	contract.ReasonRedrivePolicy:   "received maxReceiveCount times with no outcome: the function never reached its handler (fails at init: config, role, code) or was throttled; read its logs and errors, fix, then redrive",
	contract.ReasonPayloadUnavailable: "its claim-checked payload could not be read from S3 (expired, deleted, another bucket, or refused); " +
		"see docs/operations.md; redrive after fixing, within the bucket's expiry",
}

// ReasonHint returns a one-line hint for a dead-letter reason (a jobs.Reason* value; "" for a
// message the queue's RedrivePolicy moved): what it usually means and what to do. It returns ""
// for a reason it does not know.
func ReasonHint(reason string) string {
	return reasonHints[reason]
}

// Hint returns the one-line hint for why j is in the dead-letter queue (see ReasonHint); for a
// message the queue's RedrivePolicy moved, the RedrivePolicy's.
func (j *DeadJob) Hint() string {
	if j.ByRedrivePolicy() {
		return ReasonHint("")
	}
	return ReasonHint(j.Reason)
}
