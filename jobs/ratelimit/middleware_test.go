package ratelimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type callAPI struct {
	Tenant string `json:"tenant"`
	N      int    `json:"n"`
}

func (callAPI) Kind() string { return "partner.call" }

type unlimited struct{}

func (unlimited) Kind() string { return "free" }

// On SQS and DynamoDB: of two jobs against a limit of one a minute, one runs and the other is
// snoozed past the refill, listed but not run; its next delivery (ApproximateReceiveCount 2)
// runs as attempt 1 of MaxAttempts 1, because the snooze was recorded in the delivery ledger —
// kept in the same state table as the bucket.
func TestRateLimitedJobIsSnoozedNotChargedOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	table := awstest.CreateTable(t, cfg, "state", AttrID, "")
	ddb := dynamodb.NewFromConfig(cfg)
	c := newClock(time.Now())
	store := storeAt(NewStore(ddb, table), c)
	ledger := idempotency.NewDynamoDBStore(ddb, table)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{VisibilityTimeout: 30})

	var mu sync.Mutex
	attempts := map[int]int{}
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[callAPI](func(_ context.Context, j *jobs.Job[callAPI]) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[j.Args.N] = j.Attempt
		return nil
	}))
	jobs.AddWorker(workers, jobs.WorkFunc[unlimited](func(context.Context, *jobs.Job[unlimited]) error { return nil }))
	workers.Use(Middleware(store, Rules{"partner.call": {
		Limit: PerMinute(1),
		Key:   KeyFromArgs(func(a callAPI) string { return a.Tenant }),
	}}, nil))
	handler := jobs.NewLambdaHandler(workers, jobs.Config{
		QueueURL: q.URL, DLQURL: dlq.URL, SQS: client, MaxAttempts: 1, Deliveries: ledger,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}).HandleSQS

	producer, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL})
	require.NoError(t, err)
	_, err = producer.EnqueueBatch(context.Background(), []jobs.BatchJob{
		{Args: callAPI{Tenant: "t1", N: 1}}, {Args: callAPI{Tenant: "t1", N: 2}}, {Args: unlimited{}},
	})
	require.NoError(t, err)

	msgs := awstest.ReceiveN(t, client, q.URL, 3)
	resp, err := handler(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1, "the second call of t1 is snoozed")
	mu.Lock()
	require.Len(t, attempts, 1)
	mu.Unlock()
	snoozed := resp.BatchItemFailures[0].ItemIdentifier
	for _, m := range msgs {
		if aws.ToString(m.MessageId) != snoozed {
			_, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
			continue
		}
		// The minute passes: the bucket's clock moves on and the message is made visible now
		// rather than after its snooze.
		_, err := client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}
	c.advance(time.Minute)

	again := awstest.ReceiveN(t, client, q.URL, 1)
	require.Equal(t, "2", again[0].Attributes["ApproximateReceiveCount"])
	resp, err = handler(context.Background(), jobstest.EventFromMessages(q.ARN, again))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "it runs: its first receive was not an attempt")
	mu.Lock()
	assert.Equal(t, map[int]int{1: 1, 2: 1}, attempts, "each job ran once, as attempt 1")
	mu.Unlock()
	n, _, err := ledger.Deliveries(context.Background(), snoozed)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

func TestMiddlewarePanicsOnAnInvalidRule(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() { Middleware(NewStore(nil, "t"), Rules{"k": {Limit: Limit{N: 0, Per: time.Second}}}, nil) })
	assert.Panics(t, func() { Middleware(NewStore(nil, "t"), Rules{"k": {Name: "a#b", Limit: PerSecond(1)}}, nil) })
}

type failingDB func() error

func (f failingDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, f()
}

// A bucket that cannot be read neither lets the job run unmetered nor charges it an attempt: it
// is snoozed as not run, for 5-10 s. Kinds without a rule run without a call.
func TestMiddlewareSnoozesWhenTheBucketIsUnavailable(t *testing.T) {
	t.Parallel()
	calls := 0
	store := NewStore(failingDB(func() error { calls++; return errors.New("throttled") }), "state")
	ran := 0
	h := Middleware(store, Rules{"partner.call": {Limit: PerSecond(1)}}, nil)(func(context.Context, *jobs.JobRow) error { ran++; return nil })
	err := h(context.Background(), &jobs.JobRow{ID: "a", Kind: "partner.call"})
	var snooze *jobs.SnoozeError
	require.ErrorAs(t, err, &snooze)
	assert.True(t, snooze.NotRun)
	assert.GreaterOrEqual(t, snooze.Duration, 5*time.Second)
	assert.Less(t, snooze.Duration, 10*time.Second)
	assert.Equal(t, 0, ran)
	require.NoError(t, h(context.Background(), &jobs.JobRow{ID: "b", Kind: "free"}))
	assert.Equal(t, 1, ran)
	assert.Equal(t, 1, calls)
}

