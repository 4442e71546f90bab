package jobs

// Visibility: backoff and snoozes applied with ChangeMessageVisibility when the batch ends, the
// heartbeat that keeps unfinished messages invisible, and messages lost to another delivery.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// firstBeatAt returns when the batch's first heartbeat is due. A message's visibility timeout
// runs from its receipt, which the event does not carry, and the batching window has used some
// of it; but on a first delivery (ApproximateReceiveCount 1) ApproximateFirstReceiveTimestamp is
// that receipt. When every record is a first delivery, the first beat is due a third of the
// visibility timeout after the earliest receipt, as every later beat is after the one before:
// a batch of quick jobs then makes no heartbeat call. A batch with a redelivery, whose receipt
// is unknown, beats almost at once (firstBeatDelay). The container Consumer, which receives
// each message just before its batch starts, sets its own delay (firstBeat).
func (b *batch) firstBeatAt(now time.Time) time.Time {
	h := b.h
	if h.firstBeat > 0 {
		return now.Add(h.firstBeat)
	}
	var earliest time.Time
	for i := range b.records {
		row := &b.records[i].row
		if row.Attempt != 1 || row.FirstReceivedAt.IsZero() || b.records[i].msg.Attribute("ApproximateReceiveCount") != "1" {
			return now.Add(firstBeatDelay)
		}
		if earliest.IsZero() || row.FirstReceivedAt.Before(earliest) {
			earliest = row.FirstReceivedAt
		}
	}
	// The receipt is a wall-clock time: the delay is measured on the wall clock, then kept on
	// the monotonic one.
	return now.Add(max(earliest.Add(h.cfg.VisibilityTimeout/3).Sub(now.Round(0)), firstBeatDelay))
}

// applyVisibility sets the visibility of retried, snoozed, skipped and not-started records.
func (b *batch) applyVisibility() {
	var pending []*record
	for i := range b.records {
		r := &b.records[i]
		if r.state.Load() == stateDone && r.visible && !r.isLost() {
			pending = append(pending, r)
		}
	}
	if len(pending) == 0 {
		return
	}
	b.changeAll(b.post(), pending, func(r *record) int32 { return ceilSeconds(r.delay) }, true,
		"could not set the retry delay: the message returns after the visibility timeout")
}

// changeAll sets the visibility of recs to vt(r): per queue (a function may be fed by several),
// 10 per call (single: one record alone in the plain call), up to visibilityCalls calls at once,
// every call ending with ctx. A change that does
// not happen is logged: the message then returns after its visibility timeout.
func (b *batch) changeAll(ctx context.Context, recs []*record, vt func(*record) int32, single bool, failMsg string) {
	if len(recs) == 0 {
		return
	}
	if b.h.fifo {
		recs, vt = fifoChangeOrder(recs, vt)
	}
	var chunks [][]*record
	for len(recs) > 0 {
		q := recs[0].row.QueueURL
		chunk := make([]*record, 0, min(len(recs), MaxBatchEntries))
		rest := recs[:0:0]
		for _, r := range recs {
			if r.row.QueueURL == q && len(chunk) < MaxBatchEntries {
				chunk = append(chunk, r)
			} else {
				rest = append(rest, r)
			}
		}
		chunks, recs = append(chunks, chunk), rest
	}
	if len(chunks) == 1 {
		b.changeVisibility(ctx, chunks[0], vt, single, failMsg)
		return
	}
	eachAtMost(visibilityCalls, chunks, func(chunk []*record) { b.changeVisibility(ctx, chunk, vt, single, failMsg) })
}

// fifoChangeOrder orders a FIFO batch's visibility changes so that no group's message becomes
// visible before the ones behind it: each group's records last first, and, in a group with
// several, none at less than a second. SQS keeps a group locked while any of its messages is in
// flight, but LocalStack puts a group back in the queue as soon as one of its messages is visible
// again, and then hands out the messages behind those still in flight (conformance check
// sqs/fifo-lock-behind-in-flight; it re-queues in-flight messages in the order it received
// them, stopping at the first still invisible). Changed last first, a group's first record ends
// its visibility last, and the emulator puts the group's messages back in one pass.
func fifoChangeOrder(recs []*record, vt func(*record) int32) ([]*record, func(*record) int32) {
	out := make([]*record, len(recs))
	groups := make(map[string]int, len(recs))
	for i, r := range recs {
		out[len(recs)-1-i] = r
		groups[r.row.QueueURL+"\x00"+r.row.GroupID]++
	}
	return out, func(r *record) int32 {
		v := vt(r)
		if v < 1 && groups[r.row.QueueURL+"\x00"+r.row.GroupID] > 1 {
			v = 1
		}
		return v
	}
}

// eachAtMost calls fn on every item, at most limit calls at once, and returns when all are done.
func eachAtMost[T any](limit int, items []T, fn func(T)) {
	if len(items) == 0 {
		return
	}
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(it)
		})
	}
	wg.Wait()
}

