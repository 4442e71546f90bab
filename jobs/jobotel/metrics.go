package jobotel

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
)

// Metric names NewMetrics records.
const (
	// MetricJobs counts the runtime's outcomes ({job}), by queue, kind and outcome: succeeded,
	// retried, snoozed, dead, cancelled, not_run, returned (event.Type).
	MetricJobs = "jobkit.jobs"
	// MetricDuration is the duration of job runs (s), by queue, kind and outcome (succeeded,
	// retried, dead).
	MetricDuration = "jobkit.job.duration"
)

// NewMetrics returns an OnEvent hook (jobs.Config.OnEvent) that records each job outcome in mp
// (not nil):
// MetricJobs and MetricDuration. kinds are the kinds the worker runs (jobs.Workers.Kinds): a job
// of any other kind is recorded as contract.KindUnknown, as in the runtime's EMF lines, so
// messages cannot add series. To keep the events' other consumer, call both:
//
//	metrics, err := jobotel.NewMetrics(mp, workers.Kinds())
//	cfg.OnEvent = func(e event.Event) { metrics(e); events(e) }
func NewMetrics(mp metric.MeterProvider, kinds []string) (func(event.Event), error) {
	m := mp.Meter(ScopeName)
	jobs, err := m.Int64Counter(MetricJobs, metric.WithUnit("{job}"), metric.WithDescription("Job outcomes, by queue, kind and outcome"))
	if err != nil {
		return nil, err
	}
	duration, err := m.Float64Histogram(MetricDuration, metric.WithUnit("s"), metric.WithDescription("Duration of job runs, by queue, kind and outcome"))
	if err != nil {
		return nil, err
	}
	known := slices.Clone(kinds)
	slices.Sort(known)
	return func(e event.Event) {
		if e.Type == event.Started {
			return
		}
		kind := e.Kind
		if _, ok := slices.BinarySearch(known, kind); !ok {
			kind = contract.KindUnknown
		}
		set := metric.WithAttributeSet(attribute.NewSet(keyQueue.String(e.Queue), AttrJobKind.String(kind), AttrJobOutcome.String(string(e.Type))))
		ctx := context.Background()
		jobs.Add(ctx, 1, set)
		if e.Duration > 0 && (e.Type == event.Succeeded || e.Type == event.Retried || e.Type == event.Dead) {
			duration.Record(ctx, e.Duration.Seconds(), set) // runs only: a dead job that never ran has none
		}
	}, nil
}
