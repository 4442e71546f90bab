package state_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
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
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Cancel on a Standard queue, with the idempotency middleware (folded) and with jobs/state's
// middleware alone: a waiting job and one retrying after a failure never run again, their
// messages are deleted unrun (no dead letter), a repeat says the same, and a job that succeeded
// is not cancelled.
func TestCancel(t *testing.T) {
	eachFolding(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		waiting, err := e.client.Enqueue(ctx, resize{Image: "waiting.png"}, nil)
		require.NoError(t, err)
		flaky, err := e.client.Enqueue(ctx, resize{Image: "flaky.png", Fail: "retry"}, nil)
		require.NoError(t, err)
		done, err := e.client.Enqueue(ctx, resize{Image: "done.png"}, nil)
		require.NoError(t, err)

		st, err := e.client.Cancel(ctx, waiting.ID)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateCancelled, st.State)
		assert.Equal(t, contract.ReasonCancelled, st.Reason)
		cancelledAt := st.FinishedAt
		require.False(t, cancelledAt.IsZero())

		// One delivery of the other two: flaky fails its first attempt, done succeeds.
		e.deliverOnce(e.handle, 2, waiting.ID)
		st, err = e.client.Status(ctx, flaky.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StateRetrying, st.State)

		st, err = e.client.Cancel(ctx, flaky.ID)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateCancelled, st.State)
		assert.Equal(t, 1, st.Attempt)

		_, err = e.client.Cancel(ctx, done.ID)
		var nc *jobs.NotCancellableError
		require.ErrorAs(t, err, &nc)
		assert.Equal(t, jobs.StateSucceeded, nc.Status.State)
		assert.Contains(t, err.Error(), "already succeeded")

		e.drain(false) // both cancelled jobs come back: deleted unrun
		assert.Equal(t, int32(2), e.runs.Load(), "flaky's first attempt and done; nothing after the cancels")
		awstest.ExpectEmpty(t, e.sqs, e.q.URL)
		awstest.ExpectEmpty(t, e.sqs, e.dlq.URL)
		for _, id := range []string{waiting.ID, flaky.ID} {
			st, err := e.client.Status(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, jobs.StateCancelled, st.State, id)
		}

		again, err := e.client.Cancel(ctx, waiting.ID)
		require.NoError(t, err, "a repeat is not an error")
		assert.Equal(t, jobs.StateCancelled, again.State)
		assert.Equal(t, cancelledAt, again.FinishedAt, "a repeat changes nothing")

		_, err = e.client.Cancel(ctx, "no-such-job")
		assert.ErrorIs(t, err, jobs.ErrJobNotFound)
	})
}

// deliverOnce receives n messages of the env's queue, none of them job skip's, and hands them to
// the runtime handle once, deleting those it does not list.
func (e *env) deliverOnce(handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), n int, skip string) {
	e.t.Helper()
	ctx := context.Background()
	want := n
	if skip != "" {
		want++
	}
	msgs := awstest.ReceiveN(e.t, e.sqs, e.q.URL, want)
	var batch []sqstypes.Message
	for _, m := range msgs {
		env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
		require.NoError(e.t, err)
		if env.ID == skip {
			_, err := e.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(e.q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			require.NoError(e.t, err)
			continue
		}
		batch = append(batch, m)
	}
	require.Len(e.t, batch, n)
	resp, err := handle(ctx, jobstest.EventFromMessages(e.q.ARN, batch))
	require.NoError(e.t, err)
	listed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		listed[f.ItemIdentifier] = true
	}
	for _, m := range batch {
		if !listed[aws.ToString(m.MessageId)] {
			_, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.q.URL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(e.t, err)
		}
	}
}

// A running job is not cancelled: its claim holds the key, and Cancel says it is running.
func TestCancelRunningJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	res, err := e.client.Enqueue(ctx, resize{Image: "r.png"}, nil)
	require.NoError(t, err)
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(e.cfg), e.table.Name())
	mw := idempotency.Middleware(store, &idempotency.Config{RecordJobs: true})
	row := &jobs.JobRow{ID: res.ID, Kind: "image.resize", Attempt: 1, EncodedArgs: []byte(`{"image":"r.png"}`)}
	err = mw(func(ctx context.Context, _ *jobs.JobRow) error {
		_, err := e.client.Cancel(ctx, res.ID)
		var nc *jobs.NotCancellableError
		require.ErrorAs(t, err, &nc)
		assert.Equal(t, jobs.StateRunning, nc.Status.State)
		assert.Contains(t, err.Error(), "is running (attempt 1")
		return errors.New("stop here")
	})(ctx, row)
	require.EqualError(t, err, "stop here")
}

