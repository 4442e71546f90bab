package esm_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Each documented ReportBatchItemFailures rule, on the emulator, with a real function binary that
// returns that kind of response: which messages are deleted, which stay in the queue.
func TestReportBatchItemFailuresRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		bodies    []string
		verdict   esm.Verdict
		outcome   lambdaruntime.Outcome
		survivors []string // bodies left in the queue
	}{
		// Complete success: empty list, null list, empty response, null response.
		{"empty list", []string{"mode:empty-list", "ok", "fail"}, esm.AllSucceeded, lambdaruntime.Success, nil},
		{"null list", []string{"mode:null-list", "ok", "fail"}, esm.AllSucceeded, lambdaruntime.Success, nil},
		{"empty object", []string{"mode:empty-object", "ok", "fail"}, esm.AllSucceeded, lambdaruntime.Success, nil},
		{"empty response", []string{"mode:empty-body", "ok", "fail"}, esm.AllSucceeded, lambdaruntime.Success, nil},
		{"null response", []string{"mode:null", "ok", "fail"}, esm.AllSucceeded, lambdaruntime.Success, nil},
		// Listed items stay, the others are deleted.
		{"listed ids", []string{"ok-1", "fail", "ok-2", "fail"}, esm.Partial, lambdaruntime.Success, []string{"fail", "fail"}},
		{"none listed", []string{"ok-1", "ok-2"}, esm.AllSucceeded, lambdaruntime.Success, nil},
		// Complete failure: nothing deleted.
		{"unknown id", []string{"mode:unknown-id", "fail", "ok"}, esm.BatchFailed, lambdaruntime.Success, []string{"fail", "mode:unknown-id", "ok"}},
		{"empty id", []string{"mode:empty-id", "ok"}, esm.BatchFailed, lambdaruntime.Success, []string{"mode:empty-id", "ok"}},
		{"null id", []string{"mode:null-id", "ok"}, esm.BatchFailed, lambdaruntime.Success, []string{"mode:null-id", "ok"}},
		{"bad key name", []string{"mode:bad-key", "ok"}, esm.BatchFailed, lambdaruntime.Success, []string{"mode:bad-key", "ok"}},
		{"invalid json", []string{"mode:invalid-json", "ok"}, esm.BatchFailed, lambdaruntime.Success, []string{"mode:invalid-json", "ok"}},
		{"not an object", []string{"mode:not-object", "ok"}, esm.BatchFailed, lambdaruntime.Success, []string{"mode:not-object", "ok"}},
		{"function error", []string{"mode:error", "ok"}, esm.BatchFailed, lambdaruntime.FunctionError, []string{"mode:error", "ok"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, setup{
				queue:   &awstest.QueueOptions{VisibilityTimeout: 60},
				mapping: esm.Mapping{BatchSize: 10, MaximumConcurrency: 2, ReportBatchItemFailures: true},
			})
			ids := h.send(tc.bodies...)
			rep := h.pollOnce()

			require.Equal(t, ids, rep.MessageIDs, "one batch with every message, in order")
			require.Equal(t, tc.outcome, rep.Outcome)
			require.Equal(t, tc.verdict, rep.Verdict, rep.Reason)
			require.Empty(t, rep.DeleteErrors)
			require.Len(t, rep.Deleted, len(tc.bodies)-len(tc.survivors))

			// Nothing became visible early: the survivors are still in flight, the rest are gone.
			visible, inFlight := h.counts()
			require.Equal(t, 0, visible)
			require.Equal(t, len(tc.survivors), inFlight)
			calls, _, _ := h.rec.snapshot()
			require.Len(t, calls, 1)
			require.Equal(t, sorted(tc.survivors), h.survivors(calls[0].Event))
		})
	}
}

// Without ReportBatchItemFailures the response is not read: a successful invocation deletes all.
func TestWithoutReportBatchItemFailuresSuccessDeletesAll(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{VisibilityTimeout: 60},
		mapping: esm.Mapping{BatchSize: 10, MaximumConcurrency: 2},
	})
	h.send("fail", "ok", "mode:invalid-json")
	rep := h.pollOnce()
	require.Equal(t, esm.AllSucceeded, rep.Verdict)
	visible, inFlight := h.counts()
	require.Zero(t, visible+inFlight)
}

