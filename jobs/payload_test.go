package jobs_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// putRecorder records the objects a Client puts; failKeys says which puts fail. It serves only
// the Client's side (PutObject): the runtime's reads are tested against the emulator.
type putRecorder struct {
	mu   sync.Mutex
	puts map[string]string // key → body
	fail func(body string) bool
}

func (p *putRecorder) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	if p.fail != nil && p.fail(string(b)) {
		return nil, errors.New("put refused")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.puts == nil {
		p.puts = map[string]string{}
	}
	p.puts[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)] = string(b)
	return &s3.PutObjectOutput{}, nil
}

func (p *putRecorder) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return nil, errors.New("putRecorder: GetObject not served")
}

func (p *putRecorder) DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	return nil, errors.New("putRecorder: DeleteObject not served")
}

func (p *putRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.puts)
}

func TestParsePayloadPointer(t *testing.T) {
	t.Parallel()
	want := jobs.PayloadPointer{Bucket: "b", Key: "jobs/01J"}
	for name, body := range map[string]string{
		"java":   `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"jobs/01J"}]`,
		"python": `["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": "b", "s3Key": "jobs/01J"}]`,
		"legacy": `["com.amazon.sqs.javamessaging.MessageS3Pointer",{"s3BucketName":"b","s3Key":"jobs/01J"}]`,
		"ours":   want.Body(),
	} {
		got, ok := jobs.ParsePayloadPointer(body)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	assert.Equal(t, `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"jobs/01J"}]`, want.Body())
	for name, body := range map[string]string{
		"envelope":      `{"v":1,"id":"1","kind":"k","args":{},"enqueued_at":"2026-11-21T12:00:00Z"}`,
		"other class":   `["java.lang.String",{"s3BucketName":"b","s3Key":"k"}]`,
		"no key":        `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b"}]`,
		"three items":   `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"},1]`,
		"not JSON":      `["software.amazon.payloadoffloading.PayloadS3Pointer",`,
		"empty":         ``,
		"object second": `["software.amazon.payloadoffloading.PayloadS3Pointer","b/k"]`,
	} {
		_, ok := jobs.ParsePayloadPointer(body)
		assert.False(t, ok, name)
	}
}

func TestClientPayloadsRefusesBeforeAnyCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	big := SendEmail{To: "a@b.c", Body: strings.Repeat("x", jobs.MaxMessageSize)}

	// No Payloads: a job over 1 MiB is refused, naming the option, before any call.
	rec := jobstest.NewRecorder()
	_, err := newTestClient(t, rec, jobs.ClientOptions{}).Enqueue(ctx, big, nil)
	require.ErrorIs(t, err, jobs.ErrBodyTooLarge)
	var invalid *jobs.InvalidJobError
	require.ErrorAs(t, err, &invalid)
	assert.Contains(t, err.Error(), "ClientOptions.Payloads")

	// With Payloads: a claim check cannot be delayed past 15 minutes (its object could expire).
	puts := &putRecorder{}
	c := newTestClient(t, rec, jobs.ClientOptions{LongDelayer: &delayer{}, Payloads: &jobs.Payloads{S3: puts, Bucket: "b"}})
	_, err = c.Enqueue(ctx, big, &jobs.EnqueueOpts{Delay: time.Hour})
	require.ErrorIs(t, err, jobs.ErrPayloadDelayed)
	require.ErrorAs(t, err, &invalid)
	_, err = c.EnqueueBatch(ctx, []jobs.BatchJob{{Args: SendEmail{}}, {Args: big, Opts: &jobs.EnqueueOpts{Delay: time.Hour}}})
	require.ErrorIs(t, err, jobs.ErrPayloadDelayed)
	assert.Empty(t, rec.Sent())
	assert.Empty(t, rec.Batches())
	assert.Zero(t, puts.count(), "no object stored for a job refused")

	for name, p := range map[string]*jobs.Payloads{
		"no S3":          {Bucket: "b"},
		"no bucket":      {S3: puts},
		"threshold high": {S3: puts, Bucket: "b", Threshold: jobs.MaxMessageSize + 1},
		"threshold < 0":  {S3: puts, Bucket: "b", Threshold: -1},
	} {
		_, err := jobs.NewClient(rec, jobs.ClientOptions{DefaultQueueURL: jobstest.QueueURL, Payloads: p})
		assert.Error(t, err, name)
	}
}

