package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/internal/benchfix"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The retry benchmark measures how soon a job that failed with a transient error is offered again,
// on the endpoint's real SQS queues (the emulator under `make bench`), whose visibility timeout is
// retryVisibility. Two consumers run side by side, each on its own queue of retryMessages jobs:
//
//   - jobkit: jobs.NewLambdaHandler(…).HandleSQS (BackoffBase retryBackoffBase) runs the received batch; the worker
//     fails every job's first attempt, so the runtime sets each message's visibility to its backoff
//     and lists it in batchItemFailures. The re-received batch must then succeed (attempt 2).
//   - fixed visibility timeout: a consumer that fails the batch and leaves the messages alone, as a
//     handler without jobkit does; SQS offers them again when the queue's visibility timeout ends.
//
// From the moment the failed batch is answered, the queue is polled every retryPoll (a long poll
// would not do: moto notices a visibility timeout's end only when the poll ends); a message's retry
// latency is when a receive first returns it, so it overstates the true latency by up to retryPoll.
// A figure is the median message of its batch.
//
//	first_retry_seconds               jobkit
//	fixed_vt_retry_seconds            fixed visibility timeout
//	retry_backoff_base_seconds        the runtime's BackoffBase
//	retry_visibility_timeout_seconds  the queues' visibility timeout
func init() {
	register("retry", 60, benchRetry)
}

const (
	retryVisibility  = 10 * time.Second
	retryBackoffBase = time.Second
	retryMessages    = 10
	retryPoll        = 50 * time.Millisecond
)

func benchRetry(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	ctx, cancel := context.WithTimeout(ctx, 6*retryVisibility)
	defer cancel()

	type result struct {
		seconds float64
		err     error
	}
	jobkit, fixed := make(chan result, 1), make(chan result, 1)
	go func() { s, err := retryWithJobkit(ctx, client); jobkit <- result{s, err} }()
	go func() { s, err := retryFixedVisibility(ctx, client); fixed <- result{s, err} }()
	j, f := <-jobkit, <-fixed
	if err := errors.Join(j.err, f.err); err != nil {
		return err
	}
	emit("first_retry_seconds", j.seconds)
	emit("fixed_vt_retry_seconds", f.seconds)
	emit("retry_backoff_base_seconds", retryBackoffBase.Seconds())
	emit("retry_visibility_timeout_seconds", retryVisibility.Seconds())
	return nil
}

// retryQueue creates a queue with the benchmark's visibility timeout, holding retryMessages jobs,
// and receives them all. It returns the queue URL and the received messages.
func retryQueue(ctx context.Context, client *sqs.Client, suffix string) (string, []sqstypes.Message, error) {
	queue, err := createBenchQueue(ctx, client, suffix, map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(retryVisibility / time.Second)),
	})
	if err != nil {
		return "", nil, err
	}
	producer, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: queue})
	if err != nil {
		return queue, nil, err
	}
	batch := make([]jobs.BatchJob, retryMessages)
	for i := range batch {
		batch[i] = jobs.BatchJob{Args: benchfix.SampleArgsAt(i)}
	}
	if _, err := producer.EnqueueBatch(ctx, batch); err != nil {
		return queue, nil, err
	}
	var msgs []sqstypes.Message
	for len(msgs) < retryMessages {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue), MaxNumberOfMessages: retryMessages, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return queue, nil, fmt.Errorf("receive: %w", err)
		}
		msgs = append(msgs, out.Messages...)
	}
	return queue, msgs, nil
}

// pollBack receives from queue every retryPoll until n messages have come back, and returns them
// with the median latency since start.
func pollBack(ctx context.Context, client *sqs.Client, queue string, n int, start time.Time) ([]sqstypes.Message, float64, error) {
	var back []sqstypes.Message
	var latency []float64
	tick := time.NewTicker(retryPoll)
	defer tick.Stop()
	for len(back) < n {
		select {
		case <-ctx.Done():
			return back, 0, fmt.Errorf("%d of %d messages came back before the deadline: %w", len(back), n, ctx.Err())
		case <-tick.C:
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue), MaxNumberOfMessages: retryMessages,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return back, 0, fmt.Errorf("poll: %w", err)
		}
		at := time.Since(start).Seconds()
		for range out.Messages {
			latency = append(latency, at)
		}
		back = append(back, out.Messages...)
	}
	return back, median(latency), nil
}

func retryWithJobkit(ctx context.Context, client *sqs.Client) (float64, error) {
	queue, msgs, err := retryQueue(ctx, client, "retry-jobkit")
	defer deleteBenchQueue(ctx, client, queue)
	if err != nil {
		return 0, err
	}
	dlq, err := createBenchQueue(ctx, client, "retry-jobkit-dlq", nil)
	if err != nil {
		return 0, err
	}
	defer deleteBenchQueue(ctx, client, dlq)

	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[benchfix.SampleArgs](func(_ context.Context, job *jobs.Job[benchfix.SampleArgs]) error {
		if job.Attempt == 1 {
			return errors.New("transient failure")
		}
		return nil
	}))
	handler := jobs.NewLambdaHandler(workers, jobs.Config{
		QueueURL: queue, DLQURL: dlq, SQS: client,
		VisibilityTimeout: retryVisibility, BackoffBase: retryBackoffBase,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}).HandleSQS
	arn := "arn:aws:sqs:us-east-1:000000000000:" + awsarn.QueueName(queue)
	invoke := func(msgs []sqstypes.Message) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, retryVisibility) // the function's timeout
		defer cancel()
		resp, err := handler(ctx, jobstest.EventFromMessages(arn, msgs))
		return jobstest.FailedIDs(resp), err
	}

	failed, err := invoke(msgs)
	if err != nil {
		return 0, err
	}
	answered := time.Now()
	if len(failed) != retryMessages {
		return 0, fmt.Errorf("jobkit: %d of %d first attempts listed as failed", len(failed), retryMessages)
	}
	back, seconds, err := pollBack(ctx, client, queue, retryMessages, answered)
	if err != nil {
		return 0, fmt.Errorf("jobkit: %w", err)
	}
	// The second attempt succeeds; the event source mapping would then delete the messages.
	failed, err = invoke(back)
	if err != nil {
		return 0, err
	}
	if len(failed) != 0 {
		return 0, fmt.Errorf("jobkit: %d second attempts failed", len(failed))
	}
	for _, m := range back {
		if got := m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)]; got != "2" {
			return 0, fmt.Errorf("jobkit: a retried message has ApproximateReceiveCount %s, want 2", got)
		}
	}
	return seconds, nil
}

func retryFixedVisibility(ctx context.Context, client *sqs.Client) (float64, error) {
	queue, msgs, err := retryQueue(ctx, client, "retry-fixed")
	defer deleteBenchQueue(ctx, client, queue)
	if err != nil {
		return 0, err
	}
	// The batch fails: every message is listed in batchItemFailures and nothing else happens.
	answered := time.Now()
	back, seconds, err := pollBack(ctx, client, queue, len(msgs), answered)
	if err != nil {
		return 0, fmt.Errorf("fixed visibility timeout: %w", err)
	}
	ids := make([]string, 0, len(back))
	for _, m := range back {
		ids = append(ids, aws.ToString(m.MessageId))
	}
	for _, m := range msgs {
		if !slices.Contains(ids, aws.ToString(m.MessageId)) {
			return 0, fmt.Errorf("fixed visibility timeout: message %s did not come back", aws.ToString(m.MessageId))
		}
	}
	return seconds, nil
}
