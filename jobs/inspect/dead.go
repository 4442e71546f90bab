package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// DeadJob is a message in a dead-letter queue, read back with the attributes the jobs runtime set
// when it dead-lettered it (see the jobs.Attr* constants), or the redrive recorder, for a job the
// queue's RedrivePolicy moved (contract.ReasonRedrivePolicy). A message SQS moved into the
// dead-letter queue itself — from a queue without a recorder, or from the holding queue when the
// recorder failed too — carries none of them: its Reason is empty and its Kind and JobID come
// from the envelope, if the body is one (see ByRedrivePolicy).
type DeadJob struct {
	MessageID       string // the message id in the dead-letter queue
	JobID           string // the envelope id
	Kind            string
	Reason          string // one of the jobs.Reason* values; empty if moved by the RedrivePolicy
	Error           string
	Attempts        int
	Function        string    // the Lambda function that gave up
	FirstReceivedAt time.Time // zero if unknown
	FailedAt        time.Time // zero if unknown
	SourceQueue     string    // the queue the job came from (contract.AttrSourceQueue)
	SourceMessageID string
	GroupID         string // FIFO message group id
	ReceiveCount    int    // receives from the dead-letter queue, this one included
	Body            string // the raw message body
	// SentAt is the message's SentTimestamp. The jobs runtime dead-letters with a send of its own,
	// so for its dead jobs this is when they entered the DLQ. SQS's RedrivePolicy moves the
	// message itself and keeps its SentTimestamp (on Standard queues; AWS documents nothing for
	// FIFO ones): then it is when the job was sent to its queue.
	SentAt time.Time
	// DeadLetteredAt is when the message entered the dead-letter queue: SentAt for the runtime's
	// and the redrive recorder's dead jobs (sent by them); zero (unknown) for a message SQS moved
	// into the dead-letter queue itself, as no attribute of the message says when.
	DeadLetteredAt time.Time
	// DeadLetterSourceARN is the queue SQS moved the message from by its RedrivePolicy (the
	// DeadLetterQueueSourceArn system attribute), where the endpoint reports it; "" otherwise.
	DeadLetterSourceARN string
	// Envelope is the decoded body; nil when the body is not a jobkit envelope.
	Envelope *jobs.Envelope
	// Payload is set when the body is a claim-check pointer (a job over 1 MiB): the envelope is
	// that S3 object, kept until the job succeeds, and Kind and JobID come from the attributes.
	Payload *jobs.PayloadPointer
	// Attributes are the message attributes that are not jobkit's own.
	Attributes map[string]sqstypes.MessageAttributeValue

	receipt string
}

// Filter selects dead jobs. The zero Filter selects all.
type Filter struct {
	Kind          string // exact kind
	ErrorContains string // case-insensitive substring of the error text (or of the reason)
	ID            string // job id or message id
}

func (f Filter) zero() bool { return f == Filter{} }

// Match reports whether j passes every condition that is set.
func (f Filter) Match(j *DeadJob) bool {
	if f.Kind != "" && j.Kind != f.Kind {
		return false
	}
	if f.ErrorContains != "" {
		needle := strings.ToLower(f.ErrorContains)
		if !strings.Contains(strings.ToLower(j.Error), needle) && !strings.Contains(strings.ToLower(j.Reason), needle) {
			return false
		}
	}
	if f.ID != "" && j.JobID != f.ID && j.MessageID != f.ID {
		return false
	}
	return true
}

