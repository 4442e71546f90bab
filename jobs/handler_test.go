package jobs_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobkit-go/jobkit/testkit/awstest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// TestJob does what its Mode says: "" succeeds, "fail" retries, "cancel" dead-letters, "snooze"
// snoozes for Seconds, "panic" panics, "block" waits for its context, "sleep" sleeps Seconds
// ignoring its context, "mismatch" returns an error with its own dead-letter reason.
type TestJob struct {
	N       int     `json:"n"`
	Mode    string  `json:"mode,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Group   string  `json:"group,omitempty"`
}

func (TestJob) Kind() string { return "test.job" }

// OtherJob has no worker in the registries the tests build.
type OtherJob struct{}

func (OtherJob) Kind() string { return "test.other" }

type reasonError struct{}

func (reasonError) Error() string            { return "same key, different payload" }
func (reasonError) DeadLetterReason() string { return contract.ReasonPayloadMismatch }

// ran records which jobs ran, in order.
type ran struct {
	mu   sync.Mutex
	jobs []int
}

func (r *ran) add(n int) { r.mu.Lock(); r.jobs = append(r.jobs, n); r.mu.Unlock() }
func (r *ran) list() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.jobs...)
}

func testWorkers(r *ran) *jobs.Workers {
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		if r != nil {
			r.add(job.Args.N)
		}
		d := time.Duration(job.Args.Seconds * float64(time.Second))
		switch job.Args.Mode {
		case "fail":
			return fmt.Errorf("job %d failed", job.Args.N)
		case "cancel":
			return jobs.Cancel(fmt.Errorf("job %d cannot succeed", job.Args.N))
		case "sleep-cancel": // ignores its context
			time.Sleep(d)
			return jobs.Cancel(fmt.Errorf("job %d cannot succeed", job.Args.N))
		case "snooze":
			return jobs.Snooze(d)
		case "panic":
			panic(fmt.Sprintf("job %d panics", job.Args.N))
		case "block":
			<-ctx.Done()
			return ctx.Err()
		case "sleep":
			time.Sleep(d)
		case "mismatch":
			return fmt.Errorf("idempotency: %w", reasonError{})
		}
		return nil
	}))
	return w
}

func msg(n int, mode string, opts *jobstest.MessageOpts) events.SQSMessage {
	o := jobstest.MessageOpts{MessageID: fmt.Sprintf("m%d", n)}
	if opts != nil {
		o = *opts
		if o.MessageID == "" {
			o.MessageID = fmt.Sprintf("m%d", n)
		}
	}
	return jobstest.Message(TestJob{N: n, Mode: mode}, &o)
}

func fixedBackoff(d time.Duration) jobs.BackoffFunc {
	return func(int) time.Duration { return d }
}

func TestHandlerOutcomes(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec)
	cfg.Backoff = fixedBackoff(7 * time.Second)
	cfg.MaxAttempts = 3
	handler := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS

	first := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	ev := jobstest.Event(
		msg(1, "", nil),
		msg(2, "fail", &jobstest.MessageOpts{Attempt: 2}),
		msg(3, "cancel", nil),
		msg(4, "snooze", nil),
		jobstest.RawMessage(`{"v":1,"id":"x"`, &jobstest.MessageOpts{MessageID: "m5"}),
		jobstest.RawMessage(`{"v":2,"id":"x","kind":"test.job","args":{}}`, &jobstest.MessageOpts{MessageID: "m6"}),
		jobstest.Message(OtherJob{}, &jobstest.MessageOpts{MessageID: "m7", ID: "other-1"}),
		jobstest.RawMessage(`{"v":1,"id":"x8","kind":"test.job","args":{"n":"eight"}}`, &jobstest.MessageOpts{MessageID: "m8"}),
		msg(9, "mismatch", nil),
		msg(10, "fail", &jobstest.MessageOpts{ID: "last-try", Attempt: 3, FirstReceivedAt: first}),
		jobstest.Message(OtherJob{}, &jobstest.MessageOpts{MessageID: "m11", ID: "other-2", Attempt: 3}),
	)
	ev.Records[3].Body = jobstest.Body(TestJob{N: 4, Mode: "snooze", Seconds: 90}, nil)

	resp, err := handler(context.Background(), ev)
	require.NoError(t, err)
	// m7: a kind this function does not know (yet) is retried with backoff (deploy skew); on
	// its last attempt (m11) it is dead-lettered as unknown_kind.
	assert.ElementsMatch(t, []string{"m2", "m4", "m7"}, jobstest.FailedIDs(resp))
	vis, ok := rec.VisibilityOf(ev.Records[6].ReceiptHandle)
	require.True(t, ok, "an unknown kind retries with backoff")
	assert.Equal(t, 7*time.Second, vis)

	vis, ok = rec.VisibilityOf(ev.Records[1].ReceiptHandle)
	require.True(t, ok, "retry sets the visibility")
	assert.Equal(t, 7*time.Second, vis)
	vis, ok = rec.VisibilityOf(ev.Records[3].ReceiptHandle)
	require.True(t, ok, "snooze sets the visibility")
	assert.Equal(t, 90*time.Second, vis)

	reasons := map[string]jobstest.DeadLetter{}
	for _, d := range rec.DeadLetters() {
		reasons[d.SourceMessageID] = d
	}
	want := map[string]string{
		"m3": contract.ReasonCancelled, "m5": contract.ReasonMalformed, "m6": contract.ReasonVersion,
		"m11": contract.ReasonUnknownKind, "m8": contract.ReasonBadArgs, "m9": contract.ReasonPayloadMismatch,
		"m10": contract.ReasonAttemptsUsed,
	}
	require.Len(t, reasons, len(want))
	for id, reason := range want {
		assert.Equal(t, reason, reasons[id].Reason, id)
		assert.Equal(t, jobstest.QueueURL, reasons[id].SourceQueue, id)
		assert.Equal(t, "jobkit-test", reasons[id].Function, id)
		assert.NotEmpty(t, reasons[id].Error, id)
		assert.False(t, reasons[id].FailedAt.IsZero(), id)
	}
	last := reasons["m10"]
	assert.Equal(t, 3, last.Attempts)
	assert.Equal(t, "last-try", last.JobID)
	assert.Equal(t, "test.job", last.Kind)
	assert.Contains(t, last.Error, "job 10 failed")
	assert.True(t, first.Equal(last.FirstReceivedAt), "first receive %s", last.FirstReceivedAt)
	assert.Equal(t, ev.Records[9].Body, last.Body, "the body is dead-lettered unchanged")
	assert.Equal(t, "other-2", reasons["m11"].JobID)
	assert.Equal(t, "test.other", reasons["m11"].Kind)
	assert.Contains(t, reasons["m3"].Error, "job 3 cannot succeed")
}

func TestHandlerDeadLetterSendFailureIsReported(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	rec.SendMessageFunc = func(context.Context, *sqs.SendMessageInput) (*sqs.SendMessageOutput, error) {
		return nil, errors.New("dlq down")
	}
	handler := jobs.NewLambdaHandler(testWorkers(nil), jobstest.Config(rec)).HandleSQS
	resp, err := handler(context.Background(), jobstest.Event(msg(1, "cancel", nil), msg(2, "", nil)))
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, jobstest.FailedIDs(resp))
}

func TestHandlerPanicFailsOnlyItsRecord(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	handler := jobs.NewLambdaHandler(testWorkers(nil), jobstest.Config(rec)).HandleSQS
	resp, err := handler(context.Background(), jobstest.Event(msg(1, "", nil), msg(2, "panic", nil), msg(3, "", nil)))
	require.NoError(t, err)
	assert.Equal(t, []string{"m2"}, jobstest.FailedIDs(resp))
}

func TestHandlerJobTimeoutFailsOnlyThatJob(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec)
	cfg.JobTimeout = 300 * time.Millisecond
	handler := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS
	resp, err := handler(context.Background(), jobstest.Event(msg(1, "", nil), msg(2, "block", nil), msg(3, "", nil)))
	require.NoError(t, err)
	assert.Equal(t, []string{"m2"}, jobstest.FailedIDs(resp))
}

func TestHandlerLambdaDeadline(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec)
	cfg.SafetyMargin = time.Second
	handler := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS

	// A job that honours its context fails when the deadline nears; one that ignores it is
	// abandoned and reported failed; the handler returns before the Lambda deadline either way.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	slow := jobstest.Message(TestJob{N: 3, Mode: "sleep", Seconds: 30}, &jobstest.MessageOpts{MessageID: "m3"})
	resp, err := handler(ctx, jobstest.Event(msg(1, "", nil), msg(2, "block", nil), slow, msg(4, "", nil)))
	require.NoError(t, err)
	assert.True(t, time.Now().Before(deadline), "returned before the Lambda deadline")
	assert.ElementsMatch(t, []string{"m2", "m3"}, jobstest.FailedIDs(resp))
}

func TestHandlerConcurrencyLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ limit, jobs int }{{3, 12}, {10, 10}, {10, 25}} {
		t.Run(fmt.Sprintf("limit %d, %d jobs", tc.limit, tc.jobs), func(t *testing.T) {
			t.Parallel()
			var now, peak atomic.Int32
			w := jobs.NewWorkers()
			jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
				n := now.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(200 * time.Millisecond)
				now.Add(-1)
				return nil
			}))
			cfg := jobstest.Config(jobstest.NewRecorder())
			cfg.Concurrency = tc.limit
			handler := jobs.NewLambdaHandler(w, cfg).HandleSQS
			var recs []events.SQSMessage
			for i := 0; i < tc.jobs; i++ {
				recs = append(recs, msg(i, "", nil))
			}
			resp, err := handler(context.Background(), jobstest.Event(recs...))
			require.NoError(t, err)
			assert.Empty(t, resp.BatchItemFailures)
			assert.Equal(t, int32(tc.limit), peak.Load(), "slow jobs run %d at once, no more", tc.limit)
		})
	}
}

func TestHandlerFIFOSkipGroup(t *testing.T) {
	t.Parallel()
	r := &ran{}
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec, true)
	cfg.Backoff = fixedBackoff(5 * time.Second)
	handler := jobs.NewLambdaHandler(testWorkers(r), cfg).HandleSQS
	a := &jobstest.MessageOpts{GroupID: "A"}
	b := &jobstest.MessageOpts{GroupID: "B"}
	ev := jobstest.Event(msg(1, "", a), msg(10, "", b), msg(2, "fail", a), msg(11, "", b), msg(3, "", a), msg(12, "", b))
	resp, err := handler(context.Background(), ev)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"m2", "m3"}, jobstest.FailedIDs(resp))
	assert.ElementsMatch(t, []int{1, 2, 10, 11, 12}, r.list(), "job 3 never ran")
	// The skipped record returns with the failed one.
	for _, i := range []int{2, 4} {
		vis, ok := rec.VisibilityOf(ev.Records[i].ReceiptHandle)
		require.True(t, ok)
		assert.Equal(t, 5*time.Second, vis)
	}
}

// A FIFO group handed back whole returns last first, at a second at least, so that its first
// record ends its visibility after the ones behind it (emulators that release a group when one
// message is visible again then release it in one pass: conformance check
// sqs/fifo-lock-behind-in-flight). A group's lone record keeps its delay, 0 included.
func TestHandlerFIFOHandsGroupBackLastFirst(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec, true)
	cfg.Backoff = fixedBackoff(0)
	handler := jobs.NewLambdaHandler(testWorkers(&ran{}), cfg).HandleSQS
	a := &jobstest.MessageOpts{GroupID: "A"}
	b := &jobstest.MessageOpts{GroupID: "B"}
	ev := jobstest.Event(msg(1, "", a), msg(2, "fail", a), msg(10, "fail", b), msg(3, "", a), msg(4, "", a))
	resp, err := handler(context.Background(), ev)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"m2", "m3", "m4", "m10"}, jobstest.FailedIDs(resp))
	var order []string // group A's
	got := map[string]time.Duration{}
	for _, v := range rec.Visibility() {
		for _, r := range ev.Records {
			if r.ReceiptHandle == v.ReceiptHandle {
				if r.MessageId != "m10" {
					order = append(order, r.MessageId)
				}
				got[r.MessageId] = v.Timeout
			}
		}
	}
	assert.Equal(t, []string{"m4", "m3", "m2"}, order, "last first")
	assert.Equal(t, map[string]time.Duration{"m2": time.Second, "m3": time.Second, "m4": time.Second, "m10": 0}, got)
}

func TestHandlerFIFOGroupsRunInOrder(t *testing.T) {
	t.Parallel()
	r := &ran{}
	cfg := jobstest.Config(jobstest.NewRecorder(), true)
	handler := jobs.NewLambdaHandler(testWorkers(r), cfg).HandleSQS
	var recs []events.SQSMessage
	for i := 0; i < 10; i++ {
		recs = append(recs, msg(i, "", &jobstest.MessageOpts{GroupID: fmt.Sprint("g", i%2)}))
	}
	_, err := handler(context.Background(), jobstest.Event(recs...))
	require.NoError(t, err)
	var even, odd []int
	for _, n := range r.list() {
		if n%2 == 0 {
			even = append(even, n)
		} else {
			odd = append(odd, n)
		}
	}
	assert.Equal(t, []int{0, 2, 4, 6, 8}, even)
	assert.Equal(t, []int{1, 3, 5, 7, 9}, odd)
}

func TestHandlerMiddlewareWrapsEveryJob(t *testing.T) {
	t.Parallel()
	w := testWorkers(nil)
	var mu sync.Mutex
	var seen []string
	w.Use(func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("outer:%s:%d", row.Kind, row.Attempt))
			mu.Unlock()
			return next(ctx, row)
		}
	}, func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			if row.Key == "skip" {
				return nil // e.g. idempotency: already done
			}
			return next(ctx, row)
		}
	})
	handler := jobs.NewLambdaHandler(w, jobstest.Config(jobstest.NewRecorder())).HandleSQS
	ev := jobstest.Event(
		msg(1, "", &jobstest.MessageOpts{Attempt: 2}),
		jobstest.Message(TestJob{N: 2, Mode: "fail"}, &jobstest.MessageOpts{MessageID: "m2", Key: "skip"}),
	)
	resp, err := handler(context.Background(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "the middleware short-circuited the failing job")
	assert.ElementsMatch(t, []string{"outer:test.job:2", "outer:test.job:1"}, seen)
}

func TestHandlerMetricsOneEMFLinePerBatch(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	cfg := jobstest.Config(jobstest.NewRecorder())
	cfg.Metrics = &buf
	cfg.MaxAttempts = 2
	handler := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS
	_, err := handler(context.Background(), jobstest.Event(
		msg(1, "", nil), msg(2, "", nil), msg(3, "fail", nil), msg(4, "snooze", nil), msg(5, "cancel", nil),
		msg(6, "fail", &jobstest.MessageOpts{Attempt: 2}),
	))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1, "one line per batch")
	var emf struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Queue, Kind                       string
		Succeeded, Retried, Snoozed, Dead int
		Duration                          []float64
		Attempt                           []int
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &emf))
	require.Len(t, emf.AWS.CloudWatchMetrics, 1)
	d := emf.AWS.CloudWatchMetrics[0]
	assert.Equal(t, contract.MetricNamespace, d.Namespace)
	assert.Equal(t, [][]string{{contract.DimensionQueue}, {contract.DimensionQueue, contract.DimensionKind}}, d.Dimensions)
	assert.Equal(t, TestJob{}.Kind(), emf.Kind)
	units := map[string]string{}
	for _, m := range d.Metrics {
		units[m.Name] = m.Unit
	}
	assert.Equal(t, map[string]string{
		"Succeeded": "Count", "Retried": "Count", "Snoozed": "Count", "Dead": "Count",
		"Duration": "Milliseconds", "Attempt": "Count",
	}, units)
	assert.InDelta(t, time.Now().UnixMilli(), emf.AWS.Timestamp, 60_000)
	assert.Equal(t, "jobkit-test", emf.Queue)
	assert.Equal(t, 2, emf.Succeeded)
	assert.Equal(t, 1, emf.Retried)
	assert.Equal(t, 1, emf.Snoozed)
	assert.Equal(t, 2, emf.Dead, "cancelled and out of attempts")
	assert.Len(t, emf.Duration, 6)
	assert.ElementsMatch(t, []int{1, 1, 1, 1, 1, 2}, emf.Attempt)
}

// A batch of several kinds writes a line per kind, each with its kind as the Kind dimension; a
// kind no worker runs (and a malformed body) is "unknown", so messages cannot add dimension
// values. The Queue-level figures are the sums over the lines.
func TestHandlerMetricsPerKind(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	cfg := jobstest.Config(jobstest.NewRecorder())
	cfg.Metrics = &buf
	w := testWorkers(nil)
	jobs.AddWorker(w, jobs.WorkFunc[LoggingJob](func(context.Context, *jobs.Job[LoggingJob]) error { return nil }))
	handler := jobs.NewLambdaHandler(w, cfg).HandleSQS
	_, err := handler(context.Background(), jobstest.Event(
		msg(1, "", nil), jobstest.Message(LoggingJob{}, nil), msg(2, "fail", nil),
		jobstest.Message(madeUpJob{}, nil), jobstest.RawMessage("not json", nil),
	))
	require.NoError(t, err)
	type line struct {
		Kind               string
		Succeeded, Retried int
		Dead               int
	}
	got := map[string]line{}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var v line
		require.NoError(t, json.Unmarshal([]byte(l), &v))
		_, dup := got[v.Kind]
		require.False(t, dup, "one line per kind: %s", l)
		got[v.Kind] = v
	}
	assert.Equal(t, map[string]line{
		TestJob{}.Kind():    {Kind: TestJob{}.Kind(), Succeeded: 1, Retried: 1},
		LoggingJob{}.Kind(): {Kind: LoggingJob{}.Kind(), Succeeded: 1},
		// The malformed body is dead at once; the unknown kind retried (a deploy may bring its
		// worker) until its last attempt.
		contract.KindUnknown: {Kind: contract.KindUnknown, Retried: 1, Dead: 1},
	}, got)
}

// madeUpJob is a kind no worker runs.
type madeUpJob struct{}

func (madeUpJob) Kind() string { return "made.up" }

func TestHandlerLogLinesCarryJobIdentity(t *testing.T) {
	t.Parallel()
	var buf awstest.SyncBuffer
	cfg := jobstest.Config(jobstest.NewRecorder())
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := testWorkers(nil)
	jobs.AddWorker(w, jobs.WorkFunc[LoggingJob](func(ctx context.Context, job *jobs.Job[LoggingJob]) error {
		job.Logger().Info("working", "step", 1)
		return nil
	}))
	handler := jobs.NewLambdaHandler(w, cfg).HandleSQS
	_, err := handler(context.Background(), jobstest.Event(
		msg(1, "", nil), msg(2, "fail", nil), msg(3, "cancel", nil), msg(4, "snooze", nil),
		jobstest.Message(LoggingJob{}, &jobstest.MessageOpts{ID: "log-1", Attempt: 3}),
	))
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	lines := 0
	for sc.Scan() {
		lines++
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		for _, k := range []string{"job_id", "kind", "attempt", "message_id"} {
			assert.Contains(t, line, k, sc.Text())
		}
		if line["msg"] == "working" {
			assert.Equal(t, "log-1", line["job_id"])
			assert.Equal(t, float64(3), line["attempt"])
			assert.Equal(t, float64(1), line["step"])
		}
	}
	assert.GreaterOrEqual(t, lines, 6, "a line per job and the job's own")
}

// LoggingJob logs through job.Logger.
type LoggingJob struct{}

func (LoggingJob) Kind() string { return "test.logging" }

func TestHandlerHeartbeatExtendsUnfinishedRecords(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec)
	cfg.VisibilityTimeout = 3 * time.Second // a beat every second
	handler := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS
	var recs []events.SQSMessage
	for i := 0; i < 12; i++ {
		mode := ""
		if i == 0 {
			mode = "sleep"
		}
		m := jobstest.Message(TestJob{N: i, Mode: mode, Seconds: 2.5}, &jobstest.MessageOpts{MessageID: fmt.Sprint("m", i)})
		recs = append(recs, m)
	}
	resp, err := handler(context.Background(), jobstest.Event(recs...))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	beats := 0
	for _, v := range rec.Visibility() {
		require.True(t, v.Batch)
		assert.Equal(t, 3*time.Second, v.Timeout)
		beats++
	}
	// Every record of the batch is extended (it is deleted only after the handler returns), 10 per call.
	assert.GreaterOrEqual(t, beats, 12)
	assert.Zero(t, beats%12, "whole batches of records per beat")
}

func TestHandlerEmptyBatch(t *testing.T) {
	t.Parallel()
	handler := jobs.NewLambdaHandler(testWorkers(nil), jobstest.Config(jobstest.NewRecorder())).HandleSQS
	resp, err := handler(context.Background(), events.SQSEvent{})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
}

func TestNewLambdaHandlerPanicsOnInvalidConfig(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() { jobs.NewLambdaHandler(jobs.NewWorkers(), jobs.Config{}) })
	cfg := jobstest.Config(jobstest.NewRecorder())
	cfg.DLQURL = ""
	assert.PanicsWithError(t, "jobs: invalid Config: DLQURL is empty", func() { jobs.NewLambdaHandler(jobs.NewWorkers(), cfg) })
}

var _ = io.Discard

// Job data is untrusted: a huge enqueued_at, a 100,000-digit number or a 20,000-character kind
// reaches the log capped at 1 KiB per value, and every line stays valid JSON.
func TestHandlerLogsCapJobData(t *testing.T) {
	t.Parallel()
	var buf awstest.SyncBuffer
	cfg := jobstest.Config(jobstest.NewRecorder())
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	handler := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS
	huge := strings.Repeat("9", 100_000)
	_, err := handler(context.Background(), jobstest.Event(
		jobstest.RawMessage(`{"v":1,"id":"a","kind":"test.job","args":{},"enqueued_at":"`+strings.Repeat("2", 1<<20)+`"}`, &jobstest.MessageOpts{MessageID: "m1"}),
		jobstest.RawMessage(`{"v":1,"id":"b","kind":"test.job","args":{"n":`+huge+`}}`, &jobstest.MessageOpts{MessageID: "m2"}),
		jobstest.RawMessage(`{"v":1,"id":"c","kind":"`+strings.Repeat("k", 20_000)+`","args":{}}`, &jobstest.MessageOpts{MessageID: "m3", Attempt: 5}),
	))
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	sc.Buffer(nil, 1<<22)
	lines := 0
	for sc.Scan() {
		lines++
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "a log line is JSON")
		for k, v := range line {
			if s, ok := v.(string); ok {
				assert.LessOrEqual(t, len(s), 1024+32, "%s of %q is %d bytes", k, line["msg"], len(s))
			}
		}
	}
	require.NoError(t, sc.Err())
	assert.GreaterOrEqual(t, lines, 3, "a line per record")
}
