package jobotel_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/jobs/jobotel"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

func TestOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err          error
		attempt, max int
		want         string
	}{
		{nil, 1, 3, "succeeded"},
		{errors.New("x"), 1, 3, "retried"},
		{errors.New("x"), 3, 3, "dead"},
		{errors.New("x"), 9, 0, "retried"},
		{jobs.Snooze(time.Second), 3, 3, "snoozed"},
		{jobs.Cancel(errors.New("bad")), 1, 3, "dead"},
		{fmt.Errorf("state: %w", jobs.ErrCancelled), 1, 3, "cancelled"},
		{&jobs.ArgsError{Kind: "k", Err: errors.New("bad json")}, 1, 3, "dead"},
		{&jobs.UnknownKindError{Kind: "k"}, 1, 3, "dead"},
	} {
		assert.Equal(t, c.want, jobotel.Outcome(c.err, c.attempt, c.max), "%v on %d/%d", c.err, c.attempt, c.max)
	}
}

// The producer span's parent: EnqueueOpts.Trace when set, else the context's span, else the job
// trace the context carries; a job the Client refuses ends its span with the error.
func TestTracerParents(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	client, err := jobs.NewClient(jobstest.NewRecorder(), jobs.ClientOptions{DefaultQueueURL: jobstest.QueueURL, Tracer: jobotel.NewTracer(tp)})
	require.NoError(t, err)
	const explicit = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	_, err = client.Enqueue(context.Background(), work{N: 1}, &jobs.EnqueueOpts{Trace: explicit})
	require.NoError(t, err)
	_, err = client.Enqueue(jobs.ContextWithTrace(context.Background(), carried), work{N: 2}, nil)
	require.NoError(t, err)
	_, err = client.Enqueue(context.Background(), work{N: 3}, &jobs.EnqueueOpts{GroupID: "g", Delay: time.Hour}) // no LongDelayer: refused
	require.ErrorIs(t, err, jobs.ErrDelayTooLong)
	got := spans.GetSpans()
	require.Len(t, got, 3)
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", got[0].SpanContext.TraceID().String())
	assert.Equal(t, "b7ad6b7169203331", got[0].Parent.SpanID().String())
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", got[1].SpanContext.TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", got[1].Parent.SpanID().String())
	assert.Equal(t, "Error", got[2].Status.Code.String(), "a job refused after its span started ends it with the error")
	assert.Contains(t, got[2].Status.Description, "delay")
	assert.False(t, got[2].Parent.IsValid(), "a job with no trace to continue starts one")
}

// Outcomes are counted by kind and outcome, a kind no worker runs as "unknown" (messages cannot
// add series); durations only for runs.
func TestMetricsBoundKinds(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	record, err := jobotel.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), []string{"a.run"})
	require.NoError(t, err)
	record(event.Event{Type: event.Started, Kind: "a.run", Queue: "q"})
	record(event.Event{Type: event.Succeeded, Kind: "a.run", Queue: "q", Duration: 2 * time.Second})
	record(event.Event{Type: event.Dead, Kind: "evil.kind.from.a.message", Queue: "q", Reason: contract.ReasonMalformed})
	record(event.Event{Type: event.NotRun, Kind: "a.run", Queue: "q"})
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	counts, durations := map[string]int64{}, map[string]uint64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				k, _ := dp.Attributes.Value(jobotel.AttrJobKind)
				o, _ := dp.Attributes.Value(jobotel.AttrJobOutcome)
				counts[k.AsString()+"/"+o.AsString()] += dp.Value
			}
		case metricdata.Histogram[float64]:
			for _, dp := range d.DataPoints {
				k, _ := dp.Attributes.Value(jobotel.AttrJobKind)
				durations[k.AsString()] += dp.Count
				if k.AsString() == "a.run" {
					assert.Equal(t, 2.0, dp.Sum)
				}
			}
		}
	}
	assert.Equal(t, map[string]int64{"a.run/succeeded": 1, "unknown/dead": 1, "a.run/not_run": 1}, counts)
	assert.Equal(t, map[string]uint64{"a.run": 1}, durations, "the dead job that never ran has no duration")
}
