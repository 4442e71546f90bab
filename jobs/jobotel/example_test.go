package jobotel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobotel"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// A service's producer and worker, traced and measured with OpenTelemetry: the tracer and meter
// providers are the service's own (an OTLP exporter, X-Ray's, ...).
func Example() {
	tp := sdktrace.NewTracerProvider()
	mp := sdkmetric.NewMeterProvider()
	sqsClient := jobstest.NewRecorder() // a *sqs.Client in a service

	// The producer: a span per job enqueued, whose trace the job carries.
	client, err := jobs.NewClient(sqsClient, jobs.ClientOptions{DefaultQueueURL: jobstest.QueueURL, Tracer: jobotel.NewTracer(tp)})
	if err != nil {
		panic(err)
	}
	res, err := client.Enqueue(context.Background(), work{N: 1}, nil)
	fmt.Println(res.Kind, err)

	// The worker: a span per run, first (outermost) so it covers the other middleware, and the
	// outcomes as metrics (beside the EMF lines; cfg.Metrics = io.Discard drops those).
	workers := jobs.NewWorkers()
	workers.Use(jobotel.Middleware(tp))
	jobs.AddWorker(workers, jobs.WorkFunc[work](func(ctx context.Context, job *jobs.Job[work]) error { return nil }))
	metrics, err := jobotel.NewMetrics(mp, workers.Kinds())
	if err != nil {
		panic(err)
	}
	cfg := jobstest.Config(sqsClient)
	cfg.OnEvent = metrics
	_ = jobs.NewLambdaHandler(workers, cfg)
	// Output: otel.work <nil>
}
