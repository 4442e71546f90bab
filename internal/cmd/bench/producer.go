package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/internal/benchfix"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The producer benchmark sends the same producerJobs jobs to the endpoint (AWS_ENDPOINT_URL: the
// emulator under `make bench`) twice per round, each time into a fresh queue:
//
//   - jobkit: one Client.EnqueueBatch call (SendMessageBatch of 10, a few calls in flight);
//   - naive: a loop that encodes the same envelope and calls SendMessage once per job.
//
// Every message must then be on its queue. producerRounds pairs alternate the two (see
// alternate); a side's figure is its median round, the ratio the median of the pairs' ratios.
//
// On moto the figures are bounded by the emulator: it spends CPU per message (and, in moto 5.2,
// time proportional to the queue's depth on every SendMessage, batched or not), where SQS charges
// a network round trip per request.
//
//	producer_jobs_per_s               jobkit's EnqueueBatch
//	producer_naive_jobs_per_s         the SendMessage loop
//	producer_speedup_vs_naive         the ratio (with producer_speedup_vs_naive_spread)
func init() {
	register("producer", 50, benchProducer)
}

const (
	producerJobs   = 1000
	producerRounds = minPairs
)

func benchProducer(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	batch := make([]jobs.BatchJob, producerJobs)
	for i := range batch {
		batch[i] = jobs.BatchJob{Args: benchfix.SampleArgsAt(i)}
	}

	fast, naive, err := alternate(producerRounds, func(int) (float64, error) {
		rate, err := withQueue(ctx, client, "producer-batch", func(queue string) error {
			c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: queue})
			if err != nil {
				return err
			}
			_, err = c.EnqueueBatch(ctx, batch)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("EnqueueBatch: %w", err)
		}
		return rate, nil
	}, func(int) (float64, error) {
		rate, err := withQueue(ctx, client, "producer-naive", func(queue string) error {
			for i := range producerJobs {
				args, err := json.Marshal(benchfix.SampleArgsAt(i))
				if err != nil {
					return err
				}
				body, err := json.Marshal(&jobs.Envelope{
					V: jobs.EnvelopeVersion, ID: jobs.NewID(), Kind: benchfix.SampleArgs{}.Kind(),
					Args: args, EnqueuedAt: time.Now().UTC().Truncate(time.Millisecond),
				})
				if err != nil {
					return err
				}
				if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{
					QueueUrl: aws.String(queue), MessageBody: aws.String(string(body)),
				}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("SendMessage loop: %w", err)
		}
		return rate, nil
	})
	if err != nil {
		return err
	}
	emit("producer_jobs_per_s", median(fast))
	emit("producer_naive_jobs_per_s", median(naive))
	emitRatio(emit, "producer_speedup_vs_naive", fast, naive)
	return nil
}

// withQueue creates a fresh queue, times send on it, checks that producerJobs messages arrived and
// deletes the queue. It returns jobs per second.
func withQueue(ctx context.Context, client *sqs.Client, suffix string, send func(queue string) error) (float64, error) {
	queue, err := createBenchQueue(ctx, client, suffix, nil)
	if err != nil {
		return 0, err
	}
	defer deleteBenchQueue(ctx, client, queue)
	start := time.Now()
	if err := send(queue); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queue), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0, err
	}
	// At least once: when a connection fails after SQS took a message, the SDK's retry sends it
	// again, so a queue may hold a duplicate. Fewer messages than jobs would be a loss.
	n, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	if err != nil || n < producerJobs {
		return 0, fmt.Errorf("%s holds %d messages after sending %d", queue, n, producerJobs)
	}
	return producerJobs / elapsed.Seconds(), nil
}

// createBenchQueue creates a queue with a unique name "jk-bench-<suffix>-<random>".
func createBenchQueue(ctx context.Context, client *sqs.Client, suffix string, attrs map[string]string) (string, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String("jk-bench-" + suffix + "-" + hex.EncodeToString(b[:])),
		Attributes: attrs,
	})
	if err != nil {
		return "", fmt.Errorf("create queue: %w", err)
	}
	return aws.ToString(out.QueueUrl), nil
}

func deleteBenchQueue(ctx context.Context, client *sqs.Client, queue string) {
	_, _ = client.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: aws.String(queue)})
}
