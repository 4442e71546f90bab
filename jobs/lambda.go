package jobs

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"

	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// LambdaHandler is the jobs runtime as a Lambda handler (NewLambdaHandler). It implements
// aws-lambda-go's lambda.Handler on the event's bytes (Invoke), so lambda.Start (or
// lambda.StartHandler) runs it as is; HandleSQS is the same runtime on a decoded events.SQSEvent.
type LambdaHandler struct {
	h *sqsHandler
}

// NewLambdaHandler returns the Lambda handler for an SQS event source mapping with
// ReportBatchItemFailures: it runs every record of a batch as a job of workers and reports the
// records to retry.
//
//   - Success: the record is not listed, so the event source mapping deletes it.
//   - A retryable error (any error but those below): the message's visibility is set to the backoff
//     for its attempt (ApproximateReceiveCount) and it is listed, so it comes back after the backoff,
//     not after the queue's visibility timeout.
//   - Snooze(d): the same with d, and it does not count as a failure in the metrics.
//   - A permanent error — Cancel, an undecodable or unknown-version envelope, args that do not
//     decode (ArgsError), an error with a DeadLetterReason() string method, or a retryable error
//     on the last attempt (Config.MaxAttempts) — is sent to the dead-letter queue by the runtime,
//     with the attributes in dlq.go, and then reported as success. If that send fails, the record
//     is listed instead: nothing is lost. The copy always fits SQS's size limit: attributes are
//     left off, the error text first and the reason last, when the body leaves too little room.
//   - A kind this function has no worker for is retried with backoff (a producer may be deployed
//     before its consumer) and dead-lettered as ReasonUnknownKind on its last attempt.
//   - Retry and snooze delays end at most 12 h after the message's receipt, as SQS requires: 12 h
//     less the time since the invocation began and 6 minutes for the batching window.
//   - A panic fails only its record (retryable, *PanicError).
//   - Before anything runs (screen, receives.go): a record on the last receive the queue's redrive
//     policy allows (Config.MaxReceiveCount) is dead-lettered without running (receiveLimitError),
//     so SQS never moves a job unnamed; with a DeliveryLedger, a job whose runs kept ending without
//     an outcome (a crash loop) is dead-lettered without running again (noOutcomeError), and a job
//     whose earlier run died runs alone, after the rest of the batch (runPhases).
//
// On a FIFO queue the message groups of a batch run concurrently (up to Config.Concurrency) and
// each group in order; once a record of a group is listed, the rest of the group is listed
// without running (skip-group-on-error) and returns with it. On a Standard queue up to
// Config.Concurrency records run at once.
//
// While a batch runs, a heartbeat extends the visibility of all its messages (10 per call) every
// third of the visibility timeout, so none is handed to a second consumer while the batch is
// alive. The first is due a third of the timeout after the messages' receipt when every record is
// a first delivery (its ApproximateFirstReceiveTimestamp is that receipt), else 2 ms after the
// start of the invocation (the batching window has used an unknown part of the timeout). When SQS
// says a message is no longer ours (ReceiptHandleIsInvalid, MessageNotInflight), that job's
// context is cancelled with ErrMessageLost and the record is listed and left alone.
// Visibility changes and dead-letter sends use each record's own queue (its eventSourceARN), so
// one function may be fed by several queues.
//
// Jobs' contexts end Config.SafetyMargin before the Lambda deadline (or after Config.JobTimeout).
// After that no record starts: the rest are listed without running, visible again at once, and
// not dead-lettered. A job still running half the margin before the deadline is abandoned and
// listed — unless its worker has returned and only its middleware is still recording the outcome
// (an idempotency completion, a job state): that one is waited for until the post-job budget
// below ends, so a job whose work is done is not run again for want of time. Every AWS call after the jobs (retry and snooze delays, in calls of 10, 8 at once; a
// heartbeat in flight; dead-letter sends) ends a quarter of the margin before the deadline: what
// does not fit is listed, never lost.
//
// Each batch writes one Embedded Metric Format line to Config.Metrics; log lines are JSON with the
// job id, kind, attempt and message id. NewLambdaHandler panics on an invalid Config (see Validate).
//
// Invoke decodes the event without reflection (the records, their attributes and message
// attributes; exactly what json.Unmarshal into events.SQSEvent gives) and writes the
// batchItemFailures response itself, for less CPU per invocation; a function's main starts it with
//
//	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
func NewLambdaHandler(workers *Workers, cfg Config) *LambdaHandler {
	if workers == nil {
		panic("jobs: NewLambdaHandler: nil Workers")
	}
	return &LambdaHandler{h: newSQSHandler(workers, cfg)}
}

// Invoke runs the batch in payload, a Lambda SQS event, and returns the JSON of its
// events.SQSEventResponse. An event that does not decode is an error (as aws-lambda-go's typed
// handlers report it), and no record runs.
func (l *LambdaHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	msgs, err := wire.DecodeSQSEvent(payload)
	if err != nil {
		return nil, err
	}
	resp := l.h.run(ctx, msgs)
	return appendResponse(make([]byte, 0, 24+32*len(resp.BatchItemFailures)), &resp), nil
}

// appendResponse appends the JSON of resp to dst, byte for byte what aws-lambda-go writes for it
// (encoding/json without HTML escaping).
func appendResponse(dst []byte, resp *events.SQSEventResponse) []byte {
	dst = append(dst, `{"batchItemFailures":[`...)
	for i, f := range resp.BatchItemFailures {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"itemIdentifier":`...)
		dst = appendIdentifier(dst, f.ItemIdentifier)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendIdentifier appends s as a JSON string: as is when it needs no escaping (message ids are
// plain ASCII), else as encoding/json writes it.
func appendIdentifier(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			var b []byte
			enc := json.NewEncoder(writerFunc(func(p []byte) (int, error) { b = append(b, p...); return len(p), nil }))
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(dst, b[:len(b)-1]...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// HandleSQS runs the records of ev, as Invoke runs those of its payload, and returns the records
// to retry: the runtime for aws-lambda-go's typed handlers and for tests that hold an event.
func (l *LambdaHandler) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return l.h.handle(ctx, ev)
}
