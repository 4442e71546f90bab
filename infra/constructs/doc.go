// Package constructs holds jobkit's AWS CDK constructs, one per capability: [JobQueue] (an SQS
// queue with its dead-letter queue and alarms), [Worker] (a Go Lambda function consuming a
// JobQueue) and [ContainerWorker] (a Fargate service consuming one), [RedriveRecorder] (which
// the first worker of a queue adds: the function that records the jobs the queue's redrive policy
// moves into its holding queue), [IdempotencyTable] (the DynamoDB table of the idempotency store), [OutboxForwarder]
// (the transactional outbox's forwarder on that table's stream), [Dashboard]
// (queue depth and the jobs runtime's metrics), [Schedule] (a recurring job) and [DelayedJobs]
// (the schedule group and role for delays beyond SQS's 15 minutes).
//
// Constructs take Go values in their props (time.Duration, int, bool); the zero value of a field
// means its documented default. Misconfiguration that AWS would reject at deploy time (a queue
// visibility timeout shorter than its function's timeout, a batching window on a FIFO queue, ...)
// is refused at synth with a message naming the construct.
//
// Constructs never read the environment and never fix resource names: CloudFormation names every
// resource, and the CLI finds queues through the stack outputs JobkitQueue<Name> and
// JobkitDlq<Name>.
package constructs
