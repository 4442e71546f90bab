package outbox_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/outbox"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type SendReceipt struct {
	Order string `json:"order"`
}

func (SendReceipt) Kind() string { return "receipt.send" }

// fixture is a state table with a stream (new images), a business table, a queue and the outbox.
type fixture struct {
	cfg       aws.Config
	db        *dynamodb.Client
	sqs       *sqs.Client
	streams   *dynamodbstreams.Client
	state     string
	streamARN string
	orders    string
	queue     awstest.Queue
	dlq       awstest.Queue
	outbox    *outbox.Outbox
}

// needsPromptStreams skips a test that reads a table's stream on LocalStack: there, the records
// of a test's writes were at times not readable within 30 s while another test read another
// table's stream, and the forwarder test saw 17 of its 20 jobs in 60 s (each test alone passed).
// Not yet understood (docs/emulators.md); the tests run on moto under make test.
func needsPromptStreams(t *testing.T) {
	t.Helper()
	if awstest.Emulator() == awstest.EmulatorLocalStack {
		t.Skip("LocalStack: stream records of this test's writes not readable in time alongside another stream reader (docs/emulators.md)")
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := awstest.Config(t)
	f := &fixture{cfg: cfg, db: dynamodb.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg), streams: dynamodbstreams.NewFromConfig(cfg)}
	f.state = awstest.CreateTable(t, cfg, "state", "id", "")
	out, err := f.db.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{
		TableName:           aws.String(f.state),
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewImage},
	})
	require.NoError(t, err)
	f.streamARN = aws.ToString(out.TableDescription.LatestStreamArn)
	require.NotEmpty(t, f.streamARN)
	f.orders = awstest.CreateTable(t, cfg, "orders", "id", "")
	f.queue = awstest.CreateQueue(t, cfg, "jobs", nil)
	f.dlq = awstest.CreateQueue(t, cfg, "dlq", nil)
	client, err := jobs.NewClient(f.sqs, jobs.ClientOptions{DefaultQueueURL: f.queue.URL})
	require.NoError(t, err)
	f.outbox, err = outbox.New(outbox.Config{Table: f.state, Client: client})
	require.NoError(t, err)
	return f
}

// order is the business write: a new order, once.
func (f *fixture) order(id string) ddbtypes.TransactWriteItem {
	return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{
		TableName:           aws.String(f.orders),
		Item:                map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	}}
}

// stream reads every record of the state table's stream from its start, as the event source
// mapping would hand them to the forwarder, waiting up to 15 s for want of them (LocalStack
// makes a write's stream record readable a moment after the write).
func (f *fixture) stream(t *testing.T, want int) events.DynamoDBEvent {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ev := f.readStream(t)
		if len(ev.Records) >= want || time.Now().After(deadline) {
			return ev
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (f *fixture) readStream(t *testing.T) events.DynamoDBEvent {
	t.Helper()
	ctx := context.Background()
	desc, err := f.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(f.streamARN)})
	require.NoError(t, err)
	var ev events.DynamoDBEvent
	for _, sh := range desc.StreamDescription.Shards {
		it, err := f.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(f.streamARN), ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		require.NoError(t, err)
		// An open shard always has a next iterator, and a page can be empty before later
		// records (LocalStack's streams): read until three pages in a row are empty.
		iter := it.ShardIterator
		for empty := 0; iter != nil && empty < 3; {
			out, err := f.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			require.NoError(t, err)
			for _, r := range out.Records {
				ev.Records = append(ev.Records, esm.DynamoDBEventRecord(r, f.streamARN))
			}
			if len(out.Records) == 0 {
				empty++
			} else {
				empty = 0
			}
			iter = out.NextShardIterator
		}
	}
	return ev
}