// changeVisibility makes one visibility call for up to 10 records of one queue and logs the
// records it failed for; single allows the plain call for one record. A message SQS says is no
// longer ours is marked lost (see markLost).
func (b *batch) changeVisibility(ctx context.Context, chunk []*record, vt func(*record) int32, single bool, failMsg string) {
	h := b.h
	queue := aws.String(chunk[0].row.QueueURL)
	if len(chunk) == 1 && single {
		r := chunk[0]
		_, err := h.cfg.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: queue, ReceiptHandle: aws.String(r.msg.ReceiptHandle), VisibilityTimeout: vt(r),
		})
		if err != nil {
			var apiErr smithy.APIError
			if errors.As(err, &apiErr) && messageLost(apiErr.ErrorCode(), apiErr.ErrorMessage()) {
				b.markLost(r, err)
			}
			b.logRecord(slog.LevelWarn, r, failMsg, err)
		}
		return
	}
	entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
	for n, r := range chunk {
		entries[n] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(n)), ReceiptHandle: aws.String(r.msg.ReceiptHandle), VisibilityTimeout: vt(r),
		}
	}
	out, err := h.cfg.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: queue, Entries: entries})
	if err != nil {
		for _, r := range chunk {
			b.logRecord(slog.LevelWarn, r, failMsg, err)
		}
		return
	}
	for _, f := range out.Failed {
		if n, ok := entryIndex(f.Id, len(chunk)); ok {
			err := fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
			if messageLost(aws.ToString(f.Code), aws.ToString(f.Message)) {
				b.markLost(chunk[n], err)
			}
			b.logRecord(slog.LevelWarn, chunk[n], failMsg, err)
		}
	}
}

// messageLost reports whether a visibility change failed because the message is no longer this
// consumer's: deleted, received again by another consumer, or its receipt handle expired. SQS
// says so with ReceiptHandleIsInvalid or MessageNotInflight, or with InvalidParameterValue and a
// reason: "The receipt handle has expired", or, for a message that was deleted, "Message does not
// exist or is not available for visibility timeout change".
func messageLost(code, message string) bool {
	switch {
	case strings.Contains(code, "ReceiptHandleIsInvalid"), strings.Contains(code, "MessageNotInflight"):
		return true
	case strings.Contains(code, "InvalidParameterValue"):
		m := strings.ToLower(message)
		return strings.Contains(m, "receipt handle has expired") ||
			strings.Contains(m, "not available for visibility timeout change")
	}
	return false
}

// markLost records that r's message is no longer ours and cancels the job's context.
func (b *batch) markLost(r *record, err error) {
	r.lostMu.Lock()
	first := !r.lost
	r.lost = true
	if r.cancel != nil {
		r.cancel(ErrMessageLost)
	}
	r.lostMu.Unlock()
	if first {
		b.logRecord(slog.LevelWarn, r, "message no longer ours: job context cancelled", err)
	}
}

func (r *record) isLost() bool {
	r.lostMu.Lock()
	defer r.lostMu.Unlock()
	return r.lost
}

// release ends the record's cancellable context, if one was made.
func (r *record) release() {
	r.lostMu.Lock()
	if r.cancel != nil {
		r.cancel(context.Canceled)
	}
	r.lostMu.Unlock()
}

// stopHeartbeat stops the heartbeat: a beat in flight is cancelled and has returned when this
// does, and none follows.
func (b *batch) stopHeartbeat() {
	b.hbEnding.Store(true)
	if cancel := b.hbCancel.Load(); cancel != nil {
		(*cancel)()
	}
	b.hbMu.Lock()
	b.hbStopped = true
	b.hbMu.Unlock()
}

// beat extends the visibility of every message of the batch to the visibility timeout (the
// watchdog calls it at the start and every third of the visibility timeout until stopHeartbeat).
func (b *batch) beat() {
	b.hbMu.Lock()
	defer b.hbMu.Unlock()
	if b.hbStopped {
		return
	}
	recs := make([]*record, 0, len(b.records))
	for i := range b.records {
		if r := &b.records[i]; !r.isLost() {
			recs = append(recs, r)
		}
	}
	if b.hbCtx == nil {
		ctx, cancel := context.WithCancel(b.post())
		b.hbCtx = ctx
		b.hbCancel.Store(&cancel)
		if b.hbEnding.Load() { // stopHeartbeat may have looked before the store
			cancel()
		}
	}
	vt := ceilSeconds(b.clampVisibility(b.h.cfg.VisibilityTimeout))
	b.changeAll(b.hbCtx, recs, func(*record) int32 { return vt }, false, "heartbeat: could not extend visibility")
}

// softPassed reports whether the jobs' deadline has passed; clock is the worker's last reading.
func (b *batch) softPassed(clock time.Duration) bool {
	return b.deadline != nil && (clock >= b.softOff || b.deadline.expired.Load())
}

// clampVisibility keeps a delay within what SQS accepts for a message of this batch: from 0 to
// 12 h after its receipt, that is 12 h less the time since the invocation started and
// receiptSlack.
func (b *batch) clampVisibility(d time.Duration) time.Duration {
	limit := MaxVisibility - receiptSlack - time.Since(b.start)
	if d > limit {
		d = limit
	}
	return max(d, 0)
}

// ceilSeconds rounds a delay up to whole seconds, the unit of SQS visibility timeouts.
func ceilSeconds(d time.Duration) int32 {
	s := (d + time.Second - 1) / time.Second
	if s > time.Duration(MaxVisibility/time.Second) {
		s = time.Duration(MaxVisibility / time.Second)
	}
	return int32(s)
}
