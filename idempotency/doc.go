// Package idempotency makes code safe to run more than once: a job delivered twice by SQS, a
// Lambda retried, an HTTP request sent again. The first run of a key runs the function and records
// its result; a duplicate gets the recorded result without running it again, as long as the
// record lasts (Config.Expiry, default DefaultExpiry; Middleware also reads
// JOBKIT_IDEMPOTENCY_EXPIRY, which the Worker construct sets to the queue's and DLQ's retention).
// A duplicate arriving after the record expired runs again.
//
// The protocol follows Powertools for AWS Lambda, with the same attribute names (id, status,
// expiration, in_progress_expiration, validation, data), in Go types:
//
//   - [Do] claims the key with one conditional write (an INPROGRESS record with a lease), runs the
//     function and marks the record COMPLETED with the result: two DynamoDB requests for a first
//     run. A duplicate's claim fails and returns the existing record in the same call
//     (ReturnValuesOnConditionCheckFailure=ALL_OLD): one request. A duplicate in the same warm
//     process is answered from an LRU cache of completed keys: no request.
//   - A COMPLETED key returns the cached result; an INPROGRESS key returns an [*InProgressError]
//     carrying the end of its lease; the same key with a different payload returns a
//     [*PayloadMismatchError]. If the function fails, the claim is deleted so a retry runs it.
//   - A job in a container (jobctx.KeepAlive) holds its claim for the queue's visibility timeout
//     and renews it while it runs (a [Renewer] store), rather than for its 12-hour deadline: a
//     task killed mid-job leaves the key to the job's next delivery (see Config.Lease).
//   - Expiry is enforced in code: a record past its expiration, or a claim past its lease, is
//     treated as absent, whether or not DynamoDB's TTL has deleted it yet.
//   - [Middleware] applies this to every job of a [jobs.Workers] registry, keyed by the job's kind
//     and the envelope's idempotency key (the job id unless the producer set one): see [JobKey].
//   - [TransactWrite] commits business writes and the COMPLETED record in one DynamoDB
//     transaction: DynamoDB side effects happen exactly once while the record lasts.
//
// Stores implement [Store]: [NewDynamoDBStore] for production and [NewMemoryStore] for tests and
// single-process use. Package storetest holds the conformance suite every Store passes. The
// DynamoDB store is safe against requests the SDK sends twice after losing a response (the first
// attempt applied): a retried claim, completion, release or transaction recognises its own write.
package idempotency