func (f *fixture) forwarder(t *testing.T, api outbox.SQSAPI) *outbox.Forwarder {
	t.Helper()
	fw, err := outbox.NewForwarder(outbox.ForwarderConfig{
		SQS: api, DynamoDB: f.db, Table: f.state, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	return fw
}

func (f *fixture) outboxItem(t *testing.T, jobID string) bool {
	t.Helper()
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.state), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: outbox.KeyPrefix + jobID}},
	})
	require.NoError(t, err)
	return out.Item != nil
}

// The business write and the job go together or not at all; the forwarder sends the job from
// the stream and deletes its outbox item; the business item and the stream's other records are
// left alone.
func TestOutboxWritesBothOrNeitherAndForwards(t *testing.T) {
	t.Parallel()
	needsPromptStreams(t)
	f := newFixture(t)
	ctx := context.Background()
	ids, err := f.outbox.Write(ctx, f.db, []ddbtypes.TransactWriteItem{f.order("order-1")}, outbox.Job{Args: SendReceipt{Order: "order-1"}})
	require.NoError(t, err)
	require.Len(t, ids, 1)
	assert.True(t, f.outboxItem(t, ids[0]))

	// The same order again: the transaction is cancelled and its job is not written.
	_, err = f.outbox.Write(ctx, f.db, []ddbtypes.TransactWriteItem{f.order("order-1")}, outbox.Job{Args: SendReceipt{Order: "order-1"}, Opts: &jobs.EnqueueOpts{ID: "second"}})
	var cancelled *ddbtypes.TransactionCanceledException
	require.ErrorAs(t, err, &cancelled)
	assert.False(t, f.outboxItem(t, "second"), "no job for a write that did not happen")

	// Invalid jobs fail before any call.
	_, err = f.outbox.Write(ctx, f.db, []ddbtypes.TransactWriteItem{f.order("order-2")}, outbox.Job{Args: SendReceipt{}, Opts: &jobs.EnqueueOpts{Delay: time.Hour}})
	var invalid *jobs.InvalidJobError
	require.ErrorAs(t, err, &invalid)
	require.ErrorIs(t, err, jobs.ErrDelayTooLong)

	ev := f.stream(t, 1)
	time.Sleep(time.Second) // what a cancelled transaction would have added has had time to show
	ev = f.stream(t, 1)
	require.Len(t, ev.Records, 1, "one outbox item: the cancelled transaction left no stream record")
	resp, err := f.forwarder(t, f.sqs).Handle(ctx, ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	msgs := awstest.TakeOnly(t, f.sqs, f.queue.URL, 1)
	env, err := jobs.DecodeEnvelope(aws.ToString(msgs[0].Body))
	require.NoError(t, err)
	assert.Equal(t, ids[0], env.ID)
	assert.Equal(t, "receipt.send", env.Kind)
	assert.JSONEq(t, `{"order":"order-1"}`, string(env.Args))
	assert.False(t, f.outboxItem(t, ids[0]), "the sent item is deleted")
}

// refusing is SQS that refuses one entry of every batch it is given (as SQS does for an entry it
// cannot take), sending the others.
type refusing struct {
	*sqs.Client
	refuse string // the entry id to refuse
}

func (r refusing) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var keep []sqstypes.SendMessageBatchRequestEntry
	for _, e := range in.Entries {
		if aws.ToString(e.Id) != r.refuse {
			keep = append(keep, e)
		}
	}
	cp := *in
	cp.Entries = keep
	out, err := r.Client.SendMessageBatch(ctx, &cp, optFns...)
	if err != nil {
		return nil, err
	}
	out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: aws.String(r.refuse), Code: aws.String("InternalError"), SenderFault: false})
	return out, nil
}