// On a FIFO queue a cancelled job does not hold its group back: the jobs after it run, in order,
// in the same delivery.
func TestCancelOnFIFO(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	dlq := awstest.CreateQueue(t, e.cfg, "fdlq", &awstest.QueueOptions{FIFO: true})
	fifo := awstest.CreateQueue(t, e.cfg, "f", &awstest.QueueOptions{FIFO: true})
	client, err := jobs.NewClient(e.sqs, jobs.ClientOptions{DefaultQueueURL: fifo.URL, State: e.table})
	require.NoError(t, err)
	var ids []string
	for _, img := range []string{"1", "2", "3", "4"} {
		res, err := client.Enqueue(ctx, resize{Image: img}, &jobs.EnqueueOpts{GroupID: "album"})
		require.NoError(t, err)
		ids = append(ids, res.ID)
	}
	for _, id := range []string{ids[0], ids[2]} {
		_, err := client.Cancel(ctx, id)
		require.NoError(t, err)
	}
	e.drainQueue(fifo, e.runtime(fifo, dlq), false)
	assert.Equal(t, []string{"2", "4"}, e.ran, "the group's other jobs, in order")
	awstest.ExpectEmpty(t, e.sqs, fifo.URL)
	awstest.ExpectEmpty(t, e.sqs, dlq.URL)
	for i, want := range []jobs.JobState{jobs.StateCancelled, jobs.StateSucceeded, jobs.StateCancelled, jobs.StateSucceeded} {
		st, err := client.Status(ctx, ids[i])
		require.NoError(t, err)
		assert.Equal(t, want, st.State, ids[i])
	}
}

// A cancelled member of a fan-out batch counts as ended: the batch completes with the others.
func TestCancelBatchMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	b := e.closedBatch("cancel", 3)
	members, err := e.table.BatchStatus(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, 3, members.Total)
	msgs := awstest.ReceiveN(t, e.sqs, e.q.URL, 3)
	env, err := jobs.DecodeEnvelope(aws.ToString(msgs[0].Body))
	require.NoError(t, err)
	for _, m := range msgs {
		_, err := e.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(e.q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}
	_, err = e.client.Cancel(ctx, env.ID)
	require.NoError(t, err)
	e.drain(false)
	assert.Equal(t, int32(2), e.runs.Load())
	require.Len(t, e.callbacks[b.ID], 1, "the callback, once")
	got := e.callbacks[b.ID][0]
	assert.Equal(t, 3, got.Total)
	assert.Equal(t, 2, got.Succeeded)
	assert.Equal(t, 1, got.Dead, "the cancelled member ended without succeeding")
}

// RetryNow ends a retrying job's backoff: its message, hidden for an hour by the runtime, is
// received at once and the job runs; then the job is no longer waiting, and RetryNow says so.
func TestRetryNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	hourly := jobs.NewLambdaHandler(e.workers, jobs.Config{
		QueueURL: e.q.URL, DLQURL: e.dlq.URL, SQS: e.sqs, MaxAttempts: 3, States: e.table,
		Backoff: func(int) time.Duration { return time.Hour },
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}).HandleSQS
	flaky, err := e.client.Enqueue(ctx, resize{Image: "flaky.png", Fail: "retry"}, nil)
	require.NoError(t, err)
	_, err = e.client.RetryNow(ctx, flaky.ID)
	require.ErrorIs(t, err, jobs.ErrNotWaiting, "enqueued, not retrying")

	e.deliverOnce(hourly, 1, "")
	st, err := e.client.Status(ctx, flaky.ID)
	require.NoError(t, err)
	require.Equal(t, jobs.StateRetrying, st.State)
	require.WithinDuration(t, time.Now().Add(time.Hour), st.NextAttemptAt, time.Minute)
	awstest.ExpectEmpty(t, e.sqs, e.q.URL) // hidden for its backoff

	st, err = e.client.RetryNow(ctx, flaky.ID)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), st.NextAttemptAt, 5*time.Second)
	e.drainQueue(e.q, hourly, false)
	assert.Equal(t, int32(2), e.runs.Load(), "the failed attempt, then the retry")
	st, err = e.client.Status(ctx, flaky.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, st.State)
	assert.Equal(t, 2, st.Attempt)

	_, err = e.client.RetryNow(ctx, flaky.ID)
	assert.ErrorIs(t, err, jobs.ErrNotWaiting, "succeeded")
	assert.Contains(t, err.Error(), "is succeeded")
}

