package jobs_test

// The claim check against SQS and S3 (the emulator `make test` starts, LocalStack or AWS): a
// 5 MiB job goes to S3, its message carries the pointer, the runtime runs it from the object and
// deletes the object after success; a failing one is dead-lettered with the pointer, redriven and
// run; a pointer to a missing object is dead-lettered with its reason.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// BigJob carries a large blob and its digest; its worker checks the blob arrived whole.
type BigJob struct {
	Blob   string `json:"blob"`
	SHA256 string `json:"sha256"`
}

func (BigJob) Kind() string { return "test.big" }

func newBigJob(size int) BigJob {
	var b strings.Builder
	b.Grow(size)
	for i := 0; b.Len() < size; i++ {
		b.WriteString("0123456789abcdefghijklmnopqrstuvwxyz"[i%36 : i%36+1])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return BigJob{Blob: b.String(), SHA256: hex.EncodeToString(sum[:])}
}

// bigSeen records what BigJob's worker saw (a failing worker fails every job).
type bigSeen struct {
	mu     sync.Mutex
	sizes  []int
	intact []bool
	ids    []string
}

func bigWorkers(seen *bigSeen, failing bool) *jobs.Workers {
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[BigJob](func(_ context.Context, job *jobs.Job[BigJob]) error {
		sum := sha256.Sum256([]byte(job.Args.Blob))
		seen.mu.Lock()
		seen.sizes = append(seen.sizes, len(job.Args.Blob))
		seen.intact = append(seen.intact, hex.EncodeToString(sum[:]) == job.Args.SHA256)
		seen.ids = append(seen.ids, job.ID)
		seen.mu.Unlock()
		if failing {
			return errors.New("big job failed")
		}
		return nil
	}))
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(context.Context, *jobs.Job[TestJob]) error { return nil }))
	return w
}

// payloadSetup makes a queue, its DLQ, a bucket and a Client storing jobs over 1 MiB there.
type payloadSetup struct {
	sqs    *sqs.Client
	s3     *s3.Client
	q, dlq awstest.Queue
	bucket string
	client *jobs.Client
}

func newPayloadSetup(t testing.TB) payloadSetup {
	t.Helper()
	cfg := awstest.Config(t)
	ps := payloadSetup{sqs: sqs.NewFromConfig(cfg), s3: jobs.NewPayloadS3Client(cfg)}
	ps.dlq = awstest.CreateQueue(t, cfg, "dlq", nil)
	// A short visibility timeout: a receive the SDK retries after a lost answer hides little.
	ps.q = awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{VisibilityTimeout: 5})
	ps.bucket = awstest.CreateBucket(t, cfg, "payloads")
	c, err := jobs.NewClient(ps.sqs, jobs.ClientOptions{
		DefaultQueueURL: ps.q.URL,
		Payloads:        &jobs.Payloads{S3: ps.s3, Bucket: ps.bucket, KeyPrefix: "jobs/"},
	})
	require.NoError(t, err)
	ps.client = c
	return ps
}

// objectExists reports whether the bucket holds key.
func (ps payloadSetup) objectExists(t *testing.T, key string) bool {
	t.Helper()
	_, err := ps.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(ps.bucket), Key: aws.String(key)})
	if err == nil {
		return true
	}
	var apiErr smithy.APIError
	require.True(t, errors.As(err, &apiErr), "HeadObject: %v", err)
	require.Contains(t, []string{"NotFound", "NoSuchKey"}, apiErr.ErrorCode(), "HeadObject: %v", err)
	return false
}

// enqueueBig enqueues a job of size bytes and receives its one message.
func (ps payloadSetup) enqueueBig(t *testing.T, size int) (jobs.EnqueueResult, []sqstypes.Message) {
	t.Helper()
	res, err := ps.client.Enqueue(context.Background(), newBigJob(size), nil)
	require.NoError(t, err)
	msgs := awstest.ReceiveN(t, ps.sqs, ps.q.URL, 1)
	return res, msgs
}

