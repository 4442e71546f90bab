package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type resize struct {
	Image string `json:"image"`
	Fail  string `json:"fail,omitempty"` // "retry" fails once, "cancel" cancels, "always" fails every attempt
}

func (resize) Kind() string { return "image.resize" }

type albumReady struct {
	state.BatchResult
	Album string `json:"album"`
}

func (albumReady) Kind() string { return "album.ready" }

type albumFailed struct {
	state.BatchResult
	Album string `json:"album"`
}

func (albumFailed) Kind() string { return "album.failed" }

// env is a queue, its DLQ and a state table on the emulator, with a client and a worker runtime
// wired as a function wires them.
type env struct {
	t      *testing.T
	cfg    aws.Config
	sqs    *sqs.Client
	q, dlq awstest.Queue
	table  *state.Table
	client *jobs.Client
	handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	// folded: job states folded into the idempotency middleware's records.
	folded bool
	// workers are the env's workers, for a runtime on another queue.
	workers *jobs.Workers
	runs    atomic.Int32
	ran     []string // the images resized, in order
	// callbacks counts the callback runs by batch id.
	mu        sync.Mutex
	callbacks map[string][]albumReady
	failures  map[string][]albumFailed
}

// eachFolding runs test on an env with job states folded into idempotency records and on one
// without, as parallel subtests "folded=true" and "folded=false".
func eachFolding(t *testing.T, test func(t *testing.T, e *env)) {
	for _, folded := range []bool{true, false} {
		t.Run(fmt.Sprintf("folded=%t", folded), func(t *testing.T) {
			t.Parallel()
			test(t, newEnv(t, folded))
		})
	}
}

func newEnv(t *testing.T, folded bool) *env {
	t.Helper()
	cfg := awstest.Config(t)
	e := &env{t: t, cfg: cfg, sqs: sqs.NewFromConfig(cfg), folded: folded, callbacks: map[string][]albumReady{}, failures: map[string][]albumFailed{}}
	e.dlq = awstest.CreateQueue(t, cfg, "dlq", nil)
	e.q = awstest.CreateQueue(t, cfg, "q", nil)
	name := awstest.CreateStateTable(t, cfg)
	db := dynamodb.NewFromConfig(cfg)
	var err error
	e.table, err = state.New(db, name, &state.Options{SQS: e.sqs, Shards: 4, ListJobs: true})
	require.NoError(t, err)
	e.client, err = jobs.NewClient(e.sqs, jobs.ClientOptions{DefaultQueueURL: e.q.URL, State: e.table})
	require.NoError(t, err)

	workers := jobs.NewWorkers()
	if folded {
		workers.Use(e.table.Middleware(&state.MiddlewareOptions{Folded: true}),
			idempotency.Middleware(idempotency.NewDynamoDBStore(db, name, func(o *idempotency.DynamoDBOptions) { o.ListJobs = true }),
				&idempotency.Config{RecordJobs: true}))
	} else {
		workers.Use(e.table.Middleware(nil))
	}
	failed := sync.Map{}
	jobs.AddWorker(workers, jobs.WorkFunc[resize](func(ctx context.Context, job *jobs.Job[resize]) error {
		e.runs.Add(1)
		e.mu.Lock()
		e.ran = append(e.ran, job.Args.Image)
		e.mu.Unlock()
		switch job.Args.Fail {
		case "retry":
			if _, again := failed.LoadOrStore(job.ID, true); !again {
				return errors.New("disk full")
			}
		case "cancel":
			return jobs.Cancel(errors.New("image gone"))
		case "always":
			return errors.New("corrupt image")
		}
		return jobs.SetResult(ctx, map[string]string{"thumb": job.Args.Image + ".small"})
	}))
	jobs.AddWorker(workers, jobs.WorkFunc[albumReady](func(ctx context.Context, job *jobs.Job[albumReady]) error {
		e.mu.Lock()
		e.callbacks[job.Args.BatchID] = append(e.callbacks[job.Args.BatchID], job.Args)
		e.mu.Unlock()
		return nil
	}))
	jobs.AddWorker(workers, jobs.WorkFunc[albumFailed](func(ctx context.Context, job *jobs.Job[albumFailed]) error {
		e.mu.Lock()
		e.failures[job.Args.BatchID] = append(e.failures[job.Args.BatchID], job.Args)
		e.mu.Unlock()
		return nil
	}))
	jobs.AddWorker(workers, e.table.DeadlineWorker(e.client))
	e.workers = workers
	e.handle = e.runtime(e.q, e.dlq)
	return e
}

