package tally_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/localstack/tally"
)

// Task is a test job whose args say how its run ends.
type Task struct {
	Do string `json:"do"` // "fail", "cancel", "snooze" or "" (succeed)
}

func (Task) Kind() string { return "tally.task" }

func workers() *jobs.Workers {
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[Task](func(_ context.Context, job *jobs.Job[Task]) error {
		switch job.Args.Do {
		case "fail":
			return errors.New("boom")
		case "cancel":
			return jobs.Cancel(errors.New("poison"))
		case "snooze":
			return jobs.Snooze(time.Minute)
		}
		return nil
	}))
	return w
}

// runLines runs one batch through the real runtime and returns its log lines, prefixed as a
// function's output holds them.
func runLines(t *testing.T, fifo bool, records ...events.SQSMessage) [][]byte {
	t.Helper()
	var out bytes.Buffer
	cfg := jobstest.Config(jobstest.NewRecorder(), fifo)
	cfg.Logger = slog.New(slog.NewJSONHandler(&out, nil))
	_, err := jobs.NewSQSHandler(workers(), cfg)(context.Background(), jobstest.Event(records...))
	require.NoError(t, err)
	var lines [][]byte
	for _, l := range bytes.Split(out.Bytes(), []byte("\n")) {
		if len(l) > 0 {
			lines = append(lines, append([]byte("[fn] "), l...))
		}
	}
	return lines
}

func message(id, do string, attempt int, group string) events.SQSMessage {
	return jobstest.Message(Task{Do: do}, &jobstest.MessageOpts{ID: id, MessageID: "m-" + id, Attempt: attempt, GroupID: group})
}

// ParseLine reads the outcomes the real runtime logs: a failed attempt with its error, a
// dead-letter with its reason, a snooze, and a FIFO job skipped behind a failed one.
func TestParseLineReadsTheRuntimesLines(t *testing.T) {
	t.Parallel()
	lines := runLines(t, false, message("f", "fail", 3, ""), message("c", "cancel", 1, ""), message("s", "snooze", 2, ""), message("ok", "", 1, ""))
	lines = append(lines, runLines(t, true, message("g1", "fail", 1, "acct"), message("g2", "", 1, "acct"))...)
	got := map[string]tally.Event{}
	for _, l := range lines {
		if e, ok := tally.ParseLine(l); ok {
			got[e.JobID] = e
		}
	}
	require.Equal(t, tally.Event{Type: tally.EventFailed, JobID: "f", Kind: "tally.task", MessageID: "m-f", Attempt: 3, Error: "boom"}, got["f"])
	require.Equal(t, tally.EventDeadLettered, got["c"].Type)
	require.Equal(t, jobs.ReasonCancelled, got["c"].Reason)
	require.Contains(t, got["c"].Error, "poison")
	require.Equal(t, tally.Event{Type: tally.EventReturned, JobID: "s", Kind: "tally.task", MessageID: "m-s", Attempt: 2, Note: "snoozed"}, got["s"])
	require.Equal(t, tally.EventReturned, got["g2"].Type)
	require.Equal(t, "not run: an earlier job of its FIFO group failed", got["g2"].Note)
	require.NotContains(t, got, "ok", "a success is not logged at INFO")

	_, ok := tally.ParseLine([]byte(`[fn] {"level":"INFO","msg":"job dead-lettered? no","job_id":"x"}`))
	require.False(t, ok)
	_, ok = tally.ParseLine([]byte(`not json "msg":"job failed: will retry"`))
	require.False(t, ok)
}

// Every runtime line ParseLine knows is one the runtime writes: a renamed message fails here, not
// silently in a count.
func TestParseLineKnowsOnlyTheRuntimesMessages(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../jobs/handler.go")
	require.NoError(t, err)
	for _, msg := range tally.RuntimeMessages() {
		require.Contains(t, string(src), strconv.Quote(msg), "jobs/handler.go no longer logs %q", msg)
	}
}
