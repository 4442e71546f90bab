package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// failingStates is a jobstest.StateStore whose JobSettled fails for the job ids in fail.
type failingStates struct {
	*jobstest.StateStore
	fail map[string]bool
}

func (s *failingStates) JobSettled(ctx context.Context, row *jobs.JobRow, st jobs.JobStatus) error {
	if s.fail[row.ID] {
		return errors.New("state table unavailable")
	}
	return s.StateStore.JobSettled(ctx, row, st)
}

// recorderEnv is a holding queue, its DLQ and the job queue the recorder names as the source.
type recorderEnv struct {
	t             *testing.T
	cfg           aws.Config
	sqs           *sqs.Client
	q, moved, dlq awstest.Queue
}

func newRecorderEnv(t *testing.T, fifo bool) *recorderEnv {
	cfg := awstest.Config(t)
	e := &recorderEnv{t: t, cfg: cfg, sqs: sqs.NewFromConfig(cfg)}
	e.dlq = awstest.CreateQueue(t, cfg, "dlq", &awstest.QueueOptions{FIFO: fifo})
	e.moved = awstest.CreateQueue(t, cfg, "moved", &awstest.QueueOptions{FIFO: fifo, DLQ: &e.dlq, MaxReceiveCount: 20})
	e.q = awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: fifo, DLQ: &e.moved, MaxReceiveCount: 10})
	return e
}

func (e *recorderEnv) recorder(states jobs.StateStore, s3c jobs.PayloadS3API) *jobs.RedriveRecorder {
	return jobs.NewRedriveRecorder(jobs.RecorderConfig{
		QueueURL: e.q.URL, DLQURL: e.dlq.URL, MaxReceiveCount: 10, FunctionName: "mailer", SQS: e.sqs,
		States: states, S3: s3c, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
}

// hold puts a message in the holding queue, as SQS's redrive policy would.
func (e *recorderEnv) hold(in *sqs.SendMessageInput) {
	in.QueueUrl = aws.String(e.moved.URL)
	_, err := e.sqs.SendMessage(context.Background(), in)
	require.NoError(e.t, err)
}

// receive receives n messages of q, with every attribute, oldest first on FIFO queues.
func (e *recorderEnv) receive(q awstest.Queue, n int) []sqstypes.Message {
	var out []sqstypes.Message
	for deadline := time.Now().Add(20 * time.Second); len(out) < n; {
		require.True(e.t, time.Now().Before(deadline), "%s: %d of %d messages", q.Name, len(out), n)
		got, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: 30, MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		require.NoError(e.t, err)
		out = append(out, got.Messages...)
	}
	return out
}

// handle runs the recorder on msgs and returns the message ids it reported failed.
func (e *recorderEnv) handle(r *jobs.RedriveRecorder, msgs []sqstypes.Message) []string {
	resp, err := r.Handle(context.Background(), jobstest.EventFromMessages(e.moved.ARN, msgs))
	require.NoError(e.t, err)
	return jobstest.FailedIDs(resp)
}

// The recorder keeps a moved message's own attributes and its trace header, replaces the jobkit.*
// attributes of an earlier dead-lettering (a native redrive carries them over) with its own, and
// leaves off its least important ones when the message's own leave less room than SQS's 10: the
// reason is the last to go. A body that is no envelope is sent on all the same, without a state.
func TestRedriveRecorderAttributesOnSQS(t *testing.T) {
	t.Parallel()
	e := newRecorderEnv(t, false)
	attrs := map[string]sqstypes.MessageAttributeValue{
		contract.AttrReason: {DataType: aws.String("String"), StringValue: aws.String(contract.ReasonCancelled)}, // an earlier dead-lettering's
	}
	for i := range 8 {
		attrs["own"+strconv.Itoa(i)] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v" + strconv.Itoa(i))}
	}
	const trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	e.hold(&sqs.SendMessageInput{MessageBody: aws.String(jobstest.Body(TestJob{N: 1}, &jobstest.MessageOpts{ID: "job-1"})), MessageAttributes: attrs,
		MessageSystemAttributes: map[string]sqstypes.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(trace)}}})
	e.hold(&sqs.SendMessageInput{MessageBody: aws.String("<xml>not a job</xml>")})
	states := jobstest.NewStateStore()
	require.Empty(t, e.handle(e.recorder(states, nil), e.receive(e.moved, 2)))

	for _, m := range e.receive(e.dlq, 2) {
		d := jobstest.DecodeDeadLetter(m)
		assert.Equal(t, contract.ReasonRedrivePolicy, d.Reason)
		if d.Body == "<xml>not a job</xml>" {
			assert.Equal(t, e.q.URL, d.SourceQueue)
			assert.Equal(t, "mailer", d.Function)
			assert.Contains(t, d.Error, "received 10 times with no outcome reported: moved by the queue's redrive policy")
			assert.Len(t, m.MessageAttributes, 6, "error, source queue, function, failed at, source message id, reason; no job id or kind")
			continue
		}
		assert.Len(t, m.MessageAttributes, 10, "SQS's most")
		for i := range 8 {
			assert.Equal(t, "v"+strconv.Itoa(i), aws.ToString(m.MessageAttributes["own"+strconv.Itoa(i)].StringValue))
		}
		assert.Equal(t, "test.job", d.Kind, "the kind is the second to last to go")
		assert.Empty(t, d.JobID, "left off")
		assert.Equal(t, trace, m.Attributes["AWSTraceHeader"], "the trace goes on")
	}
	st, err := states.JobStatus(context.Background(), "job-1")
	require.NoError(t, err)
	assert.Equal(t, jobs.StateDead, st.State)
	assert.Equal(t, contract.ReasonRedrivePolicy, st.Reason)
	assert.Equal(t, e.q.URL, st.Queue)
}

