package jobotel_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/jobotel"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type work struct {
	N int `json:"n"`
}

func (work) Kind() string { return "otel.work" }

// One trace from a request through its enqueues to the runs of the jobs and on to a job a job
// enqueues, on the emulator's SQS: a producer span per job (Enqueue and each EnqueueBatch entry),
// a child of the request's span; a consumer span per run, a child of the job's producer span and
// linked to it, with the messaging attributes and the run's outcome; the job's own enqueue a child
// of its run. The runtime's outcomes are counted as OpenTelemetry metrics by kind and outcome.
func TestSpansFromEnqueueToRunOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q := awstest.CreateQueue(t, cfg, "otel", nil)
	dlq := awstest.CreateQueue(t, cfg, "otel-dlq", nil)
	children := awstest.CreateQueue(t, cfg, "otel-children", nil)
	spans, tp := recordSpans()
	producer, childProducer := tracedClient(t, client, tp, q), tracedClient(t, client, tp, children)

	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	one, err := producer.Enqueue(ctx, work{N: 1}, nil)
	require.NoError(t, err)
	batch, err := producer.EnqueueBatch(ctx, []jobs.BatchJob{{Args: work{N: 2}}, {Args: work{N: 3}}})
	require.NoError(t, err)
	request.End()

	w := jobs.NewWorkers()
	w.Use(jobotel.Middleware(tp))
	var child jobs.EnqueueResult
	jobs.AddWorker(w, jobs.WorkFunc[work](func(ctx context.Context, job *jobs.Job[work]) error {
		switch job.Args.N {
		case 2:
			return errors.New("provider down")
		case 3:
			child, err = childProducer.Enqueue(ctx, work{N: 4}, nil)
			return err
		}
		return nil
	}))
	reader := sdkmetric.NewManualReader()
	metrics, err := jobotel.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), w.Kinds())
	require.NoError(t, err)
	rc := jobstest.Config(client)
	rc.QueueURL, rc.DLQURL, rc.VisibilityTimeout, rc.MaxAttempts = q.URL, dlq.URL, 30*time.Second, 3
	rc.Logger, rc.OnEvent = slog.New(slog.NewJSONHandler(io.Discard, nil)), metrics
	msgs := awstest.ReceiveN(t, client, q.URL, 3)
	_, err = jobs.NewLambdaHandler(w, rc).HandleSQS(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)

	byJob := map[string]map[trace.SpanKind]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		id := attr(s, jobotel.AttrJobID)
		if byJob[id] == nil {
			byJob[id] = map[trace.SpanKind]tracetest.SpanStub{}
		}
		byJob[id][s.SpanKind] = s
	}
	name := awsarn.QueueName(q.URL)
	for i, id := range []string{one.ID, batch[0].ID, batch[1].ID} {
		send, run := byJob[id][trace.SpanKindProducer], byJob[id][trace.SpanKindConsumer]
		require.True(t, send.SpanContext.IsValid(), "job %d's producer span", i+1)
		require.True(t, run.SpanContext.IsValid(), "job %d's consumer span", i+1)
		assert.Equal(t, request.SpanContext().SpanID(), send.Parent.SpanID(), "the enqueue is a child of the request")
		assert.Equal(t, "send "+name, send.Name)
		assert.Equal(t, "process "+name, run.Name)
		assert.Equal(t, send.SpanContext.TraceID(), run.SpanContext.TraceID(), "one trace")
		assert.Equal(t, send.SpanContext.SpanID(), run.Parent.SpanID(), "the run is a child of its enqueue")
		require.Len(t, run.Links, 1)
		assert.Equal(t, send.SpanContext.SpanID(), run.Links[0].SpanContext.SpanID(), "and linked to it")
		for _, s := range []tracetest.SpanStub{send, run} {
			assert.Equal(t, "aws_sqs", attr(s, "messaging.system"))
			assert.Equal(t, name, attr(s, "messaging.destination.name"))
			assert.Equal(t, "otel.work", attr(s, jobotel.AttrJobKind))
		}
		assert.Equal(t, "send", attr(send, "messaging.operation.type"))
		assert.Equal(t, "process", attr(run, "messaging.operation.type"))
		assert.NotEmpty(t, attr(send, "messaging.message.id"))
		assert.Equal(t, attr(send, "messaging.message.id"), attr(run, "messaging.message.id"))
	}
	assert.Equal(t, "succeeded", attr(byJob[one.ID][trace.SpanKindConsumer], jobotel.AttrJobOutcome))
	failed := byJob[batch[0].ID][trace.SpanKindConsumer]
	assert.Equal(t, "retried", attr(failed, jobotel.AttrJobOutcome))
	assert.Equal(t, "Error", failed.Status.Code.String())
	assert.Equal(t, "provider down", failed.Status.Description)

	// The job enqueued by job 3 continues job 3's run, and carries its producer span's trace.
	childSend := byJob[child.ID][trace.SpanKindProducer]
	require.True(t, childSend.SpanContext.IsValid())
	assert.Equal(t, byJob[batch[1].ID][trace.SpanKindConsumer].SpanContext.SpanID(), childSend.Parent.SpanID())
	msg := awstest.ReceiveN(t, client, children.URL, 1)
	env, err := jobs.DecodeEnvelope(aws.ToString(msg[0].Body))
	require.NoError(t, err)
	assert.Equal(t, child.ID, env.ID)
	assert.Equal(t, childSend.SpanContext.TraceID().String(), jobs.TraceID(env.Trace))
	assert.Contains(t, env.Trace, childSend.SpanContext.SpanID().String(), "the envelope's parent is the child's producer span")

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != jobotel.MetricJobs {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				outcome, _ := dp.Attributes.Value(jobotel.AttrJobOutcome)
				kind, _ := dp.Attributes.Value(jobotel.AttrJobKind)
				counts[kind.AsString()+"/"+outcome.AsString()] += dp.Value
			}
		}
	}
	assert.Equal(t, map[string]int64{"otel.work/succeeded": 2, "otel.work/retried": 1}, counts)
}

