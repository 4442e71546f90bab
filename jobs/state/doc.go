// Package state keeps jobkit's job state in DynamoDB: the status of a job by id, unique jobs, and
// fan-out batches with a completion callback. It lives in the jobkit state table, the one table
// the IdempotencyTable construct deploys (partition key "id", TTL on "expiration"), beside the
// idempotency records, each kind of item under its own key prefix:
//
//	job#<id>                 a job's state: enqueued, running, retrying, succeeded, dead, cancelled
//	uniq#<kind>#<key>        a unique key, held by the first job enqueued with it until its window ends
//	batch#<id>               a batch: its shards, whether it is sealed, its callback
//	batch#<id>#<shard>       one counter shard of a batch: members pending, succeeded, dead
//	<kind>#<key>             an idempotency record (package idempotency)
//
// # Status and its cost
//
// A Client with ClientOptions.State writes a job's item once when it sends it (enqueued). With
// idempotency.Middleware and Config.RecordJobs on the same table, the running and succeeded
// states are the idempotency record itself: its claim carries the job id, attempt and start, its
// completion the end and the result — the same two writes as without job states. So a job that
// succeeds costs one write unit more than without the state table (measured by make bench). A
// failed attempt costs one more write (retrying, dead or cancelled, recorded by the runtime with
// jobs.Config.States). Without idempotency, Middleware writes running and succeeded itself (two
// more writes). Status reads the job item and, when it names one, the idempotency record: the
// later of the two wins, and a completed record is final.
//
// # Listing by state
//
// Table.List lists a queue's jobs in one state, newest first, from the table's global secondary
// index contract.StateIndex (partition "<queue name>#<state>", sort key the time of the change),
// which the IdempotencyTable construct creates. The writes above carry the index's attributes —
// the enqueued item, the states the runtime records, and the idempotency records that are a
// job's running and succeeded state — so the index adds no call per job, only an index write
// beside each of those writes. An entry can lag behind its job (an enqueued item after a run its
// idempotency record holds): List reads the other half of each job's state and keeps only the
// jobs in the asked state now.
//
// # Unique jobs
//
// EnqueueOpts.Unique reserves uniq#<kind>#<key> with one conditional PutItem (the key absent or
// its window over) before anything is sent: across producers exactly one job holds a key in a
// window, and a later enqueue gets the holder's id back with EnqueueResult.Duplicate, sending
// nothing. If the send then fails the reservation is released.
//
// # Fan-out batches
//
// A batch's members are spread over N counter shards (Options.Shards, default 32) by a hash of
// their id, so no item takes more than ~1/N of the batch's writes: DynamoDB takes ~1,000 write
// units a second per partition, and counting a member is a two-item transaction (2 write units on
// its shard item), so a batch absorbs about N×500 member completions a second (16,000 with 32
// shards) before its shards throttle. No item grows with the batch: the per-member "counted"
// mark is on the member's own job item. A batch of 100,000 members is 100,000 job items,
// N shard items and one batch item.
//
// A member's end (succeeded, in Middleware; dead or cancelled, in the runtime before the
// dead-letter send) is counted once, whatever the duplicate deliveries: one transaction marks its
// job item counted (on the condition that it is not yet) and moves its shard's counters. Then the
// member advances the batch: a shard whose pending count is 0 once the batch is sealed (Close) is
// closed once (a conditional write, in a transaction with the batch's count of open shards); the
// member that sees no open shard left takes the callback lease (a conditional write), sends the
// callback job and marks it sent. Every step is conditional and repeatable, so a retry after a
// crash at any point finishes the work, and concurrent members finishing at the same moment
// produce one callback. A second callback message can come of a crash after the send and before
// its mark, once the lease has ended, or of a send whose answer was lost and which the SDK
// retried: the callback's id is fixed (<batch>.callback), so idempotency.Middleware on the
// callback's worker runs it once even then.
//
// A batch may also have a failure callback (BatchOpts.OnFailure, id <batch>.failure), sent once
// with the callback when a member died, and a deadline (BatchOpts.Deadline): a delayed
// BatchDeadline job on the callback's queue, run by Table.DeadlineWorker, which sends the failure
// callback with the members still pending if the batch's callback has not gone by then, and marks
// the batch expired. The callback still goes when the last member ends.
package state