func pointerOf(t *testing.T, m sqstypes.Message) jobs.PayloadPointer {
	t.Helper()
	ptr, ok := jobs.ParsePayloadPointer(aws.ToString(m.Body))
	require.True(t, ok, "the body is a pointer: %.200s", aws.ToString(m.Body))
	return ptr
}

// A 5 MiB job: the message is a pointer in the extended clients' format with ExtendedPayloadSize,
// the object is the envelope, the worker gets the whole blob, and the object is gone after success.
func TestLargeJobRunsFromS3OnSQS(t *testing.T) {
	t.Parallel()
	ps := newPayloadSetup(t)
	res, msgs := ps.enqueueBig(t, 5<<20)
	body := aws.ToString(msgs[0].Body)
	ptr := pointerOf(t, msgs[0])
	assert.Equal(t, ps.bucket, ptr.Bucket)
	assert.True(t, strings.HasPrefix(ptr.Key, contract.PayloadKeyPrefix(ps.q.Name)+"jobs/"), "under its queue's prefix, then KeyPrefix: %s", ptr.Key)
	assert.Equal(t, `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"`+ps.bucket+`","s3Key":"`+ptr.Key+`"}]`, body)
	size := msgs[0].MessageAttributes[contract.AttrPayloadSize]
	assert.Equal(t, "Number", aws.ToString(size.DataType))

	obj, err := ps.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(ptr.Bucket), Key: aws.String(ptr.Key)})
	require.NoError(t, err)
	var env jobs.Envelope
	require.NoError(t, json.NewDecoder(obj.Body).Decode(&env))
	obj.Body.Close()
	assert.Equal(t, res.ID, env.ID)
	assert.Equal(t, "test.big", env.Kind)
	assert.Greater(t, aws.ToInt64(obj.ContentLength), int64(5<<20))
	assert.Equal(t, aws.ToString(size.StringValue), jsonInt(aws.ToInt64(obj.ContentLength)))

	var seen bigSeen
	handler := jobs.NewLambdaHandler(bigWorkers(&seen, false), runtimeConfigS3(ps)).HandleSQS
	resp, err := handler(context.Background(), jobstest.EventFromMessages(ps.q.ARN, msgs))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, []int{5 << 20}, seen.sizes)
	assert.Equal(t, []bool{true}, seen.intact)
	assert.Equal(t, []string{res.ID}, seen.ids)
	assert.False(t, ps.objectExists(t, ptr.Key), "the object is deleted after success")
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func runtimeConfigS3(ps payloadSetup) jobs.Config {
	rc := runtimeConfig(ps.sqs, ps.q.URL, ps.dlq.URL)
	rc.VisibilityTimeout = 5 * time.Second
	rc.S3, rc.PayloadBucket = ps.s3, ps.bucket
	return rc
}

