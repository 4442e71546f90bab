package jobs_test

// Regression tests for the runtime's edges (issue 13): the soft deadline, the time budget after
// the jobs, the 12-hour visibility limit counted from receipt, dead-letter copies near the size
// limit, the first heartbeat, lost messages and functions fed by several queues.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// receiveAgain makes received messages visible at once and receives them again, so their
// ApproximateReceiveCount grows by one.
func receiveAgain(t *testing.T, client *sqs.Client, url string, msgs []sqstypes.Message) []sqstypes.Message {
	t.Helper()
	for _, m := range msgs {
		_, err := client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		require.NoError(t, err)
	}
	again := awstest.ReceiveN(t, client, url, len(msgs))
	return again
}

// Defect 1: a record not yet started when the jobs' deadline passes is not started: it is
// listed, not run, not charged and — on its last attempt — not dead-lettered.
func TestRuntimeNothingStartsAfterTheSoftDeadlineOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 30)
	enqueue(t, client, q.URL, TestJob{N: 1, Mode: "sleep", Seconds: 2.2}, TestJob{N: 2, Mode: "block"})
	msgs := receiveAgain(t, client, q.URL, awstest.Receive(t, client, q.URL, 2, 10*time.Second))
	if jobN(t, msgs[0]) != 1 {
		msgs[0], msgs[1] = msgs[1], msgs[0] // the slow job first: the other waits behind it
	}

	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.MaxAttempts, rc.Concurrency, rc.SafetyMargin = 2, 1, time.Second
	var r ran
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // jobs end at 2 s
	defer cancel()
	resp, err := jobs.NewLambdaHandler(testWorkers(&r), rc).HandleSQS(ctx, jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	assert.Equal(t, []string{messageIDOf(t, msgs, 2)}, jobstest.FailedIDs(resp))
	assert.Equal(t, []int{1}, r.list(), "job 2 never started")
	assert.Empty(t, awstest.Receive(t, client, dlq.URL, 1, 2*time.Second), "nothing dead-lettered without a run")
	back := awstest.Receive(t, client, q.URL, 1, 5*time.Second)
	require.Len(t, back, 1, "the job not started is visible again at once")
	assert.Equal(t, 2, jobN(t, back[0]))
}

// Defect 2: slow SQS answers after the jobs (a heartbeat in flight, visibility changes,
// dead-letter sends) cannot push the handler past the Lambda deadline; what did not fit is
// reported failed, never lost.
func TestRuntimePostJobWorkIsBoundedOnSQS(t *testing.T) {
	t.Parallel()
	cfg, direct := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 30)
	var batch []TestJob
	for i := 0; i < 12; i++ {
		batch = append(batch, TestJob{N: i, Mode: "fail"})
	}
	batch = append(batch, TestJob{N: 99, Mode: "cancel"})
	enqueue(t, direct, q.URL, batch...)
	msgs := awstest.ReceiveN(t, direct, q.URL, len(batch))

	slowCfg := awstest.Proxied(t, cfg, &faultproxy.Options{Latency: func(api string) time.Duration {
		switch api {
		case "SQS.ChangeMessageVisibility", "SQS.ChangeMessageVisibilityBatch", "SQS.SendMessage":
			return 20 * time.Second
		}
		return 0
	}})
	slow := sqs.NewFromConfig(slowCfg)

	rc := runtimeConfig(slow, q.URL, dlq.URL)
	rc.SafetyMargin = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	resp, err := jobs.NewLambdaHandler(testWorkers(nil), rc).HandleSQS(ctx, jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	left := time.Until(deadline)
	assert.Greater(t, left, 250*time.Millisecond, "answered well before the Lambda deadline (%s left)", left)
	assert.Len(t, resp.BatchItemFailures, len(batch), "the dead-letter send did not fit: reported failed")
}