// A function error leaves the batch alone: no message reappears before the visibility timeout, and
// all of them are received again after it.
func TestFunctionErrorReturnsTheBatchAfterTheVisibilityTimeout(t *testing.T) {
	t.Parallel()
	const vt = 4 * time.Second
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{VisibilityTimeout: int(vt / time.Second)},
		mapping: esm.Mapping{BatchSize: 10, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	ids := h.send("mode:error", "ok")
	h.start()
	first := h.nextReport()
	require.Equal(t, esm.BatchFailed, first.Verdict)
	require.Equal(t, lambdaruntime.FunctionError, first.Outcome)
	require.Empty(t, first.Deleted)
	second := h.nextReport()
	h.stop()
	require.Equal(t, esm.BatchFailed, second.Verdict)
	require.ElementsMatch(t, ids, second.MessageIDs, "the same messages, redelivered")
	// Not before the visibility timeout (load can only make the gap longer; 200 ms for clocks).
	require.GreaterOrEqual(t, second.ReceivedAt.Sub(first.ReceivedAt), vt-200*time.Millisecond)
	calls, _, _ := h.rec.snapshot()
	require.GreaterOrEqual(t, len(calls), 2)
	for _, r := range calls[1].Event.Records {
		require.Equal(t, "2", r.Attributes["ApproximateReceiveCount"])
	}
}

// A function that runs past its timeout is killed (its process is gone) and its batch is received
// again after the visibility timeout.
func TestTimeoutKillsTheFunctionAndTheBatchIsRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:    &awstest.QueueOptions{VisibilityTimeout: 5},
		function: lambdaruntime.Function{Timeout: time.Second},
		mapping:  esm.Mapping{BatchSize: 10, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	ids := h.send("mode:timeout-first", "ok")
	h.start()
	first := h.nextReport()
	require.Equal(t, lambdaruntime.Timeout, first.Outcome)
	require.Equal(t, esm.BatchFailed, first.Verdict)
	require.Empty(t, first.Deleted)

	calls, _, _ := h.rec.snapshot()
	pid := calls[0].Result.PID
	require.Positive(t, pid)
	err := syscall.Kill(pid, 0)
	require.True(t, errors.Is(err, syscall.ESRCH) || isZombie(pid), "timed-out process %d still runs", pid)

	second := h.nextReport()
	h.stop()
	require.Equal(t, ids, second.MessageIDs, "the same batch, received again")
	require.Equal(t, lambdaruntime.Success, second.Outcome)
	require.Equal(t, esm.AllSucceeded, second.Verdict)
	calls, _, _ = h.rec.snapshot()
	require.NotEqual(t, pid, calls[1].Result.PID, "a fresh process (cold start)")
	visible, inFlight := h.counts()
	require.Zero(t, visible+inFlight)
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X')
		}
	}
	return false
}

// An init error fails the batch: nothing is deleted.
func TestInitErrorFailsTheBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:    &awstest.QueueOptions{VisibilityTimeout: 60},
		function: lambdaruntime.Function{Env: map[string]string{"RBI_INIT": "fail"}},
		mapping:  esm.Mapping{BatchSize: 10, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	h.send("ok-1", "ok-2")
	rep := h.pollOnce()
	require.Equal(t, lambdaruntime.InitError, rep.Outcome)
	require.Equal(t, esm.BatchFailed, rep.Verdict)
	require.Contains(t, rep.Reason, "Rbi.InitFailed")
	_, inFlight := h.counts()
	require.Equal(t, 2, inFlight)
}

