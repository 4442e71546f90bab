package jobs

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
)

type attrsFunc func() (map[string]string, error)

// attrsOnly is an SQSAPI that answers GetQueueAttributes alone.
type attrsOnly struct {
	SQSAPI
	f attrsFunc
}

func (a attrsOnly) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, o ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return a.f.GetQueueAttributes(ctx, in, o...)
}

func (f attrsFunc) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	a, err := f()
	return &sqs.GetQueueAttributesOutput{Attributes: a}, err
}

// Between SlowFrom and MaxBacklog an enqueue waits in proportion to the backlog (delayed messages
// count); a failed reading admits.
func TestBackpressureSlowsBetweenTheThresholds(t *testing.T) {
	t.Parallel()
	backlog, delayed := 0, 0
	var fail error
	api := attrsFunc(func() (map[string]string, error) {
		return map[string]string{"ApproximateNumberOfMessages": strconv.Itoa(backlog), "ApproximateNumberOfMessagesDelayed": strconv.Itoa(delayed)}, fail
	})
	now := time.Unix(0, 0)
	b := newBacklogs(Backpressure{API: attrsOnly{f: api}, MaxBacklog: 1000, SlowFrom: 200, MaxSlowdown: 800 * time.Millisecond}, func() time.Time { return now })
	b.cfg.Refresh = time.Nanosecond // read on every call
	var slept time.Duration
	b.sleeps = func(_ context.Context, d time.Duration) error { slept = d; return nil }
	for _, tc := range []struct {
		backlog, delayed int
		want             time.Duration
	}{{100, 0, 0}, {200, 0, 0}, {400, 200, 400 * time.Millisecond}, {999, 0, 799 * time.Millisecond}} {
		backlog, delayed, slept = tc.backlog, tc.delayed, 0
		now = now.Add(time.Second)
		assert.NoError(t, b.admit(context.Background(), "q"))
		assert.Equal(t, tc.want, slept, "backlog %d+%d", tc.backlog, tc.delayed)
	}
	backlog = 1000
	now = now.Add(time.Second)
	assert.ErrorIs(t, b.admit(context.Background(), "q"), ErrOverloaded)
	fail = context.DeadlineExceeded
	now = now.Add(time.Second)
	assert.NoError(t, b.admit(context.Background(), "q"), "a failed reading admits")
}

// Without Refresh a queue's backlog is read once every 5 s, not per enqueue (docs/sending.md):
// enqueues within 5 s of a reading reuse it, and an overloaded queue's RetryAfter is the rest of
// those 5 s.
func TestBackpressureReadsEveryFiveSecondsByDefault(t *testing.T) {
	t.Parallel()
	reads, backlog := 0, 0
	api := attrsFunc(func() (map[string]string, error) {
		reads++
		return map[string]string{"ApproximateNumberOfMessages": strconv.Itoa(backlog)}, nil
	})
	start := time.Unix(1000, 0)
	now := start
	b := newBacklogs(Backpressure{API: attrsOnly{f: api}, MaxBacklog: 10}, func() time.Time { return now })
	for _, at := range []time.Duration{0, time.Second, 4999 * time.Millisecond} {
		now = start.Add(at)
		assert.NoError(t, b.admit(context.Background(), "q"))
	}
	assert.Equal(t, 1, reads, "one reading serves the first 5 s")
	backlog = 10
	now = start.Add(5 * time.Second)
	err := b.admit(context.Background(), "q")
	assert.Equal(t, 2, reads, "read again after 5 s")
	var over *OverloadedError
	if assert.ErrorAs(t, err, &over) {
		assert.Equal(t, 5*time.Second, over.RetryAfter)
	}
	now = start.Add(7 * time.Second)
	err = b.admit(context.Background(), "q")
	assert.Equal(t, 2, reads)
	if assert.ErrorAs(t, err, &over) {
		assert.Equal(t, 3*time.Second, over.RetryAfter)
	}
}
