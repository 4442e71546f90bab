package tally_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/offline/tally"
	"github.com/jobkit-go/jobkit/testkit/awstest"
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

// runLines runs one batch through the real runtime and returns its output lines (log and event
// lines, as JOBKIT_EVENTS=stdout writes them), prefixed as a function's output holds them.
func runLines(t *testing.T, fifo bool, records ...events.SQSMessage) [][]byte {
	t.Helper()
	// One writer for the log and the events, which jobs write from several goroutines: each
	// keeps its own lock, so the buffer needs one too.
	var out awstest.SyncBuffer
	cfg := jobstest.Config(jobstest.NewRecorder(), fifo)
	cfg.Logger = slog.New(slog.NewJSONHandler(&out, nil))
	cfg.OnEvent = event.Write(&out)
	_, err := jobs.NewLambdaHandler(workers(), cfg).HandleSQS(context.Background(), jobstest.Event(records...))
	require.NoError(t, err)
	var lines [][]byte
	for _, l := range bytes.Split([]byte(out.String()), []byte("\n")) {
		if len(l) > 0 {
			lines = append(lines, append([]byte("[fn] "), l...))
		}
	}
	return lines
}

func message(id, do string, attempt int, group string) events.SQSMessage {
	return jobstest.Message(Task{Do: do}, &jobstest.MessageOpts{ID: id, MessageID: "m-" + id, Attempt: attempt, GroupID: group})
}

// ParseLine reads the outcomes the real runtime reports: a failed attempt with its error, a
// dead-letter with its reason, a snooze, and a FIFO job skipped behind a failed one — from the
// event lines only, never the log text.
func TestParseLineReadsTheRuntimesEvents(t *testing.T) {
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
	require.Equal(t, contract.ReasonCancelled, got["c"].Reason)
	require.Contains(t, got["c"].Error, "poison")
	require.Equal(t, tally.Event{Type: tally.EventReturned, JobID: "s", Kind: "tally.task", MessageID: "m-s", Attempt: 2, Note: "snoozed"}, got["s"])
	require.Equal(t, tally.EventReturned, got["g2"].Type)
	require.Equal(t, "not run: an earlier job of its FIFO group failed", got["g2"].Note)
	require.NotContains(t, got, "ok", "a success is learnt from the queue")

	_, ok := tally.ParseLine([]byte(`[fn] {"level":"ERROR","msg":"job dead-lettered","job_id":"x","reason":"cancelled"}`))
	require.False(t, ok, "a log line is not an event")
	_, ok = tally.ParseLine([]byte(`not json "event":"dead"`))
	require.False(t, ok)
}
