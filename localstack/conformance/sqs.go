package conformance

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// AWS documentation the SQS checks cite.
const (
	docChangeVisibility = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html"
	docVisibilityGuide  = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html"
	docFIFOLogic        = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/FIFO-queues-understanding-logic.html"
	docDLQ              = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html"
	docReceive          = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html"
	docSendBatch        = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html"
	docSend             = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html"
	docAttributeValue   = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_MessageAttributeValue.html"
)

// maxMessageSize is SQS's largest message, body and attributes together: 1 MiB (since 2025).
const maxMessageSize = 1 << 20

// The error codes AWS gives a receipt handle that no longer names an in-flight message: the two
// ChangeMessageVisibility documents, and the InvalidParameterValue ("Message does not exist or is
// not available for visibility timeout change") it answers for a deleted message.
var staleHandleCodes = []string{"ReceiptHandleIsInvalid", "MessageNotInflight", "InvalidParameterValue"}

// The codes of a request parameter out of range: SQS's InvalidParameterValue under either
// protocol's name, and the InvalidAttributeValue SendMessage's reference lists for a message or
// attribute it refuses.
var invalidParameterCodes = []string{"InvalidParameterValue", "InvalidParameterValueException", "InvalidAttributeValue"}

var sqsChecks = []Check{
	{Name: "sqs/change-visibility-deleted-message", Service: SQS, Doc: docChangeVisibility, Run: checkChangeVisibilityDeleted},
	{Name: "sqs/change-visibility-moved-to-dlq", Service: SQS, Doc: docChangeVisibility, Run: checkChangeVisibilityMoved},
	{Name: "sqs/visibility-timeout-max-12h", Service: SQS, Doc: docChangeVisibility, Run: checkVisibilityMax},
	{Name: "sqs/visibility-12h-from-receipt", Service: SQS, Doc: docVisibilityGuide, Run: checkVisibilityFromReceipt},
	{Name: "sqs/fifo-group-lock", Service: SQS, Doc: docFIFOLogic, Run: checkFIFOGroupLock},
	{Name: "sqs/fifo-order-after-partial-failure", Service: SQS, Doc: docFIFOLogic, Run: checkFIFOOrderAfterPartialFailure},
	{Name: "sqs/fifo-lock-after-partial-delete", Service: SQS, Doc: docFIFOLogic, Run: checkFIFOLockAfterPartialDelete},
	{Name: "sqs/fifo-lock-after-batch-backoff", Service: SQS, Doc: docFIFOLogic, Run: checkFIFOLockAfterBatchBackoff},
	{Name: "sqs/fifo-lock-behind-in-flight", Service: SQS, Doc: docFIFOLogic, Run: checkFIFOLockBehindInFlight},
	{Name: "sqs/redrive-standard", Service: SQS, Doc: docDLQ, Run: checkRedriveStandard},
	{Name: "sqs/redrive-fifo-max-receive-1", Service: SQS, Doc: docDLQ, Run: checkRedriveFIFO},
	{Name: "sqs/dlq-source-arn", Service: SQS, Doc: docReceive, Run: checkDLQSourceARN},
	{Name: "sqs/fifo-sequence-number", Service: SQS, Doc: docSend, Run: checkSequenceNumber},
	{Name: "sqs/approximate-receive-count", Service: SQS, Doc: docReceive, Run: checkReceiveCount},
	{Name: "sqs/deep-queue-handles", Service: SQS, Doc: docChangeVisibility, Run: checkDeepQueueHandles},
	{Name: "sqs/batch-too-many-entries", Service: SQS, Doc: docSendBatch, Run: checkBatchTooMany},
	{Name: "sqs/batch-ids-not-distinct", Service: SQS, Doc: docSendBatch, Run: checkBatchIDsNotDistinct},
	{Name: "sqs/message-size-limit", Service: SQS, Doc: docSend, Run: checkMessageSize},
	{Name: "sqs/delay-seconds-max-900", Service: SQS, Doc: docSend, Run: checkDelayMax},
	{Name: "sqs/message-attribute-empty-value", Service: SQS, Doc: docAttributeValue, Run: checkEmptyAttribute},
}

