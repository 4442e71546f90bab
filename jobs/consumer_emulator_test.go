package jobs_test

// The container Consumer against SQS itself: long jobs kept by heartbeats, the same outcomes as
// the Lambda runtime, and the drain.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobctx"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// runConsumer runs c until stop returns true (checked every 100 ms), then cancels it and waits
// for Run to return.
func runConsumer(t *testing.T, c *jobs.Consumer, stop func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	for !stop() {
		select {
		case err := <-done:
			t.Fatalf("Run returned before it was stopped: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	require.NoError(t, <-done)
}

// A job four times as long as the queue's visibility timeout keeps its message through many
// heartbeats: a second consumer polling all the while never gets it, the job runs once, and its
// message is deleted when it is done.
func TestConsumerLongJobOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client, calls := countedSQS(t)
	q, dlq := runtimeQueues(t, cfg, 3)
	enqueue(t, client, q.URL, TestJob{N: 1, Mode: "sleep", Seconds: 12})

	var runs atomic.Int32
	var keepAlive atomic.Int64
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		runs.Add(1)
		if window, ok := jobctx.KeepAlive(ctx); ok {
			keepAlive.Store(int64(window))
		}
		time.Sleep(time.Duration(job.Args.Seconds * float64(time.Second)))
		return nil
	}))
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.VisibilityTimeout = 3 * time.Second
	c, err := jobs.NewConsumer(w, rc, &jobs.ConsumerOptions{Concurrency: 2, WaitTime: time.Second})
	require.NoError(t, err)

	// Once the consumer has the job, a second consumer polls all the while.
	stopThief := thief(sqs.NewFromConfig(cfg), q.URL, func() bool { return runs.Load() > 0 })
	runConsumer(t, c, func() bool { return c.Stats().Deleted == 1 })
	stolen, _ := stopThief()

	assert.Empty(t, stolen, "the running job's message was never handed to another consumer")
	assert.Equal(t, int32(1), runs.Load(), "the job ran once")
	assert.Equal(t, 3*time.Second, time.Duration(keepAlive.Load()), "the job's context says it is kept alive, for the visibility timeout")
	assert.GreaterOrEqual(t, calls.n(&sqs.ChangeMessageVisibilityInput{})+calls.n(&sqs.ChangeMessageVisibilityBatchInput{}), 3,
		"heartbeats kept the message through a job four visibility timeouts long")
	visible, inFlight := awstest.Counts(t, client, q.URL)
	assert.Equal(t, 0, visible)
	assert.Equal(t, 0, inFlight)
	st := c.Stats()
	assert.Equal(t, int64(1), st.Received)
	assert.Zero(t, st.Released)
}

// The consumer runs the same runtime as the Lambda handler: a success is deleted, Cancel and a
// retryable failure on the last attempt are dead-lettered with their reasons, a FIFO group stops
// at its first failure and keeps its order.
func TestConsumerOutcomesOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 0)
	enqueue(t, client, q.URL, TestJob{N: 1}, TestJob{N: 2, Mode: "cancel"}, TestJob{N: 3, Mode: "fail"}, TestJob{N: 4})

	var got ran
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		got.add(job.Args.N)
		switch job.Args.Mode {
		case "cancel":
			return jobs.Cancel(errors.New("not wanted"))
		case "fail":
			return errors.New("boom")
		}
		return nil
	}))
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.MaxAttempts = 1
	c, err := jobs.NewConsumer(w, rc, &jobs.ConsumerOptions{WaitTime: time.Second})
	require.NoError(t, err)
	runConsumer(t, c, func() bool { return c.Stats().Deleted == 4 })

	assert.ElementsMatch(t, []int{1, 2, 3, 4}, got.list(), "each job ran once")
	dead := awstest.ReceiveN(t, client, dlq.URL, 2)
	reasons := map[int]string{}
	for _, m := range dead {
		reasons[jobN(t, m)] = aws.ToString(m.MessageAttributes[contract.AttrReason].StringValue)
		assert.Equal(t, "emulator-test", aws.ToString(m.MessageAttributes[contract.AttrFunction].StringValue))
	}
	assert.Equal(t, map[int]string{2: contract.ReasonCancelled, 3: contract.ReasonAttemptsUsed}, reasons)
	visible, inFlight := awstest.Counts(t, client, q.URL)
	assert.Equal(t, 0, visible)
	assert.Equal(t, 0, inFlight)
}

