package jobs

import "context"

// EnqueueTracer starts a span for each job a Client enqueues (ClientOptions.Tracer); package
// jobs/jobotel makes one from an OpenTelemetry TracerProvider. StartEnqueue is called once per
// job, by Enqueue, EnqueueBatch (per entry) and Prepare, once the job's route is known and before
// its envelope is encoded. It returns the W3C traceparent the job carries to its worker — its
// span's, so the worker's span continues it — ("" keeps the one the Client would give) and a
// function the Client calls once with the job's result (Err set when it was not enqueued).
type EnqueueTracer interface {
	StartEnqueue(ctx context.Context, job EnqueueSpan) (traceparent string, end func(EnqueueResult))
}

// EnqueueSpan describes a job to an EnqueueTracer.
type EnqueueSpan struct {
	ID       string // the job id EnqueueOpts.ID set; "" until the Client makes one
	Kind     string
	QueueURL string
	GroupID  string // FIFO message group (or a fair queue's tenant)
	// Trace is EnqueueOpts.Trace when the caller set it: the trace the job must continue. Empty,
	// the tracer continues the context's span, or the context's job trace (TraceFromContext).
	Trace string
	// Batch is true for an entry of EnqueueBatch.
	Batch bool
}

// startSpan starts p's enqueue span when the Client has a Tracer: it returns the traceparent the
// job carries instead of trace ("" keeps trace) and records the span's end in p.
func (c *Client) startSpan(ctx context.Context, p *prepared, explicit string, batch bool) string {
	if c.opts.Tracer == nil {
		return ""
	}
	tp, end := c.opts.Tracer.StartEnqueue(ctx, EnqueueSpan{ID: p.id, Kind: p.kind, QueueURL: p.queue, GroupID: p.group, Trace: explicit, Batch: batch})
	p.endSpan = end
	if !validTraceparent(tp) {
		return ""
	}
	return tp
}

// finish ends p's enqueue span, if any, with res (err, when not nil, as res.Err); once.
func (p *prepared) finish(res EnqueueResult, err error) {
	if p.endSpan == nil {
		return
	}
	if err != nil {
		res.Err = err
	}
	end := p.endSpan
	p.endSpan = nil
	end(res)
}
