package esm_test

import (
	"cmp"
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

func TestMain(m *testing.M) { awstest.Main(m) }

// rbi returns the executable of testdata/rbi.
func rbi(t *testing.T) string { return awstest.Build(t, "testdata/rbi") }

// call is one invocation the recording invoker saw.
type call struct {
	Event  esm.Event
	Result lambdaruntime.Result
	Err    error
}

// recorder wraps the runtime to record invocations and measure their concurrency.
type recorder struct {
	rt *lambdaruntime.Runtime

	mu       sync.Mutex
	calls    []call
	inflight int
	peak     int
	groups   map[string]int
	overlap  bool // two invocations held one FIFO message group at once
}

func (r *recorder) Invoke(ctx context.Context, payload []byte) (lambdaruntime.Result, error) {
	var ev esm.Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		panic(err)
	}
	var groups []string
	seen := map[string]bool{}
	for _, rec := range ev.Records {
		if g := rec.Attributes["MessageGroupId"]; g != "" && !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	r.mu.Lock()
	r.inflight++
	r.peak = max(r.peak, r.inflight)
	for _, g := range groups {
		if r.groups[g] > 0 {
			r.overlap = true
		}
		r.groups[g]++
	}
	r.mu.Unlock()
	res, err := r.rt.Invoke(ctx, payload)
	r.mu.Lock()
	r.inflight--
	for _, g := range groups {
		r.groups[g]--
	}
	r.calls = append(r.calls, call{Event: ev, Result: res, Err: err})
	r.mu.Unlock()
	return res, err
}

func (r *recorder) snapshot() ([]call, int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...), r.peak, r.overlap
}

type harness struct {
	t       *testing.T
	client  *sqs.Client
	q       awstest.Queue
	rec     *recorder
	poller  *esm.Poller
	reports chan esm.BatchReport
	cancel  context.CancelFunc
	done    chan struct{}
}

type setup struct {
	queue    *awstest.QueueOptions
	function lambdaruntime.Function
	mapping  esm.Mapping
	options  esm.Options // OnBatch is the harness's
}

// newHarness creates the queue and the runtime; start runs the poller.
func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	cfg := awstest.Config(t)
	h := &harness{t: t, client: sqs.NewFromConfig(cfg), reports: make(chan esm.BatchReport, 100)}
	h.q = awstest.CreateQueue(t, cfg, "src", s.queue)
	fn := s.function
	fn.Name = "rbi"
	fn.Bootstrap = rbi(t)
	fn.Timeout = cmp.Or(fn.Timeout, 30*time.Second)
	fn.MaxInstances = cmp.Or(fn.MaxInstances, 5)
	rt, err := lambdaruntime.New(fn, &lambdaruntime.Options{Endpoint: awstest.Endpoint(), Output: testWriter{t}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	h.rec = &recorder{rt: rt, groups: map[string]int{}}
	m := s.mapping
	m.QueueURL, m.QueueARN = h.q.URL, h.q.ARN
	opts := s.options
	opts.OnBatch = func(r esm.BatchReport) { h.reports <- r }
	h.poller, err = esm.New(h.client, h.rec, m, &opts)
	require.NoError(t, err)
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		_ = h.poller.Run(ctx)
	}()
	h.t.Cleanup(h.stop)
}

// stop ends the poller and waits until its in-flight batches are settled.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(2 * time.Minute):
		h.t.Fatal("poller did not stop")
	}
	h.cancel = nil
}

// send sends bodies (Standard queue) and returns their message ids.
func (h *harness) send(bodies ...string) []string {
	h.t.Helper()
	ids := make([]string, len(bodies))
	for i, b := range bodies {
		out, err := h.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(h.q.URL), MessageBody: aws.String(b)})
		require.NoError(h.t, err)
		ids[i] = aws.ToString(out.MessageId)
	}
	return ids
}

func (h *harness) sendFIFO(group string, bodies ...string) {
	h.t.Helper()
	for _, b := range bodies {
		_, err := h.client.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(h.q.URL), MessageBody: aws.String(b),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(group + "-" + b),
		})
		require.NoError(h.t, err)
	}
}

// pollOnce settles one batch with the poller's PollOnce (one worker: deterministic batches).
func (h *harness) pollOnce() esm.BatchReport {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, ok := h.poller.PollOnce(ctx)
	require.True(h.t, ok, "no message received")
	<-h.reports // the OnBatch copy
	return rep
}

func (h *harness) nextReport() esm.BatchReport {
	h.t.Helper()
	select {
	case r := <-h.reports:
		return r
	case <-time.After(90 * time.Second):
		h.t.Fatal("no batch settled within 90 s")
	}
	return esm.BatchReport{}
}

// counts returns the queue's visible and in-flight message counts.
func (h *harness) counts() (visible, inFlight int) {
	h.t.Helper()
	out, err := h.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(h.q.URL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	require.NoError(h.t, err)
	visible, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, inFlight
}

// survivors makes the batch's messages visible again (those still in the queue) and receives them:
// the bodies of the messages the mapping did not delete, sorted. The poller must be stopped.
func (h *harness) survivors(ev esm.Event) []string {
	h.t.Helper()
	ctx := context.Background()
	for _, r := range ev.Records {
		// Fails for a deleted message; that is the point.
		_, _ = h.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(h.q.URL), ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: 0,
		})
	}
	// Receives hide what they take for 2 s only, and the loop ends after 3 s without a new
	// message: a receive the SDK retried after a lost answer does not hide a survivor.
	var bodies []string
	seen := map[string]bool{}
	for quiet := time.Now(); time.Since(quiet) < 3*time.Second; {
		out, err := h.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(h.q.URL), MaxNumberOfMessages: 10, VisibilityTimeout: 2, WaitTimeSeconds: 1,
		})
		require.NoError(h.t, err)
		for _, m := range out.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id], quiet = true, time.Now()
				bodies = append(bodies, aws.ToString(m.Body))
			}
		}
	}
	sort.Strings(bodies)
	return bodies
}

// testWriter sends function output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