// On a FIFO queue, a message whose state could not be recorded is reported failed, and so are the
// messages behind it in the batch, unsent: the group stays in order. Recorded again, each goes on
// once — a forward repeated after a lost answer is dropped by its deduplication id (the message's
// id).
func TestRedriveRecorderFIFOOnSQS(t *testing.T) {
	t.Parallel()
	e := newRecorderEnv(t, true)
	for n := 1; n <= 3; n++ {
		e.hold(&sqs.SendMessageInput{MessageBody: aws.String(jobstest.Body(TestJob{N: n}, &jobstest.MessageOpts{ID: "job-" + strconv.Itoa(n)})),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d" + strconv.Itoa(n))})
	}
	msgs := e.receive(e.moved, 3)
	states := &failingStates{StateStore: jobstest.NewStateStore(), fail: map[string]bool{"job-2": true}}
	failed := e.handle(e.recorder(states, nil), msgs)
	require.Equal(t, []string{aws.ToString(msgs[1].MessageId), aws.ToString(msgs[2].MessageId)}, failed)

	states.fail = nil
	require.Empty(t, e.handle(e.recorder(states, nil), msgs[1:]))
	require.Empty(t, e.handle(e.recorder(states, nil), msgs[:1]), "a repeat")
	dead := e.receive(e.dlq, 3)
	var order []string
	for _, m := range dead {
		d := jobstest.DecodeDeadLetter(m)
		order = append(order, d.JobID)
		assert.Equal(t, "g", d.GroupID)
		assert.Equal(t, m.Attributes["MessageDeduplicationId"], d.SourceMessageID, "deduplicated by the moved message's id")
	}
	require.Equal(t, []string{"job-1", "job-2", "job-3"}, order, "in order, once each")
	time.Sleep(time.Second)
	got, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.dlq.URL), WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Empty(t, got.Messages, "nothing twice")
}

// A claim-checked job (its body a pointer to its envelope in S3) is known by its envelope, read
// with the recorder's S3 client: its state is recorded, and its dead letter keeps the pointer.
func TestRedriveRecorderClaimCheckOnSQS(t *testing.T) {
	t.Parallel()
	e := newRecorderEnv(t, false)
	bucket := awstest.CreateBucket(t, e.cfg, "payloads")
	s3c := awstest.S3Client(e.cfg)
	ptr := jobs.PayloadPointer{Bucket: bucket, Key: "jobs/job-9"}
	_, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(ptr.Key),
		Body: strings.NewReader(jobstest.Body(TestJob{N: 9}, &jobstest.MessageOpts{ID: "job-9"}))})
	require.NoError(t, err)
	e.hold(&sqs.SendMessageInput{MessageBody: aws.String(ptr.Body()),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{contract.AttrPayloadSize: {DataType: aws.String("Number"), StringValue: aws.String("123")}}})
	states := jobstest.NewStateStore()
	require.Empty(t, e.handle(e.recorder(states, s3c), e.receive(e.moved, 1)))
	st, err := states.JobStatus(context.Background(), "job-9")
	require.NoError(t, err)
	assert.Equal(t, jobs.StateDead, st.State)
	d := e.receive(e.dlq, 1)[0]
	dl := jobstest.DecodeDeadLetter(d)
	assert.Equal(t, ptr.Body(), dl.Body)
	assert.Equal(t, "job-9", dl.JobID)
	assert.Equal(t, "123", aws.ToString(d.MessageAttributes[contract.AttrPayloadSize].StringValue))
}
