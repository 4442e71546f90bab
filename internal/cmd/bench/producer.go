package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
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
// On moto the figures are bounded by the emulator: one Python process that spends CPU per message
// and runs one request at a time, where SQS charges a network round trip per request and serves
// requests in parallel. The same pairs then run on ElasticMQ (JOBKIT_ELASTICMQ_URL), a server that
// answers requests in parallel, as SQS does, after three pairs that warm it up.
//
//	producer_jobs_per_s                        jobkit's EnqueueBatch, on moto
//	producer_naive_jobs_per_s                  the SendMessage loop, on moto
//	producer_speedup_vs_naive                  the ratio (with _spread)
//	producer_elasticmq_jobs_per_s              the same on ElasticMQ
//	producer_elasticmq_naive_jobs_per_s
//	producer_elasticmq_speedup_vs_naive        (with _spread)
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
	fast, naive, err := producerPairs(ctx, sqs.NewFromConfig(cfg), false)
	if err != nil {
		return err
	}
	emit("producer_jobs_per_s", median(fast))
	emit("producer_naive_jobs_per_s", median(naive))
	emitRatio(emit, "producer_speedup_vs_naive", fast, naive)

	url := os.Getenv(envElasticMQ)
	if url == "" {
		fmt.Fprintf(os.Stderr, "bench: producer on ElasticMQ left out: %s is not set (make bench sets it)\n", envElasticMQ)
		return nil
	}
	fast, naive, err = producerPairs(ctx, sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) }), true)
	if err != nil {
		return fmt.Errorf("on ElasticMQ (%s): %w", url, err)
	}
	emit("producer_elasticmq_jobs_per_s", median(fast))
	emit("producer_elasticmq_naive_jobs_per_s", median(naive))
	emitRatio(emit, "producer_elasticmq_speedup_vs_naive", fast, naive)
	return nil
}

// envElasticMQ is ElasticMQ's endpoint for the producer's second run (make bench starts it).
const envElasticMQ = "JOBKIT_ELASTICMQ_URL"

// producerPairs runs producerRounds alternating pairs of the two sides on client's endpoint and
// returns each side's jobs per second. warm runs three pairs first and drops them: a JVM emulator
// answers its first thousands of requests before its compiler has caught up.
func producerPairs(ctx context.Context, client *sqs.Client, warm bool) (fast, naive []float64, err error) {
	batch := make([]jobs.BatchJob, producerJobs)
	for i := range batch {
		batch[i] = jobs.BatchJob{Args: benchfix.SampleArgsAt(i)}
	}
	batched := func(int) (float64, error) {
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
	}
	loop := func(int) (float64, error) {
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
	}
	if warm {
		if _, _, err := alternate(3, batched, loop); err != nil {
			return nil, nil, err
		}
	}
	return alternate(producerRounds, batched, loop)
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
	// At least once: when a connection fails after SQS took a message, the SDK's retry sends it
	// again, so a queue may hold a duplicate. Fewer messages than jobs would be a loss. The count
	// is approximate (ElasticMQ's lags the sends by a moment): it is read until it is whole or
	// 10 s have passed.
	n := 0
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(queue), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
		})
		if err != nil {
			return 0, err
		}
		if n, err = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]); err != nil {
			return 0, err
		}
		if n >= producerJobs || time.Now().After(deadline) {
			break
		}
	}
	if n < producerJobs {
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
