// Package samplejobs holds the jobs of jobkit's sample stack — their argument types, which
// services import to enqueue them, and their workers, which the functions in functions/email,
// functions/ledger, functions/transcode and functions/notify run:
//
//   - SendEmail ("email.send", Standard queue Email): idempotent through idempotency.Middleware.
//   - PostLedger ("ledger.post", FIFO queue Ledger, one message group per account): applies a
//     posting to the account's item in a DynamoDB ledger table exactly once while its
//     idempotency record lasts, in the same transaction as that record.
//   - TranscodeVideo ("video.transcode", Standard queue Transcode): a long job, run in a
//     container, that relies on the runtime's heartbeat, stops when its context ends and runs
//     behind idempotency.Middleware (its claim renewed while it runs: jobctx.KeepAlive).
//   - SendNotification ("notify.send", queue Notify with priority lanes default, critical and
//     bulk, each its own queue and consumers): a producer picks the lane per job.
//
// OpenAccount is the sample's transactional outbox (package jobs/outbox): it opens a ledger
// account and writes its welcome email job in one DynamoDB transaction; cmd/jobkit-outbox sends it.
//
// Schedules declares the sample's recurring jobs once, for the CDK app and the offline runner: a
// daily digest email (cron, Europe/Berlin) and an hourly interest posting on the FIFO Ledger queue.
package samplejobs

import "github.com/jobkit-go/jobkit/jobs/contract"

// Queue names of the sample stack: the JobQueue construct ids, so queue N's URL is the stack
// output JobkitQueue<N> and its dead-letter queue's JobkitDlq<N>.
const (
	QueueEmail     = "Email"
	QueueLedger    = "Ledger"
	QueueTranscode = "Transcode"
	// QueueNotify is a queue with priority lanes (NotifyLanes): lane L's queue is named
	// contract.LaneQueueName(QueueNotify, L) ("NotifyCritical"), each with its outputs.
	QueueNotify = "Notify"
)

// Queues maps each sample kind to the name of its queue.
var Queues = map[string]string{
	KindSendEmail:      QueueEmail,
	KindEmailBatchDone: QueueEmail,
	KindPostLedger:     QueueLedger,
	KindTranscodeVideo: QueueTranscode,
	// The default lane's queue: EnqueueOpts.Priority picks another (jobs.ClientOptions.Lanes).
	KindSendNotification: contract.LaneQueueName(QueueNotify, LaneDefault),
}

// Environment variables of the sample functions besides the runtime's (jobs/env.go).
const (
	// EnvLedgerTable names the DynamoDB table the ledger function writes (partition key "account").
	EnvLedgerTable = "LEDGER_TABLE"
)