// ChangeMessageVisibility with the receipt handle of a deleted message is an error.
func checkChangeVisibilityDeleted(ctx context.Context, env *Env) error {
	q, m, err := oneInFlight(ctx, env)
	if err != nil {
		return err
	}
	if err := deleteMessage(ctx, env, q, m); err != nil {
		return err
	}
	err = changeVisibility(ctx, env, q, m.ReceiptHandle, 30)
	return env.wantError("ChangeMessageVisibility of a deleted message", err, staleHandleCodes...)
}

// deepQueue is how many messages checkDeepQueueHandles puts in one queue: enough that a receive,
// a delete or a visibility change that searches the whole queue shows (moto's did: Fix 16).
const deepQueue = 1000

// In a queue a thousand deep, receipt handles still name their own message: a message released
// by ChangeMessageVisibility comes back (its receive count 2), a deleted one never does and its
// handle is stale, and draining the queue yields every other message exactly once.
func checkDeepQueueHandles(ctx context.Context, env *Env) error {
	q, err := createQueue(ctx, env, "deep", queueSpec{})
	if err != nil {
		return err
	}
	for i := 0; i < deepQueue; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for k := i; k < i+10; k++ {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), MessageBody: aws.String("d" + strconv.Itoa(k))})
		}
		if _, err := env.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries}); err != nil {
			return fmt.Errorf("send batch %d: %w", i/10, err)
		}
	}
	first, err := receive(ctx, env, q, 10, 1)
	if err != nil {
		return err
	}
	if len(first) < 2 {
		return fmt.Errorf("received %d messages, want at least 2", len(first))
	}
	released, deleted := first[0], first[1:]
	if err := release(ctx, env, q, released); err != nil {
		return err
	}
	gone := map[string]bool{}
	for _, m := range deleted {
		if err := deleteMessage(ctx, env, q, m); err != nil {
			return err
		}
		gone[aws.ToString(m.Body)] = true
	}
	stale := changeVisibility(ctx, env, q, deleted[0].ReceiptHandle, 30)
	if err := env.wantError("ChangeMessageVisibility of a deleted message", stale, staleHandleCodes...); err != nil {
		return err
	}
	want := deepQueue - len(deleted)
	rest, err := receiveAll(ctx, env, q, want)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for _, m := range rest {
		body := aws.ToString(m.Body)
		seen[body]++
		switch {
		case gone[body]:
			return fmt.Errorf("deleted message %s received again", body)
		case seen[body] > 1:
			return fmt.Errorf("message %s received twice within its visibility timeout", body)
		case body == aws.ToString(released.Body):
			if n, err := attrInt(m, string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)); err != nil || n != 2 {
				return fmt.Errorf("released message %s: receive count %d (%v), want 2", body, n, err)
			}
		}
	}
	if len(seen) != want {
		return fmt.Errorf("drained %d distinct messages, want %d", len(seen), want)
	}
	if seen[aws.ToString(released.Body)] != 1 {
		return fmt.Errorf("released message %s not received again", aws.ToString(released.Body))
	}
	return nil
}

// ChangeMessageVisibility with the receipt handle of a message since moved to the dead-letter
// queue is an error: the message is no longer in the queue.
func checkChangeVisibilityMoved(ctx context.Context, env *Env) error {
	q, dlq, err := withDLQ(ctx, env, queueSpec{}, 1, "", "m1")
	if err != nil {
		return err
	}
	first, err := receiveAndRelease(ctx, env, q, 1)
	if err != nil {
		return err
	}
	// The second receive finds the receive count used up and moves the message.
	if again, err := receive(ctx, env, q, 1, 1); err != nil || len(again) != 0 {
		return fmt.Errorf("second receive: %d messages, %v; want none (moved to the DLQ)", len(again), err)
	}
	dead, err := receive(ctx, env, dlq, 1, 1)
	if err != nil {
		return err
	}
	if len(dead) != 1 {
		return fmt.Errorf("DLQ holds %d messages, want 1", len(dead))
	}
	err = changeVisibility(ctx, env, q, first[0].ReceiptHandle, 30)
	return env.wantError("ChangeMessageVisibility of a message moved to the DLQ", err, staleHandleCodes...)
}