// On a FIFO queue the consumer runs each group in order and the first failure returns the rest
// of its group with it, as the Lambda runtime does.
func TestConsumerFIFOSkipGroupOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", &awstest.QueueOptions{FIFO: true})
	q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: true})
	enqueue(t, client, q.URL,
		TestJob{N: 1, Group: "a"}, TestJob{N: 2, Group: "a", Mode: "fail"}, TestJob{N: 3, Group: "a"},
		TestJob{N: 10, Group: "b"}, TestJob{N: 11, Group: "b"})

	var got ran
	var failed atomic.Bool
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		got.add(job.Args.N)
		if job.Args.Mode == "fail" && failed.CompareAndSwap(false, true) {
			return errors.New("first time fails")
		}
		return nil
	}))
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.Backoff = func(int) time.Duration { return 0 }
	c, err := jobs.NewConsumer(w, rc, &jobs.ConsumerOptions{WaitTime: time.Second})
	require.NoError(t, err)
	runConsumer(t, c, func() bool { return c.Stats().Deleted == 5 })

	var a, b []int
	for _, n := range got.list() {
		if n < 10 {
			a = append(a, n)
		} else {
			b = append(b, n)
		}
	}
	assert.Equal(t, []int{1, 2, 2, 3}, a, "group a: 3 did not run before 2 succeeded")
	assert.Equal(t, []int{10, 11}, b)
}

// Draining: receiving stops; a job that finishes within the budget is deleted; a job that
// returns when its context ends (ErrDraining) and a job that ignores its context are released
// with visibility 0 — another consumer receives them at once, long before the queue's 60 s
// visibility timeout — and nothing is dead-lettered, lost or run twice.
func TestConsumerDrainOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 60)
	enqueue(t, client, q.URL, TestJob{N: 1, Mode: "quick"}, TestJob{N: 2, Mode: "polite"}, TestJob{N: 3, Mode: "stubborn"})

	var got ran
	var started sync.WaitGroup
	started.Add(3)
	finishQuick := make(chan struct{})
	stubborn := make(chan struct{})
	defer close(stubborn)
	var causes sync.Map
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		got.add(job.Args.N)
		started.Done()
		switch job.Args.Mode {
		case "quick":
			<-finishQuick
			return nil
		case "polite":
			<-ctx.Done()
			causes.Store(job.Args.N, context.Cause(ctx))
			return ctx.Err()
		default:
			<-stubborn // ignores its context
			return nil
		}
	}))
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.VisibilityTimeout = 60 * time.Second
	rc.MaxAttempts = 1 // a failure would be dead-lettered: the drain must not judge the attempt
	c, err := jobs.NewConsumer(w, rc, &jobs.ConsumerOptions{Concurrency: 3, WaitTime: time.Second, DrainTimeout: 4 * time.Second})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	started.Wait()
	cancel()
	close(finishQuick)
	require.NoError(t, <-done)

	st := c.Stats()
	assert.Equal(t, int64(3), st.Received)
	assert.Equal(t, int64(1), st.Deleted, "the job that finished is deleted")
	assert.Equal(t, int64(1), st.Released, "the job still running at the end is released by the consumer")
	cause, _ := causes.Load(2)
	assert.ErrorIs(t, cause.(error), jobs.ErrDraining)

	back := awstest.Receive(t, client, q.URL, 2, 10*time.Second)
	var ns []int
	for _, m := range back {
		ns = append(ns, jobN(t, m))
	}
	assert.ElementsMatch(t, []int{2, 3}, ns, "the interrupted jobs are visible again at once")
	assert.ElementsMatch(t, []int{1, 2, 3}, got.list(), "each job ran once")
	assert.Empty(t, awstest.Receive(t, client, dlq.URL, 1, time.Second), "nothing dead-lettered")
}

// deleteCounter is an SQS client that records the consumer's delete calls.
type deleteCounter struct {
	*sqs.Client
	mu      sync.Mutex
	batches []int // entries of each DeleteMessageBatch call
	singles int   // DeleteMessage calls
}

func (d *deleteCounter) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	d.mu.Lock()
	d.batches = append(d.batches, len(in.Entries))
	d.mu.Unlock()
	return d.Client.DeleteMessageBatch(ctx, in, optFns...)
}

func (d *deleteCounter) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	d.mu.Lock()
	d.singles++
	d.mu.Unlock()
	return d.Client.DeleteMessage(ctx, in, optFns...)
}