// A container worker (jobs.Consumer) honours a cancel as a Lambda one does: the cancelled job is
// deleted unrun, the others run.
func TestCancelWithContainerConsumer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	var ids []string
	for _, img := range []string{"a", "b", "c"} {
		res, err := e.client.Enqueue(ctx, resize{Image: img}, nil)
		require.NoError(t, err)
		ids = append(ids, res.ID)
	}
	_, err := e.client.Cancel(ctx, ids[1])
	require.NoError(t, err)
	c, err := jobs.NewConsumer(e.workers, jobs.Config{
		QueueURL: e.q.URL, DLQURL: e.dlq.URL, SQS: e.sqs, MaxAttempts: 3, States: e.table,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}, &jobs.ConsumerOptions{Concurrency: 3, WaitTime: time.Second})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	require.Eventually(t, func() bool { return c.Stats().Deleted == 3 }, 30*time.Second, 100*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	assert.ElementsMatch(t, []string{"a", "c"}, e.ran, "the cancelled job did not run")
	awstest.ExpectEmpty(t, e.sqs, e.q.URL)
	awstest.ExpectEmpty(t, e.sqs, e.dlq.URL)
}

// A running job's progress: the first report is written at once, the next ones in the same
// interval are kept and the latest written when it ends; Status shows it while the job runs,
// and not once it has succeeded.
func TestProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(e.cfg), e.table.Name())
	w := jobs.NewWorkers()
	w.Use(e.table.Middleware(&state.MiddlewareOptions{Folded: true, ProgressInterval: 3 * time.Second}),
		idempotency.Middleware(store, &idempotency.Config{RecordJobs: true}))
	progressOf := func(id string) *jobs.Progress {
		st, err := e.client.Status(ctx, id)
		if !assert.NoError(t, err) {
			return nil
		}
		assert.Equal(t, jobs.StateRunning, st.State)
		return st.Progress
	}
	var ran bool
	jobs.AddWorker(w, jobs.WorkFunc[resize](func(ctx context.Context, job *jobs.Job[resize]) error {
		ran = true
		assert.NoError(t, jobs.ReportProgress(ctx, 10, "started"))
		assert.Eventually(t, func() bool { p := progressOf(job.ID); return p != nil && p.Percent == 10 && p.Note == "started" }, 5*time.Second, 50*time.Millisecond)
		assert.NoError(t, jobs.ReportProgress(ctx, 20, "twenty"))
		assert.NoError(t, jobs.ReportProgress(ctx, 30.5, "thirty and a half"))
		if p := progressOf(job.ID); assert.NotNil(t, p) {
			assert.Equal(t, 10.0, p.Percent, "within the interval: not written yet")
		}
		assert.Eventually(t, func() bool { p := progressOf(job.ID); return p != nil && p.Percent == 30.5 }, 10*time.Second, 50*time.Millisecond,
			"the latest report, written when the interval ends")
		assert.Error(t, jobs.ReportProgress(ctx, 101, ""))
		return nil
	}))
	handle := jobs.NewLambdaHandler(w, jobs.Config{QueueURL: e.q.URL, DLQURL: e.dlq.URL, SQS: e.sqs, MaxAttempts: 3, States: e.table,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).HandleSQS
	res, err := e.client.Enqueue(ctx, resize{Image: "big.png"}, nil)
	require.NoError(t, err)
	e.drainQueue(e.q, handle, false)
	require.True(t, ran)
	st, err := e.client.Status(ctx, res.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, st.State)
	assert.Nil(t, st.Progress, "shown while it runs only")
	assert.Error(t, jobs.ReportProgress(ctx, 50, ""), "outside a job")
}

// UntilDone: a unique key holds while its job is queued or running, and is taken over once that
// job succeeded or was cancelled; without it, the window alone decides.
func TestUniqueUntilDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	until := &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: "album-7", Window: time.Hour, UntilDone: true}}
	first, err := e.client.Enqueue(ctx, resize{Image: "a.png"}, until)
	require.NoError(t, err)
	dup, err := e.client.Enqueue(ctx, resize{Image: "b.png"}, until)
	require.NoError(t, err)
	require.True(t, dup.Duplicate, "queued: the key holds")
	require.Equal(t, first.ID, dup.ID)

	windowed := &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: "album-8", Window: time.Hour}}
	w1, err := e.client.Enqueue(ctx, resize{Image: "w1.png"}, windowed)
	require.NoError(t, err)

	e.drain(false) // first and w1 succeed
	second, err := e.client.Enqueue(ctx, resize{Image: "c.png"}, until)
	require.NoError(t, err)
	require.False(t, second.Duplicate, "the holder succeeded: the key is free")
	require.NotEqual(t, first.ID, second.ID)
	w2, err := e.client.Enqueue(ctx, resize{Image: "w2.png"}, windowed)
	require.NoError(t, err)
	require.True(t, w2.Duplicate, "without UntilDone the window holds the key")
	require.Equal(t, w1.ID, w2.ID)

	_, err = e.client.Cancel(ctx, second.ID)
	require.NoError(t, err)
	third, err := e.client.Enqueue(ctx, resize{Image: "d.png"}, until)
	require.NoError(t, err)
	require.False(t, third.Duplicate, "the holder was cancelled: the key is free")
	again, err := e.client.Enqueue(ctx, resize{Image: "e.png"}, until)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, third.ID, again.ID)
}

