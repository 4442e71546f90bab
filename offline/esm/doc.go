// Package esm emulates Lambda's SQS event source mapping for the offline stack: it polls a queue
// as the mapping does (batch size, batching window, maximum concurrency), invokes the function with
// the SQS event exactly as Lambda shapes it, deletes what succeeded and applies
// ReportBatchItemFailures as AWS documents it.
//
// What happens to a batch (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html):
//   - the invocation succeeds and the mapping does not report batch item failures: all deleted;
//   - with ReportBatchItemFailures, an empty or null batchItemFailures, or an empty or null
//     response: all deleted;
//   - listed items: those stay, the rest are deleted;
//   - an empty, null or unknown itemIdentifier, a bad key name or an invalid response: nothing is
//     deleted;
//   - a function error, timeout, crash or init error: nothing is deleted and the visibility is not
//     changed, so the whole batch returns after the queue's visibility timeout.
//
// On a FIFO queue, SQS's message group lock keeps each group in order; the poller also never
// invokes two batches holding the same group at once.
//
// StreamPoller is the DynamoDB Streams event source mapping: a reader per shard, batches in
// order, partial batch responses, retries, and the mapping's filter criteria (EventFilter).
package esm
