package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type strictJob struct{}

func (strictJob) Kind() string { return "kind.strict" }

type patientJob struct{}

func (patientJob) Kind() string { return "kind.patient" }

type slowJob struct{}

func (slowJob) Kind() string { return "kind.slow" }

type spacedJob struct{}

func (spacedJob) Kind() string { return "kind.spaced" }

// Per-kind settings on one queue: a kind with 2 attempts is dead after 2 runs while its
// neighbour gets the function's 3; a kind with a 100 ms timeout has its run cut there and is
// dead after its single attempt with the deadline in its error; a kind with its own backoff is
// retried after it, the others after the function's.
func TestKindOptsOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := awstest.QueueWithDLQ(t, cfg, "q", &awstest.QueueOptions{VisibilityTimeout: 30})
	w := jobs.NewWorkers()
	fail := errors.New("always fails")
	jobs.AddWorker(w, jobs.WorkFunc[strictJob](func(context.Context, *jobs.Job[strictJob]) error { return fail }), jobs.KindOpts{MaxAttempts: 2})
	jobs.AddWorker(w, jobs.WorkFunc[patientJob](func(context.Context, *jobs.Job[patientJob]) error { return fail }))
	jobs.AddWorker(w, jobs.WorkFunc[slowJob](func(ctx context.Context, _ *jobs.Job[slowJob]) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return nil
		}
	}), jobs.KindOpts{MaxAttempts: 1, Timeout: 100 * time.Millisecond})
	jobs.AddWorker(w, jobs.WorkFunc[spacedJob](func(context.Context, *jobs.Job[spacedJob]) error { return fail }), jobs.KindOpts{Backoff: fixedBackoff(7 * time.Second)})

	var (
		mu     sync.Mutex
		events []event.Event
	)
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.MaxAttempts, rc.Backoff = 3, fixedBackoff(0)
	rc.OnEvent = func(e event.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
	handle := jobs.NewLambdaHandler(w, rc).HandleSQS
	c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL})
	require.NoError(t, err)
	_, err = c.EnqueueBatch(context.Background(), []jobs.BatchJob{{Args: strictJob{}}, {Args: patientJob{}}, {Args: slowJob{}}, {Args: spacedJob{}}})
	require.NoError(t, err)

	// Deliver until the three that die are dead; the spaced job waits out its 7 s.
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		msgs := awstest.Receive(t, client, q.URL, 10, time.Second)
		if len(msgs) == 0 {
			mu.Lock()
			n := 0
			for _, e := range events {
				if e.Type == event.Dead {
					n++
				}
			}
			mu.Unlock()
			if n == 3 {
				break
			}
			continue
		}
		resp, err := handle(ctx, jobstest.EventFromMessages(q.ARN, msgs))
		require.NoError(t, err)
		deleteExcept(t, client, q.URL, msgs, jobstest.FailedIDs(resp))
	}

	runs := map[string]int{}
	var slowRun time.Duration
	var spacedDelay []time.Duration
	mu.Lock()
	for _, e := range events {
		if e.Type == event.Started {
			runs[e.Kind]++
		}
		if e.Kind == "kind.slow" && e.Type == event.Dead {
			slowRun = e.Duration
		}
		if e.Kind == "kind.spaced" && e.Type == event.Retried {
			spacedDelay = append(spacedDelay, e.Delay)
		}
	}
	mu.Unlock()
	assert.Equal(t, 2, runs["kind.strict"], "its own 2 attempts")
	assert.Equal(t, 3, runs["kind.patient"], "the function's 3")
	assert.Equal(t, 1, runs["kind.slow"])
	assert.Less(t, slowRun, 5*time.Second, "cut at its timeout")
	assert.GreaterOrEqual(t, slowRun, 90*time.Millisecond, "it ran until its timeout")
	assert.Equal(t, 1, runs["kind.spaced"], "its retry is 7 s away")
	assert.Equal(t, []time.Duration{7 * time.Second}, spacedDelay)

	dead := map[string]jobstest.DeadLetter{}
	for _, m := range awstest.ReceiveN(t, client, dlq.URL, 3) {
		d := jobstest.DecodeDeadLetter(m)
		dead[d.Kind] = d
	}
	assert.Equal(t, contract.ReasonAttemptsUsed, dead["kind.strict"].Reason)
	assert.Equal(t, 2, dead["kind.strict"].Attempts)
	assert.Equal(t, 3, dead["kind.patient"].Attempts)
	assert.Equal(t, 1, dead["kind.slow"].Attempts)
	assert.Contains(t, dead["kind.slow"].Error, "deadline exceeded")
	spaced := awstest.Receive(t, client, q.URL, 1, 10*time.Second)
	require.Len(t, spaced, 1, "the spaced job comes back after its backoff")
	assert.Equal(t, "2", spaced[0].Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
}

// A kind may not ask more attempts than its function allows, nor negative settings.
func TestKindOptsRefused(t *testing.T) {
	t.Parallel()
	w := jobs.NewWorkers()
	require.Error(t, jobs.AddWorkerSafely(w, jobs.WorkFunc[slowJob](func(context.Context, *jobs.Job[slowJob]) error { return nil }), jobs.KindOpts{Timeout: -1}))
	require.Error(t, jobs.AddWorkerSafely(w, jobs.WorkFunc[slowJob](func(context.Context, *jobs.Job[slowJob]) error { return nil }), jobs.KindOpts{}, jobs.KindOpts{}))
	jobs.AddWorker(w, jobs.WorkFunc[strictJob](func(context.Context, *jobs.Job[strictJob]) error { return nil }), jobs.KindOpts{MaxAttempts: 9})
	rc := runtimeConfig(sqs.New(sqs.Options{Region: "us-east-1"}), "https://sqs.us-east-1.amazonaws.com/123456789012/q", "https://sqs.us-east-1.amazonaws.com/123456789012/dlq")
	rc.MaxAttempts = 5
	assert.PanicsWithError(t, `jobs: kind "kind.strict" asks 9 attempts, its function allows 5 (Config.MaxAttempts, JOBKIT_MAX_ATTEMPTS): the queue's redrive policy is sized for the function's; raise it or lower the kind's`,
		func() { jobs.NewLambdaHandler(w, rc) })
}
