package samplejobs

import (
	"time"

	"github.com/jobkit-go/jobkit/scheduler"
)

// QueueScheduleDLQ names the Standard dead-letter queue of the sample's schedules: the queue
// EventBridge Scheduler sends a tick to when it cannot deliver it to its job queue. In the sample
// stack it is the dead-letter queue of the delayed jobs (EventBridge Scheduler refuses a FIFO
// dead-letter queue, so the Ledger queue's own cannot serve).
const QueueScheduleDLQ = "ScheduleDLQ"

// DelayedJobsName is the id of the sample stack's DelayedJobs construct, so its outputs are
// JobkitScheduleGroupDelayedJobs, JobkitSchedulerRoleArnDelayedJobs, JobkitScheduleDlqArnDelayedJobs
// and JobkitScheduleDlqUrlDelayedJobs: the scheduler.DelayerConfig of a producer delaying jobs
// beyond 15 minutes.
const DelayedJobsName = "DelayedJobs"

// Names of the sample's recurring schedules (part of every tick's envelope id).
const (
	ScheduleDailyDigest    = "daily-digest"
	ScheduleLedgerInterest = "ledger-interest"
)

// DigestRecipient receives the daily digest email.
const DigestRecipient = "team@example.com"

// InterestAccount is the ledger account the hourly interest posting is applied to; it is the
// schedule's FIFO message group, as it is for every posting of the account.
const InterestAccount = "acct-savings-demo"

// interestPosting is the job the ledger-interest schedule sends every hour.
var interestPosting = PostLedger{Account: InterestAccount, PostingID: "interest-hourly", AmountCents: 1}

// Schedules are the sample stack's recurring jobs, declared once: the CDK app renders each as an
// EventBridge Scheduler schedule (infra/constructs.NewSchedule) and schedfire.Runner fires
// them offline. Queue names are the sample's queue names (Queues); a FIFO target (Ledger) gets
// the job's message group.
var Schedules = []scheduler.Schedule{
	{
		Name:           ScheduleDailyDigest,
		Expression:     "cron(0 8 * * ? *)",
		TimeZone:       "Europe/Berlin",
		FlexibleWindow: 15 * time.Minute,
		Args:           SendEmail{To: DigestRecipient, Subject: "Daily digest"},
		Queue:          QueueEmail,
		// A digest more than two hours late is not worth sending; it goes to the DLQ instead.
		Retry:           &scheduler.RetryPolicy{MaxRetries: 10, MaxEventAge: 2 * time.Hour},
		DeadLetterQueue: QueueScheduleDLQ,
		Description:     "jobkit sample: the daily digest email, 08:00 Berlin time",
	},
	{
		Name:       ScheduleLedgerInterest,
		Expression: "rate(1 hour)",
		Args:       interestPosting,
		Queue:      QueueLedger,
		GroupID:    interestPosting.GroupID(),
		// Retried until the next tick is due; then it goes to the DLQ, not lost.
		Retry:           &scheduler.RetryPolicy{MaxRetries: 20, MaxEventAge: time.Hour},
		DeadLetterQueue: QueueScheduleDLQ,
		Description:     "jobkit sample: the hourly interest posting of " + InterestAccount,
	},
}