// A visibility timeout above 12 hours is refused.
func checkVisibilityMax(ctx context.Context, env *Env) error {
	q, m, err := oneInFlight(ctx, env)
	if err != nil {
		return err
	}
	err = changeVisibility(ctx, env, q, m.ReceiptHandle, 43201)
	return env.wantError("ChangeMessageVisibility to 43201 s", err, invalidParameterCodes...)
}

// The 12 hours count from the receive: 2 s after it, 43199 s more is beyond them and refused.
func checkVisibilityFromReceipt(ctx context.Context, env *Env) error {
	q, m, err := oneInFlight(ctx, env)
	if err != nil {
		return err
	}
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	err = changeVisibility(ctx, env, q, m.ReceiptHandle, 43199)
	return env.wantError("ChangeMessageVisibility to 43199 s, 2 s after the receive", err, invalidParameterCodes...)
}

// oneInFlight sends m1 to a new Standard queue and receives it.
func oneInFlight(ctx context.Context, env *Env) (queue, sqstypes.Message, error) {
	q, err := queueWith(ctx, env, queueSpec{}, "", "m1")
	if err != nil {
		return q, sqstypes.Message{}, err
	}
	ms, err := receiveWant(ctx, env, q, 1, "receive", "m1")
	if err != nil {
		return q, sqstypes.Message{}, err
	}
	return q, ms[0], nil
}

// While a FIFO message group has a message in flight, its next message is not handed out; other
// groups' messages are; deleting the in-flight message opens the group again.
func checkFIFOGroupLock(ctx context.Context, env *Env) error {
	q, err := queueWith(ctx, env, queueSpec{fifo: true}, "a", "a1", "a2")
	if err != nil {
		return err
	}
	if err := send(ctx, env, q, "b", "b1"); err != nil {
		return err
	}
	first, err := receiveWant(ctx, env, q, 1, "first receive of 1", "a1")
	if err != nil {
		return err
	}
	if _, err := receiveWant(ctx, env, q, 10, "receive while a1 is in flight (group a locked)", "b1"); err != nil {
		return err
	}
	if err := deleteMessage(ctx, env, q, first[0]); err != nil {
		return err
	}
	_, err = receiveWant(ctx, env, q, 10, "receive after deleting a1 (b1 in flight)", "a2")
	return err
}

// After a partial failure — the first of three in-flight messages of a group deleted, the other
// two made visible again — the group resumes at its second message, in order.
func checkFIFOOrderAfterPartialFailure(ctx context.Context, env *Env) error {
	q, ms, err := fifoInFlight(ctx, env, 10, "m1", "m2", "m3")
	if err != nil {
		return err
	}
	if err := deleteMessage(ctx, env, q, ms[0]); err != nil {
		return err
	}
	// Release the later one first: the order of the visibility changes must not matter.
	if err := release(ctx, env, q, ms[2], ms[1]); err != nil {
		return err
	}
	again, err := receiveAll(ctx, env, q, 2)
	if err != nil {
		return err
	}
	return wantBodies("after deleting m1 and releasing m3, m2", again, "m2", "m3")
}

