package contract

import "time"

// The runtime's defaults for what a deployment leaves unset (jobs.Config, and the environment
// variables the constructs set only when told): the constructs size a queue by them — its
// redrive, its visibility timeout, its retention — where the runtime falls back on them.
const (
	DefaultMaxAttempts       = 5                // attempts per job (EnvMaxAttempts)
	DefaultVisibilityTimeout = 30 * time.Second // the queue's visibility timeout (EnvVisibilityTimeout)
	DefaultConcurrency       = 10               // jobs run at once per function or container (EnvConcurrency)
	DefaultBackoffBase       = time.Second      // the first retry delay (EnvBackoffBase)
	DefaultBackoffCap        = 15 * time.Minute // the longest retry delay (EnvBackoffCap)
)

// MinFIFOMaxReceiveCount is the smallest redrive maxReceiveCount that lets every job of a FIFO
// queue make its maxAttempts runs before it can be dead-lettered, and so never reach the
// dead-letter queue unrun, for batches of up to batchSize records (the event source mapping's
// BatchSize, at most 10 on FIFO) with a jobs.DeliveryLedger: batchSize·(maxAttempts+1)+1.
//
// Why it holds. SQS counts every receive; the runtime counts runs. A FIFO batch holds the first
// batchSize messages of a group, and a job is received only while it is among them, so at most
// batchSize-1 jobs are ahead of it, and none joins them. Each of those costs it at most
// maxAttempts+1 receives in which it does not run: the ahead job's runs that fail or die, which
// end with its removal — dead-lettered on its maxAttempts-th failure (in a delivery where the job
// behind it runs), or, once its first delivery and maxAttempts redeliveries started runs that
// never reported, on the next delivery without running (ReasonNoOutcome). The job's own runs are
// at most maxAttempts+1 receives, and one more dead-letters it. Deliveries that do not run the
// job ahead (snoozes, rate-limit waits, the batch's deadline) are not bounded by this: size the
// redrive margin for them. The last receive the redrive allows is never a run: the runtime uses it
// to dead-letter the job itself (ReasonReceiveLimit), so SQS never moves a job unnamed.
func MinFIFOMaxReceiveCount(batchSize, maxAttempts int) int {
	return batchSize*(maxAttempts+1) + 1
}
