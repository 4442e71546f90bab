package outbox_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobotel"
	"github.com/jobkit-go/jobkit/jobs/outbox"
)

// With a Tracer on the writer's Client and on the Forwarder, a job written in a transaction has
// a span where it was written (a child of the request's) and one where the forwarder sent it, a
// child of the first, with the SQS message id.
func TestForwarderSpansContinueTheWritersTrace(t *testing.T) {
	t.Parallel()
	needsPromptStreams(t)
	f := newFixture(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	client, err := jobs.NewClient(f.sqs, jobs.ClientOptions{DefaultQueueURL: f.queue.URL, Tracer: jobotel.NewTracer(tp)})
	require.NoError(t, err)
	ob, err := outbox.New(outbox.Config{Table: f.state, Client: client})
	require.NoError(t, err)
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	ids, err := ob.Write(ctx, f.db, []ddbtypes.TransactWriteItem{f.order("order-otel")}, outbox.Job{Args: SendReceipt{Order: "order-otel"}})
	require.NoError(t, err)
	request.End()

	fw, err := outbox.NewForwarder(outbox.ForwarderConfig{
		SQS: f.sqs, DynamoDB: f.db, Table: f.state, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Tracer: jobotel.NewTracer(tp),
	})
	require.NoError(t, err)
	resp, err := fw.Handle(context.Background(), f.stream(t, 1))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)

	var written, sent []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.SpanKind != trace.SpanKindProducer {
			continue
		}
		if s.Parent.SpanID() == request.SpanContext().SpanID() {
			written = append(written, s)
		} else {
			sent = append(sent, s)
		}
	}
	require.Len(t, written, 1, "the write's span, a child of the request")
	require.Len(t, sent, 1, "the forwarder's span")
	assert.Equal(t, written[0].SpanContext.SpanID(), sent[0].Parent.SpanID(), "the send continues the write")
	assert.Equal(t, written[0].SpanContext.TraceID(), sent[0].SpanContext.TraceID())
	attrs := map[string]string{}
	for _, kv := range sent[0].Attributes {
		attrs[string(kv.Key)] = kv.Value.AsString()
	}
	assert.Equal(t, ids[0], attrs[string(jobotel.AttrJobID)])
	assert.Equal(t, "receipt.send", attrs[string(jobotel.AttrJobKind)])
	assert.NotEmpty(t, attrs["messaging.message.id"], "the SQS message id")
}
