package jobs

// MinFIFOMaxReceiveCount is the smallest redrive maxReceiveCount that lets no job of a FIFO queue
// reach the dead-letter queue unrun, for batches of up to batchSize records (the event source
// mapping's BatchSize, at most 10 on FIFO) and maxAttempts attempts a job: batchSize·maxAttempts+1.
//
// Why it holds. SQS counts every receive; the runtime (with Config.Deliveries) counts only runs.
// A FIFO batch holds the first batchSize messages of a group, and a job is received only while it
// is among them, so at most batchSize-1 jobs are ahead of it, and none joins them. Each of those
// costs it one receive per delivery in which that job does not finish — a failed run (at most
// maxAttempts, then the runtime dead-letters it), or a delivery that ended without an outcome (a
// crash: at most maxAttempts of those, since the runtime dead-letters a job whose attempts were
// used that way, ReasonNoOutcome, and credits the jobs behind it). Its own runs are at most
// maxAttempts. So a job is received at most batchSize·maxAttempts times before it has run
// maxAttempts times, and the +1 is the delivery on which the runtime dead-letters it for them.
// Snoozes that do not run the job (SnoozeNotRun: rate limits, flow control) and deliveries that
// reach the batch's deadline before the job starts are not bounded by this: on the receive that
// would let SQS move such a job, the runtime dead-letters it itself with ReasonReceiveLimit
// (Config.MaxReceiveCount), so it is never moved unnamed; size the redrive margin for them.
func MinFIFOMaxReceiveCount(batchSize, maxAttempts int) int {
	return batchSize*maxAttempts + 1
}
