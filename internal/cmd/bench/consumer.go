package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/internal/benchfix"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The consumer benchmark measures the container mode (jobs.Consumer) against a plain
// aws-sdk-go-v2 receive/delete loop, on the same endpoint (the emulator under `make bench`), in
// the same run, with the same concurrency. Each side drains a queue preloaded with consumerJobs
// sample jobs whose work is nothing but decoding the args, so the figures are the consumers'
// own cost and the endpoint's; consumerRounds pairs alternate the side that goes first (see
// alternate), so a drift of the endpoint's speed weighs on both. A rate is a side's median round.
//
//   - consumer: jobs.NewConsumer with Concurrency consumerConcurrency (one poller per 10): long
//     polls of at most its free room, each message through the runtime (decode, middleware,
//     outcome), finished messages deleted in batches of up to 10.
//   - raw loop: consumerConcurrency/10 goroutines, each receiving 10 messages with a long poll,
//     decoding each body's envelope and args on its own goroutine, and deleting the 10 in one
//     DeleteMessageBatch before it receives again.
//
// Then a consumer with the default options (concurrency 10: one poller, 20 s long polls) runs on
// an empty queue until it has made consumerIdleReceive receives, which gives the receives an
// idle consumer makes per hour.
//
//	consumer_jobs_per_s              jobs.Consumer
//	raw_loop_jobs_per_s              the plain receive/delete loop
//	consumer_vs_raw_loop             their ratio (target >= 0.9), median of the pairs (and _spread)
//	consumer_idle_receives_per_hour  receive calls of an idle consumer
//	consumer_concurrency, consumer_jobs_per_round
func init() {
	register("consumer", 55, benchConsumer)
}

const (
	consumerJobs        = 1000
	consumerRounds      = minPairs
	consumerConcurrency = 20
	consumerIdleReceive = 2
)

func benchConsumer(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	rate := func(d time.Duration) float64 { return consumerJobs / d.Seconds() }
	consumerRates, rawRates, err := alternate(consumerRounds, func(round int) (float64, error) {
		d, err := consumerRound(ctx, client, "consumer-"+strconv.Itoa(round), runJobkitConsumer)
		if err != nil {
			return 0, fmt.Errorf("consumer: %w", err)
		}
		return rate(d), nil
	}, func(round int) (float64, error) {
		d, err := consumerRound(ctx, client, "raw-"+strconv.Itoa(round), rawLoop)
		if err != nil {
			return 0, fmt.Errorf("raw loop: %w", err)
		}
		return rate(d), nil
	})
	if err != nil {
		return err
	}
	emit("consumer_jobs_per_s", median(consumerRates))
	emit("raw_loop_jobs_per_s", median(rawRates))
	emitRatio(emit, "consumer_vs_raw_loop", consumerRates, rawRates)
	idle, err := idleReceivesPerHour(ctx, client)
	if err != nil {
		return fmt.Errorf("idle consumer: %w", err)
	}
	emit("consumer_idle_receives_per_hour", idle)
	emit("consumer_concurrency", consumerConcurrency)
	emit("consumer_jobs_per_round", consumerJobs)
	return nil
}

// consumerRound fills a fresh queue with consumerJobs jobs and returns how long drain took to
// delete them all.
func consumerRound(ctx context.Context, client *sqs.Client, suffix string,
	drain func(ctx context.Context, client *sqs.Client, queue, dlq string) error) (time.Duration, error) {
	queue, err := createBenchQueue(ctx, client, "c-"+suffix, nil)
	if err != nil {
		return 0, err
	}
	defer deleteBenchQueue(ctx, client, queue)
	dlq, err := createBenchQueue(ctx, client, "c-dlq-"+suffix, nil)
	if err != nil {
		return 0, err
	}
	defer deleteBenchQueue(ctx, client, dlq)
	producer, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: queue})
	if err != nil {
		return 0, err
	}
	batch := make([]jobs.BatchJob, consumerJobs)
	for i := range batch {
		batch[i] = jobs.BatchJob{Args: benchfix.SampleArgsAt(i)}
	}
	if _, err := producer.EnqueueBatch(ctx, batch); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := drain(ctx, client, queue, dlq); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// runJobkitConsumer runs a jobs.Consumer until it has deleted consumerJobs messages.
func runJobkitConsumer(ctx context.Context, client *sqs.Client, queue, dlq string) error {
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[benchfix.SampleArgs](func(context.Context, *jobs.Job[benchfix.SampleArgs]) error { return nil }))
	c, err := jobs.NewConsumer(w, jobs.Config{
		QueueURL: queue, DLQURL: dlq, SQS: client, Concurrency: consumerConcurrency,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}, &jobs.ConsumerOptions{WaitTime: time.Second})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	deadline := time.Now().Add(5 * time.Minute)
	for c.Stats().Deleted < consumerJobs && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	if n := c.Stats().Deleted; n < consumerJobs {
		return fmt.Errorf("deleted %d of %d jobs in 5 minutes", n, consumerJobs)
	}
	return nil
}

// rawLoop is what a user would write without jobkit: receive 10, run them, delete them, again.
func rawLoop(ctx context.Context, client *sqs.Client, queue, _ string) error {
	pollers := consumerConcurrency / jobs.MaxBatchEntries
	var mu sync.Mutex
	deleted := 0
	errs := make(chan error, pollers)
	for range pollers {
		go func() {
			for {
				mu.Lock()
				left := consumerJobs - deleted
				mu.Unlock()
				if left <= 0 {
					errs <- nil
					return
				}
				n, err := rawRound(ctx, client, queue)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				deleted += n
				mu.Unlock()
			}
		}()
	}
	var first error
	for range pollers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// rawRound receives up to 10 messages, decodes each on its own goroutine and deletes them in one
// call; it returns how many it deleted.
func rawRound(ctx context.Context, client *sqs.Client, queue string) (int, error) {
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		return 0, err
	}
	if len(out.Messages) == 0 {
		return 0, nil
	}
	var wg sync.WaitGroup
	for _, m := range out.Messages {
		wg.Go(func() {
			var env struct {
				Args json.RawMessage `json:"args"`
			}
			var args benchfix.SampleArgs
			if json.Unmarshal([]byte(aws.ToString(m.Body)), &env) == nil {
				_ = json.Unmarshal(env.Args, &args)
			}
		})
	}
	wg.Wait()
	entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
	for i, m := range out.Messages {
		entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
	}
	del, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queue), Entries: entries})
	if err != nil {
		return 0, err
	}
	return len(entries) - len(del.Failed), nil
}

// idleReceivesPerHour runs a consumer with its default long poll on an empty queue until it has
// made consumerIdleReceive receives, and scales its receives to an hour.
func idleReceivesPerHour(ctx context.Context, client *sqs.Client) (float64, error) {
	queue, err := createBenchQueue(ctx, client, "c-idle", nil)
	if err != nil {
		return 0, err
	}
	defer deleteBenchQueue(ctx, client, queue)
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[benchfix.SampleArgs](func(context.Context, *jobs.Job[benchfix.SampleArgs]) error { return nil }))
	c, err := jobs.NewConsumer(w, jobs.Config{
		QueueURL: queue, DLQURL: queue, SQS: client,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}, nil)
	if err != nil {
		return 0, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- c.Run(runCtx) }()
	deadline := start.Add(2 * time.Minute)
	for c.Stats().Receives < consumerIdleReceive && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	receives := c.Stats().Receives
	cancel()
	if err := <-done; err != nil {
		return 0, err
	}
	return float64(receives) / elapsed.Hours(), nil
}
