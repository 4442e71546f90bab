package jobs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// EnqueueBatch sends jobs with as few calls as SQS allows: per queue, SendMessageBatch calls of at
// most 10 entries and 1 MiB. Entries SQS reports failed (and not the sender's fault) are sent again,
// up to ClientOptions.MaxRetries times. On a FIFO queue the jobs of a group keep their order: a call
// holds at most one job of a group (so a batch of one group costs one call per job), calls go one
// at a time, a failed entry is retried before the next call, and once a job of a group fails, the
// group's later jobs are not sent (ErrGroupFailed). Jobs delayed beyond 15 minutes go to the
// LongDelayer one by one.
//
// The batch is checked whole first: if any job is invalid, nothing is sent, the invalid jobs'
// results carry their *InvalidJobError and the others' ErrNotSent. The results are in input order;
// the error is nil when every job was enqueued, a *BatchError otherwise.
func (c *Client) EnqueueBatch(ctx context.Context, batch []BatchJob) ([]EnqueueResult, error) {
	results := make([]EnqueueResult, len(batch))
	preps := make([]prepared, len(batch))
	invalid := false
	defer func() {
		for i := range preps {
			preps[i].finish(results[i], nil)
		}
	}()
	for i, j := range batch {
		p, err := c.prepareEntry(ctx, j.Args, j.Opts, true)
		preps[i] = p
		results[i] = p.result()
		if err != nil {
			results[i].Err = err
			invalid = true
		}
	}
	if invalid {
		for i := range results {
			if results[i].Err == nil {
				results[i].Err = ErrNotSent
			}
		}
		return results, batchError(results)
	}
	send := make([]bool, len(preps))
	if c.opts.State != nil {
		send = c.recordBatch(ctx, preps, results)
	} else {
		for i := range send {
			send[i] = true
		}
	}

	// Per queue, in input order. A FIFO job whose unique key or state could not be recorded
	// failed before any send: its group's later jobs are not sent either (ErrGroupFailed).
	var order []string
	byQueue := map[string][]int{}
	failedGroups := map[string]bool{}
	for i := range preps {
		p := &preps[i]
		group := p.queue + "\x00" + p.group
		if !send[i] {
			if results[i].Err != nil && p.fifo {
				failedGroups[group] = true
			}
			continue // a duplicate of a unique job, or not recorded
		}
		if p.fifo && failedGroups[group] {
			results[i].Err = ErrGroupFailed
			continue
		}
		if p.scheduled {
			if err := c.schedule(ctx, p); err != nil {
				results[i].Err = err
			}
			continue
		}
		if _, ok := byQueue[p.queue]; !ok {
			order = append(order, p.queue)
		}
		byQueue[p.queue] = append(byQueue[p.queue], i)
	}
	for _, q := range order {
		if err := c.admit(ctx, q); err != nil {
			for _, i := range byQueue[q] {
				results[i].Err = err
			}
			continue
		}
		c.sendQueue(ctx, q, byQueue[q], preps, results)
	}
	if c.opts.State != nil {
		var failed []*prepared
		for i := range results {
			if send[i] && results[i].Err != nil {
				failed = append(failed, &preps[i])
			}
		}
		c.notSent(ctx, failed)
		// A duplicate of a job of this batch that was not enqueued names a job that does not
		// exist, and its key is free again: it failed too.
		tried := map[string]int{}
		for i := range preps {
			if send[i] {
				tried[preps[i].id] = i
			}
		}
		for i := range results {
			if j, ok := tried[results[i].ID]; ok && results[i].Duplicate && results[j].Err != nil {
				results[i].Err = fmt.Errorf("%w: it duplicates job %s of this batch, which was not enqueued", ErrNotSent, results[i].ID)
			}
		}
	}
	return results, batchError(results)
}

// sendQueue sends the jobs idx (input order) of one queue in chunks.
func (c *Client) sendQueue(ctx context.Context, queue string, idx []int, prepared []prepared, results []EnqueueResult) {
	if awsarn.IsFIFO(queue) {
		chunks := fifoChunks(idx, prepared)
		failedGroups := map[string]bool{}
		for _, chunk := range chunks {
			var send []int
			for _, i := range chunk {
				if failedGroups[prepared[i].group] {
					results[i].Err = ErrGroupFailed
					continue
				}
				send = append(send, i)
			}
			if len(send) == 0 {
				continue
			}
			c.sendChunk(ctx, queue, send, prepared, results)
			for _, i := range send {
				if results[i].Err != nil {
					failedGroups[prepared[i].group] = true
				}
			}
		}
		return
	}
	var chunks [][]int
	for start := 0; start < len(idx); {
		end, size := start, 0
		for end < len(idx) && end-start < MaxBatchEntries && size+prepared[idx[end]].sendSize() <= MaxMessageSize {
			size += prepared[idx[end]].sendSize()
			end++
		}
		chunks = append(chunks, idx[start:end])
		start = end
	}
	eachAtMost(c.opts.BatchConcurrency, chunks, func(chunk []int) { c.sendChunk(ctx, queue, chunk, prepared, results) })
}

