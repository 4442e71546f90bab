package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// Backpressure makes a Client refuse, or slow, enqueues onto a queue whose backlog has passed a
// threshold, so a producer sheds load (a web tier answers 429) instead of piling up work the
// workers cannot reach in time. The backlog is the queue's ApproximateNumberOfMessages (visible,
// waiting) plus ApproximateNumberOfMessagesDelayed, read with one GetQueueAttributes per queue at
// most every Refresh, shared by every enqueue of the Client: not one call per enqueue.
//
// SQS has no oldest-message age attribute (ApproximateAgeOfOldestMessage is a CloudWatch metric,
// per minute): the JobQueue construct alarms on it; Backpressure sheds on the backlog.
type Backpressure struct {
	// API reads the queues' attributes (required).
	API SQSAPI
	// MaxBacklog is the backlog from which enqueues onto a queue are refused with an
	// *OverloadedError (required, above 0). MaxBacklogs overrides it per queue URL (a lane).
	MaxBacklog  int
	MaxBacklogs map[string]int
	// SlowFrom, when above 0 and below the queue's MaxBacklog, is the backlog from which an
	// enqueue is delayed before it is sent: by MaxSlowdown times how far the backlog is from
	// SlowFrom towards MaxBacklog.
	SlowFrom    int
	MaxSlowdown time.Duration
	// Refresh is how long a queue's backlog reading is used. Default defaultBackpressureRefresh.
	Refresh time.Duration
}

// defaultBackpressureRefresh is Backpressure.Refresh's default.
const defaultBackpressureRefresh = 5 * time.Second

// ErrOverloaded is matched by errors.Is on an *OverloadedError.
var ErrOverloaded = errors.New("jobs: queue overloaded")

// OverloadedError is an enqueue refused by Backpressure: nothing was sent. Answer it as HTTP 429
// with Retry-After set from RetryAfter.
type OverloadedError struct {
	QueueURL   string
	Backlog    int           // the backlog read
	MaxBacklog int           // the threshold passed
	RetryAfter time.Duration // when the backlog will next be read
}

// Error describes the refusal.
func (e *OverloadedError) Error() string {
	return fmt.Sprintf("jobs: queue %s overloaded: backlog %d, limit %d; retry after %s",
		awsarn.QueueName(e.QueueURL), e.Backlog, e.MaxBacklog, e.RetryAfter.Round(time.Second))
}

// Is reports whether target is ErrOverloaded.
func (e *OverloadedError) Is(target error) bool { return target == ErrOverloaded }

func (b *Backpressure) validate() error {
	switch {
	case b.API == nil:
		return errors.New("jobs: NewClient: Backpressure.API is nil")
	case b.MaxBacklog <= 0:
		return errors.New("jobs: NewClient: Backpressure.MaxBacklog must be above 0")
	case b.SlowFrom < 0 || b.MaxSlowdown < 0 || b.Refresh < 0:
		return errors.New("jobs: NewClient: Backpressure: negative value")
	}
	for q, n := range b.MaxBacklogs {
		if n <= 0 {
			return fmt.Errorf("jobs: NewClient: Backpressure.MaxBacklogs[%q] must be above 0", q)
		}
	}
	return nil
}

// backlogs caches the queues' backlog readings.
type backlogs struct {
	mu     sync.Mutex
	byURL  map[string]*backlogReading
	cfg    Backpressure
	now    func() time.Time
	sleeps func(context.Context, time.Duration) error
}

type backlogReading struct {
	mu     sync.Mutex // held while a reading is made: one call per queue at a time
	n      int
	readAt time.Time
}

func newBacklogs(cfg Backpressure, now func() time.Time) *backlogs {
	cfg.Refresh = cmp.Or(cfg.Refresh, defaultBackpressureRefresh)
	return &backlogs{byURL: map[string]*backlogReading{}, cfg: cfg, now: now, sleeps: sleepErr}
}

// admit returns an *OverloadedError when queue's backlog is at or above its limit; below it, it
// waits the slowdown, if any. A failed reading admits (and is tried again on the next enqueue):
// backpressure must not turn an SQS hiccup into an outage of the producer.
func (b *backlogs) admit(ctx context.Context, queue string) error {
	limit := b.cfg.MaxBacklog
	if n, ok := b.cfg.MaxBacklogs[queue]; ok {
		limit = n
	}
	n, readAt, err := b.read(ctx, queue)
	if err != nil {
		return nil
	}
	if n >= limit {
		return &OverloadedError{QueueURL: queue, Backlog: n, MaxBacklog: limit, RetryAfter: max(readAt.Add(b.cfg.Refresh).Sub(b.now()), 0)}
	}
	if soft := b.cfg.SlowFrom; soft > 0 && soft < limit && n >= soft && b.cfg.MaxSlowdown > 0 {
		d := time.Duration(float64(b.cfg.MaxSlowdown) * float64(n-soft) / float64(limit-soft))
		return b.sleeps(ctx, d)
	}
	return nil
}

// read returns queue's backlog, read at most every Refresh.
func (b *backlogs) read(ctx context.Context, queue string) (int, time.Time, error) {
	b.mu.Lock()
	r, ok := b.byURL[queue]
	if !ok {
		r = &backlogReading{}
		b.byURL[queue] = r
	}
	b.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := b.now()
	if !r.readAt.IsZero() && now.Sub(r.readAt) < b.cfg.Refresh {
		return r.n, r.readAt, nil
	}
	out, err := b.cfg.API.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queue),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	n := 0
	for _, name := range []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	} {
		v, _ := strconv.Atoi(out.Attributes[string(name)])
		n += v
	}
	r.n, r.readAt = n, now
	return n, now, nil
}

func sleepErr(ctx context.Context, d time.Duration) error {
	if !sleepCtx(ctx, d) {
		return ctx.Err()
	}
	return nil
}