// A forwarder that dies after sending and before its batch is checkpointed is retried with the
// same records and sends again; a send SQS refuses is reported, so the batch is retried from it.
// Either way every job reaches the queue, and the workers, behind idempotency, have each job's
// effect exactly once.
func TestOutboxRetriedForwarderHasEachEffectOnce(t *testing.T) {
	t.Parallel()
	needsPromptStreams(t)
	f := newFixture(t)
	ctx := context.Background()
	var ids []string
	for i := range 4 {
		order := "order-" + strconv.Itoa(i)
		got, err := f.outbox.Write(ctx, f.db, []ddbtypes.TransactWriteItem{f.order(order)}, outbox.Job{Args: SendReceipt{Order: order}})
		require.NoError(t, err)
		ids = append(ids, got...)
	}
	ev := f.stream(t, 4)
	require.Len(t, ev.Records, 4, "the outbox items (the orders are in their own table)")

	// A refused send: reported, nothing after it sent.
	resp, err := f.forwarder(t, refusing{Client: f.sqs, refuse: "1"}).Handle(ctx, ev)
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1)
	// The event source mapping retries from the failed record: the batch again, from there.
	from := 0
	for i, r := range ev.Records {
		if r.Change.SequenceNumber == resp.BatchItemFailures[0].ItemIdentifier {
			from = i
		}
	}
	retry := events.DynamoDBEvent{Records: ev.Records[from:]}
	resp, err = f.forwarder(t, f.sqs).Handle(ctx, retry)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	// A crash after sending, before the checkpoint: the same records once more.
	resp, err = f.forwarder(t, f.sqs).Handle(ctx, retry)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	for _, id := range ids {
		assert.False(t, f.outboxItem(t, id), "sent and deleted: %s", id)
	}

	msgs := awstest.Drain(t, f.sqs, f.queue.URL)
	sent := jobIDs(t, msgs)
	require.Len(t, sent, 4, "every job reached the queue")
	require.Greater(t, len(msgs), 4, "some were sent more than once")

	effects := f.runBehindIdempotency(t, msgs)
	require.Len(t, effects, 4)
	for order, n := range effects {
		assert.Equal(t, 1, n, "%s: one effect", order)
	}
}

// runBehindIdempotency runs each message, one invocation apiece (duplicates in separate
// invocations, as on SQS), through a worker behind the idempotency middleware on the state table,
// and returns how many times each order's effect happened.
func (f *fixture) runBehindIdempotency(t *testing.T, msgs []sqstypes.Message) map[string]int {
	t.Helper()
	var mu sync.Mutex
	effects := map[string]int{}
	w := jobs.NewWorkers()
	w.Use(idempotency.Middleware(idempotency.NewDynamoDBStore(f.db, f.state), &idempotency.Config{Expiry: time.Hour}))
	jobs.AddWorker(w, jobs.WorkFunc[SendReceipt](func(_ context.Context, job *jobs.Job[SendReceipt]) error {
		mu.Lock()
		defer mu.Unlock()
		effects[job.Args.Order]++
		return nil
	}))
	rc := jobs.Config{
		QueueURL: f.queue.URL, DLQURL: f.dlq.URL, SQS: f.sqs, FunctionName: "outbox-test", VisibilityTimeout: 30 * time.Second,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
	for _, m := range msgs {
		resp, err := jobs.NewLambdaHandler(w, rc).HandleSQS(context.Background(), jobstest.EventFromMessages(f.queue.ARN, []sqstypes.Message{m}))
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
	}
	return effects
}

// A job over the client's claim-check threshold is stored in S3 when it is written to the outbox;
// the forwarder sends its pointer with the extended clients' size attribute, as the client would.
func TestOutboxForwardsClaimChecks(t *testing.T) {
	t.Parallel()
	needsPromptStreams(t)
	f := newFixture(t)
	ctx := context.Background()
	bucket := awstest.CreateBucket(t, f.cfg, "payloads")
	client, err := jobs.NewClient(f.sqs, jobs.ClientOptions{DefaultQueueURL: f.queue.URL,
		Payloads: &jobs.Payloads{S3: awstest.S3Client(f.cfg), Bucket: bucket, Threshold: 1024, KeyPrefix: "jobs/"}})
	require.NoError(t, err)
	ob, err := outbox.New(outbox.Config{Table: f.state, Client: client})
	require.NoError(t, err)
	large := SendReceipt{Order: strings.Repeat("x", 4096)}
	ids, err := ob.Write(ctx, f.db, []ddbtypes.TransactWriteItem{f.order("order-large")}, outbox.Job{Args: large})
	require.NoError(t, err)

	resp, err := f.forwarder(t, f.sqs).Handle(ctx, f.stream(t, 1))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	out, err := f.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(f.queue.URL), WaitTimeSeconds: 5, MessageAttributeNames: []string{"All"},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	ptr, ok := jobs.ParsePayloadPointer(aws.ToString(out.Messages[0].Body))
	require.True(t, ok, "the body is a claim-check pointer: %.200s", aws.ToString(out.Messages[0].Body))
	assert.Equal(t, bucket, ptr.Bucket)
	size := out.Messages[0].MessageAttributes[contract.AttrPayloadSize]
	require.NotNil(t, size.StringValue, "the size attribute is sent")
	assert.Equal(t, "Number", aws.ToString(size.DataType))
	obj, err := awstest.S3Client(f.cfg).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(ptr.Bucket), Key: aws.String(ptr.Key)})
	require.NoError(t, err)
	body, err := io.ReadAll(obj.Body)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(len(body)), aws.ToString(size.StringValue))
	env, err := jobs.DecodeEnvelope(string(body))
	require.NoError(t, err)
	assert.Equal(t, ids[0], env.ID)
}

