// Package jobotel traces and measures jobs with OpenTelemetry: a producer span for each job a
// Client enqueues (NewTracer, for jobs.ClientOptions.Tracer), a consumer span for each run of a
// job (Middleware, for Lambda and container workers alike), linked through the W3C traceparent
// the job carries, and job counts and durations as OpenTelemetry metrics (NewMetrics, for
// jobs.Config.OnEvent) beside or instead of the runtime's CloudWatch EMF lines.
//
// It is optional: a service that does not import it links no OpenTelemetry code, and a Client or
// worker without it pays nothing. Spans follow OpenTelemetry's semantic conventions for messaging:
// messaging.system "aws_sqs", messaging.operation.type "send" or "process",
// messaging.destination.name (the queue's name), messaging.message.id (the SQS message id); and
// jobkit's own jobkit.job.id, jobkit.job.kind, jobkit.job.attempt and jobkit.job.outcome.
package jobotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// ScopeName is the instrumentation scope of jobotel's tracer and meter.
const ScopeName = "github.com/jobkit-go/jobkit/jobs/jobotel"

// Attribute keys beside the messaging conventions'.
const (
	AttrJobID      = attribute.Key("jobkit.job.id")
	AttrJobKind    = attribute.Key("jobkit.job.kind")
	AttrJobAttempt = attribute.Key("jobkit.job.attempt")
	// AttrJobOutcome is what became of a delivery: succeeded, retried, snoozed, dead (its last
	// attempt failed, or a permanent error: jobs.Cancel, bad args, an error with a dead-letter
	// reason) or cancelled (an operator cancelled the job before it ran: jobs.ErrCancelled), as
	// the runtime's events and NewMetrics name them.
	AttrJobOutcome = attribute.Key("jobkit.job.outcome")
)

var (
	attrSystem  = attribute.String("messaging.system", "aws_sqs")
	attrSend    = attribute.String("messaging.operation.type", "send")
	attrProcess = attribute.String("messaging.operation.type", "process")
	keyQueue    = attribute.Key("messaging.destination.name")
	keyMessage  = attribute.Key("messaging.message.id")
	w3c         = propagation.TraceContext{}
)

// NewTracer returns the jobs.EnqueueTracer of tp (not nil; otel.GetTracerProvider() for the
// global one): a producer span "send <queue>" per job, a child of EnqueueOpts.Trace when the
// caller set it, else of the context's span, else of the job trace the context carries
// (jobs.TraceFromContext), whose trace the job carries to its worker.
func NewTracer(tp trace.TracerProvider) jobs.EnqueueTracer {
	return tracer{tp.Tracer(ScopeName)}
}

type tracer struct{ t trace.Tracer }

func (t tracer) StartEnqueue(ctx context.Context, job jobs.EnqueueSpan) (string, func(jobs.EnqueueResult)) {
	parent := job.Trace
	if parent == "" && !trace.SpanContextFromContext(ctx).IsValid() {
		parent = jobs.TraceFromContext(ctx) // enqueued from a job run without Middleware
	}
	if parent != "" {
		ctx = remoteParent(ctx, parent)
	}
	queue := awsarn.QueueName(job.QueueURL)
	attrs := []attribute.KeyValue{attrSystem, attrSend, keyQueue.String(queue), AttrJobKind.String(job.Kind)}
	ctx, span := t.t.Start(ctx, "send "+queue, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return traceparent(ctx), func(res jobs.EnqueueResult) {
		span.SetAttributes(AttrJobID.String(res.ID))
		if res.MessageID != "" {
			span.SetAttributes(keyMessage.String(res.MessageID))
		}
		if res.Err != nil {
			span.RecordError(res.Err)
			span.SetStatus(codes.Error, res.Err.Error())
		}
		span.End()
	}
}

// Middleware returns the job middleware of tp (not nil): a consumer span "process <queue>" per run of a
// job, a child of the trace the job carries (the producer's span, with NewTracer) and linked to
// it; the job's context carries the span, so the job's own spans and the jobs it enqueues
// continue it. Put it first (outermost), so the span covers the other middleware.
func Middleware(tp trace.TracerProvider) jobs.Middleware {
	t := tp.Tracer(ScopeName)
	return func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			var opts []trace.SpanStartOption
			if row.Trace != "" {
				ctx = remoteParent(ctx, row.Trace)
				if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
					opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
				}
			}
			queue := awsarn.QueueName(row.QueueURL)
			opts = append(opts, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrSystem, attrProcess,
				keyQueue.String(queue), keyMessage.String(row.MessageID), AttrJobID.String(row.ID),
				AttrJobKind.String(row.Kind), AttrJobAttempt.Int(row.Attempt)))
			ctx, span := t.Start(ctx, "process "+queue, opts...)
			defer span.End()
			err := next(jobs.ContextWithTrace(ctx, traceparent(ctx)), row)
			outcome := Outcome(err, row.Attempt, row.MaxAttempts)
			span.SetAttributes(AttrJobOutcome.String(outcome))
			if err != nil && outcome != "snoozed" && outcome != "cancelled" {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		}
	}
}

// Outcome names what the runtime makes of a delivery whose middleware and worker returned err,
// on attempt of maxAttempts (0: unknown, never the last), as its events do (event.Type):
// succeeded; snoozed; cancelled (jobs.ErrCancelled: an operator cancelled it, it did not run);
// dead (a permanent error — jobs.Cancel, *jobs.ArgsError, an error with a DeadLetterReason —
// or a failure on its last attempt); else retried.
func Outcome(err error, attempt, maxAttempts int) string {
	var snooze *jobs.SnoozeError
	var cancel *jobs.CancelError
	var args *jobs.ArgsError
	var reasoned interface{ DeadLetterReason() string }
	switch {
	case err == nil:
		return "succeeded"
	case errors.As(err, &snooze):
		return "snoozed"
	case errors.Is(err, jobs.ErrCancelled):
		return "cancelled"
	case errors.As(err, &cancel), errors.As(err, &args), errors.As(err, &reasoned):
		return "dead"
	case maxAttempts > 0 && attempt >= maxAttempts:
		return "dead"
	}
	return "retried"
}

// remoteParent returns ctx with the W3C traceparent tp as its remote span context (ctx unchanged
// if tp is not one).
func remoteParent(ctx context.Context, tp string) context.Context {
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// traceparent returns the W3C traceparent of ctx's span, or "".
func traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}