// runtime returns the Lambda handler of the env's workers for queue q.
func (e *env) runtime(q, dlq awstest.Queue) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return jobs.NewLambdaHandler(e.workers, jobs.Config{
		QueueURL: q.URL, DLQURL: dlq.URL, SQS: e.sqs, MaxAttempts: 3, States: e.table,
		Backoff: func(int) time.Duration { return 0 },
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}).HandleSQS
}

// drain delivers the queue's messages in batches (each received messages delivered twice when
// twice is set, as a duplicate delivery would) until it is empty.
func (e *env) drain(twice bool) {
	e.t.Helper()
	e.drainQueue(e.q, e.handle, twice)
}

// drainQueue is drain for queue q and its runtime handle.
func (e *env) drainQueue(q awstest.Queue, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), twice bool) {
	e.t.Helper()
	ctx := context.Background()
	for empty := 0; empty < 2; {
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(e.t, err)
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		deliveries := 1
		if twice {
			deliveries = 2
		}
		var resp events.SQSEventResponse
		for d := 0; d < deliveries; d++ {
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			resp, err = handle(lctx, jobstest.EventFromMessages(q.ARN, out.Messages))
			cancel()
			require.NoError(e.t, err)
		}
		listed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			listed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			if !listed[aws.ToString(m.MessageId)] {
				_, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
				require.NoError(e.t, err)
			}
		}
	}
}

func TestStatusByID(t *testing.T) {
	eachFolding(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		ok, err := e.client.Enqueue(ctx, resize{Image: "a.png"}, nil)
		require.NoError(t, err)
		flaky, err := e.client.Enqueue(ctx, resize{Image: "b.png", Fail: "retry"}, nil)
		require.NoError(t, err)
		gone, err := e.client.Enqueue(ctx, resize{Image: "c.png", Fail: "cancel"}, nil)
		require.NoError(t, err)

		st, err := e.client.Status(ctx, ok.ID)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateEnqueued, st.State)
		assert.Equal(t, "image.resize", st.Kind)
		assert.Equal(t, e.q.URL, st.Queue)

		e.drain(false)

		st, err = e.client.Status(ctx, ok.ID)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateSucceeded, st.State)
		assert.JSONEq(t, `{"thumb":"a.png.small"}`, string(st.Result))
		assert.False(t, st.FinishedAt.IsZero())
		assert.Equal(t, 1, st.Attempt)

		st, err = e.client.Status(ctx, flaky.ID)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateSucceeded, st.State)
		assert.Equal(t, 2, st.Attempt)

		st, err = e.client.Status(ctx, gone.ID)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateCancelled, st.State)
		assert.Equal(t, contract.ReasonCancelled, st.Reason)
		assert.Contains(t, st.LastError, "image gone")

		_, err = e.client.Status(ctx, "no-such-job")
		assert.ErrorIs(t, err, jobs.ErrJobNotFound)
	})
}

func TestStatusRetryingAndRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	res, err := e.client.Enqueue(ctx, resize{Image: "r.png", Fail: "retry"}, nil)
	require.NoError(t, err)
	// One delivery: the first attempt fails and is recorded as retrying.
	out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(e.q.URL), MaxNumberOfMessages: 1, WaitTimeSeconds: 2,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	resp, err := e.handle(ctx, jobstest.EventFromMessages(e.q.ARN, out.Messages))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1)
	st, err := e.client.Status(ctx, res.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateRetrying, st.State)
	assert.Contains(t, st.LastError, "disk full")
	assert.False(t, st.NextAttemptAt.IsZero())
	assert.Equal(t, 1, st.Attempt)

	// While an attempt holds the idempotency claim, the job is running.
	db := dynamodb.NewFromConfig(e.cfg)
	store := idempotency.NewDynamoDBStore(db, e.table.Name())
	mw := idempotency.Middleware(store, &idempotency.Config{RecordJobs: true})
	row := &jobs.JobRow{ID: res.ID, Kind: "image.resize", Attempt: 2, EncodedArgs: []byte(`{"image":"r.png","fail":"retry"}`)}
	err = mw(func(ctx context.Context, _ *jobs.JobRow) error {
		st, err := e.client.Status(ctx, res.ID)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateRunning, st.State)
		assert.Equal(t, 2, st.Attempt)
		return errors.New("stop here")
	})(ctx, row)
	require.Error(t, err)
}

func TestUniqueJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	u := &jobs.UniqueOpts{Key: "user-42", Window: time.Hour}

	// Producers racing on the same key: one sends, the others get its id.
	const producers = 8
	results := make([]jobs.EnqueueResult, producers)
	var wg sync.WaitGroup
	for i := range producers {
		wg.Go(func() {
			client, err := jobs.NewClient(e.sqs, jobs.ClientOptions{DefaultQueueURL: e.q.URL, State: e.table})
			require.NoError(t, err)
			results[i], err = client.Enqueue(ctx, resize{Image: "u.png"}, &jobs.EnqueueOpts{Unique: u})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	first := ""
	sent := 0
	for _, r := range results {
		if !r.Duplicate {
			sent++
			first = r.ID
		}
	}
	require.Equal(t, 1, sent, "one producer sends")
	for _, r := range results {
		assert.Equal(t, first, r.ID, "every producer gets the first job's id")
	}
	e.drain(false)
	assert.Equal(t, int32(1), e.runs.Load(), "one job ran")

	// Another key, and the same key under another kind, are not duplicates; a delay beyond
	// SQS's 15 minutes is refused without a LongDelayer, before the key is reserved.
	other, err := e.client.Enqueue(ctx, resize{Image: "v.png"}, &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: "user-43", Window: time.Hour}})
	require.NoError(t, err)
	assert.False(t, other.Duplicate)
	_, err = e.client.Enqueue(ctx, resize{}, &jobs.EnqueueOpts{Unique: u, Delay: 2 * time.Hour})
	assert.ErrorIs(t, err, jobs.ErrDelayTooLong)
	dup, err := e.client.Enqueue(ctx, resize{}, &jobs.EnqueueOpts{Unique: u})
	require.NoError(t, err)
	assert.True(t, dup.Duplicate)
}

// Unique jobs on a FIFO queue and in EnqueueBatch, on the state table: a batch holding the same
// key twice sends the first and names it for the second; a later Enqueue of that key, or a batch
// entry whose key a single Enqueue holds, is a duplicate; each group keeps its order; and a
// duplicate breaks no group (what follows it in its group is sent).
func TestUniqueJobsOnFIFOAndInBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	fifo := awstest.CreateQueue(t, e.cfg, "u", &awstest.QueueOptions{FIFO: true})
	client, err := jobs.NewClient(e.sqs, jobs.ClientOptions{DefaultQueueURL: fifo.URL, State: e.table})
	require.NoError(t, err)
	key := func(k string) *jobs.EnqueueOpts {
		return &jobs.EnqueueOpts{GroupID: "album-1", Unique: &jobs.UniqueOpts{Key: k, Window: time.Hour}}
	}
	held, err := client.Enqueue(ctx, resize{Image: "held"}, key("c"))
	require.NoError(t, err)
	require.False(t, held.Duplicate)

	results, err := client.EnqueueBatch(ctx, []jobs.BatchJob{
		{Args: resize{Image: "1"}, Opts: key("a")},
		{Args: resize{Image: "2"}, Opts: key("a")}, // the same key as the first: not sent
		{Args: resize{Image: "3"}, Opts: key("c")}, // held by the single Enqueue above
		{Args: resize{Image: "4"}, Opts: key("b")}, // after two duplicates in its group: sent
		{Args: resize{Image: "5"}, Opts: &jobs.EnqueueOpts{GroupID: "album-1"}},
	})
	require.NoError(t, err)
	assert.False(t, results[0].Duplicate)
	assert.True(t, results[1].Duplicate)
	assert.Equal(t, results[0].ID, results[1].ID, "the batch's own first job of the key")
	assert.True(t, results[2].Duplicate)
	assert.Equal(t, held.ID, results[2].ID)
	assert.False(t, results[3].Duplicate)
	assert.False(t, results[4].Duplicate)

	again, err := client.Enqueue(ctx, resize{Image: "6"}, key("a"))
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, results[0].ID, again.ID)

	var images []string
	for _, m := range awstest.Take(t, e.sqs, fifo.URL, 4) {
		env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
		require.NoError(t, err)
		var r resize
		require.NoError(t, json.Unmarshal(env.Args, &r))
		images = append(images, r.Image)
	}
	assert.Equal(t, []string{"held", "1", "4", "5"}, images, "each job once, in the group's order")
	awstest.ExpectEmpty(t, e.sqs, fifo.URL)
	for _, id := range []string{held.ID, results[0].ID, results[3].ID, results[4].ID} {
		st, err := client.Status(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateEnqueued, st.State, id)
	}
}

func TestUniqueWindowEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	now := time.Now()
	client, err := jobs.NewClient(e.sqs, jobs.ClientOptions{DefaultQueueURL: e.q.URL, State: e.table, Now: func() time.Time { return now }})
	require.NoError(t, err)
	u := &jobs.UniqueOpts{Key: "nightly", Window: time.Minute}
	a, err := client.Enqueue(ctx, resize{Image: "1"}, &jobs.EnqueueOpts{Unique: u})
	require.NoError(t, err)
	now = now.Add(59 * time.Second)
	b, err := client.Enqueue(ctx, resize{Image: "2"}, &jobs.EnqueueOpts{Unique: u})
	require.NoError(t, err)
	assert.True(t, b.Duplicate)
	assert.Equal(t, a.ID, b.ID)
	now = now.Add(2 * time.Second)
	c, err := client.Enqueue(ctx, resize{Image: "3"}, &jobs.EnqueueOpts{Unique: u})
	require.NoError(t, err)
	assert.False(t, c.Duplicate, "the window has ended")
	assert.NotEqual(t, a.ID, c.ID)
}

func TestUniqueBadInput(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	client, err := jobs.NewClient(rec, jobs.ClientOptions{DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q"})
	require.NoError(t, err)
	_, err = client.Enqueue(context.Background(), resize{}, &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: "k", Window: time.Hour}})
	assert.ErrorIs(t, err, jobs.ErrNoStateStore)
	var inv *jobs.InvalidJobError
	assert.ErrorAs(t, err, &inv)
	assert.Empty(t, rec.Sent())
}

func TestFanOutBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	b, err := e.table.OpenBatch(ctx, e.client, state.BatchOpts{Callback: albumReady{Album: "summer"}})
	require.NoError(t, err)
	var members []jobs.BatchJob
	for i := range 25 {
		args := resize{Image: fmt.Sprintf("%d.png", i)}
		switch i % 10 {
		case 3:
			args.Fail = "retry"
		case 7:
			args.Fail = "cancel"
		}
		members = append(members, jobs.BatchJob{Args: args})
	}
	// Members can be added while the batch is open, also after some have finished.
	_, err = b.Add(ctx, members[:10])
	require.NoError(t, err)
	e.drain(true) // every delivery twice: duplicates are counted once
	_, err = b.Add(ctx, members[10:])
	require.NoError(t, err)
	info, err := e.table.BatchStatus(ctx, b.ID)
	require.NoError(t, err)
	assert.Equal(t, 25, info.Total)
	assert.False(t, info.Sealed)
	e.drain(true)
	assert.Empty(t, e.callbacks[b.ID], "no callback before the batch is closed")

	require.NoError(t, b.Close(ctx))
	require.NoError(t, b.Close(ctx), "Close is safe to repeat")
	_, err = b.Add(ctx, members[:1])
	assert.ErrorIs(t, err, state.ErrBatchSealed)
	e.drain(true)

	require.Len(t, e.callbacks[b.ID], 1, "one callback")
	got := e.callbacks[b.ID][0]
	assert.Equal(t, "summer", got.Album)
	assert.Equal(t, 25, got.Total)
	assert.Equal(t, 2, got.Dead)
	assert.Equal(t, 23, got.Succeeded)
	info, err = e.table.BatchStatus(ctx, b.ID)
	require.NoError(t, err)
	assert.True(t, info.Done())
	assert.Equal(t, 0, info.Pending)
	assert.True(t, info.Sealed)
}

func TestFanOutBatchClosedFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	b := e.closedBatch("x", 12)
	// Two consumers run the same messages at the same moment: members finish concurrently.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); e.drain(false) }()
	}
	wg.Wait()
	e.drain(false)
	require.Len(t, e.callbacks[b.ID], 1)
	assert.Equal(t, 12, e.callbacks[b.ID][0].Succeeded)
}

func TestEmptyBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	b, err := e.table.OpenBatch(ctx, e.client, state.BatchOpts{ID: "empty-" + jobs.NewID(), Callback: albumReady{}})
	require.NoError(t, err)
	require.NoError(t, b.Close(ctx))
	e.drain(false)
	require.Len(t, e.callbacks[b.ID], 1)
	assert.Equal(t, 0, e.callbacks[b.ID][0].Total)
	_, err = e.table.OpenBatch(ctx, e.client, state.BatchOpts{ID: b.ID, Callback: albumReady{}})
	assert.ErrorIs(t, err, state.ErrBatchExists)
	_, err = e.table.OpenBatch(ctx, e.client, state.BatchOpts{})
	assert.ErrorIs(t, err, state.ErrNoCallback)
	_, err = e.table.BatchStatus(ctx, "bad#id")
	assert.ErrorIs(t, err, state.ErrInvalidBatch)
}

// A batch whose members all ended before Close: the producer's Close sends the callback, through
// its client (the producer's table has no SQS client of its own).
func TestBatchDoneAtClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	producerTable, err := state.New(dynamodb.NewFromConfig(e.cfg), e.table.Name(), &state.Options{Shards: 4})
	require.NoError(t, err)
	client, err := jobs.NewClient(e.sqs, jobs.ClientOptions{DefaultQueueURL: e.q.URL, State: producerTable})
	require.NoError(t, err)
	b, err := producerTable.OpenBatch(ctx, client, state.BatchOpts{Callback: albumReady{Album: "late"}})
	require.NoError(t, err)
	_, err = b.Add(ctx, []jobs.BatchJob{{Args: resize{Image: "1"}}, {Args: resize{Image: "2", Fail: "cancel"}}})
	require.NoError(t, err)
	e.drain(false)
	require.NoError(t, b.Close(ctx))
	e.drain(false)
	require.Len(t, e.callbacks[b.ID], 1)
	assert.Equal(t, 1, e.callbacks[b.ID][0].Succeeded)
	assert.Equal(t, 1, e.callbacks[b.ID][0].Dead)
	st, err := client.Status(ctx, state.CallbackID(b.ID))
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, st.State)
}

// A job that commits its writes with idempotency.TransactWrite: its completion, in that
// transaction, is its succeeded state too.
func TestStatusWithTransactWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	res, err := e.client.Enqueue(ctx, resize{Image: "t.png"}, nil)
	require.NoError(t, err)
	db := dynamodb.NewFromConfig(e.cfg)
	mw := idempotency.Middleware(idempotency.NewDynamoDBStore(db, e.table.Name()), &idempotency.Config{RecordJobs: true})
	row := &jobs.JobRow{ID: res.ID, Kind: "image.resize", Attempt: 1, EncodedArgs: []byte(`{"image":"t.png"}`)}
	require.NoError(t, mw(func(ctx context.Context, _ *jobs.JobRow) error {
		return idempotency.TransactWrite(ctx, []dbtypes.TransactWriteItem{{Put: &dbtypes.Put{
			TableName: aws.String(e.table.Name()),
			Item:      map[string]dbtypes.AttributeValue{"id": &dbtypes.AttributeValueMemberS{Value: "side-effect#" + res.ID}},
		}}}, nil)
	})(ctx, row))
	st, err := e.client.Status(ctx, res.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, st.State)
	assert.False(t, st.FinishedAt.IsZero())
}

// The members that end last end together, in one invocation: all but one find the callback's
// lease taken. They wait the few milliseconds until the holder marks it sent and are done — not
// snoozed, which would bring each back for another delivery.
func TestLastMembersEndingTogetherAreDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	b := e.closedBatch("together", 10)
	var msgs []sqstypes.Message
	for len(msgs) < 10 {
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		msgs = append(msgs, out.Messages...)
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := e.handle(lctx, jobstest.EventFromMessages(e.q.ARN, msgs))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "every member done in its first delivery")
	for _, m := range msgs {
		_, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.q.URL), ReceiptHandle: m.ReceiptHandle})
		require.NoError(t, err)
	}
	e.drain(false) // the callback
	require.Len(t, e.callbacks[b.ID], 1)
	assert.Equal(t, 10, e.callbacks[b.ID][0].Succeeded)
}