// A job dead-lettered just before the hard stop: its DLQ send is in flight when the batch stops
// waiting for its jobs. The batch waits for the send (it ends with the post-job context) rather
// than list the message failed, which would bring it back to be dead-lettered a second time.
func TestRuntimeDeadLetterSendInFlightAtTheHardStopOnSQS(t *testing.T) {
	t.Parallel()
	cfg, direct := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 30)
	msgs := received(t, direct, q, TestJob{N: 1, Mode: "sleep-cancel", Seconds: 3.9})

	// The send starts at 3.9 s and takes 2.2 s more than the emulator's own time: in flight at
	// the hard stop, done with almost a second to spare before the AWS calls' end.
	slowCfg := awstest.Proxied(t, cfg, &faultproxy.Options{Latency: func(api string) time.Duration {
		if api == "SQS.SendMessage" {
			return 2200 * time.Millisecond
		}
		return 0
	}})

	rc := runtimeConfig(sqs.NewFromConfig(slowCfg), q.URL, dlq.URL)
	rc.SafetyMargin = 4 * time.Second // jobs end at 4 s, the hard stop at 6 s, AWS calls at 7 s
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	resp, err := jobs.NewLambdaHandler(testWorkers(nil), rc).HandleSQS(ctx, jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	assert.True(t, time.Now().Before(deadline), "answered before the Lambda deadline")
	assert.Empty(t, resp.BatchItemFailures, "dead-lettered during the hard stop: not also listed failed")
	dead := awstest.Receive(t, direct, dlq.URL, 2, 3*time.Second)
	require.Len(t, dead, 1, "in the DLQ once")
}

// Defect 3: SQS refuses a visibility ending more than 12 h after the message was received; the
// receipt was before the invocation began (by up to the batching window), so a 12-hour snooze
// or backoff is clamped below 12 h.
func TestHandlerVisibilityLimitCountsFromReceipt(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	cfg := jobstest.Config(rec)
	cfg.Backoff = fixedBackoff(24 * time.Hour)
	handler := jobs.NewLambdaHandler(testWorkers(nil), cfg).HandleSQS
	snooze := jobstest.Message(TestJob{N: 1, Mode: "snooze", Seconds: 12 * 3600}, &jobstest.MessageOpts{MessageID: "m1"})
	resp, err := handler(context.Background(), jobstest.Event(snooze, msg(2, "fail", nil)))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 2)
	for _, rh := range []string{"rh-m1", "rh-m2"} {
		vis, ok := rec.VisibilityOf(rh)
		require.True(t, ok, rh)
		assert.LessOrEqual(t, vis, jobs.MaxVisibility-5*time.Minute, "%s: room for the batching window", rh)
		assert.Greater(t, vis, jobs.MaxVisibility-10*time.Minute, rh)
	}
}

// sizeCheckingSQS refuses a message larger than SQS's limit, counted as SQS counts it: the body
// and every attribute's name, data type and value.
type sizeCheckingSQS struct{ *jobstest.Recorder }

func (s sizeCheckingSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	n := len(aws.ToString(in.MessageBody))
	for k, v := range in.MessageAttributes {
		n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue))
	}
	if n > jobs.MaxMessageSize {
		return nil, fmt.Errorf("InvalidParameterValue: message of %d bytes is too long", n)
	}
	return s.Recorder.SendMessage(ctx, in, opts...)
}

// Defect 4: a body near 1 MiB is still dead-lettered: attributes are left off (the error first,
// the reason last) until the copy fits, and an error text that sanitising grows is measured after.
func TestHandlerDeadLetterCopyAlwaysFits(t *testing.T) {
	t.Parallel()
	bad := strings.Repeat("\xff", 4096) // each byte becomes a 3-byte U+FFFD
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		return jobs.Cancel(errors.New(bad))
	}))
	for _, room := range []int{200, 6000} {
		t.Run(fmt.Sprint(room), func(t *testing.T) {
			rec := jobstest.NewRecorder()
			handler := jobs.NewLambdaHandler(w, jobstest.Config(sizeCheckingSQS{rec})).HandleSQS
			prefix := `{"v":1,"id":"big","kind":"test.job","args":{"n":1,"pad":"`
			body := prefix + strings.Repeat("x", jobs.MaxMessageSize-room-len(prefix)-3) + `"}}`
			require.Len(t, body, jobs.MaxMessageSize-room)
			resp, err := handler(context.Background(), jobstest.Event(jobstest.RawMessage(body, &jobstest.MessageOpts{MessageID: "m1"})))
			require.NoError(t, err)
			assert.Empty(t, resp.BatchItemFailures, "dead-lettered, not stuck")
			dead := rec.DeadLetters()
			require.Len(t, dead, 1)
			assert.Equal(t, contract.ReasonCancelled, dead[0].Reason, "the reason is the last to go")
			assert.Equal(t, body, dead[0].Body)
		})
	}
}