// A batch's partial failure as the jobs runtime leaves it: of three in-flight messages of a group,
// the first two deleted and the third held for its backoff (its visibility extended). The group's
// later messages, never received, stay locked behind the third until it is deleted or visible.
func checkFIFOLockAfterPartialDelete(ctx context.Context, env *Env) error {
	q, ms, err := fifoInFlight(ctx, env, 3, "m1", "m2", "m3", "m4", "m5")
	if err != nil {
		return err
	}
	if err := changeVisibility(ctx, env, q, ms[2].ReceiptHandle, 60); err != nil {
		return err
	}
	for _, m := range ms[:2] {
		if err := deleteMessage(ctx, env, q, m); err != nil {
			return err
		}
	}
	_, err = receiveWant(ctx, env, q, 10, "receive with m3 in flight after m1 and m2 were deleted (group locked)")
	return err
}

// A batch the jobs runtime hands back whole — its first job failed, the rest not run behind it —
// with every message's visibility set to the backoff in one ChangeMessageVisibilityBatch: the
// group's later messages, never received, stay locked until those come back.
func checkFIFOLockAfterBatchBackoff(ctx context.Context, env *Env) error {
	var sent []string
	for i := 1; i <= 12; i++ {
		sent = append(sent, fmt.Sprintf("m%02d", i))
	}
	q, ms, err := fifoInFlight(ctx, env, 10, sent...)
	if err != nil {
		return err
	}
	entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(ms))
	for i, m := range ms {
		entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 60}
	}
	out, err := env.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("change visibility: %d failed", len(out.Failed))
	}
	_, err = receiveWant(ctx, env, q, 10, "receive with m01-m10 in flight for their backoff (group locked)")
	return err
}

// A group's first message back in the queue (its visibility ended) while the group's next ones are
// still in flight: a receive may return the first again, but nothing behind the in-flight ones —
// SQS returns a group's messages in order, and no later message while an earlier one is in flight.
func checkFIFOLockBehindInFlight(ctx context.Context, env *Env) error {
	q, ms, err := fifoInFlight(ctx, env, 3, "m1", "m2", "m3", "m4", "m5")
	if err != nil {
		return err
	}
	for _, m := range ms[1:] {
		if err := changeVisibility(ctx, env, q, m.ReceiptHandle, 60); err != nil {
			return err
		}
	}
	if err := changeVisibility(ctx, env, q, ms[0].ReceiptHandle, 0); err != nil {
		return err
	}
	again, err := receive(ctx, env, q, 10, 1)
	if err != nil {
		return err
	}
	for _, b := range bodies(again) {
		if b != "m1" {
			return fmt.Errorf("receive with m2 and m3 in flight: %v, want at most [m1] (nothing behind them)", bodies(again))
		}
	}
	return nil
}

// A Standard queue's message received maxReceiveCount (2) times without being deleted moves to
// the dead-letter queue at the next receive.
func checkRedriveStandard(ctx context.Context, env *Env) error {
	q, dlq, err := withDLQ(ctx, env, queueSpec{}, 2, "", "poison")
	if err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		if _, err := receiveAndRelease(ctx, env, q, 1); err != nil {
			return fmt.Errorf("receive %d: %w", i, err)
		}
	}
	if ms, err := receive(ctx, env, q, 1, 1); err != nil || len(ms) != 0 {
		return fmt.Errorf("third receive: %v, %v; want nothing (moved to the DLQ)", bodies(ms), err)
	}
	dead, err := receiveAll(ctx, env, dlq, 1)
	if err != nil {
		return err
	}
	return wantBodies("DLQ holds", dead, "poison")
}

// A FIFO queue with maxReceiveCount 1 moves every message of a group received once and released
// (three of three), to its FIFO dead-letter queue in order.
func checkRedriveFIFO(ctx context.Context, env *Env) error {
	q, dlq, err := withDLQ(ctx, env, queueSpec{fifo: true}, 1, "g", "m1", "m2", "m3")
	if err != nil {
		return err
	}
	ms, err := receiveWant(ctx, env, q, 10, "first receive", "m1", "m2", "m3")
	if err != nil {
		return err
	}
	if err := release(ctx, env, q, ms...); err != nil {
		return err
	}
	if again, err := receiveAll(ctx, env, q, 3); err != nil || len(again) != 0 {
		return fmt.Errorf("receive after release: %v, %v; want nothing (all moved to the DLQ)", bodies(again), err)
	}
	dead, err := receiveAll(ctx, env, dlq, 3)
	if err != nil {
		return err
	}
	return wantBodies("DLQ holds", dead, "m1", "m2", "m3")
}

