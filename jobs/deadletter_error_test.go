package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// The jobkit.error attribute of a dead-lettered job holds its error text up to 4 KiB
// (docs/operations.md, docs/cli.md): a longer text is cut there, marked with "…"; a shorter one
// is kept whole.
func TestDeadLetterErrorIsCutAt4KiB(t *testing.T) {
	t.Parallel()
	prefix := len(jobs.Cancel(errors.New("")).Error()) // the runtime records the returned error's text
	for _, tc := range []struct {
		n   int
		cut bool
	}{{4096 - prefix, false}, {4097 - prefix, true}, {10_000, true}} {
		cause := strings.Repeat("e", tc.n)
		text := jobs.Cancel(errors.New(cause)).Error()
		w := jobs.NewWorkers()
		jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
			return jobs.Cancel(errors.New(cause))
		}))
		rec := jobstest.NewRecorder()
		handler := jobs.NewLambdaHandler(w, jobstest.Config(rec)).HandleSQS
		_, err := handler(context.Background(), jobstest.Event(jobstest.Message(TestJob{N: 1}, nil)))
		require.NoError(t, err)
		dead := rec.DeadLetters()
		require.Len(t, dead, 1)
		got := dead[0].Error
		if !tc.cut {
			assert.Equal(t, text, got, "%d bytes kept whole", len(text))
			continue
		}
		assert.Len(t, got, 4096, "%d bytes cut to 4 KiB", len(text))
		assert.True(t, strings.HasSuffix(got, "…"), "the cut is marked")
		assert.True(t, strings.HasPrefix(text, strings.TrimSuffix(got, "…")), "the start of the error is kept")
	}
}