// closedBatch opens a batch for album with n resize members and closes it before any runs.
func (e *env) closedBatch(album string, n int) *state.Batch {
	e.t.Helper()
	images := make([]string, n)
	for i := range n {
		images[i] = fmt.Sprint(i)
	}
	return e.batchOf(album, images...)
}

// batchOf opens a batch for album with a resize member for each image and closes it before any
// runs.
func (e *env) batchOf(album string, images ...string) *state.Batch {
	e.t.Helper()
	ctx := context.Background()
	b, err := e.table.OpenBatch(ctx, e.client, state.BatchOpts{Callback: albumReady{Album: album}})
	require.NoError(e.t, err)
	members := make([]jobs.BatchJob, len(images))
	for i, img := range images {
		members[i] = jobs.BatchJob{Args: resize{Image: img}}
	}
	_, err = b.Add(ctx, members)
	require.NoError(e.t, err)
	require.NoError(e.t, b.Close(ctx))
	return b
}

// A batch with a deadline and a failure callback, one member still waiting when the deadline
// passes: the deadline job sends the failure callback once, with the member pending and
// timed_out set, and marks the batch expired; the batch's own callback waits for its members.
func TestBatchDeadlinePasses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	opened := time.Now()
	b, err := e.table.OpenBatch(ctx, e.client, state.BatchOpts{
		Callback: albumReady{Album: "late"}, OnFailure: albumFailed{Album: "late"}, Deadline: 2 * time.Second,
	})
	require.NoError(t, err)
	_, err = b.Add(ctx, []jobs.BatchJob{
		{Args: resize{Image: "now.png"}},
		{Args: resize{Image: "later.png"}, Opts: &jobs.EnqueueOpts{Delay: 15 * time.Minute}},
	})
	require.NoError(t, err)
	require.NoError(t, b.Close(ctx))
	e.drain(false) // the first member runs; the deadline job is not due yet
	time.Sleep(time.Until(opened.Add(2500 * time.Millisecond)))
	e.drain(true) // the deadline job (twice, if not run yet): one failure callback

	require.Len(t, e.failures[b.ID], 1)
	got := e.failures[b.ID][0]
	assert.Equal(t, "late", got.Album)
	assert.Equal(t, state.BatchResult{BatchID: b.ID, Total: 2, Succeeded: 1, Pending: 1, TimedOut: true}, got.BatchResult)
	assert.Empty(t, e.callbacks[b.ID], "the callback waits for every member")
	info, err := e.table.BatchStatus(ctx, b.ID)
	require.NoError(t, err)
	assert.False(t, info.ExpiredAt.IsZero())
	assert.False(t, info.Deadline.IsZero())
}

// A batch that ends with a dead member sends its callback and its failure callback, once each;
// its deadline job, run after, sends nothing more.
func TestBatchFailureCallbackOnDeadMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	b, err := e.table.OpenBatch(ctx, e.client, state.BatchOpts{
		Callback: albumReady{Album: "a"}, OnFailure: albumFailed{Album: "a"}, Deadline: time.Second,
	})
	require.NoError(t, err)
	_, err = b.Add(ctx, []jobs.BatchJob{{Args: resize{Image: "ok.png"}}, {Args: resize{Image: "gone.png", Fail: "cancel"}}})
	require.NoError(t, err)
	require.NoError(t, b.Close(ctx))
	e.drain(true)
	time.Sleep(1500 * time.Millisecond)
	e.drain(false) // the deadline job: the batch is done

	require.Len(t, e.callbacks[b.ID], 1)
	require.Len(t, e.failures[b.ID], 1)
	assert.Equal(t, state.BatchResult{BatchID: b.ID, Total: 2, Succeeded: 1, Dead: 1}, e.failures[b.ID][0].BatchResult)
	info, err := e.table.BatchStatus(ctx, b.ID)
	require.NoError(t, err)
	assert.True(t, info.ExpiredAt.IsZero(), "done before its deadline")
}