// Backpressure and batch deletes (docs/handlers.md): a consumer of concurrency 3 never holds
// more than 3 messages — received and not yet finished — however deep the queue; and 25 jobs
// finishing together are deleted in DeleteMessageBatch calls of at most 10.
func TestConsumerHoldsNoMoreThanItsConcurrencyOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)

	t.Run("holds", func(t *testing.T) {
		q := awstest.CreateQueue(t, cfg, "q", nil)
		enqueue(t, client, q.URL, numbered(9)...)
		var c *jobs.Consumer
		var finished, most atomic.Int64
		held := func() {
			if h := c.Stats().Received - finished.Load(); h > most.Load() {
				most.Store(h)
			}
		}
		w := jobs.NewWorkers()
		jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
			held()
			time.Sleep(150 * time.Millisecond)
			held()
			finished.Add(1)
			return nil
		}))
		var err error
		c, err = jobs.NewConsumer(w, runtimeConfig(client, q.URL, dlq.URL), &jobs.ConsumerOptions{Concurrency: 3, WaitTime: time.Second})
		require.NoError(t, err)
		runConsumer(t, c, func() bool { held(); return c.Stats().Deleted == 9 })
		assert.Equal(t, int64(9), finished.Load())
		assert.Equal(t, int64(9), c.Stats().Received, "each job received once")
		assert.LessOrEqual(t, most.Load(), int64(3), "never more messages held than its concurrency")
		assert.Positive(t, most.Load())
	})

	t.Run("deletes", func(t *testing.T) {
		q := awstest.CreateQueue(t, cfg, "q", nil)
		enqueue(t, client, q.URL, numbered(25)...)
		var started sync.WaitGroup
		started.Add(25)
		allIn := make(chan struct{})
		go func() { started.Wait(); close(allIn) }()
		w := jobs.NewWorkers()
		jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
			started.Done()
			select { // all 25 finish at once
			case <-allIn:
			case <-time.After(20 * time.Second):
			}
			return nil
		}))
		dc := &deleteCounter{Client: client}
		c, err := jobs.NewConsumer(w, runtimeConfig(dc, q.URL, dlq.URL), &jobs.ConsumerOptions{Concurrency: 25, WaitTime: time.Second})
		require.NoError(t, err)
		runConsumer(t, c, func() bool { return c.Stats().Deleted == 25 })
		select {
		case <-allIn:
		default:
			t.Fatal("the 25 jobs never ran together")
		}
		dc.mu.Lock()
		defer dc.mu.Unlock()
		assert.Zero(t, dc.singles, "no single deletes")
		total, most := 0, 0
		for _, n := range dc.batches {
			total += n
			most = max(most, n)
		}
		assert.Equal(t, 25, total)
		assert.LessOrEqual(t, most, 10, "at most 10 per call: %v", dc.batches)
		assert.Less(t, len(dc.batches), 25, "finished messages are gathered: %v", dc.batches)
	})
}

// NewConsumer refuses what it cannot run.
func TestNewConsumerRefuses(t *testing.T) {
	t.Parallel()
	w := jobs.NewWorkers()
	rc := jobs.Config{QueueURL: "http://sqs.local/000000000000/q", DLQURL: "http://sqs.local/000000000000/d", SQS: sqs.New(sqs.Options{Region: "us-east-1"})}
	_, err := jobs.NewConsumer(w, rc, &jobs.ConsumerOptions{WaitTime: 30 * time.Second})
	require.ErrorContains(t, err, "WaitTime")
	rc.VisibilityTimeout = time.Second
	_, err = jobs.NewConsumer(w, rc, nil)
	require.ErrorContains(t, err, "VisibilityTimeout")
	_, err = jobs.NewConsumer(nil, rc, nil)
	require.Error(t, err)
}

// ConsumerOptionsFromEnv reads the container's variables and refuses bad ones.
func TestConsumerOptionsFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{contract.EnvConcurrency: "32", contract.EnvPollers: "4", contract.EnvDrainTimeout: "40"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	o, err := jobs.ConsumerOptionsFromEnv(lookup)
	require.NoError(t, err)
	assert.Equal(t, jobs.ConsumerOptions{Concurrency: 32, Pollers: 4, DrainTimeout: 40 * time.Second}, o)
	env[contract.EnvDrainTimeout] = "1m30s"
	o, err = jobs.ConsumerOptionsFromEnv(lookup)
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, o.DrainTimeout)
	env[contract.EnvPollers] = "-1"
	env[contract.EnvDrainTimeout] = "soon"
	_, err = jobs.ConsumerOptionsFromEnv(lookup)
	require.ErrorContains(t, err, contract.EnvPollers)
	require.ErrorContains(t, err, contract.EnvDrainTimeout)
}
