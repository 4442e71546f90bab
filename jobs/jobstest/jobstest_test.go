package jobstest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

type Resize struct {
	URL   string `json:"url"`
	Width int    `json:"width"`
}

func (Resize) Kind() string { return "image.resize" }

func TestMessageCarriesTheEnvelopeAndDelivery(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := jobstest.Message(Resize{URL: "u", Width: 64}, &jobstest.MessageOpts{ID: "r1", Attempt: 3, GroupID: "g", EnqueuedAt: at, Key: "k"})
	assert.Equal(t, "3", m.Attributes["ApproximateReceiveCount"])
	assert.Equal(t, "g", m.Attributes["MessageGroupId"])
	assert.True(t, strings.HasSuffix(m.EventSourceARN, ".fifo"))
	assert.Equal(t, "msg-r1", m.MessageId)
	env, err := jobs.DecodeEnvelope(m.Body)
	require.NoError(t, err)
	assert.Equal(t, "r1", env.ID)
	assert.Equal(t, "image.resize", env.Kind)
	assert.Equal(t, "k", env.Key)
	assert.True(t, at.Equal(env.EnqueuedAt))
	assert.JSONEq(t, `{"url":"u","width":64}`, string(env.Args))
}

func TestWorkAndRun(t *testing.T) {
	t.Parallel()
	var got jobs.Job[Resize]
	worker := jobs.WorkFunc[Resize](func(ctx context.Context, job *jobs.Job[Resize]) error {
		got = *job
		if job.Args.Width < 0 {
			panic("negative width")
		}
		return nil
	})
	require.NoError(t, jobstest.Work(context.Background(), worker, Resize{URL: "u", Width: 8}, &jobstest.JobOpts{Attempt: 2}))
	assert.Equal(t, Resize{URL: "u", Width: 8}, got.Args)
	assert.Equal(t, 2, got.Attempt)
	assert.Equal(t, "image.resize", got.Kind)

	var pe *jobs.PanicError
	require.ErrorAs(t, jobstest.Work(context.Background(), worker, Resize{Width: -1}, nil), &pe)

	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.Worker[Resize](worker))
	calls := 0
	workers.Use(func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error { calls++; return next(ctx, row) }
	})
	require.NoError(t, jobstest.Run(context.Background(), workers, Resize{Width: 1}, nil))
	assert.Equal(t, 1, calls, "Run goes through the middleware")
	var unknown *jobs.UnknownKindError
	require.ErrorAs(t, jobstest.Run(context.Background(), workers, jobs.RawArgs{KindName: "nope"}, nil), &unknown)
	var argsErr *jobs.ArgsError
	require.ErrorAs(t, jobstest.Run(context.Background(), workers, jobs.RawArgs{KindName: "image.resize", JSON: []byte(`{"width":"wide"}`)}, nil), &argsErr)
}

func TestRecorderDeadLetters(t *testing.T) {
	t.Parallel()
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[Resize](func(ctx context.Context, job *jobs.Job[Resize]) error {
		return jobs.Cancel(errors.New("no such image"))
	}))
	rec := jobstest.NewRecorder()
	resp, err := jobs.NewLambdaHandler(workers, jobstest.Config(rec)).HandleSQS(context.Background(),
		jobstest.Event(jobstest.Message(Resize{URL: "x"}, &jobstest.MessageOpts{ID: "r9", Attempt: 2})))
	require.NoError(t, err)
	assert.Empty(t, jobstest.FailedIDs(resp))
	dead := rec.DeadLetters()
	require.Len(t, dead, 1)
	d := dead[0]
	assert.Equal(t, contract.ReasonCancelled, d.Reason)
	assert.Equal(t, "r9", d.JobID)
	assert.Equal(t, 2, d.Attempts)
	assert.Equal(t, "jobs: cancelled: no such image", d.Error)
	require.NotNil(t, d.Envelope)
	assert.Equal(t, "r9", d.Envelope.ID)
	assert.Equal(t, jobstest.DLQURL, d.QueueURL)
}
