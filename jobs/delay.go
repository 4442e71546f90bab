package jobs

import (
	"context"
	"errors"
	"time"
)

// MaxSQSDelay is the longest delay SQS itself honours (DelaySeconds). Longer delays need a
// LongDelayer (see package scheduler).
const MaxSQSDelay = 15 * time.Minute

// LongDelayer delivers jobs further in the future than SQS can delay them.
// scheduler.Delayer implements it with one-time EventBridge Scheduler schedules.
type LongDelayer interface {
	// ScheduleJob delivers job at job.DeliverAt, more than MaxSQSDelay away; job.ID names the
	// schedule, so that CancelJob can remove it.
	ScheduleJob(ctx context.Context, job PreparedJob) error
	// CancelJob removes job id's schedule; an error matching ErrNoSchedule when it has none.
	CancelJob(ctx context.Context, id string) error
}

// ErrNoSchedule is matched (errors.Is) by a LongDelayer's error for a job with no schedule:
// already delivered, cancelled or never delayed.
var ErrNoSchedule = errors.New("jobs: the job has no schedule")
