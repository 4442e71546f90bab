package jobs

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parkedReceives is an SQSAPI whose receives record their input and wait, as an empty long poll
// does, until the consumer stops polling.
type parkedReceives struct {
	SQSAPI
	mu     sync.Mutex
	inputs []*sqs.ReceiveMessageInput
}

func (p *parkedReceives) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	p.mu.Lock()
	p.inputs = append(p.inputs, in)
	p.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (p *parkedReceives) received() []*sqs.ReceiveMessageInput {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*sqs.ReceiveMessageInput(nil), p.inputs...)
}

// An idle consumer keeps one 20 s long poll in flight per 10 of its concurrency (docs/handlers.md:
// about 180 receives an hour per poller), and together they ask for no more messages than it has
// room to run.
func TestConsumerPollsOncePerTenOfConcurrency(t *testing.T) {
	t.Parallel()
	for concurrency, pollers := range map[int]int{10: 1, 25: 3} {
		sqsAPI := &parkedReceives{}
		cfg := Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/q", DLQURL: "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
			SQS: sqsAPI, Concurrency: concurrency, Logger: slog.New(slog.DiscardHandler)}
		c, err := NewConsumer(NewWorkers(), cfg, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		require.Eventually(t, func() bool { return len(sqsAPI.received()) >= pollers }, 5*time.Second, 10*time.Millisecond)
		time.Sleep(200 * time.Millisecond) // no further receive while these are in flight
		cancel()
		require.NoError(t, <-done)

		in := sqsAPI.received()
		require.Len(t, in, pollers, "concurrency %d", concurrency)
		asked := 0
		for _, r := range in {
			assert.Equal(t, int32(20), r.WaitTimeSeconds, "a 20 s long poll")
			assert.LessOrEqual(t, r.MaxNumberOfMessages, int32(10))
			asked += int(r.MaxNumberOfMessages)
		}
		assert.LessOrEqual(t, asked, concurrency, "never more than it has room to run")
	}
}

// Finished messages are gathered for at most 2 ms before their delete call (docs/handlers.md);
// TestConsumerHoldsNoMoreThanItsConcurrencyOnSQS shows the gathering on the emulator, `make bench ONLY=consumer`
// what it buys.
func TestBatchLingerIsTwoMilliseconds(t *testing.T) {
	require.Equal(t, 2*time.Millisecond, batchLinger)
}