// The function receives the event Lambda sends, as aws-lambda-go decodes it.
func TestEventShape(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{VisibilityTimeout: 60},
		mapping: esm.Mapping{BatchSize: 10, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	body := "mode:echo"
	sent, err := h.client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(h.q.URL), MessageBody: aws.String(body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"kind":  {DataType: aws.String("String"), StringValue: aws.String("email.send")},
			"count": {DataType: aws.String("Number"), StringValue: aws.String("3")},
			"blob":  {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3}},
		},
	})
	require.NoError(t, err)
	rep := h.pollOnce()
	require.Equal(t, esm.AllSucceeded, rep.Verdict, rep.Reason)

	calls, _, _ := h.rec.snapshot()
	var got events.SQSEvent
	require.NoError(t, json.Unmarshal(calls[0].Result.Payload, &got))
	require.Len(t, got.Records, 1)
	r := got.Records[0]
	require.Equal(t, aws.ToString(sent.MessageId), r.MessageId)
	require.NotEmpty(t, r.ReceiptHandle)
	require.Equal(t, body, r.Body)
	sum := md5.Sum([]byte(body))
	require.Equal(t, hex.EncodeToString(sum[:]), r.Md5OfBody)
	require.Equal(t, aws.ToString(sent.MD5OfMessageAttributes), r.Md5OfMessageAttributes)
	require.Equal(t, "aws:sqs", r.EventSource)
	require.Equal(t, h.q.ARN, r.EventSourceARN)
	require.Equal(t, "us-east-1", r.AWSRegion)
	require.Equal(t, []string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "SenderId", "SentTimestamp"}, keys(r.Attributes))
	require.Equal(t, "1", r.Attributes["ApproximateReceiveCount"])
	require.Equal(t, "email.send", aws.ToString(r.MessageAttributes["kind"].StringValue))
	require.Equal(t, "String", r.MessageAttributes["kind"].DataType)
	require.Equal(t, "3", aws.ToString(r.MessageAttributes["count"].StringValue))
	require.Equal(t, "Number", r.MessageAttributes["count"].DataType)
	require.Equal(t, []byte{1, 2, 3}, r.MessageAttributes["blob"].BinaryValue)

	// The raw JSON has Lambda's keys, lists present even when empty.
	var raw map[string][]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(mustJSON(t, calls[0].Event), &raw))
	rec := raw["Records"][0]
	for _, k := range []string{"messageId", "receiptHandle", "body", "attributes", "messageAttributes", "md5OfBody", "eventSource", "eventSourceARN", "awsRegion"} {
		require.Contains(t, rec, k)
	}
	require.JSONEq(t, `{"stringValue":"email.send","stringListValues":[],"binaryListValues":[],"dataType":"String"}`,
		string(mustJSON(t, calls[0].Event.Records[0].MessageAttributes["kind"])))
}

func TestEventShapeFIFO(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{FIFO: true, VisibilityTimeout: 60},
		mapping: esm.Mapping{BatchSize: 10, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	h.sendFIFO("g1", "mode:echo")
	rep := h.pollOnce()
	require.Equal(t, esm.AllSucceeded, rep.Verdict, rep.Reason)
	calls, _, _ := h.rec.snapshot()
	var got events.SQSEvent
	require.NoError(t, json.Unmarshal(calls[0].Result.Payload, &got))
	a := got.Records[0].Attributes
	require.Equal(t, []string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "MessageDeduplicationId",
		"MessageGroupId", "SenderId", "SentTimestamp", "SequenceNumber"}, keys(a))
	require.Equal(t, "g1", a["MessageGroupId"])
	require.Equal(t, "g1-mode:echo", a["MessageDeduplicationId"])
}

// With a batching window, the mapping keeps receiving until the batch is full...
func TestBatchingWindowFillsLargeBatches(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{VisibilityTimeout: 60},
		mapping: esm.Mapping{BatchSize: 25, MaximumBatchingWindow: 5 * time.Second, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	bodies := make([]string, 25)
	for i := range bodies {
		bodies[i] = "ok-" + strconv.Itoa(i)
	}
	ids := h.send(bodies...)
	rep := h.pollOnce()
	require.Equal(t, ids, rep.MessageIDs, "25 messages (three receives) in one invocation")
	require.Equal(t, esm.AllSucceeded, rep.Verdict)
}

// ...or until the window passes.
func TestBatchingWindowEndsAPartialBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{VisibilityTimeout: 60},
		mapping: esm.Mapping{BatchSize: 100, MaximumBatchingWindow: time.Second, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	ids := h.send("ok-1", "ok-2", "ok-3")
	start := time.Now()
	rep := h.pollOnce()
	require.Equal(t, ids, rep.MessageIDs)
	require.GreaterOrEqual(t, time.Since(start), time.Second, "the window was waited out")
}

// MaximumConcurrency caps the invocations in flight.
func TestMaximumConcurrency(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:    &awstest.QueueOptions{VisibilityTimeout: 60},
		function: lambdaruntime.Function{MaxInstances: 10},
		mapping:  esm.Mapping{BatchSize: 1, MaximumConcurrency: 3, ReportBatchItemFailures: true},
	})
	bodies := make([]string, 15)
	for i := range bodies {
		bodies[i] = "sleep:300"
	}
	h.send(bodies...)
	h.start()
	for range bodies {
		require.Equal(t, esm.AllSucceeded, h.nextReport().Verdict)
	}
	h.stop()
	_, peak, _ := h.rec.snapshot()
	require.Equal(t, 3, peak)
	require.Equal(t, int64(15), h.poller.Stats().Deleted)
}

