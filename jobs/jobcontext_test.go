package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

type ctxKey struct{}

// What a job sees of its context, whichever way it looks: its deadline is SafetyMargin before the
// Lambda deadline, Err turns to DeadlineExceeded then even for a job that never asks for Done, a
// derived context ends with it, values of the invocation's context are there, and a context kept
// after the batch returned is done. Each way of looking runs in a batch of its own.
func TestHandlerJobContext(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"poll", "derive", "keep"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var (
				deadline time.Time
				hasDL    bool
				value    any
				jobErr   error
				kept     context.Context
			)
			w := jobs.NewWorkers()
			jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
				value = ctx.Value(ctxKey{})
				deadline, hasDL = ctx.Deadline()
				switch mode {
				case "poll": // never calls Done
					for ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					jobErr = ctx.Err()
				case "derive":
					child, cancel := context.WithCancel(ctx)
					defer cancel()
					<-child.Done()
					jobErr = child.Err()
				case "keep":
					kept = ctx
					return nil
				}
				return jobErr
			}))
			cfg := jobstest.Config(jobstest.NewRecorder())
			cfg.SafetyMargin = time.Second
			handler := jobs.NewLambdaHandler(w, cfg).HandleSQS

			ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "from the invocation"), 3*time.Second)
			defer cancel()
			lambdaDeadline, _ := ctx.Deadline()
			resp, err := handler(ctx, jobstest.Event(msg(1, mode, nil)))
			require.NoError(t, err)
			assert.True(t, hasDL)
			assert.Equal(t, lambdaDeadline.Add(-time.Second), deadline, "SafetyMargin before the Lambda deadline")
			assert.Equal(t, "from the invocation", value, "the invocation's values")
			if mode == "keep" {
				assert.Empty(t, resp.BatchItemFailures)
				require.NotNil(t, kept)
				select {
				case <-kept.Done():
				default:
					t.Fatal("a job's context kept after the batch returned is not done")
				}
				assert.ErrorIs(t, kept.Err(), context.Canceled)
				return
			}
			assert.Equal(t, []string{"m1"}, jobstest.FailedIDs(resp), "a job that ran into the deadline is retried")
			assert.ErrorIs(t, jobErr, context.DeadlineExceeded)
		})
	}
}

// A job's context kept after a batch that ended before its deadline is cancelled.
func TestHandlerJobContextEndsWithTheBatch(t *testing.T) {
	t.Parallel()
	var kept []context.Context
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		kept = append(kept, ctx)
		return nil
	}))
	handler := jobs.NewLambdaHandler(w, jobstest.Config(jobstest.NewRecorder())).HandleSQS
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := handler(ctx, jobstest.Event(msg(1, "", nil)))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	require.Len(t, kept, 1)
	assert.ErrorIs(t, kept[0].Err(), context.Canceled, "Err, with no Done asked for before")
	select {
	case <-kept[0].Done():
	default:
		t.Fatal("not done")
	}
	d, _ := kept[0].Deadline()
	assert.Greater(t, time.Until(d), 50*time.Second, "the deadline is the invocation's, less the margin")
}

// Cancelling the invocation's context ends the jobs' contexts, before their deadline.
func TestHandlerJobContextFollowsInvocation(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var jobErr error
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		close(started)
		<-ctx.Done()
		jobErr = ctx.Err()
		return jobErr
	}))
	handler := jobs.NewLambdaHandler(w, jobstest.Config(jobstest.NewRecorder())).HandleSQS
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	resp, err := handler(ctx, jobstest.Event(msg(1, "", nil)))
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, jobstest.FailedIDs(resp))
	assert.ErrorIs(t, jobErr, context.Canceled)
}

// Batches that run at the same time each get their heartbeat and their deadline.
func TestHandlerConcurrentBatchesKeepTheirOwnTime(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec)
	cfg.VisibilityTimeout = 3 * time.Second // a beat every second
	cfg.SafetyMargin = time.Second
	handler := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS

	// Batch a sleeps past one beat; batch b blocks until its jobs' deadline (2 s after it starts).
	ctxB, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var respA, respB events.SQSEventResponse
	wg.Add(2)
	go func() {
		defer wg.Done()
		slow := jobstest.Message(TestJob{N: 1, Mode: "sleep", Seconds: 2.5}, &jobstest.MessageOpts{MessageID: "a1", ReceiptHandle: "rh-a1"})
		respA, _ = handler(context.Background(), jobstest.Event(slow))
	}()
	go func() {
		defer wg.Done()
		respB, _ = handler(ctxB, jobstest.Event(jobstest.Message(TestJob{N: 2, Mode: "block"}, &jobstest.MessageOpts{MessageID: "b1", ReceiptHandle: "rh-b1"})))
	}()
	wg.Wait()
	assert.Empty(t, respA.BatchItemFailures)
	assert.Equal(t, []string{"b1"}, jobstest.FailedIDs(respB))
	beatsA := 0
	for _, v := range rec.Visibility() {
		if v.ReceiptHandle == "rh-a1" && v.Batch {
			beatsA++
		}
	}
	assert.GreaterOrEqual(t, beatsA, 1, "the sleeping batch's message was extended")
}

// The runtime decodes a job's args with its envelope; middleware that replaces the args, copies
// the row or runs the job twice still gets exactly what it asks for.
func TestHandlerArgsFollowMiddleware(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mw   jobs.Middleware
		want []string // the args' n and the row's key each run sees
	}{
		{"replaces the args", func(next jobs.Handler) jobs.Handler {
			return func(ctx context.Context, row *jobs.JobRow) error {
				row.EncodedArgs = []byte(`{"n":42}`)
				return next(ctx, row)
			}
		}, []string{"42:k"}},
		{"copies the row", func(next jobs.Handler) jobs.Handler {
			return func(ctx context.Context, row *jobs.JobRow) error {
				cp := *row
				cp.Key = "copied"
				return next(ctx, &cp)
			}
		}, []string{"7:copied"}},
		{"runs the job twice", func(next jobs.Handler) jobs.Handler {
			return func(ctx context.Context, row *jobs.JobRow) error {
				if err := next(ctx, row); !errors.Is(err, errMutated) {
					return fmt.Errorf("first run: %w", err)
				}
				return next(ctx, row)
			}
		}, []string{"7:k", "7:k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var ns []string
			var runs []*jobs.Job[TestJob]
			w := jobs.NewWorkers()
			jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
				mu.Lock()
				ns = append(ns, fmt.Sprintf("%d:%s", job.Args.N, job.Key))
				runs = append(runs, job)
				first := len(ns) == 1
				mu.Unlock()
				if tc.name == "runs the job twice" && first {
					job.Args.N = -1 // a worker may change its own args; a second run decodes afresh
					return errMutated
				}
				return nil
			}))
			w.Use(tc.mw)
			handler := jobs.NewLambdaHandler(w, jobstest.Config(jobstest.NewRecorder())).HandleSQS
			resp, err := handler(context.Background(), jobstest.Event(msg(7, "", &jobstest.MessageOpts{Key: "k"})))
			require.NoError(t, err)
			assert.Empty(t, resp.BatchItemFailures)
			assert.Equal(t, tc.want, ns)
			if len(runs) == 2 {
				assert.NotSame(t, runs[0], runs[1], "each run gets its own job: the first may still hold its own")
			}
		})
	}
}

var errMutated = errors.New("mutated its args")
