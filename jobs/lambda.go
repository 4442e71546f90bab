package jobs

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"

	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// LambdaHandler is the runtime of NewSQSHandler as a raw Lambda handler: it takes the SQS event's
// payload bytes and returns the response's. It implements aws-lambda-go's lambda.Handler, so
// lambda.Start (or lambda.StartHandler) runs it as is.
type LambdaHandler struct {
	h *sqsHandler
}

// NewLambdaHandler returns the Lambda handler for an SQS event source mapping with
// ReportBatchItemFailures, as NewSQSHandler does, taking the event's bytes: it decodes the event
// without reflection (the records, their attributes and message attributes; exactly what
// json.Unmarshal into events.SQSEvent gives) and writes the batchItemFailures response itself.
// It is the same runtime, with the same outcomes, as NewSQSHandler, for less CPU per invocation:
// a function's main starts it with
//
//	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
//
// NewLambdaHandler panics on an invalid Config (see Validate).
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