// Without the idempotency middleware the running state is on the job's item: a running job is
// not cancelled, and a job its worker cancelled (dead-lettered) is not an operator's cancel — a
// redrive runs it again.
func TestCancelWithStateMiddlewareAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	ctx := context.Background()
	res, err := e.client.Enqueue(ctx, resize{Image: "r.png"}, nil)
	require.NoError(t, err)
	row := &jobs.JobRow{ID: res.ID, Kind: "image.resize", Attempt: 1, QueueURL: e.q.URL, EncodedArgs: []byte(`{"image":"r.png"}`)}
	err = e.table.Middleware(nil)(func(ctx context.Context, _ *jobs.JobRow) error {
		_, err := e.client.Cancel(ctx, res.ID)
		var nc *jobs.NotCancellableError
		if assert.ErrorAs(t, err, &nc) {
			assert.Equal(t, jobs.StateRunning, nc.Status.State)
		}
		return nil
	})(ctx, row)
	require.NoError(t, err)

	gone, err := e.client.Enqueue(ctx, resize{Image: "gone.png", Fail: "cancel"}, nil)
	require.NoError(t, err)
	e.drain(false)
	runs := e.runs.Load()
	_, err = e.client.Cancel(ctx, gone.ID)
	require.ErrorContains(t, err, "cancelled by its worker and dead-lettered")
	dead := awstest.Take(t, e.sqs, e.dlq.URL, 1)
	_, err = e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.q.URL), MessageBody: dead[0].Body})
	require.NoError(t, err)
	e.drain(false)
	assert.Equal(t, runs+1, e.runs.Load(), "the redriven job ran again")
}

// A job sharing its idempotency key with a cancelled one is not run either, and its state says
// so, naming the cancelled job.
func TestCancelSharedKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	first, err := e.client.Enqueue(ctx, resize{Image: "k.png"}, &jobs.EnqueueOpts{Key: "thumb-k"})
	require.NoError(t, err)
	second, err := e.client.Enqueue(ctx, resize{Image: "k.png"}, &jobs.EnqueueOpts{Key: "thumb-k"})
	require.NoError(t, err)
	_, err = e.client.Cancel(ctx, first.ID)
	require.NoError(t, err)
	st, err := e.client.Status(ctx, second.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateCancelled, st.State, "read through the key's cancellation")
	assert.Equal(t, first.ID, st.DuplicateOf)
	st, err = e.client.Cancel(ctx, second.ID)
	require.NoError(t, err, "cancelling it too is no error")
	assert.Equal(t, jobs.StateCancelled, st.State)
	e.drain(false)
	assert.Zero(t, e.runs.Load())
	awstest.ExpectEmpty(t, e.sqs, e.dlq.URL)
}

// RetryNow's state write holds only while the job still waits on the delivery it read: a newer
// delivery's retry makes it no longer apply.
func TestRetryNowOnlyForTheDeliveryItRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	res, err := e.client.Enqueue(ctx, resize{Image: "r.png"}, nil)
	require.NoError(t, err)
	row := &jobs.JobRow{ID: res.ID, Kind: "image.resize", QueueURL: e.q.URL}
	later := time.Now().Add(time.Hour)
	require.NoError(t, e.table.JobSettled(ctx, row, jobs.JobStatus{State: jobs.StateRetrying, Attempt: 1, NextAttemptAt: later, Receipt: "receipt-1"}))
	require.NoError(t, e.table.JobSettled(ctx, row, jobs.JobStatus{State: jobs.StateRetrying, Attempt: 2, NextAttemptAt: later, Receipt: "receipt-2"}))
	err = e.table.JobRetryNow(ctx, res.ID, "receipt-1", time.Now())
	require.ErrorIs(t, err, jobs.ErrNotWaiting)
	require.NoError(t, e.table.JobRetryNow(ctx, res.ID, "receipt-2", time.Now()))
	require.ErrorIs(t, e.table.JobRetryNow(ctx, res.ID, "receipt-2", time.Now()), jobs.ErrNotWaiting, "the receipt is used once")
}