func attr(s tracetest.SpanStub, key attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}

// A container worker's consumer runs the same middleware: its run's span is a child of the job's
// producer span.
func TestSpansWithAContainerConsumerOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q := awstest.CreateQueue(t, cfg, "otel-container", nil)
	dlq := awstest.CreateQueue(t, cfg, "otel-container-dlq", nil)
	spans, tp := recordSpans()
	res, err := tracedClient(t, client, tp, q).Enqueue(context.Background(), work{N: 1}, nil)
	require.NoError(t, err)

	w := jobs.NewWorkers()
	w.Use(jobotel.Middleware(tp))
	jobs.AddWorker(w, jobs.WorkFunc[work](func(context.Context, *jobs.Job[work]) error { return nil }))
	rc := jobstest.Config(client)
	rc.QueueURL, rc.DLQURL, rc.VisibilityTimeout = q.URL, dlq.URL, 30*time.Second
	c, err := jobs.NewConsumer(w, rc, &jobs.ConsumerOptions{WaitTime: time.Second})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var send, run tracetest.SpanStub
	require.Eventually(t, func() bool {
		for _, s := range spans.GetSpans() {
			if attr(s, jobotel.AttrJobID) != res.ID {
				continue
			}
			switch s.SpanKind {
			case trace.SpanKindProducer:
				send = s
			case trace.SpanKindConsumer:
				run = s
			}
		}
		return run.SpanContext.IsValid()
	}, 30*time.Second, 50*time.Millisecond, "the consumer ran the job")
	stop()
	require.NoError(t, <-done)
	assert.Equal(t, send.SpanContext.SpanID(), run.Parent.SpanID(), "the run is a child of its enqueue")
	assert.Equal(t, "succeeded", attr(run, jobotel.AttrJobOutcome))
}

// recordSpans returns a tracer provider whose spans the returned exporter keeps.
func recordSpans() (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	spans := tracetest.NewInMemoryExporter()
	return spans, sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
}

// tracedClient is a jobs client sending to q, traced with tp.
func tracedClient(t *testing.T, client *sqs.Client, tp *sdktrace.TracerProvider, q awstest.Queue) *jobs.Client {
	t.Helper()
	c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL, Tracer: jobotel.NewTracer(tp)})
	require.NoError(t, err)
	return c
}