// Gap: the first heartbeat runs at the start of the invocation. A message that waited out most
// of its visibility in the batching window is not handed to another consumer meanwhile.
func TestRuntimeFirstHeartbeatAtStartOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 6)
	msgs := received(t, client, q, TestJob{N: 1, Mode: "sleep", Seconds: 4})
	time.Sleep(5 * time.Second) // the batching window: 1 s of visibility left

	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.VisibilityTimeout = 6 * time.Second // beats every 2 s
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := jobs.NewLambdaHandler(testWorkers(nil), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
		assert.NoError(t, err)
	}()
	time.Sleep(300 * time.Millisecond)
	assert.Empty(t, awstest.Receive(t, client, q.URL, 1, 3*time.Second), "no second consumer gets it while it runs")
	<-done
}

// Gap: when the heartbeat finds the message no longer ours (here deleted by someone else), the
// job's context is cancelled with ErrMessageLost.
func TestRuntimeLostMessageCancelsTheJobOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 3)
	msgs := received(t, client, q, TestJob{N: 1})

	w := jobs.NewWorkers()
	var cause atomic.Value
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		_, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: msgs[0].ReceiptHandle})
		require.NoError(t, err)
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return ctx.Err()
	}))
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.VisibilityTimeout = 3 * time.Second // beats every second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := jobs.NewLambdaHandler(w, rc).HandleSQS(ctx, jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "cancelled by the heartbeat, not the deadline")
	assert.ErrorIs(t, cause.Load().(error), jobs.ErrMessageLost)
	assert.Len(t, resp.BatchItemFailures, 1)
	assert.Empty(t, awstest.Receive(t, client, dlq.URL, 1, time.Second))
}

// Gap: one function fed by two queues changes visibility on each record's own queue (by its
// eventSourceARN), not on the configured one.
func TestRuntimeSeveralQueuesOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	a := awstest.CreateQueue(t, cfg, "a", &awstest.QueueOptions{VisibilityTimeout: 30})
	b := awstest.CreateQueue(t, cfg, "b", &awstest.QueueOptions{VisibilityTimeout: 30})
	enqueue(t, client, b.URL, TestJob{N: 1, Mode: "fail"}, TestJob{N: 2, Mode: "cancel"})
	msgs := awstest.ReceiveN(t, client, b.URL, 2)

	rc := runtimeConfig(client, a.URL, dlq.URL)
	rc.Backoff = fixedBackoff(time.Second)
	resp, err := jobs.NewLambdaHandler(testWorkers(nil), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(b.ARN, msgs))
	require.NoError(t, err)
	failed := jobstest.FailedIDs(resp)
	require.Equal(t, []string{messageIDOf(t, msgs, 1)}, failed)
	deleteExcept(t, client, b.URL, msgs, failed)
	again := awstest.Receive(t, client, b.URL, 1, 8*time.Second)
	require.Len(t, again, 1, "the backoff was set on queue b, not the 30 s timeout")
	dead := awstest.ReceiveN(t, client, dlq.URL, 1)
	assert.Equal(t, b.URL, jobstest.DecodeDeadLetter(dead[0]).SourceQueue)
}