// The threshold decides: at or under it the envelope is the body; over it (or over the queue's
// own smaller limit) the body is a pointer with ExtendedPayloadSize, and the object is the
// envelope the body would have been.
func TestClientPayloadsThreshold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := jobstest.NewRecorder()
	puts := &putRecorder{}
	c := newTestClient(t, rec, jobs.ClientOptions{
		MaxMessageSizes: map[string]int{smallQueue: 64 << 10},
		Payloads:        &jobs.Payloads{S3: puts, Bucket: "payloads", Threshold: 100 << 10, KeyPrefix: "jobs/"},
	})
	_, err := c.Enqueue(ctx, SendEmail{Body: strings.Repeat("s", 90<<10)}, nil)
	require.NoError(t, err)
	_, err = c.Enqueue(ctx, SendEmail{Body: strings.Repeat("l", 110<<10)}, nil)
	require.NoError(t, err)
	_, err = c.Enqueue(ctx, SendEmail{Body: strings.Repeat("q", 70<<10)}, &jobs.EnqueueOpts{Queue: smallQueue})
	require.NoError(t, err)

	sent := rec.Sent()
	require.Len(t, sent, 3)
	_, err = jobs.DecodeEnvelope(aws.ToString(sent[0].MessageBody))
	require.NoError(t, err, "under the threshold: the envelope itself")
	assert.Empty(t, sent[0].MessageAttributes)
	for _, m := range sent[1:] {
		ptr, ok := jobs.ParsePayloadPointer(aws.ToString(m.MessageBody))
		require.True(t, ok)
		assert.Equal(t, "payloads", ptr.Bucket)
		assert.True(t, strings.HasPrefix(ptr.Key, contract.PayloadKeyPrefix(awsarn.QueueName(aws.ToString(m.QueueUrl)))+"jobs/"),
			"under the destination queue's prefix, then KeyPrefix: %s", ptr.Key)
		stored := puts.puts["payloads/"+ptr.Key]
		env, err := jobs.DecodeEnvelope(stored)
		require.NoError(t, err, "the object is the envelope")
		assert.Equal(t, "email.send", env.Kind)
		size := m.MessageAttributes[contract.AttrPayloadSize]
		assert.Equal(t, "Number", aws.ToString(size.DataType))
		assert.Equal(t, jsonInt(int64(len(stored))), aws.ToString(size.StringValue))
	}
}