// A 5 MiB job that fails on its last attempt is dead-lettered with its pointer, the dead-letter
// attributes and ExtendedPayloadSize; its object stays. Redriven by the Inspector, it runs (through
// the raw Lambda handler this time) with the whole blob, and then its object is deleted.
func TestLargeJobDeadLetterAndRedriveOnSQS(t *testing.T) {
	t.Parallel()
	ps := newPayloadSetup(t)
	res, msgs := ps.enqueueBig(t, 5<<20)
	ptr := pointerOf(t, msgs[0])

	var seen bigSeen
	rc := runtimeConfigS3(ps)
	rc.MaxAttempts = 1
	resp, err := jobs.NewLambdaHandler(bigWorkers(&seen, true), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(ps.q.ARN, msgs))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "dead-lettered by the runtime: reported done")
	assert.Equal(t, []bool{true}, seen.intact, "the failing run had the whole blob")
	deleteExcept(t, ps.sqs, ps.q.URL, msgs, nil)

	dead := awstest.ReceiveN(t, ps.sqs, ps.dlq.URL, 1)
	assert.Equal(t, aws.ToString(msgs[0].Body), aws.ToString(dead[0].Body), "the copy keeps the pointer, not the 5 MiB")
	d := jobstest.DecodeDeadLetter(dead[0])
	assert.Equal(t, contract.ReasonAttemptsUsed, d.Reason)
	assert.Equal(t, "big job failed", d.Error)
	assert.Equal(t, "test.big", d.Kind)
	assert.Equal(t, res.ID, d.JobID)
	assert.Equal(t, 1, d.Attempts)
	assert.Equal(t, ps.q.URL, d.SourceQueue)
	assert.Equal(t, aws.ToString(msgs[0].MessageAttributes[contract.AttrPayloadSize].StringValue),
		aws.ToString(dead[0].MessageAttributes[contract.AttrPayloadSize].StringValue))
	assert.True(t, ps.objectExists(t, ptr.Key), "the object outlives the dead letter")
	dj := inspect.ParseDeadJob(dead[0])
	require.NotNil(t, dj.Payload, "the Inspector sees the pointer")
	assert.Equal(t, ptr, *dj.Payload)
	assert.Equal(t, res.ID, dj.JobID)
	assert.Contains(t, dj.Attributes, contract.AttrPayloadSize, "kept for the redrive")
	// Hand the copy back for the Inspector's redrive.
	_, err = ps.sqs.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(ps.dlq.URL), ReceiptHandle: dead[0].ReceiptHandle})
	require.NoError(t, err)

	cfg := awstest.Config(t)
	in := inspect.New(cfg)
	moved, err := in.Redrive(context.Background(), ps.dlq.URL, &inspect.RedriveOptions{
		Method: inspect.RedriveManual, Source: ps.q.URL, Visibility: 5 * time.Second, InFlightWait: -1})
	require.NoError(t, err)
	require.EqualValues(t, 1, moved.Moved)

	back := awstest.ReceiveN(t, ps.sqs, ps.q.URL, 1)
	assert.Equal(t, aws.ToString(msgs[0].Body), aws.ToString(back[0].Body))
	assert.Contains(t, back[0].MessageAttributes, contract.AttrPayloadSize, "a redriven claim check still reads as one to the extended clients")
	event, err := json.Marshal(jobstest.EventFromMessages(ps.q.ARN, back))
	require.NoError(t, err)
	var again bigSeen
	out, err := jobs.NewLambdaHandler(bigWorkers(&again, false), rc).Invoke(context.Background(), event)
	require.NoError(t, err)
	assert.JSONEq(t, `{"batchItemFailures":[]}`, string(out))
	assert.Equal(t, []int{5 << 20}, again.sizes)
	assert.Equal(t, []bool{true}, again.intact)
	assert.False(t, ps.objectExists(t, ptr.Key), "deleted once the redriven job succeeded")
}