// ParseDeadJob reads a received dead-letter message. The message should have been received with
// all message attributes and the system attributes SentTimestamp, ApproximateReceiveCount,
// MessageGroupId and DeadLetterQueueSourceArn.
func ParseDeadJob(m sqstypes.Message) DeadJob {
	j := DeadJob{
		MessageID: aws.ToString(m.MessageId),
		Body:      aws.ToString(m.Body),
		GroupID:   m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)],
		receipt:   aws.ToString(m.ReceiptHandle),
	}
	if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		j.SentAt = time.UnixMilli(ms).UTC()
	}
	j.ReceiveCount, _ = strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	j.DeadLetterSourceARN = m.Attributes[string(sqstypes.MessageSystemAttributeNameDeadLetterQueueSourceArn)]
	attr := func(name string) string {
		if v, ok := m.MessageAttributes[name]; ok {
			return aws.ToString(v.StringValue)
		}
		return ""
	}
	j.Reason = attr(contract.AttrReason)
	j.Error = attr(contract.AttrError)
	j.Kind = attr(contract.AttrKind)
	j.JobID = attr(contract.AttrJobID)
	j.Attempts, _ = strconv.Atoi(attr(contract.AttrAttempts))
	j.Function = attr(contract.AttrFunction)
	j.FirstReceivedAt = parseTime(attr(contract.AttrFirstFailureAt))
	j.FailedAt = parseTime(attr(contract.AttrFailedAt))
	j.SourceMessageID = attr(contract.AttrSourceMessageID)
	j.SourceQueue = attr(contract.AttrSourceQueue)
	for k, v := range m.MessageAttributes {
		if !strings.HasPrefix(k, contract.AttrPrefix) {
			if j.Attributes == nil {
				j.Attributes = map[string]sqstypes.MessageAttributeValue{}
			}
			j.Attributes[k] = v
		}
	}
	if !j.ByRedrivePolicy() {
		j.DeadLetteredAt = j.SentAt
	}
	if ptr, ok := jobs.ParsePayloadPointer(j.Body); ok {
		j.Payload = &ptr
	}
	var env jobs.Envelope
	if err := json.Unmarshal([]byte(j.Body), &env); err == nil && (env.ID != "" || env.Kind != "") {
		j.Envelope = &env
		j.JobID = cmp.Or(j.JobID, env.ID)
		j.Kind = cmp.Or(j.Kind, env.Kind)
	}
	return j
}

// ByRedrivePolicy reports whether SQS moved the message into the dead-letter queue by its source
// queue's RedrivePolicy (received maxReceiveCount times with no outcome reported), unrecorded,
// rather than the jobs runtime or the redrive recorder sending it there: it carries no jobkit
// reason, or SQS names the queue it moved it from (DeadLetterSourceARN). A job redriven by a native
// move keeps its jobkit.* attributes, so one moved by the RedrivePolicy after that still carries
// the Reason of its earlier dead-lettering. A job the recorder sent on (contract.ReasonRedrivePolicy)
// is not: SQS moved it into the holding queue, and the recorder's send says when and why.
func (j *DeadJob) ByRedrivePolicy() bool {
	return j.Reason == "" || j.DeadLetterSourceARN != ""
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// ListOptions tunes ListDead; nil means defaults.
type ListOptions struct {
	Filter
	// Limit is the most jobs returned; 0 means 100.
	Limit int
	// Visibility is how long listed messages stay hidden from other readers while the listing
	// runs; they are handed back (ChangeMessageVisibility 0) as soon as it ends. The listing stops
	// (Truncated) when half of it has passed. 0 means 30 s.
	Visibility time.Duration
}

// DeadList is a listing of a dead-letter queue.
type DeadList struct {
	QueueURL string
	// Approximate is the queue's ApproximateNumberOfMessages when the listing began.
	Approximate int64
	// Jobs are the matching jobs, in the order they were received (oldest first on FIFO queues).
	Jobs []DeadJob
	// Scanned is the number of distinct messages looked at.
	Scanned int
	// Truncated is true when the listing stopped before the queue ran dry (limit or time).
	Truncated bool
}

// ListDead lists a dead-letter queue without consuming it: it receives messages with a short
// visibility timeout, keeps them hidden while it scans (so it sees each message once), and hands
// them all back when it returns, even if ctx is cancelled. If the process dies instead, they come
// back when the visibility timeout ends.
//
// Costs: each listed message's ApproximateReceiveCount goes up by one, and other readers of the
// dead-letter queue (a redrive) do not see the listed messages until the listing ends.
//
// FIFO: SQS hands out a message group only while none of its messages is in flight, so a listing
// sees the messages of each group that one receive returns (the head of the group, up to 10) and
// not the ones behind them; Approximate still counts everything.
func (i *Inspector) ListDead(ctx context.Context, dlqURL string, opts *ListOptions) (*DeadList, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	if o.Limit <= 0 {
		o.Limit = 100
	}
	if o.Visibility <= 0 {
		o.Visibility = 30 * time.Second
	}
	visSeconds := int32(o.Visibility.Round(time.Second) / time.Second)
	visSeconds = max(visSeconds, 1)

	attrs, err := i.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(dlqURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return nil, fmt.Errorf("inspect: attributes of %s: %w", dlqURL, err)
	}
	list := &DeadList{
		QueueURL:    dlqURL,
		Approximate: atoi64(attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]),
	}

	var held []sqstypes.Message
	defer func() { i.release(ctx, dlqURL, held) }()

	seen := map[string]bool{}
	deadline := i.now().Add(time.Duration(visSeconds) * time.Second / 2)
	wait := int32(0)
	for {
		if len(list.Jobs) >= o.Limit || !i.now().Before(deadline) {
			list.Truncated = true
			break
		}
		out, err := i.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(dlqURL),
			MaxNumberOfMessages:         10,
			VisibilityTimeout:           visSeconds,
			WaitTimeSeconds:             wait,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return nil, fmt.Errorf("inspect: receive from %s: %w", dlqURL, err)
		}
		if len(out.Messages) == 0 {
			if wait > 0 {
				break // a long poll found nothing: the queue has nothing more to show
			}
			wait = 1 // a short poll may miss messages on AWS; confirm with a long poll
			continue
		}
		wait = 0
		held = append(held, out.Messages...)
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue
			}
			seen[id] = true
			list.Scanned++
			j := ParseDeadJob(m)
			if o.Filter.Match(&j) && len(list.Jobs) < o.Limit {
				list.Jobs = append(list.Jobs, j)
			}
		}
	}
	return list, nil
}