// FIFO: each message group is processed in order, failures included, and no two invocations hold
// the same group at once.
func TestFIFOGroupOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{FIFO: true, VisibilityTimeout: 3},
		mapping: esm.Mapping{BatchSize: 3, MaximumConcurrency: 3, ReportBatchItemFailures: true},
	})
	want := map[string][]string{}
	for _, g := range []string{"a", "b", "c"} {
		for i := range 6 {
			body := g + strconv.Itoa(i)
			if (g == "a" && i == 2) || (g == "b" && i == 4) {
				body = "fail-once:" + body
			}
			want[g] = append(want[g], body)
			h.sendFIFO(g, body)
		}
	}
	h.start()
	deleted := 0
	for deleted < 18 {
		deleted += len(h.nextReport().Deleted)
	}
	h.stop()

	calls, _, overlap := h.rec.snapshot()
	require.False(t, overlap, "two invocations held one message group at once")
	got := map[string][]string{}
	for _, c := range calls {
		failed, err := esm.ParseBatchResponse(c.Result.Payload, idsOf(c.Event))
		require.NoError(t, err)
		isFailed := map[string]bool{}
		for _, id := range failed {
			isFailed[id] = true
		}
		for _, r := range c.Event.Records {
			if !isFailed[r.MessageID] {
				g := r.Attributes["MessageGroupId"]
				got[g] = append(got[g], r.Body)
			}
		}
	}
	require.Equal(t, want, got)
}

func TestMappingValidation(t *testing.T) {
	t.Parallel()
	base := esm.Mapping{QueueURL: "http://q", QueueARN: "arn:aws:sqs:us-east-1:123456789012:q"}
	fifo := esm.Mapping{QueueURL: "http://q.fifo", QueueARN: "arn:aws:sqs:us-east-1:123456789012:q.fifo"}
	bad := []esm.Mapping{
		{},
		withBatch(base, 11, 0), // above 10 needs a window
		withBatch(base, 10001, time.Second),
		withBatch(fifo, 11, time.Second), // FIFO max 10
		{QueueURL: base.QueueURL, QueueARN: base.QueueARN, MaximumConcurrency: 1},
		{QueueURL: base.QueueURL, QueueARN: base.QueueARN, MaximumBatchingWindow: 301 * time.Second},
	}
	for i, m := range bad {
		_, err := esm.New(&sqs.Client{}, &recorder{}, m, nil)
		var cfgErr *esm.ConfigError
		require.ErrorAs(t, err, &cfgErr, "case %d", i)
	}
	p, err := esm.New(&sqs.Client{}, &recorder{}, base, nil)
	require.NoError(t, err)
	require.Equal(t, esm.DefaultBatchSize, p.Mapping().BatchSize)
	require.Equal(t, esm.DefaultMaximumConcurrency, p.Mapping().MaximumConcurrency)
	_, err = esm.New(&sqs.Client{}, &recorder{}, withBatch(base, 10000, time.Second), nil)
	require.NoError(t, err)
}

func withBatch(m esm.Mapping, size int, window time.Duration) esm.Mapping {
	m.BatchSize, m.MaximumBatchingWindow = size, window
	return m
}

func idsOf(ev esm.Event) map[string]bool {
	ids := map[string]bool{}
	for _, r := range ev.Records {
		ids[r.MessageID] = true
	}
	return ids
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A poller whose runtime is closed stops instead of receiving and failing batches forever; the
// batch it held is not deleted.
func TestPollerStopsWhenTheRuntimeIsClosed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{VisibilityTimeout: 60},
		mapping: esm.Mapping{BatchSize: 10, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	require.NoError(t, h.rec.rt.Close())
	h.send("ok")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.poller.Run(context.Background())
	}()
	rep := h.nextReport()
	require.ErrorIs(t, rep.InvokeErr, lambdaruntime.ErrClosed)
	require.Equal(t, esm.BatchFailed, rep.Verdict)
	// The other worker is still long-polling an empty queue; one more message ends it too.
	h.send("ok-2")
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("poller still running after its runtime closed")
	}
	_, inFlight := h.counts()
	require.Equal(t, 2, inFlight, "nothing deleted")
}