// An item the forwarder can never send — its queue outside the allow-list, or a queue that does
// not exist — does not hold its shard back: it is skipped, counted and left in the table, and
// every good job around it is sent once.
func TestOutboxPoisonItemsDoNotBlockTheShard(t *testing.T) {
	t.Parallel()
	needsPromptStreams(t)
	f := newFixture(t)
	ctx := context.Background()
	other := awstest.CreateQueue(t, f.cfg, "other", nil)
	missing := f.queue.URL + "-gone"
	var ids []string
	for n, q := range []string{f.queue.URL, other.URL, f.queue.URL, missing, f.queue.URL} {
		order := fmt.Sprintf("order-%d", n)
		got, err := f.outbox.Write(ctx, f.db, []ddbtypes.TransactWriteItem{f.order(order)},
			outbox.Job{Args: SendReceipt{Order: order}, Opts: &jobs.EnqueueOpts{Queue: q}})
		require.NoError(t, err)
		ids = append(ids, got[0])
	}
	ev := f.stream(t, 5)
	require.Len(t, ev.Records, 5)

	var metrics bytes.Buffer
	fw, err := outbox.NewForwarder(outbox.ForwarderConfig{
		SQS: f.sqs, DynamoDB: f.db, Table: f.state, Queues: []string{f.queue.URL, missing},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: &metrics,
	})
	require.NoError(t, err)
	resp, err := fw.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "nothing to retry: the poison items are skipped")

	got := map[string]int{}
	for _, m := range awstest.TakeOnly(t, f.sqs, f.queue.URL, 3) {
		env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
		require.NoError(t, err)
		got[env.ID]++
	}
	assert.Equal(t, map[string]int{ids[0]: 1, ids[2]: 1, ids[4]: 1}, got, "every good job sent once")
	awstest.ExpectEmpty(t, f.sqs, other.URL)
	for n, id := range ids {
		assert.Equal(t, n == 1 || n == 3, f.outboxItem(t, id), "item %d: sent ones deleted, skipped ones kept", n)
	}
	assert.Contains(t, metrics.String(), `"OutboxItemsSkipped":2`)
}

// jobIDs counts the messages of each job id.
func jobIDs(t *testing.T, msgs []sqstypes.Message) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, m := range msgs {
		env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
		require.NoError(t, err)
		ids[env.ID]++
	}
	return ids
}