// ShowDead finds one dead job by job id or message id (scanning like ListDead) and returns it, or
// an error wrapping ErrNotFound.
func (i *Inspector) ShowDead(ctx context.Context, dlqURL, id string, opts *ListOptions) (*DeadJob, error) {
	if id == "" {
		return nil, errors.New("inspect: show: empty id")
	}
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	o.ID, o.Limit = id, 1
	list, err := i.ListDead(ctx, dlqURL, &o)
	// Nothing scanned while the DLQ holds messages: another reader (a listing, a page) has them
	// in flight for a moment. Look again, a few times, before saying the job is not there.
	for try := 0; err == nil && len(list.Jobs) == 0 && list.Scanned == 0 && try < 4; try++ {
		d, derr := i.Depth(ctx, dlqURL)
		if derr != nil || d.InFlight == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		list, err = i.ListDead(ctx, dlqURL, &o)
	}
	if err != nil {
		return nil, err
	}
	if len(list.Jobs) == 0 {
		return nil, fmt.Errorf("%w: no job or message %q among the %d messages of %s", ErrNotFound, id, list.Scanned, awsarn.QueueName(dlqURL))
	}
	return &list.Jobs[0], nil
}

// Purge deletes every message in the queue (SQS PurgeQueue: it takes up to 60 s to finish, and a
// queue can be purged once every 60 s). It returns the queue's approximate message count before
// the purge.
func (i *Inspector) Purge(ctx context.Context, queueURL string) (int64, error) {
	attrs, err := i.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("inspect: attributes of %s: %w", queueURL, err)
	}
	a := attrs.Attributes
	n := atoi64(a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]) +
		atoi64(a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]) +
		atoi64(a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)])
	if _, err := i.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(queueURL)}); err != nil {
		var inProgress *sqstypes.PurgeQueueInProgress
		if errors.As(err, &inProgress) {
			return n, fmt.Errorf("%w: %w", ErrPurgeInProgress, err)
		}
		return n, fmt.Errorf("inspect: purge %s: %w", queueURL, err)
	}
	return n, nil
}

// Depth returns a queue's approximate counts.
func (i *Inspector) Depth(ctx context.Context, queueURL string) (QueueStats, error) {
	s := QueueStats{Name: awsarn.QueueName(queueURL), URL: queueURL}
	err := i.counts(ctx, &s)
	return s, err
}
