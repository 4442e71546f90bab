package jobs_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
)

// Encode is a long job: it may run for hours, longer than a Lambda function can.
type Encode struct {
	VideoID string `json:"video_id"`
}

func (Encode) Kind() string { return "video.encode" }

// EncodeWorker encodes a video, stopping when its context ends.
type EncodeWorker struct{}

func (EncodeWorker) Work(ctx context.Context, job *jobs.Job[Encode]) error {
	select {
	case <-time.After(2 * time.Hour): // the work
		return nil
	case <-ctx.Done():
		return ctx.Err() // the drain: the message is released for another task at once
	}
}

// One main for Lambda and for a container: jobs.Start serves Lambda invocations where Lambda
// runs it (AWS_LAMBDA_RUNTIME_API is set) and long-polls the queue anywhere else, until SIGTERM.
func ExampleStart() {
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, EncodeWorker{})
	jobs.Start(workers, cfg)
}

// The container mode spelled out: a Consumer runs the workers through the same runtime as
// NewLambdaHandler until its context ends, then drains within DrainTimeout.
func ExampleNewConsumer() {
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, EncodeWorker{})
	consumer, err := jobs.NewConsumer(workers, cfg, &jobs.ConsumerOptions{
		Concurrency:  4,                // jobs at once; never more received
		DrainTimeout: 90 * time.Second, // keep the task's stop timeout above it
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	_ = consumer.Run(ctx)
}
