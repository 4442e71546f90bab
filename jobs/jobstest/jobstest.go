// Package jobstest helps test code built on package jobs without AWS: build the SQS events a
// Lambda receives from typed job args, run a worker or a whole handler on them, and read back what
// the runtime dead-lettered, retried or snoozed through a recording SQS client.
//
//	rec := jobstest.NewRecorder()
//	handler := jobs.NewLambdaHandler(workers, jobstest.Config(rec)).HandleSQS
//	resp, _ := handler(ctx, jobstest.Event(jobstest.Message(SendEmail{To: "a@b.c"}, nil)))
//	dead := rec.DeadLetters() // what went to the DLQ, with reason and error
//
// The Recorder answers every call with success (or what its hooks return): it records what the
// runtime asked of SQS, it does not emulate SQS. Test behaviour that depends on SQS itself
// (visibility, FIFO group locks, redrive) against a real endpoint.
package jobstest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Queue URLs and ARN the helpers use by default.
const (
	QueueURL     = "https://sqs.us-east-1.amazonaws.com/000000000000/jobkit-test"
	FIFOQueueURL = "https://sqs.us-east-1.amazonaws.com/000000000000/jobkit-test.fifo"
	DLQURL       = "https://sqs.us-east-1.amazonaws.com/000000000000/jobkit-test-dlq"
	QueueARN     = "arn:aws:sqs:us-east-1:000000000000:jobkit-test"
)

// MessageOpts shape a test message. Nil means defaults.
type MessageOpts struct {
	ID              string    // envelope id; default a new ULID
	Key             string    // idempotency key
	Trace           string    // traceparent
	EnqueuedAt      time.Time // default now
	Attempt         int       // ApproximateReceiveCount; default 1
	GroupID         string    // FIFO message group id (also sets a FIFO event source ARN)
	MessageID       string    // SQS message id; default "msg-" + envelope id
	ReceiptHandle   string    // default "rh-" + message id
	FirstReceivedAt time.Time // ApproximateFirstReceiveTimestamp; default EnqueuedAt
	QueueARN        string    // event source ARN; default QueueARN (+ ".fifo" with a GroupID)
}

// Body returns the message body (the envelope) the producer Client would send for args.
// It panics if args do not encode: test input is the test's to get right.
func Body(args jobs.JobArgs, opts *MessageOpts) string {
	o := defaults(opts)
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("jobstest: encode %T: %v", args, err))
	}
	body, err := json.Marshal(&jobs.Envelope{
		V: jobs.EnvelopeVersion, ID: o.ID, Kind: args.Kind(), Args: raw,
		EnqueuedAt: o.EnqueuedAt.UTC(), Key: o.Key, Trace: o.Trace,
	})
	if err != nil {
		panic(fmt.Sprintf("jobstest: encode envelope: %v", err))
	}
	return string(body)
}

// Message returns the SQS record a Lambda receives for a job with args.
func Message(args jobs.JobArgs, opts *MessageOpts) events.SQSMessage {
	o := defaults(opts)
	return RawMessage(Body(args, &o), &o)
}

// RawMessage returns an SQS record with any body (malformed ones included).
func RawMessage(body string, opts *MessageOpts) events.SQSMessage {
	o := defaults(opts)
	attrs := map[string]string{
		"ApproximateReceiveCount":          strconv.Itoa(o.Attempt),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(o.FirstReceivedAt.UnixMilli(), 10),
		"SentTimestamp":                    strconv.FormatInt(o.EnqueuedAt.UnixMilli(), 10),
		"SenderId":                         "AIDAJOBKITTEST",
	}
	if o.GroupID != "" {
		attrs["MessageGroupId"] = o.GroupID
		attrs["MessageDeduplicationId"] = o.ID
	}
	return events.SQSMessage{
		MessageId:      o.MessageID,
		ReceiptHandle:  o.ReceiptHandle,
		Body:           body,
		Attributes:     attrs,
		EventSourceARN: o.QueueARN,
		EventSource:    "aws:sqs",
		AWSRegion:      "us-east-1",
	}
}