// A pointer to an object that is not there is dead-lettered at once with payload_unavailable and
// an error naming the object; so is a pointer into another bucket than the function's, and one
// to another queue's payload — an object that exists, in the right bucket, which the worker
// neither reads nor deletes.
func TestPointerToMissingObjectIsDeadLetteredOnSQS(t *testing.T) {
	t.Parallel()
	ps := newPayloadSetup(t)
	missing := jobs.PayloadPointer{Bucket: ps.bucket, Key: contract.PayloadKeyPrefix(ps.q.Name) + "jobs/not-there"}
	foreign := jobs.PayloadPointer{Bucket: "someone-elses-bucket", Key: "k"}
	otherQueue := jobs.PayloadPointer{Bucket: ps.bucket, Key: contract.PayloadKeyPrefix("Billing") + "jobs/01JD"}
	_, err := ps.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(ps.bucket), Key: aws.String(otherQueue.Key),
		Body: strings.NewReader(jobstest.Body(TestJob{N: 7}, nil))})
	require.NoError(t, err)
	for _, p := range []jobs.PayloadPointer{missing, foreign, otherQueue} {
		_, err := ps.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(ps.q.URL), MessageBody: aws.String(p.Body())})
		require.NoError(t, err)
	}
	msgs := awstest.ReceiveN(t, ps.sqs, ps.q.URL, 3)
	var seen bigSeen
	rc := runtimeConfigS3(ps) // MaxAttempts 5: not dead-lettered for its attempts
	resp, err := jobs.NewLambdaHandler(bigWorkers(&seen, false), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(ps.q.ARN, msgs))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Empty(t, seen.sizes)

	dead := awstest.ReceiveN(t, ps.sqs, ps.dlq.URL, 3)
	for _, m := range dead {
		d := jobstest.DecodeDeadLetter(m)
		assert.Equal(t, contract.ReasonPayloadUnavailable, d.Reason)
		assert.Equal(t, 1, d.Attempts)
		switch aws.ToString(m.Body) {
		case missing.Body():
			assert.Contains(t, d.Error, "s3://"+ps.bucket+"/"+missing.Key)
			assert.Contains(t, d.Error, "NoSuchKey")
		case foreign.Body():
			assert.Contains(t, d.Error, `the pointer names bucket "someone-elses-bucket"`)
		case otherQueue.Body():
			assert.Contains(t, d.Error, "outside the payloads of queue "+ps.q.Name)
		default:
			t.Fatalf("unexpected dead letter %q", aws.ToString(m.Body))
		}
	}
	assert.True(t, ps.objectExists(t, otherQueue.Key), "another queue's payload is left alone")
}

// EnqueueBatch offloads each oversize entry and sends small ones as they are, and the container
// Consumer runs both, deleting the object after success.
func TestLargeJobInBatchRunsInConsumerOnSQS(t *testing.T) {
	t.Parallel()
	ps := newPayloadSetup(t)
	results, err := ps.client.EnqueueBatch(context.Background(), []jobs.BatchJob{
		{Args: TestJob{N: 1}}, {Args: newBigJob(2 << 20)}, {Args: newBigJob(3 << 20)}, {Args: TestJob{N: 2}},
	})
	require.NoError(t, err)
	require.Len(t, results, 4)

	var seen bigSeen
	c, err := jobs.NewConsumer(bigWorkers(&seen, false), runtimeConfigS3(ps), &jobs.ConsumerOptions{WaitTime: time.Second, DrainTimeout: 5 * time.Second})
	require.NoError(t, err)
	deadline := time.Now().Add(30 * time.Second)
	runConsumer(t, c, func() bool {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		return (len(seen.sizes) == 2 && c.Stats().Deleted == 4) || time.Now().After(deadline)
	})
	assert.ElementsMatch(t, []int{2 << 20, 3 << 20}, seen.sizes)
	assert.Equal(t, []bool{true, true}, seen.intact)
	list, err := ps.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(ps.bucket)})
	require.NoError(t, err)
	assert.Empty(t, list.Contents, "both objects deleted after success")
}

// BenchmarkClaimCheckOnSQS sends jobs of 2 MiB through the claim check on the emulator (or AWS):
// Enqueue (S3 put, SQS send), receive, and the runtime's run (S3 get, decode, S3 delete). It
// prints ms per job and the payload rate; compare BenchmarkSmallJobOnSQS for the same path
// without S3.
func BenchmarkClaimCheckOnSQS(b *testing.B) { benchmarkRoundTrip(b, 2<<20) }

// BenchmarkSmallJobOnSQS is BenchmarkClaimCheckOnSQS with a 1 KiB job: no S3.
func BenchmarkSmallJobOnSQS(b *testing.B) { benchmarkRoundTrip(b, 1<<10) }

