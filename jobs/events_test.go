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
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// eventsByMessage runs ev through a handler whose events WriteEvents writes, and reads them back
// with ParseEvent: the types each message met, in order.
func eventsByMessage(t *testing.T, cfg jobs.Config, workers *jobs.Workers, ev []events.SQSMessage) map[string][]jobs.Event {
	t.Helper()
	var buf bytes.Buffer
	cfg.OnEvent = jobs.WriteEvents(&buf)
	handler := jobs.NewSQSHandler(workers, cfg)
	_, err := handler(context.Background(), jobstest.Event(ev...))
	require.NoError(t, err)
	out := map[string][]jobs.Event{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		e, ok := jobs.ParseEvent(append([]byte("[fn] "), sc.Bytes()...))
		require.True(t, ok, "every line WriteEvents writes parses: %s", sc.Text())
		out[e.MessageID] = append(out[e.MessageID], e)
	}
	return out
}

func types(list []jobs.Event) []jobs.EventType {
	var out []jobs.EventType
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

	assert.Equal(t, []jobs.EventType{jobs.EventStarted, jobs.EventSucceeded}, types(got["m1"]))
	assert.Equal(t, []jobs.EventType{jobs.EventStarted, jobs.EventRetried}, types(got["m2"]))
	assert.Equal(t, 7*time.Second, got["m2"][1].Delay)
	assert.Contains(t, got["m2"][1].Error, "job 2 failed")
	assert.Equal(t, []jobs.EventType{jobs.EventStarted, jobs.EventDead}, types(got["m3"]))
	assert.Equal(t, contract.ReasonCancelled, got["m3"][1].Reason)
	assert.Equal(t, []jobs.EventType{jobs.EventStarted, jobs.EventSnoozed}, types(got["m4"]))
	assert.Equal(t, []jobs.EventType{jobs.EventDead}, types(got["m5"]), "a malformed message never starts")
	assert.Equal(t, contract.ReasonMalformed, got["m5"][0].Reason)

	e := got["m1"][1]
	assert.Equal(t, "test.job", e.Kind)
	assert.NotEmpty(t, e.JobID)
	assert.Equal(t, 1, e.Attempt)
	assert.Equal(t, jobs.QueueName(jobstest.QueueURL), e.Queue)
	assert.False(t, e.Time.IsZero())
}

func TestHandlerReportsFIFOSkipsAsNotRun(t *testing.T) {
	t.Parallel()
	cfg := jobstest.Config(jobstest.NewRecorder(), true)
	a := &jobstest.MessageOpts{GroupID: "A"}
	got := eventsByMessage(t, cfg, testWorkers(nil), []events.SQSMessage{msg(1, "fail", a), msg(2, "", a)})
	assert.Equal(t, []jobs.EventType{jobs.EventStarted, jobs.EventRetried}, types(got["m1"]))
	require.Equal(t, []jobs.EventType{jobs.EventNotRun}, types(got["m2"]))
	assert.Equal(t, jobs.NoteFIFOSkipped, got["m2"][0].Note)
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
		_, ok := jobs.ParseEvent([]byte(line))
		assert.False(t, ok, line)
	}
}