func defaults(opts *MessageOpts) MessageOpts {
	var o MessageOpts
	if opts != nil {
		o = *opts
	}
	if o.ID == "" {
		o.ID = jobs.NewID()
	}
	if o.EnqueuedAt.IsZero() {
		o.EnqueuedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	if o.Attempt <= 0 {
		o.Attempt = 1
	}
	if o.MessageID == "" {
		o.MessageID = "msg-" + o.ID
	}
	if o.ReceiptHandle == "" {
		o.ReceiptHandle = "rh-" + o.MessageID
	}
	if o.FirstReceivedAt.IsZero() {
		o.FirstReceivedAt = o.EnqueuedAt
	}
	if o.QueueARN == "" {
		o.QueueARN = QueueARN
		if o.GroupID != "" {
			o.QueueARN += ".fifo"
		}
	}
	return o
}

// Event wraps records in the event a Lambda receives.
func Event(records ...events.SQSMessage) events.SQSEvent {
	return events.SQSEvent{Records: records}
}

// FailedIDs returns the message ids a handler listed in batchItemFailures.
func FailedIDs(resp events.SQSEventResponse) []string {
	ids := make([]string, 0, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// Config returns a runtime Config for unit tests: the test queue URLs (FIFO when fifo is true),
// api as the SQS client, no metrics and logs only at Error. Change what the test needs.
func Config(api jobs.SQSAPI, fifo ...bool) jobs.Config {
	q := QueueURL
	if len(fifo) > 0 && fifo[0] {
		q = FIFOQueueURL
	}
	return jobs.Config{
		QueueURL:     q,
		DLQURL:       DLQURL,
		SQS:          api,
		FunctionName: "jobkit-test",
		Metrics:      io.Discard,
		Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
}

// JobOpts shape the Job a worker receives in Work. Nil means defaults.
type JobOpts struct {
	ID          string // default a new ULID
	Key         string
	Attempt     int // default 1
	MaxAttempts int // default contract.DefaultMaxAttempts
	GroupID     string
}

// Work runs worker on a job with args, as the runtime would after decoding: the args go through
// a JSON round trip (so a field the worker cannot decode shows up here), and a panic is returned
// as a *jobs.PanicError. Middleware is not applied: use Run for that.
func Work[T jobs.JobArgs](ctx context.Context, worker jobs.Worker[T], args T, opts *JobOpts) error {
	row, err := row(args, opts)
	if err != nil {
		return err
	}
	job := &jobs.Job[T]{JobRow: row}
	if err := json.Unmarshal(row.EncodedArgs, &job.Args); err != nil {
		return &jobs.ArgsError{Kind: row.Kind, Err: err}
	}
	return protect(func() error { return worker.Work(ctx, job) })
}

// Run runs a job with args through workers: the middleware (idempotency, ...) and the worker
// registered for its kind, as the runtime would, with panics returned as *jobs.PanicError.
func Run(ctx context.Context, workers *jobs.Workers, args jobs.JobArgs, opts *JobOpts) error {
	row, err := row(args, opts)
	if err != nil {
		return err
	}
	return protect(func() error { return workers.Run(ctx, row) })
}

func row(args jobs.JobArgs, opts *JobOpts) (*jobs.JobRow, error) {
	var o JobOpts
	if opts != nil {
		o = *opts
	}
	if o.ID == "" {
		o.ID = jobs.NewID()
	}
	if o.Attempt <= 0 {
		o.Attempt = 1
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = contract.DefaultMaxAttempts
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("jobstest: encode %T: %w", args, err)
	}
	now := time.Now().UTC()
	return &jobs.JobRow{
		ID: o.ID, Kind: args.Kind(), Key: o.Key, EncodedArgs: raw, EnqueuedAt: now,
		Attempt: o.Attempt, MaxAttempts: o.MaxAttempts, MessageID: "msg-" + o.ID, GroupID: o.GroupID,
		QueueURL: QueueURL, FirstReceivedAt: now,
	}, nil
}

func protect(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &jobs.PanicError{Value: v}
		}
	}()
	return fn()
}

// DeadLetter is a message the runtime sent to a dead-letter queue, with its attributes read back.
type DeadLetter struct {
	QueueURL        string
	Body            string
	Envelope        *jobs.Envelope // nil when the body is not an envelope
	Reason          string         // jobs.Reason*
	Error           string
	Kind            string
	JobID           string
	Attempts        int
	Function        string
	SourceMessageID string
	SourceQueue     string
	FirstReceivedAt time.Time
	FailedAt        time.Time
	GroupID         string // FIFO dead-letter queues
}

// DecodeDeadLetter reads a dead-lettered message as received from the dead-letter queue (receive
// it with MessageAttributeNames "All").
func DecodeDeadLetter(msg sqstypes.Message) DeadLetter {
	d := deadLetter(aws.ToString(msg.Body), msg.MessageAttributes)
	d.GroupID = msg.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
	return d
}

func deadLetter(body string, attrs map[string]sqstypes.MessageAttributeValue) DeadLetter {
	get := func(name string) string { return aws.ToString(attrs[name].StringValue) }
	d := DeadLetter{
		Body: body, Reason: get(contract.AttrReason), Error: get(contract.AttrError), Kind: get(contract.AttrKind),
		JobID: get(contract.AttrJobID), Function: get(contract.AttrFunction),
		SourceMessageID: get(contract.AttrSourceMessageID), SourceQueue: get(contract.AttrSourceQueue),
	}
	d.Attempts, _ = strconv.Atoi(get(contract.AttrAttempts))
	d.FirstReceivedAt, _ = time.Parse(time.RFC3339Nano, get(contract.AttrFirstFailureAt))
	d.FailedAt, _ = time.Parse(time.RFC3339Nano, get(contract.AttrFailedAt))
	if env, err := jobs.DecodeEnvelope(body); err == nil {
		d.Envelope = &env
	}
	return d
}

// Recorder is an in-memory jobs.SQSAPI for unit tests: it records every call and answers with
// success, or with what the matching hook returns. It is safe for concurrent use.
type Recorder struct {
	// Hooks, each optional: return a non-nil error (or output) to replace the default answer.
	SendMessageFunc      func(ctx context.Context, in *sqs.SendMessageInput) (*sqs.SendMessageOutput, error)
	SendMessageBatchFunc func(ctx context.Context, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)

	mu         sync.Mutex
	sent       []*sqs.SendMessageInput
	batches    []*sqs.SendMessageBatchInput
	visibility []VisibilityChange
	seq        int
}

// VisibilityChange is one ChangeMessageVisibility (or batch entry) the runtime made.
type VisibilityChange struct {
	ReceiptHandle string
	Timeout       time.Duration
	Batch         bool // part of a ChangeMessageVisibilityBatch call
}

var _ jobs.SQSAPI = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// SendMessage records in.
func (r *Recorder) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	r.mu.Lock()
	r.sent = append(r.sent, in)
	r.seq++
	id := "rec-" + strconv.Itoa(r.seq)
	r.mu.Unlock()
	if r.SendMessageFunc != nil {
		return r.SendMessageFunc(ctx, in)
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(id)}, nil
}

// SendMessageBatch records in and reports every entry sent.
func (r *Recorder) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	r.mu.Lock()
	r.batches = append(r.batches, in)
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		r.seq++
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("rec-" + strconv.Itoa(r.seq))})
	}
	r.mu.Unlock()
	if r.SendMessageBatchFunc != nil {
		return r.SendMessageBatchFunc(ctx, in)
	}
	return out, nil
}

