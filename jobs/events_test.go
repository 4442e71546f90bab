package jobs_test

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// eventsByMessage runs ev through a handler whose events event.Write writes, and reads them back
// with event.Parse: the types each message met, in order.
func eventsByMessage(t *testing.T, cfg jobs.Config, workers *jobs.Workers, ev []events.SQSMessage) map[string][]event.Event {
	t.Helper()
	var buf bytes.Buffer
	cfg.OnEvent = event.Write(&buf)
	handler := jobs.NewLambdaHandler(workers, cfg).HandleSQS
	_, err := handler(context.Background(), jobstest.Event(ev...))
	require.NoError(t, err)
	out := map[string][]event.Event{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		e, ok := event.Parse(append([]byte("[fn] "), sc.Bytes()...))
		require.True(t, ok, "every line event.Write writes parses: %s", sc.Text())
		out[e.MessageID] = append(out[e.MessageID], e)
	}
	return out
}

func types(list []event.Event) []event.Type {
	var out []event.Type
	for _, e := range list {
		out = append(out, e.Type)
	}
	return out
}

func TestHandlerReportsEachJobsStartAndOutcome(t *testing.T) {
	t.Parallel()
	cfg := jobstest.Config(jobstest.NewRecorder())
	cfg.Backoff = fixedBackoff(7 * time.Second)
	ev := []events.SQSMessage{
		msg(1, "", nil),
		msg(2, "fail", nil),
		msg(3, "cancel", nil),
		msg(4, "snooze", nil),
		jobstest.RawMessage(`{"v":1,"id":"x"`, &jobstest.MessageOpts{MessageID: "m5"}),
	}
	got := eventsByMessage(t, cfg, testWorkers(nil), ev)

	assert.Equal(t, []event.Type{event.Started, event.Succeeded}, types(got["m1"]))
	assert.Equal(t, []event.Type{event.Started, event.Retried}, types(got["m2"]))
	assert.Equal(t, 7*time.Second, got["m2"][1].Delay)
	assert.Contains(t, got["m2"][1].Error, "job 2 failed")
	assert.Equal(t, []event.Type{event.Started, event.Dead}, types(got["m3"]))
	assert.Equal(t, contract.ReasonCancelled, got["m3"][1].Reason)
	assert.Equal(t, []event.Type{event.Started, event.Snoozed}, types(got["m4"]))
	assert.Equal(t, []event.Type{event.Dead}, types(got["m5"]), "a malformed message never starts")
	assert.Equal(t, contract.ReasonMalformed, got["m5"][0].Reason)

	e := got["m1"][1]
	assert.Equal(t, "test.job", e.Kind)
	assert.NotEmpty(t, e.JobID)
	assert.Equal(t, 1, e.Attempt)
	assert.Equal(t, awsarn.QueueName(jobstest.QueueURL), e.Queue)
	assert.False(t, e.Time.IsZero())
}

func TestHandlerReportsFIFOSkipsAsNotRun(t *testing.T) {
	t.Parallel()
	cfg := jobstest.Config(jobstest.NewRecorder(), true)
	a := &jobstest.MessageOpts{GroupID: "A"}
	got := eventsByMessage(t, cfg, testWorkers(nil), []events.SQSMessage{msg(1, "fail", a), msg(2, "", a)})
	assert.Equal(t, []event.Type{event.Started, event.Retried}, types(got["m1"]))
	require.Equal(t, []event.Type{event.NotRun}, types(got["m2"]))
	assert.Equal(t, event.NoteFIFOSkipped, got["m2"][0].Note)
	assert.Equal(t, "A", got["m2"][0].GroupID)
}

func TestParseEventRefusesLogLines(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		`{"time":"2026-11-27T10:00:00Z","level":"ERROR","msg":"job dead-lettered","job_id":"j","event":"dead"}`,
		`not json {"event":`,
		`{"event":""}`,
		``,
	} {
		_, ok := event.Parse([]byte(line))
		assert.False(t, ok, line)
	}
}