// A message moved to a dead-letter queue carries DeadLetterQueueSourceArn, the source queue's ARN.
func checkDLQSourceARN(ctx context.Context, env *Env) error {
	q, dlq, err := withDLQ(ctx, env, queueSpec{}, 1, "", "m1")
	if err != nil {
		return err
	}
	if _, err := receiveAndRelease(ctx, env, q, 1); err != nil {
		return err
	}
	if _, err := receive(ctx, env, q, 1, 1); err != nil {
		return err
	}
	dead, err := receiveAll(ctx, env, dlq, 1)
	if err != nil {
		return err
	}
	if len(dead) != 1 {
		return fmt.Errorf("DLQ holds %d messages, want 1", len(dead))
	}
	got, ok := dead[0].Attributes[string(sqstypes.MessageSystemAttributeNameDeadLetterQueueSourceArn)]
	if !ok {
		return fmt.Errorf("DLQ message has no DeadLetterQueueSourceArn attribute (attributes %v)", keys(dead[0].Attributes))
	}
	if got != q.arn {
		return fmt.Errorf("DeadLetterQueueSourceArn = %q, want %q", got, q.arn)
	}
	return nil
}

// FIFO messages carry a SequenceNumber, on SendMessage's answer and on receive, increasing within
// a group. Ten messages, so that numbers in random order pass by chance once in 3.6 million runs.
func checkSequenceNumber(ctx context.Context, env *Env) error {
	q, err := createQueue(ctx, env, "q", queueSpec{fifo: true})
	if err != nil {
		return err
	}
	var sent []string
	for i := range 10 {
		b := "m" + strconv.Itoa(i)
		out, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(q.url), MessageBody: aws.String(b),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(b),
		})
		if err != nil {
			return fmt.Errorf("send %s: %w", b, err)
		}
		seq := aws.ToString(out.SequenceNumber)
		if seq == "" {
			return fmt.Errorf("SendMessage of %s answered no SequenceNumber", b)
		}
		if i > 0 && !decimalLess(sent[i-1], seq) {
			return fmt.Errorf("SequenceNumbers do not increase within the group: %s then %s", sent[i-1], seq)
		}
		sent = append(sent, seq)
	}
	ms, err := receive(ctx, env, q, 10, 1)
	if err != nil {
		return err
	}
	var got []string
	for _, m := range ms {
		s, ok := m.Attributes[string(sqstypes.MessageSystemAttributeNameSequenceNumber)]
		if !ok {
			return fmt.Errorf("received message has no SequenceNumber attribute (attributes %v)", keys(m.Attributes))
		}
		got = append(got, s)
	}
	if !slices.Equal(got, sent) {
		return fmt.Errorf("received SequenceNumbers %v, want those sent %v", got, sent)
	}
	return nil
}

// decimalLess compares two unsigned decimal numbers of any length.
func decimalLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// ApproximateReceiveCount counts the receives of a message: 1, 2, 3.
func checkReceiveCount(ctx context.Context, env *Env) error {
	q, err := createQueue(ctx, env, "q", queueSpec{})
	if err != nil {
		return err
	}
	if err := send(ctx, env, q, "", "m1"); err != nil {
		return err
	}
	for want := 1; want <= 3; want++ {
		ms, err := receive(ctx, env, q, 1, 1)
		if err != nil {
			return err
		}
		if len(ms) != 1 {
			return fmt.Errorf("receive %d: %d messages, want 1", want, len(ms))
		}
		n, err := attrInt(ms[0], string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount))
		if err != nil {
			return err
		}
		if n != want {
			return fmt.Errorf("receive %d: ApproximateReceiveCount = %d", want, n)
		}
		if err := release(ctx, env, q, ms...); err != nil {
			return err
		}
	}
	return nil
}