// ChangeMessageVisibility records the change.
func (r *Recorder) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.visibility = append(r.visibility, VisibilityChange{ReceiptHandle: aws.ToString(in.ReceiptHandle), Timeout: time.Duration(in.VisibilityTimeout) * time.Second})
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// ChangeMessageVisibilityBatch records the changes and reports every entry done.
func (r *Recorder) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		r.visibility = append(r.visibility, VisibilityChange{ReceiptHandle: aws.ToString(e.ReceiptHandle), Timeout: time.Duration(e.VisibilityTimeout) * time.Second, Batch: true})
		out.Successful = append(out.Successful, sqstypes.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// ReceiveMessage receives nothing: a Recorder's queues are write-only.
func (r *Recorder) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return &sqs.ReceiveMessageOutput{}, nil
}

// DeleteMessageBatch reports every entry deleted.
func (r *Recorder) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, sqstypes.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// GetQueueAttributes answers no attributes: an empty queue.
func (r *Recorder) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{}}, nil
}

// DeadLetters returns the messages sent to dlqURL (default DLQURL), decoded.
func (r *Recorder) DeadLetters(dlqURL ...string) []DeadLetter {
	want := DLQURL
	if len(dlqURL) > 0 {
		want = dlqURL[0]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []DeadLetter
	for _, in := range r.sent {
		if aws.ToString(in.QueueUrl) != want {
			continue
		}
		d := deadLetter(aws.ToString(in.MessageBody), in.MessageAttributes)
		d.QueueURL = want
		d.GroupID = aws.ToString(in.MessageGroupId)
		out = append(out, d)
	}
	return out
}

// Sent returns every SendMessage input, in call order.
func (r *Recorder) Sent() []*sqs.SendMessageInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*sqs.SendMessageInput(nil), r.sent...)
}