func benchmarkRoundTrip(b *testing.B, size int) {
	ps := newPayloadSetup(b)
	job := newBigJob(size)
	var seen bigSeen
	handler := jobs.NewLambdaHandler(bigWorkers(&seen, false), runtimeConfigS3(ps)).HandleSQS
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ps.client.Enqueue(ctx, job, nil); err != nil {
			b.Fatal(err)
		}
		out, err := ps.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(ps.q.URL), WaitTimeSeconds: 5,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) != 1 {
			b.Fatalf("receive: %v (%d messages)", err, len(out.Messages))
		}
		resp, err := handler(ctx, jobstest.EventFromMessages(ps.q.ARN, out.Messages))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			b.Fatalf("run: %v %v", err, resp.BatchItemFailures)
		}
		if _, err := ps.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(ps.q.URL), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for i, ok := range seen.intact {
		if !ok || seen.sizes[i] != size {
			b.Fatalf("job %d: the worker got %d bytes (intact %t), want %d", i, seen.sizes[i], ok, size)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/job")
	b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/(1<<20), "MiB/s")
}

// FIFO: a claim check keeps its place in its group. A large job between two small ones of the
// same group is sent, received and run in order, the large one from S3.
func TestLargeJobKeepsFIFOOrderOnSQS(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ps := payloadSetup{sqs: sqs.NewFromConfig(cfg), s3: jobs.NewPayloadS3Client(cfg)}
	ps.dlq = awstest.CreateQueue(t, cfg, "dlq", &awstest.QueueOptions{FIFO: true})
	ps.q = awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: true, VisibilityTimeout: 5})
	ps.bucket = awstest.CreateBucket(t, cfg, "payloads")
	c, err := jobs.NewClient(ps.sqs, jobs.ClientOptions{DefaultQueueURL: ps.q.URL, Payloads: &jobs.Payloads{S3: ps.s3, Bucket: ps.bucket}})
	require.NoError(t, err)
	g := &jobs.EnqueueOpts{GroupID: "g"}
	res, err := c.EnqueueBatch(context.Background(), []jobs.BatchJob{
		{Args: BigJob{Blob: "first"}, Opts: g}, {Args: newBigJob(2 << 20), Opts: g}, {Args: BigJob{Blob: "third"}, Opts: g},
	})
	require.NoError(t, err)

	msgs := awstest.ReceiveN(t, ps.sqs, ps.q.URL, 3)
	_, ok := jobs.ParsePayloadPointer(aws.ToString(msgs[1].Body))
	require.True(t, ok, "the second message is the claim check")
	var seen bigSeen
	resp, err := jobs.NewLambdaHandler(bigWorkers(&seen, false), runtimeConfigS3(ps)).HandleSQS(context.Background(), jobstest.EventFromMessages(ps.q.ARN, msgs))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, []string{res[0].ID, res[1].ID, res[2].ID}, seen.ids, "run in the group's order")
	assert.Equal(t, []int{5, 2 << 20, 5}, seen.sizes)
	list, err := ps.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(ps.bucket)})
	require.NoError(t, err)
	assert.Empty(t, list.Contents)
}

// A payload over Config.MaxPayloadSize is dead-lettered for its own record, unread past the limit;
// the rest of the batch runs from S3 as usual.
func TestPayloadOverTheLimitIsDeadLetteredAloneOnSQS(t *testing.T) {
	t.Parallel()
	ps := newPayloadSetup(t)
	small, big := newBigJob(300<<10), newBigJob(2<<20)
	for _, j := range []BigJob{small, big} {
		_, err := ps.client.Enqueue(context.Background(), j, nil)
		require.NoError(t, err)
	}
	msgs := awstest.ReceiveN(t, ps.sqs, ps.q.URL, 2)
	var seen bigSeen
	rc := runtimeConfigS3(ps)
	rc.MaxPayloadSize = 1 << 20
	resp, err := jobs.NewLambdaHandler(bigWorkers(&seen, false), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(ps.q.ARN, msgs))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Len(t, seen.sizes, 1, "the small job ran")

	dead := awstest.ReceiveN(t, ps.sqs, ps.dlq.URL, 1)
	d := jobstest.DecodeDeadLetter(dead[0])
	assert.Equal(t, contract.ReasonPayloadUnavailable, d.Reason)
	assert.Contains(t, d.Error, "payload too large")
	assert.Contains(t, d.Error, contract.EnvMaxPayloadSize)
}