// EnqueueBatch stores each oversize entry and packs the pointers into calls; a put that fails
// fails that job alone (SendError wrapping PayloadError), and on FIFO its group's later jobs.
func TestClientPayloadsBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := jobstest.NewRecorder()
	puts := &putRecorder{fail: func(body string) bool { return strings.Contains(body, `"to":"refused"`) }}
	c := newTestClient(t, rec, jobs.ClientOptions{Payloads: &jobs.Payloads{S3: puts, Bucket: "b"}})
	big := func(to string) jobs.BatchJob {
		return jobs.BatchJob{Args: SendEmail{To: to, Body: strings.Repeat("x", jobs.MaxMessageSize)}}
	}
	var batch []jobs.BatchJob
	for range 12 {
		batch = append(batch, big("ok"))
	}
	batch = append(batch, big("refused"), jobs.BatchJob{Args: SendEmail{To: "small"}})
	res, err := c.EnqueueBatch(ctx, batch)
	var be *jobs.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []int{12}, be.Failed)
	var sendErr *jobs.SendError
	require.ErrorAs(t, res[12].Err, &sendErr)
	var payloadErr *jobs.PayloadError
	require.ErrorAs(t, res[12].Err, &payloadErr)
	assert.Equal(t, "put", payloadErr.Op)
	assert.Equal(t, 12, puts.count())
	calls := rec.Batches()
	require.Len(t, calls, 2, "13 small messages: two calls of at most 10")
	assert.ElementsMatch(t, []int{10, 3}, []int{len(calls[0].Entries), len(calls[1].Entries)})

	// FIFO: the group's job after a failed put is not sent.
	fifo := &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: "g"}
	res, err = c.EnqueueBatch(ctx, []jobs.BatchJob{
		{Args: SendEmail{To: "refused", Body: strings.Repeat("x", jobs.MaxMessageSize)}, Opts: fifo},
		{Args: SendEmail{To: "next"}, Opts: fifo},
	})
	require.Error(t, err)
	require.ErrorAs(t, res[0].Err, &payloadErr)
	assert.ErrorIs(t, res[1].Err, jobs.ErrGroupFailed)
}

// Prepare stores the payload at once and returns the pointer and its size, for an outbox item
// (whose body must stay small) and the sender's MessageAttributes.
func TestPreparePayload(t *testing.T) {
	t.Parallel()
	puts := &putRecorder{}
	c := newTestClient(t, jobstest.NewRecorder(), jobs.ClientOptions{Payloads: &jobs.Payloads{S3: puts, Bucket: "b"}})
	j, err := c.Prepare(context.Background(), SendEmail{Body: strings.Repeat("x", 2<<20)}, nil)
	require.NoError(t, err)
	ptr, ok := jobs.ParsePayloadPointer(j.Body)
	require.True(t, ok)
	assert.Equal(t, len(puts.puts["b/"+ptr.Key]), j.PayloadSize)
	assert.Equal(t, jsonInt(int64(j.PayloadSize)), aws.ToString(j.MessageAttributes()[contract.AttrPayloadSize].StringValue))

	small, err := c.Prepare(context.Background(), SendEmail{}, nil)
	require.NoError(t, err)
	assert.Zero(t, small.PayloadSize)
	assert.Nil(t, small.MessageAttributes())
}

// hugeS3 answers every GetObject with an object that declares 2^62 bytes (or yields more than it
// declares): what a hostile or broken store could send.
type hugeS3 struct {
	jobs.PayloadS3API
	declared int64
}

func (h hugeS3) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return &s3.GetObjectOutput{ContentLength: aws.Int64(h.declared), Body: io.NopCloser(io.LimitReader(zeros{}, 2<<20))}, nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// An object declaring 2^62 bytes, or one yielding more than the limit while declaring nothing,
// fails its own record as a permanent PayloadError (dead-lettered); the process does not crash and
// the batch's other record succeeds.
func TestPayloadOverTheLimitNeverCrashesTheBatch(t *testing.T) {
	t.Parallel()
	for _, declared := range []int64{1 << 62, 0} {
		rec := jobstest.NewRecorder()
		cfg := jobstest.Config(rec)
		cfg.S3, cfg.MaxPayloadSize = hugeS3{declared: declared}, 1<<20
		ptr := jobs.PayloadPointer{Bucket: "b", Key: "k"}
		ev := jobstest.Event(jobstest.RawMessage(ptr.Body(), &jobstest.MessageOpts{MessageID: "huge"}), msg(1, "", nil))
		resp, err := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS(context.Background(), ev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures, "declared %d", declared)
		dead := rec.DeadLetters()
		require.Len(t, dead, 1, "declared %d", declared)
		assert.Equal(t, "huge", dead[0].SourceMessageID)
		assert.Equal(t, contract.ReasonPayloadUnavailable, dead[0].Reason)
		assert.Contains(t, dead[0].Error, "payload too large")
	}
}