// Batches returns every SendMessageBatch input, in call order.
func (r *Recorder) Batches() []*sqs.SendMessageBatchInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*sqs.SendMessageBatchInput(nil), r.batches...)
}

// Visibility returns every visibility change, in call order (heartbeats included).
func (r *Recorder) Visibility() []VisibilityChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]VisibilityChange(nil), r.visibility...)
}

// VisibilityOf returns the last visibility timeout set for a receipt handle, and whether one was.
func (r *Recorder) VisibilityOf(receiptHandle string) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.visibility) - 1; i >= 0; i-- {
		if r.visibility[i].ReceiptHandle == receiptHandle {
			return r.visibility[i].Timeout, true
		}
	}
	return 0, false
}

// Envelopes decodes the bodies of every message sent to queueURL — SendMessage bodies first, then
// batch entries, each in call order; a Client test reads what it enqueued with it.
func (r *Recorder) Envelopes(tb testing.TB, queueURL string) []jobs.Envelope {
	tb.Helper()
	r.mu.Lock()
	var bodies []string
	for _, in := range r.sent {
		if aws.ToString(in.QueueUrl) == queueURL {
			bodies = append(bodies, aws.ToString(in.MessageBody))
		}
	}
	for _, in := range r.batches {
		if aws.ToString(in.QueueUrl) == queueURL {
			for _, e := range in.Entries {
				bodies = append(bodies, aws.ToString(e.MessageBody))
			}
		}
	}
	r.mu.Unlock()
	out := make([]jobs.Envelope, 0, len(bodies))
	for _, b := range bodies {
		env, err := jobs.DecodeEnvelope(b)
		if err != nil {
			tb.Fatalf("jobstest: a message sent to %s is not an envelope: %v", queueURL, err)
		}
		out = append(out, env)
	}
	return out
}

// EventFromMessages builds the event a Lambda would receive for messages received from a real
// queue (receive them with MessageSystemAttributeNames "All"), as the SQS event source mapping
// does, message attributes included (receive them with MessageAttributeNames "All" to have
// them). queueARN is the queue's ARN (the records' event source).
func EventFromMessages(queueARN string, msgs []sqstypes.Message) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		attrs := make(map[string]string, len(m.Attributes))
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		var msgAttrs map[string]events.SQSMessageAttribute
		for k, v := range m.MessageAttributes {
			if msgAttrs == nil {
				msgAttrs = make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
			}
			msgAttrs[k] = events.SQSMessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType)}
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:         aws.ToString(m.MessageId),
			ReceiptHandle:     aws.ToString(m.ReceiptHandle),
			Body:              aws.ToString(m.Body),
			Md5OfBody:         aws.ToString(m.MD5OfBody),
			Attributes:        attrs,
			MessageAttributes: msgAttrs,
			EventSourceARN:    queueARN,
			EventSource:       "aws:sqs",
			AWSRegion:         "us-east-1",
		})
	}
	return ev
}