// A member the runtime dead-letters at the receive limit (receive_limit, before SQS's redrive
// would take it unrecorded) counts as dead in its batch, as one whose attempts ran out does.
func TestBatchMemberAtTheReceiveLimitCountsDead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	b := e.batchOf("limit", "ok.png", "stuck.png")
	// stuck.png's message is received twice without a run (a throttle, a lost receive), ok.png's
	// once...
	show := func(m sqstypes.Message) {
		_, err := e.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(e.q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}
	var stuck, ok sqstypes.Message
	for _, m := range awstest.ReceiveN(t, e.sqs, e.q.URL, 2) {
		env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
		require.NoError(t, err)
		if strings.Contains(string(env.Args), "stuck") {
			stuck = m
		} else {
			ok = m
		}
	}
	show(stuck)
	again := awstest.ReceiveN(t, e.sqs, e.q.URL, 1)
	require.Equal(t, aws.ToString(stuck.MessageId), aws.ToString(again[0].MessageId))
	show(again[0])
	show(ok)
	require.NotNil(t, stuck.MessageId)
	// ...so that its third receive is the queue's last: the runtime dead-letters it itself.
	limited := jobs.NewLambdaHandler(e.workers, jobs.Config{QueueURL: e.q.URL, DLQURL: e.dlq.URL, SQS: e.sqs, MaxAttempts: 2, MaxReceiveCount: 3, States: e.table,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).HandleSQS
	e.drainUntilDead(limited, b.ID)
	dead := jobstest.DecodeDeadLetter(awstest.Take(t, e.sqs, e.dlq.URL, 1)[0])
	assert.Equal(t, contract.ReasonReceiveLimit, dead.Reason)
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Len(t, e.callbacks[b.ID], 1)
	assert.Equal(t, state.BatchResult{BatchID: b.ID, Total: 2, Succeeded: 1, Dead: 1}, e.callbacks[b.ID][0].BatchResult)
}

// A fan-out member whose runs kept dying (a crash loop: the delivery ledger holds MaxAttempts
// started runs that never reported) is dead-lettered unrun as no_outcome on its next delivery,
// and counts dead in its batch, which completes.
func TestBatchMemberInACrashLoopCountsDead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	ctx := context.Background()
	b := e.batchOf("crash", "ok.png", "crash.png")
	// crash.png's first delivery and its redelivery's run died, as a killed process leaves them:
	// two runs started in the ledger, none reported; its message is back for a third delivery.
	const attempts = 2
	ledger := idempotency.NewMemoryStore()
	var crash sqstypes.Message
	for _, m := range awstest.ReceiveN(t, e.sqs, e.q.URL, 2) {
		_, err := e.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(e.q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
		if strings.Contains(aws.ToString(m.Body), "crash.png") {
			crash = m
		}
	}
	require.NotNil(t, crash.MessageId)
	require.NoError(t, ledger.AddDeliveries(ctx, aws.ToString(crash.MessageId), 0, attempts))
	handler := jobs.NewLambdaHandler(e.workers, jobs.Config{QueueURL: e.q.URL, DLQURL: e.dlq.URL, SQS: e.sqs, MaxAttempts: attempts, States: e.table,
		Deliveries: ledger, Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).HandleSQS
	e.drainUntilDead(handler, b.ID)
	dead := jobstest.DecodeDeadLetter(awstest.Take(t, e.sqs, e.dlq.URL, 1)[0])
	assert.Equal(t, contract.ReasonNoOutcome, dead.Reason)
	assert.Equal(t, aws.ToString(crash.MessageId), dead.SourceMessageID)
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Len(t, e.callbacks[b.ID], 1)
	assert.Equal(t, state.BatchResult{BatchID: b.ID, Total: 2, Succeeded: 1, Dead: 1}, e.callbacks[b.ID][0].BatchResult)
}

// drainUntilDead drains the job queue with handle until batch's callback has run and a dead
// letter is in the DLQ, at most 90 s: a loaded emulator may take a while to show messages again,
// and a dead-letter send that failed (an answer the emulator lost) leaves the message for its
// next delivery after the batch has counted it dead.
func (e *env) drainUntilDead(handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), batch string) {
	e.t.Helper()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
		e.drainQueue(e.q, handle, false)
		e.mu.Lock()
		n := len(e.callbacks[batch])
		e.mu.Unlock()
		if n > 0 && awstest.Depth(e.t, e.sqs, e.dlq) > 0 {
			return
		}
	}
}
