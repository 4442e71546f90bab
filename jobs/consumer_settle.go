package jobs

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// How a Consumer settles its messages: deleted in batches when their jobs are done, released
// (made visible again) when a drain ends before their jobs could run.

// draining reports whether the Consumer's drain has ended the batch's jobs' context.
func (b *batch) draining() bool {
	return b.h.container && errors.Is(context.Cause(b.jobCtx), ErrDraining)
}

// drainUnits lets running units finish until 3/4 of the drain budget, ends their jobs' contexts
// (ErrDraining), and at 7/8 gives up the units still running, releasing their messages.
func (c *Consumer) drainUnits(base context.Context, t0 time.Time) {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	wait := func(at time.Time) bool {
		timer := time.NewTimer(time.Until(at))
		defer timer.Stop()
		select {
		case <-done:
			return true
		case <-timer.C:
			return false
		}
	}
	if wait(t0.Add(c.drain * 3 / 4)) {
		return
	}
	running := c.running()
	c.log.LogAttrs(base, slog.LevelWarn, "consumer drain: ending the contexts of running jobs", slog.Int("units", len(running)))
	for _, u := range running {
		u.cancel(ErrDraining)
	}
	if wait(t0.Add(c.drain * 7 / 8)) {
		return
	}
	var give []*wire.SQSMessage
	for _, u := range c.running() {
		u.mu.Lock()
		if !u.settled {
			u.settled = true
			u.postCancel()
			for i := range u.msgs {
				give = append(give, &u.msgs[i])
			}
		}
		u.mu.Unlock()
	}
	ctx, cancel := context.WithDeadline(base, t0.Add(c.drain))
	defer cancel()
	c.release(ctx, give)
}

func (c *Consumer) running() []*unit {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*unit, 0, len(c.units))
	for u := range c.units {
		out = append(out, u)
	}
	return out
}

// release makes msgs visible at once, 10 per call. On a FIFO queue it releases them last first,
// at a second each, so that no group's message is visible before those behind it
// (fifoChangeOrder says why).
func (c *Consumer) release(ctx context.Context, msgs []*wire.SQSMessage) {
	vt := int32(0)
	if c.fifo && len(msgs) > 1 {
		msgs = slices.Clone(msgs)
		slices.Reverse(msgs)
		vt = 1
	}
	for len(msgs) > 0 {
		chunk := msgs[:min(len(msgs), MaxBatchEntries)]
		msgs = msgs[len(chunk):]
		entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(m.ReceiptHandle), VisibilityTimeout: vt,
			}
		}
		out, err := c.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: c.queue, Entries: entries})
		failed, msg := batchFailures(len(chunk), err, func() []sqstypes.BatchResultErrorEntry { return out.Failed })
		c.stats.released.Add(int64(len(chunk) - failed))
		if failed > 0 {
			c.log.LogAttrs(ctx, slog.LevelWarn, "consumer drain: could not release messages; they return after their visibility timeout",
				slog.Int("messages", failed), LogString("error", msg))
		}
	}
}

// deleteLoop deletes finished messages, up to 10 per call: what is waiting and what comes within
// batchLinger of the first.
func (c *Consumer) deleteLoop(ctx context.Context) {
	batch := make([]deleteEntry, 0, MaxBatchEntries)
	timer := time.NewTimer(batchLinger)
	defer timer.Stop()
	for first := range c.deletes {
		batch = append(batch[:0], first)
		timer.Reset(batchLinger)
	more:
		for len(batch) < MaxBatchEntries {
			select {
			case e, ok := <-c.deletes:
				if !ok {
					break more
				}
				batch = append(batch, e)
			case <-timer.C:
				break more
			}
		}
		c.deleteBatch(ctx, batch)
	}
}

func (c *Consumer) deleteBatch(ctx context.Context, batch []deleteEntry) {
	entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(batch))
	for i, e := range batch {
		entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(e.receipt)}
	}
	out, err := c.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: c.queue, Entries: entries})
	failed, msg := batchFailures(len(batch), err, func() []sqstypes.BatchResultErrorEntry { return out.Failed })
	c.stats.deleted.Add(int64(len(batch) - failed))
	if failed > 0 {
		// The message comes back after its visibility timeout; the idempotency middleware, if
		// used, skips the job then.
		c.log.LogAttrs(ctx, slog.LevelWarn, "consumer: could not delete finished messages", slog.String("queue", c.h.queueName),
			slog.Int("messages", failed), LogString("error", msg))
	}
}

// batchFailures returns how many of a batch call's n entries failed and why: all of them with the
// call's error, else the entries SQS answered failed (failures, read only when err is nil), with
// the first one's code and message.
func batchFailures(n int, err error, failures func() []sqstypes.BatchResultErrorEntry) (int, string) {
	if err != nil {
		return n, err.Error()
	}
	if f := failures(); len(f) > 0 {
		return len(f), aws.ToString(f[0].Code) + ": " + aws.ToString(f[0].Message)
	}
	return 0, ""
}