// advancingDB passes calls to the emulator's DynamoDB and moves the clock on after each by the
// next of steps (none after the last), as a starved process would find when it wakes.
type advancingDB struct {
	db    *dynamodb.Client
	clock *clock
	steps []time.Duration
	calls int
}

func (a *advancingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.db.UpdateItem(ctx, in, optFns...)
	if a.calls < len(a.steps) {
		a.clock.advance(a.steps[a.calls])
	}
	a.calls++
	return out, err
}

// A job that wakes long after its token was due (here each reservation seems to take 2 s) lets
// that token go once and waits for the next free one; it runs on the second however late it
// wakes — never snoozed for being late, never more than two tokens a delivery. On time, one.
func TestMiddlewareLetsALateTokenGoOnceThenRuns(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "state", AttrID, "")
	c := newClock(time.Now())
	db := &advancingDB{db: dynamodb.NewFromConfig(cfg), clock: c, steps: []time.Duration{2 * time.Second, 2 * time.Second}}
	store := storeAt(NewStore(db, table, func(o *StoreOptions) { o.Lead = -1 }), c)
	ran := 0
	h := Middleware(store, Rules{"partner.call": {Limit: PerSecond(10)}}, nil)(func(context.Context, *jobs.JobRow) error { ran++; return nil })
	require.NoError(t, h(context.Background(), &jobs.JobRow{ID: "a", Kind: "partner.call"}))
	assert.Equal(t, 1, ran, "the late job ran on its second token")
	assert.Equal(t, 2, db.calls, "a token per wake: the first let go")

	require.NoError(t, h(context.Background(), &jobs.JobRow{ID: "b", Kind: "partner.call"}))
	assert.Equal(t, 2, ran)
	assert.Equal(t, 3, db.calls, "on time: one token")
}

// Behind slow answers (each call here takes 150 ms of the store's clock, three times the default
// lead) the store raises its lead: after the first slow take, a reservation's token is due after
// its answer has arrived, so the job that holds it starts on time rather than late.
func TestReserveLeadCoversSlowAnswers(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "state", AttrID, "")
	c := newClock(time.Now())
	slow := make([]time.Duration, 20)
	for i := range slow {
		slow[i] = 150 * time.Millisecond
	}
	store := storeAt(NewStore(&advancingDB{db: dynamodb.NewFromConfig(cfg), clock: c, steps: slow}, table), c)
	l := PerSecond(10)
	r, err := store.Reserve(context.Background(), "slow", "", l, time.Second)
	require.NoError(t, err)
	require.True(t, r.OK)
	assert.True(t, r.At.Before(c.now()), "the first answer came after its token was due (lead %s)", DefaultLead)
	assert.Equal(t, 225*time.Millisecond, store.lead(), "1.5 times the slow answer")
	for i := range 4 {
		r, err = store.Reserve(context.Background(), "slow", "", l, time.Second)
		require.NoError(t, err)
		require.True(t, r.OK)
		assert.True(t, r.At.After(c.now()), "take %d: the answer came before its token was due", i+2)
	}
	assert.LessOrEqual(t, store.lead(), MaxLead)
}

// resendingDB sends each UpdateItem twice and answers the second's result, as the SDK does when
// the first answer is lost after DynamoDB wrote it.
type resendingDB struct{ db *dynamodb.Client }

func (r resendingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if _, err := r.db.UpdateItem(ctx, in, optFns...); err != nil {
		return nil, err
	}
	return r.db.UpdateItem(ctx, in, optFns...)
}

// A take written whose answer was lost and which the SDK sent again takes one token, not two:
// the refusal of the resent call shows the take's own id, so the token is the caller's.
func TestAResentTakeTakesOneToken(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "state", AttrID, "")
	c := newClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	lost := storeAt(NewStore(resendingDB{db: dynamodb.NewFromConfig(cfg)}, table, func(o *StoreOptions) { o.Lead = -1 }), c)
	plain := storeAt(NewStore(dynamodb.NewFromConfig(cfg), table, func(o *StoreOptions) { o.Lead = -1 }), c)
	l := PerSecond(10) // a token every 100 ms
	for i, want := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond} {
		r, err := lost.Reserve(context.Background(), "resent", "", l, time.Second)
		require.NoError(t, err)
		require.True(t, r.OK, "take %d", i)
		assert.Equal(t, want, r.At.Sub(c.now()), "take %d is due one interval after the one before", i)
	}
	r, err := plain.Reserve(context.Background(), "resent", "", l, time.Second)
	require.NoError(t, err)
	require.True(t, r.OK)
	assert.Equal(t, 300*time.Millisecond, r.At.Sub(c.now()), "three tokens were taken, not six")
}
