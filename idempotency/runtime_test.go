package idempotency_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// chargeCard debits an account: a side effect that must happen once.
type chargeCard struct {
	Account string `json:"account"`
	Payment string `json:"payment"`
	Amount  int    `json:"amount"`
}

func (chargeCard) Kind() string { return "card.charge" }

// worker is one warm Lambda container: a Workers registry wired as the functions wire it, and
// its runtime handler.
type worker struct {
	handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	runs   *atomic.Int32
}

// runtimeFixture is what the runtime tests run on: a job queue and its DLQ, an idempotency
// table, a ledger with one account holding 100, and the runs of its workers' side effect.
type runtimeFixture struct {
	cfg    aws.Config
	client *sqs.Client
	q, dlq awstest.Queue
	table  string
	l      *ledger
	runs   atomic.Int32
}

func newRuntimeFixture(t *testing.T, account string) *runtimeFixture {
	t.Helper()
	f := &runtimeFixture{}
	f.cfg, f.client = awstest.SQS(t)
	f.q, f.dlq = awstest.QueueWithDLQ(t, f.cfg, "jobs", &awstest.QueueOptions{MaxReceiveCount: 10})
	f.table = awstest.CreateTable(t, f.cfg, "idem", idempotency.AttrID, "")
	f.l = newLedger(t, dynamodb.NewFromConfig(f.cfg))
	f.l.open(t, account, 100)
	return f
}

// worker is a container of the fixture's worker (newWorker).
func (f *runtimeFixture) worker(t *testing.T) *worker {
	return newWorker(t, f.cfg, f.table, f.l, f.q, f.dlq, &f.runs)
}

func newWorker(t *testing.T, cfg aws.Config, table string, l *ledger, q, dlq awstest.Queue, runs *atomic.Int32) *worker {
	t.Helper()
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), table)
	workers := jobs.NewWorkers()
	workers.Use(idempotency.Middleware(store, nil))
	jobs.AddWorker(workers, jobs.WorkFunc[chargeCard](func(ctx context.Context, job *jobs.Job[chargeCard]) error {
		runs.Add(1)
		return idempotency.TransactWrite(ctx, l.debit(t, job.Args.Account, job.Args.Payment, job.Args.Amount), nil)
	}))
	handle := jobs.NewLambdaHandler(workers, jobs.Config{
		QueueURL:     q.URL,
		DLQURL:       dlq.URL,
		SQS:          sqs.NewFromConfig(cfg),
		FunctionName: "charge-worker",
		Metrics:      io.Discard,
		Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}).HandleSQS
	return &worker{handle: handle, runs: runs}
}

// deliver receives one message as a one-record batch, runs it through w as the event source
// mapping would (a Lambda deadline on ctx) and deletes it unless the runtime listed it.
func deliver(t *testing.T, client *sqs.Client, q awstest.Queue, w *worker) events.SQSEventResponse {
	t.Helper()
	ctx := context.Background()
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 1, WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1, "a message to deliver")
	lambdaCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := w.handle(lambdaCtx, jobstest.EventFromMessages(q.ARN, out.Messages))
	require.NoError(t, err)
	if len(resp.BatchItemFailures) == 0 {
		_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: out.Messages[0].ReceiptHandle})
		require.NoError(t, err)
	}
	return resp
}

func send(t *testing.T, client *sqs.Client, q awstest.Queue, body string) {
	t.Helper()
	_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body)})
	require.NoError(t, err)
}

func queueEmpty(t *testing.T, client *sqs.Client, q awstest.Queue) {
	t.Helper()
	out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), WaitTimeSeconds: 1})
	require.NoError(t, err)
	assert.Empty(t, out.Messages, "queue %s", q.Name)
}

// Through the jobs runtime on the emulator: the same envelope delivered twice — SQS's
// at-least-once delivery — in two batches, to another container and to the same warm one, runs
// its side effect once, and every copy is deleted as a success.
func TestRuntimeDuplicateDeliveryRunsOnce(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t, "acct-rt")
	containerA, containerB := f.worker(t), f.worker(t)

	body := jobstest.Body(chargeCard{Account: "acct-rt", Payment: "pay-rt", Amount: 25}, nil)
	send(t, f.client, f.q, body)
	send(t, f.client, f.q, body) // the duplicate

	resp := deliver(t, f.client, f.q, containerA) // first batch: runs
	assert.Empty(t, resp.BatchItemFailures)
	assert.EqualValues(t, 1, f.runs.Load())
	resp = deliver(t, f.client, f.q, containerB) // second batch, another container: skipped (DynamoDB)
	assert.Empty(t, resp.BatchItemFailures)
	assert.EqualValues(t, 1, f.runs.Load())

	send(t, f.client, f.q, body)                 // delivered once more, to the warm container
	resp = deliver(t, f.client, f.q, containerA) // skipped from the warm cache
	assert.Empty(t, resp.BatchItemFailures)

	assert.EqualValues(t, 1, f.runs.Load(), "the side effect ran once")
	assert.Equal(t, 75, f.l.balance(t, "acct-rt"), "debited once")
	queueEmpty(t, f.client, f.q)
	queueEmpty(t, f.client, f.dlq)

	e, err := jobs.DecodeEnvelope(body)
	require.NoError(t, err)
	key := idempotency.JobKey(&jobs.JobRow{ID: e.ID, Kind: e.Kind, Key: e.Key})
	rec, err := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(f.cfg), f.table).Get(context.Background(), key)
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusCompleted, rec.Status)
}

// Through the jobs runtime: the same key with other args is dead-lettered at once with reason
// payload_mismatch, and the first job's side effect stands alone.
func TestRuntimePayloadMismatchIsDeadLettered(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t, "acct-mm")
	w := f.worker(t)

	send(t, f.client, f.q, jobstest.Body(chargeCard{Account: "acct-mm", Payment: "pay-mm", Amount: 10}, &jobstest.MessageOpts{Key: "order-77"}))
	assert.Empty(t, deliver(t, f.client, f.q, w).BatchItemFailures)
	send(t, f.client, f.q, jobstest.Body(chargeCard{Account: "acct-mm", Payment: "pay-mm", Amount: 99}, &jobstest.MessageOpts{Key: "order-77"}))
	assert.Empty(t, deliver(t, f.client, f.q, w).BatchItemFailures, "dead-lettered by the runtime, so not listed")

	out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(f.dlq.URL), WaitTimeSeconds: 2, MessageAttributeNames: []string{"All"},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	dead := jobstest.DecodeDeadLetter(out.Messages[0])
	assert.Equal(t, contract.ReasonPayloadMismatch, dead.Reason)
	assert.Contains(t, dead.Error, "different payload")
	assert.EqualValues(t, 1, f.runs.Load())
	assert.Equal(t, 90, f.l.balance(t, "acct-mm"))
	queueEmpty(t, f.client, f.q)
}