// fifoChunks splits a FIFO queue's jobs into calls of at most 10 entries and 1 MiB holding at
// most one job of each group, a group's jobs in input order across calls. SQS accepts or refuses
// each entry of a call on its own: with two jobs of a group in one call, the first could fail and
// the second be enqueued, and the first's retry would land after it.
func fifoChunks(idx []int, prepared []prepared) [][]int {
	var chunks [][]int
	for len(idx) > 0 {
		var chunk, rest []int
		taken := map[string]bool{} // groups in this chunk, or with an earlier job left for later
		size := 0
		for _, i := range idx {
			p := &prepared[i]
			if taken[p.group] || len(chunk) == MaxBatchEntries || size+p.sendSize() > MaxMessageSize {
				taken[p.group] = true
				rest = append(rest, i)
				continue
			}
			taken[p.group] = true
			size += p.sendSize()
			chunk = append(chunk, i)
		}
		chunks = append(chunks, chunk)
		idx = rest
	}
	return chunks
}

// sendChunk sends up to 10 jobs in one SendMessageBatch call and re-sends the entries reported
// failed (not by sender fault), in their original order.
func (c *Client) sendChunk(ctx context.Context, queue string, idx []int, prepared []prepared, results []EnqueueResult) {
	pending := c.storeAll(ctx, idx, prepared, results)
	if len(pending) == 0 {
		return
	}
	for try := 0; ; try++ {
		entries := make([]sqstypes.SendMessageBatchRequestEntry, len(pending))
		for n, i := range pending {
			p := &prepared[i]
			e := sqstypes.SendMessageBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(n)),
				MessageBody:       aws.String(p.body),
				MessageAttributes: p.attributes(),
				DelaySeconds:      p.delaySeconds,
			}
			e.MessageGroupId, e.MessageDeduplicationId = p.groupAndDedup()
			entries[n] = e
		}
		out, err := c.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue), Entries: entries})
		if err != nil {
			// The SDK has already retried what is retryable about the call itself.
			for _, i := range pending {
				results[i].Err = &SendError{Kind: prepared[i].kind, ID: prepared[i].id, QueueURL: queue, Err: err}
			}
			return
		}
		for _, s := range out.Successful {
			n, ok := entryIndex(s.Id, len(pending))
			if !ok {
				continue
			}
			r := &results[pending[n]]
			r.MessageID = aws.ToString(s.MessageId)
			r.SequenceNumber = aws.ToString(s.SequenceNumber)
			r.Err = nil
		}
		var retry []int
		for _, f := range out.Failed {
			n, ok := entryIndex(f.Id, len(pending))
			if !ok {
				continue
			}
			i := pending[n]
			results[i].Err = &SendError{
				Kind: prepared[i].kind, ID: prepared[i].id, QueueURL: queue,
				Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault,
			}
			if !f.SenderFault {
				retry = append(retry, i)
			}
		}
		// An entry SQS did not mention at all is reported, not assumed sent.
		for _, i := range pending {
			if results[i].MessageID == "" && results[i].Err == nil {
				results[i].Err = &SendError{Kind: prepared[i].kind, ID: prepared[i].id, QueueURL: queue, Code: "MissingResult", Message: "SendMessageBatch did not report this entry"}
			}
		}
		if len(retry) == 0 || try >= c.opts.MaxRetries {
			return
		}
		sortInts(retry) // keep input order (FIFO)
		if !sleepCtx(ctx, fullJitter(c.opts.RetryBackoff, 5*time.Second, try+1)) {
			return // the results keep the last failure
		}
		pending = retry
	}
}

// storeAll stores the payloads of the claim checks among idx in S3, up to 4 at once, and returns
// the jobs ready to send, in order; a job whose payload was not stored gets its error and is not
// sent (on FIFO its group's later jobs are then not sent either).
func (c *Client) storeAll(ctx context.Context, idx []int, prepared []prepared, results []EnqueueResult) []int {
	var claimChecks []int
	for _, i := range idx {
		if p := &prepared[i]; p.payload != "" && !p.stored {
			claimChecks = append(claimChecks, i)
		}
	}
	eachAtMost(4, claimChecks, func(i int) { results[i].Err = c.store(ctx, &prepared[i]) })
	ready := make([]int, 0, len(idx))
	for _, i := range idx {
		if results[i].Err == nil {
			ready = append(ready, i)
		}
	}
	return ready
}

func entryIndex(id *string, n int) (int, bool) {
	i, err := strconv.Atoi(aws.ToString(id))
	return i, err == nil && i >= 0 && i < n
}

func batchError(results []EnqueueResult) error {
	var be BatchError
	for i := range results {
		if results[i].Err != nil {
			be.Failed = append(be.Failed, i)
			be.Errs = append(be.Errs, results[i].Err)
		}
	}
	if len(be.Failed) == 0 {
		return nil
	}
	return &be
}

func sortInts(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// fullJitter is exponential backoff with full jitter: a uniform random duration in
// [0, min(max, base·2^(attempt-1))].
func fullJitter(base, max time.Duration, attempt int) time.Duration {
	if base <= 0 || max <= 0 {
		return 0
	}
	if attempt < 1 {
		attempt = 1
	}
	ceiling := base
	for n := 1; n < attempt && ceiling < max; n++ {
		ceiling *= 2
	}
	if ceiling > max || ceiling <= 0 {
		ceiling = max
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