// A batch of 11 entries is refused with TooManyEntriesInBatchRequest, for SendMessageBatch,
// ChangeMessageVisibilityBatch and DeleteMessageBatch alike.
func checkBatchTooMany(ctx context.Context, env *Env) error {
	q, err := createQueue(ctx, env, "q", queueSpec{})
	if err != nil {
		return err
	}
	var sends []sqstypes.SendMessageBatchRequestEntry
	var changes []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	var deletes []sqstypes.DeleteMessageBatchRequestEntry
	for i := range 11 {
		id := "e" + strconv.Itoa(i)
		sends = append(sends, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(id)})
		changes = append(changes, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String("h" + id)})
		deletes = append(deletes, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String("h" + id)})
	}
	const code = "TooManyEntriesInBatchRequest"
	_, err = env.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: sends})
	if err := env.wantError("SendMessageBatch of 11", err, code); err != nil {
		return err
	}
	_, err = env.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.url), Entries: changes})
	if err := env.wantError("ChangeMessageVisibilityBatch of 11", err, code); err != nil {
		return err
	}
	_, err = env.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: deletes})
	return env.wantError("DeleteMessageBatch of 11", err, code)
}

// Two batch entries with one Id are refused with BatchEntryIdsNotDistinct, and nothing is sent.
func checkBatchIDsNotDistinct(ctx context.Context, env *Env) error {
	q, err := createQueue(ctx, env, "q", queueSpec{})
	if err != nil {
		return err
	}
	_, err = env.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("same"), MessageBody: aws.String("m1")},
		{Id: aws.String("same"), MessageBody: aws.String("m2")},
	}})
	if err := env.wantError("SendMessageBatch with duplicate ids", err, "BatchEntryIdsNotDistinct"); err != nil {
		return err
	}
	if ms, err := receive(ctx, env, q, 10, 0); err != nil || len(ms) != 0 {
		return fmt.Errorf("after the refused batch the queue holds %v (%v), want nothing", bodies(ms), err)
	}
	return nil
}

// On a queue whose MaximumMessageSize is the largest allowed (1 MiB), a 1 MiB body is accepted
// and one byte more is refused.
func checkMessageSize(ctx context.Context, env *Env) error {
	q, err := createQueue(ctx, env, "q", queueSpec{attrs: map[string]string{
		string(sqstypes.QueueAttributeNameMaximumMessageSize): strconv.Itoa(maxMessageSize),
	}})
	if err != nil {
		return err
	}
	body := strings.Repeat("x", maxMessageSize)
	if _, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(body)}); err != nil {
		return fmt.Errorf("send a 1 MiB body: %w", err)
	}
	_, err = env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(body + "x")})
	return env.wantError("SendMessage of 1 MiB + 1 byte", err, invalidParameterCodes...)
}

// DelaySeconds above 900 is refused.
func checkDelayMax(ctx context.Context, env *Env) error {
	q, err := createQueue(ctx, env, "q", queueSpec{})
	if err != nil {
		return err
	}
	_, err = env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String("m1"), DelaySeconds: 901})
	return env.wantError("SendMessage with DelaySeconds 901", err, invalidParameterCodes...)
}

// A message attribute whose String value is empty is refused.
func checkEmptyAttribute(ctx context.Context, env *Env) error {
	q, err := createQueue(ctx, env, "q", queueSpec{})
	if err != nil {
		return err
	}
	_, err = env.SQS.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.url), MessageBody: aws.String("m1"),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"reason": {DataType: aws.String("String"), StringValue: aws.String("")},
		},
	})
	return env.wantError("SendMessage with an empty String attribute", err, invalidParameterCodes...)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
