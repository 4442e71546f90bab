package jobs

import (
	"context"
	"time"
)

// MaxSQSDelay is the longest delay SQS itself honours (DelaySeconds). Longer delays need a
// LongDelayer (see package scheduler).
const MaxSQSDelay = 15 * time.Minute

// DelayedJob is a job whose delivery is more than MaxSQSDelay away.
type DelayedJob struct {
	ID       string    // the envelope id; also names the schedule so the job can be cancelled
	Kind     string    // the job kind
	Body     string    // the encoded envelope, sent unchanged as the message body
	QueueURL string    // the queue the job is routed to
	GroupID  string    // FIFO message group id, if the queue is FIFO
	At       time.Time // when to deliver it
}

// LongDelayer delivers jobs further in the future than SQS can delay them.
// scheduler.Delayer implements it with one-time EventBridge Scheduler schedules.
type LongDelayer interface {
	ScheduleJob(ctx context.Context, job DelayedJob) error
	CancelJob(ctx context.Context, id string) error
}
