package jobs_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

var _ lambda.Handler = (*jobs.LambdaHandler)(nil)

// outcomesEvent is a batch with a record of every outcome.
func outcomesEvent() events.SQSEvent {
	ev := jobstest.Event(
		msg(1, "", nil),
		msg(2, "fail", &jobstest.MessageOpts{Attempt: 2}),
		msg(3, "cancel", nil),
		msg(4, "snooze", nil),
		jobstest.RawMessage(`{"v":1,"id":"x"`, &jobstest.MessageOpts{MessageID: "m5"}),
		jobstest.Message(OtherJob{}, &jobstest.MessageOpts{MessageID: "m7", ID: "other-1"}),
		msg(10, "fail", &jobstest.MessageOpts{ID: "last-try", Attempt: 3}),
		jobstest.Message(OtherJob{}, &jobstest.MessageOpts{MessageID: "m\"<é>\u2028", ID: "other-2"}),
	)
	ev.Records[3].Body = jobstest.Body(TestJob{N: 4, Mode: "snooze", Seconds: 90}, nil)
	return ev
}

// TestLambdaHandlerMatchesSQSHandler runs the same payload through NewLambdaHandler and through
// NewLambdaHandler behind aws-lambda-go's typed handler: the same response bytes, the same calls.
func TestLambdaHandlerMatchesSQSHandler(t *testing.T) {
	t.Parallel()
	payload, err := json.Marshal(outcomesEvent())
	require.NoError(t, err)
	run := func(raw bool) ([]byte, *jobstest.Recorder) {
		rec := jobstest.NewRecorder()
		cfg := jobstest.Config(rec)
		cfg.Backoff = fixedBackoff(7e9)
		cfg.MaxAttempts = 3
		var h lambda.Handler = lambda.NewHandler(jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS)
		if raw {
			h = jobs.NewLambdaHandler(testWorkers(nil), cfg)
		}
		out, err := h.Invoke(context.Background(), payload)
		require.NoError(t, err)
		return out, rec
	}
	typedOut, typedRec := run(false)
	rawOut, rawRec := run(true)
	assert.Equal(t, string(typedOut), string(rawOut))
	var resp events.SQSEventResponse
	require.NoError(t, json.Unmarshal(rawOut, &resp))
	assert.ElementsMatch(t, []string{"m2", "m4", "m7", "m\"<é>\u2028"}, jobstest.FailedIDs(resp))
	assert.Equal(t, len(typedRec.DeadLetters()), len(rawRec.DeadLetters()))
	for _, d := range rawRec.DeadLetters() {
		assert.NotEmpty(t, d.Reason)
	}
	ev := outcomesEvent()
	for _, i := range []int{1, 3, 5} {
		want, _ := typedRec.VisibilityOf(ev.Records[i].ReceiptHandle)
		got, ok := rawRec.VisibilityOf(ev.Records[i].ReceiptHandle)
		assert.True(t, ok)
		assert.Equal(t, want, got)
	}
}

func TestLambdaHandlerEmptyAndInvalidEvents(t *testing.T) {
	t.Parallel()
	h := jobs.NewLambdaHandler(testWorkers(nil), jobstest.Config(jobstest.NewRecorder()))
	for _, p := range []string{`{}`, `{"Records":[]}`, `null`} {
		out, err := h.Invoke(context.Background(), []byte(p))
		require.NoError(t, err, p)
		assert.Equal(t, `{"batchItemFailures":[]}`, string(out), p)
	}
	_, err := h.Invoke(context.Background(), []byte(`{"Records":[{"body":1}]}`))
	assert.Error(t, err)
	_, err = h.Invoke(context.Background(), []byte(`{"Records":`))
	assert.Error(t, err)
}

func TestLambdaHandlerFIFOGroups(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec)
	cfg.QueueURL += ".fifo"
	cfg.DLQURL += ".fifo"
	r := &ran{}
	h := jobs.NewLambdaHandler(testWorkers(r), cfg)
	ev := jobstest.Event(
		msg(1, "fail", &jobstest.MessageOpts{GroupID: "a"}),
		msg(2, "", &jobstest.MessageOpts{GroupID: "a"}),
		msg(3, "", &jobstest.MessageOpts{GroupID: "b"}),
	)
	payload, err := json.Marshal(ev)
	require.NoError(t, err)
	out, err := h.Invoke(context.Background(), payload)
	require.NoError(t, err)
	var resp events.SQSEventResponse
	require.NoError(t, json.Unmarshal(out, &resp))
	assert.ElementsMatch(t, []string{ev.Records[0].MessageId, ev.Records[1].MessageId}, jobstest.FailedIDs(resp),
		"the group's first failure skips the rest of the group")
	assert.ElementsMatch(t, []int{1, 3}, r.list())
}