// Defect 6: FIFO deliveries skipped behind a failed record are not attempts when a delivery
// ledger (the idempotency table) is wired: B, skipped once behind A and then failing its first
// real run at ApproximateReceiveCount 2 = MaxAttempts, is retried, not dead-lettered.
func TestRuntimeFIFOSkipsAreNotAttemptsOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), awstest.CreateTable(t, cfg, "idem", "id", ""))
	dlq := awstest.CreateQueue(t, cfg, "dlq", &awstest.QueueOptions{FIFO: true})
	q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: true, VisibilityTimeout: 30})
	enqueue(t, client, q.URL, TestJob{N: 1, Mode: "fail", Group: "g"}, TestJob{N: 2, Mode: "fail", Group: "g"})

	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.MaxAttempts, rc.Backoff, rc.Deliveries = 2, fixedBackoff(0), store
	var r ran
	w := testWorkers(&r)
	var counts sync.Map // "attempt/deliveries" of the last run, by message id
	w.Use(func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			counts.Store(row.MessageID, fmt.Sprintf("%d/%d", row.Attempt, row.Deliveries))
			return next(ctx, row)
		}
	})
	handler := jobs.NewLambdaHandler(w, rc).HandleSQS

	// Delivery 1: A fails, B is skipped.
	msgs := awstest.ReceiveN(t, client, q.URL, 2)
	resp, err := handler(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 2)
	require.Equal(t, []int{1}, r.list())

	// Delivery 2: A fails its last attempt and is dead-lettered; B runs for the first time and
	// fails: one real run of two, so it is retried.
	msgs = awstest.Receive(t, client, q.URL, 2, 10*time.Second)
	require.Len(t, msgs, 2)
	for _, m := range msgs {
		require.Equal(t, "2", m.Attributes["ApproximateReceiveCount"])
	}
	resp, err = handler(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1, 2}, r.list())
	assert.Equal(t, []string{messageIDOf(t, msgs, 2)}, jobstest.FailedIDs(resp), "B is retried")
	b, _ := counts.Load(messageIDOf(t, msgs, 2))
	assert.Equal(t, "1/2", b, "B: attempt 1 of its 2 deliveries (JobRow.Attempt, JobRow.Deliveries)")
	dead := awstest.Receive(t, client, dlq.URL, 2, 3*time.Second)
	require.Len(t, dead, 1, "only A is dead-lettered")
	assert.Equal(t, 1, jobN(t, dead[0]))
	assert.Equal(t, 2, jobstest.DecodeDeadLetter(dead[0]).Attempts)
}

// A job whose work is done when the hard stop comes, its middleware still recording the outcome
// (an idempotency completion, say), is waited for until the end of the post-job budget rather than
// reported failed: reported failed, it would run again on its next delivery. One still recording
// after that is reported failed.
func TestHandlerWaitsForAJobRecordingItsOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		record   time.Duration // the middleware's recording, after the worker returned
		listedID bool
	}{
		{"recorded before the budget ends", 2750 * time.Millisecond, false},
		{"still recording after it", 3500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := jobstest.Config(jobstest.NewRecorder())
			cfg.SafetyMargin = 2 * time.Second
			w := testWorkers(nil)
			w.Use(func(next jobs.Handler) jobs.Handler {
				return func(ctx context.Context, row *jobs.JobRow) error {
					err := next(ctx, row)
					time.Sleep(tc.record)
					return err
				}
			})
			handler := jobs.NewLambdaHandler(w, cfg).HandleSQS
			// Deadline in 4 s: jobs end at 2 s, the hard stop is at 3 s, the post-job budget
			// ends at 3.5 s. The worker returns at 0.5 s; the recording ends at 3.25 s or 4 s.
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			resp, err := handler(ctx, jobstest.Event(jobstest.Message(TestJob{N: 1, Mode: "sleep", Seconds: 0.5}, &jobstest.MessageOpts{MessageID: "m1"})))
			require.NoError(t, err)
			if tc.listedID {
				assert.Equal(t, []string{"m1"}, jobstest.FailedIDs(resp))
			} else {
				assert.Empty(t, jobstest.FailedIDs(resp), "the job succeeded")
			}
		})
	}
}
