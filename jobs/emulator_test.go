package jobs_test

// Tests against SQS itself (the emulator `make test` starts, LocalStack or AWS): what the runtime
// asks of SQS — visibility changes, dead-letter sends, heartbeats — is checked by receiving.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// deleteExcept deletes the received messages the handler did not list, as the event source
// mapping does after a batch.
func deleteExcept(t *testing.T, client *sqs.Client, url string, msgs []sqstypes.Message, failed []string) {
	t.Helper()
	keep := map[string]bool{}
	for _, id := range failed {
		keep[id] = true
	}
	for _, m := range msgs {
		if !keep[aws.ToString(m.MessageId)] {
			_, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
}

func jobN(t *testing.T, m sqstypes.Message) int {
	t.Helper()
	env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
	require.NoError(t, err)
	var args TestJob
	require.NoError(t, json.Unmarshal(env.Args, &args))
	return args.N
}

func messageIDOf(t *testing.T, msgs []sqstypes.Message, n int) string {
	t.Helper()
	for _, m := range msgs {
		if jobN(t, m) == n {
			return aws.ToString(m.MessageId)
		}
	}
	t.Fatalf("no message for job %d", n)
	return ""
}

func runtimeConfig(client jobs.SQSAPI, queueURL, dlqURL string) jobs.Config {
	return jobs.Config{
		QueueURL: queueURL, DLQURL: dlqURL, SQS: client, FunctionName: "emulator-test",
		VisibilityTimeout: 30 * time.Second,
		Metrics:           io.Discard,
		Logger:            slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
}

// runtimeQueues makes a job queue whose visibility timeout is visibility seconds (0: SQS's
// default) and a dead-letter queue for the runtime to send to.
func runtimeQueues(t *testing.T, cfg aws.Config, visibility int) (q, dlq awstest.Queue) {
	t.Helper()
	dlq = awstest.CreateQueue(t, cfg, "dlq", nil)
	return awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{VisibilityTimeout: visibility}), dlq
}

// received enqueues job on q and returns its message, received as the event source mapping
// receives it.
func received(t *testing.T, client *sqs.Client, q awstest.Queue, job TestJob) []sqstypes.Message {
	t.Helper()
	enqueue(t, client, q.URL, job)
	return awstest.ReceiveN(t, client, q.URL, 1)
}

// numbered returns n jobs numbered from 0.
func numbered(n int) []TestJob {
	out := make([]TestJob, n)
	for i := range out {
		out[i].N = i
	}
	return out
}

func enqueue(t *testing.T, client *sqs.Client, queueURL string, args ...TestJob) {
	t.Helper()
	c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: queueURL})
	require.NoError(t, err)
	var batch []jobs.BatchJob
	for _, a := range args {
		var opts *jobs.EnqueueOpts
		if a.Group != "" {
			opts = &jobs.EnqueueOpts{GroupID: a.Group}
		}
		batch = append(batch, jobs.BatchJob{Args: a, Opts: opts})
	}
	_, err = c.EnqueueBatch(context.Background(), batch)
	require.NoError(t, err)
}

// A 3-record batch with one retryable failure lists exactly that record; its message is not
// receivable before the backoff and is receivable after it — long before the queue's 30 s
// visibility timeout would return it.
func TestRuntimeRetryFollowsBackoffOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 30)
	enqueue(t, client, q.URL, TestJob{N: 1}, TestJob{N: 2, Mode: "fail"}, TestJob{N: 3})
	msgs := awstest.ReceiveN(t, client, q.URL, 3)

	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.Backoff = fixedBackoff(6 * time.Second)
	handler := jobs.NewLambdaHandler(testWorkers(nil), rc).HandleSQS
	resp, err := handler(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	failed := jobstest.FailedIDs(resp)
	require.Equal(t, []string{messageIDOf(t, msgs, 2)}, failed)
	start := time.Now()
	deleteExcept(t, client, q.URL, msgs, failed)

	early := awstest.Receive(t, client, q.URL, 1, 3*time.Second)
	require.Empty(t, early, "not receivable before the backoff")
	require.Less(t, time.Since(start), 6*time.Second, "the machine is too slow for this check")

	again := awstest.Receive(t, client, q.URL, 1, 20*time.Second)
	require.Len(t, again, 1, "receivable after the backoff")
	assert.Equal(t, failed[0], aws.ToString(again[0].MessageId))
	assert.Equal(t, "2", again[0].Attributes["ApproximateReceiveCount"])
	assert.GreaterOrEqual(t, time.Since(start), 5*time.Second)
	assert.Less(t, time.Since(start), 25*time.Second, "well before the 30 s visibility timeout")
	assert.Empty(t, awstest.Receive(t, client, dlq.URL, 1, time.Second))
}

// A record on its last attempt goes to the DLQ with the error and attempt count attached and is
// not listed; with a DLQ that does not exist, it is listed instead.
func TestRuntimeDeadLettersOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 30)
	enqueue(t, client, q.URL, TestJob{N: 1, Mode: "fail"})
	_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("{not an envelope")})
	require.NoError(t, err)

	// First delivery: hand both back at once, as a failed attempt with no backoff would.
	first := awstest.ReceiveN(t, client, q.URL, 2)
	for _, m := range first {
		_, err := client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
		require.NoError(t, err)
	}
	msgs := awstest.ReceiveN(t, client, q.URL, 2)
	var job, junk sqstypes.Message
	for _, m := range msgs {
		require.Equal(t, "2", m.Attributes["ApproximateReceiveCount"])
		if aws.ToString(m.Body) == "{not an envelope" {
			junk = m
		} else {
			job = m
		}
	}

	// A DLQ that does not exist: both are listed, nothing is lost.
	rc := runtimeConfig(client, q.URL, q.URL+"-missing")
	rc.MaxAttempts = 2
	resp, err := jobs.NewLambdaHandler(testWorkers(nil), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{aws.ToString(job.MessageId), aws.ToString(junk.MessageId)}, jobstest.FailedIDs(resp))

	// The real DLQ: both are dead-lettered and reported as successes.
	rc.DLQURL = dlq.URL
	resp, err = jobs.NewLambdaHandler(testWorkers(nil), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)

	dead := awstest.ReceiveN(t, client, dlq.URL, 2)
	byID := map[string]jobstest.DeadLetter{}
	for _, m := range dead {
		d := jobstest.DecodeDeadLetter(m)
		byID[d.SourceMessageID] = d
	}
	d := byID[aws.ToString(job.MessageId)]
	assert.Equal(t, contract.ReasonAttemptsUsed, d.Reason)
	assert.Equal(t, 2, d.Attempts)
	assert.Equal(t, "job 1 failed", d.Error)
	assert.Equal(t, "test.job", d.Kind)
	require.NotNil(t, d.Envelope)
	assert.Equal(t, d.Envelope.ID, d.JobID)
	assert.Equal(t, "emulator-test", d.Function)
	assert.Equal(t, q.URL, d.SourceQueue)
	assert.Equal(t, aws.ToString(job.Body), d.Body)
	assert.False(t, d.FirstReceivedAt.IsZero())
	assert.False(t, d.FailedAt.Before(d.FirstReceivedAt))
	var attempts sqstypes.MessageAttributeValue
	for _, m := range dead {
		if aws.ToString(m.Body) == aws.ToString(job.Body) {
			attempts = m.MessageAttributes[contract.AttrAttempts]
		}
	}
	assert.Equal(t, "Number", aws.ToString(attempts.DataType))

	j := byID[aws.ToString(junk.MessageId)]
	assert.Equal(t, contract.ReasonMalformed, j.Reason)
	assert.Equal(t, "{not an envelope", j.Body)
	assert.Nil(t, j.Envelope)
	assert.Empty(t, j.Kind)
	assert.NotEmpty(t, j.Error)
}

// FIFO: group A fails at its 2nd record, so A's 2nd and 3rd are listed and the 3rd never runs;
// group B succeeds. A's two come back after the backoff. (Their order then is SQS's business:
// moto 5.2 hands back a group's returned messages last-first, because a message made visible
// again stays in its in-flight set until a receive passes over it and holds its own group.)
func TestRuntimeFIFOSkipGroupOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", &awstest.QueueOptions{FIFO: true})
	q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: true, VisibilityTimeout: 30})
	enqueue(t, client, q.URL,
		TestJob{N: 1, Group: "A"}, TestJob{N: 11, Group: "B"}, TestJob{N: 2, Group: "A", Mode: "fail"},
		TestJob{N: 12, Group: "B"}, TestJob{N: 3, Group: "A"}, TestJob{N: 13, Group: "B"})
	msgs := awstest.ReceiveN(t, client, q.URL, 6)

	r := &ran{}
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.Backoff = fixedBackoff(2 * time.Second)
	resp, err := jobs.NewLambdaHandler(testWorkers(r), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	failed := jobstest.FailedIDs(resp)
	assert.ElementsMatch(t, []string{messageIDOf(t, msgs, 2), messageIDOf(t, msgs, 3)}, failed)
	assert.ElementsMatch(t, []int{1, 2, 11, 12, 13}, r.list(), "job 3 never ran")
	deleteExcept(t, client, q.URL, msgs, failed)

	var order []int
	deadline := time.Now().Add(20 * time.Second)
	for len(order) < 2 && time.Now().Before(deadline) {
		for _, m := range awstest.Receive(t, client, q.URL, 2, 2*time.Second) {
			order = append(order, jobN(t, m))
			deleteExcept(t, client, q.URL, []sqstypes.Message{m}, nil)
		}
	}
	assert.ElementsMatch(t, []int{2, 3}, order, "group A's listed records return")
}

// A job running 3× the visibility timeout is never received by a concurrent consumer while it
// runs (the heartbeat keeps it invisible) and runs once.
func TestRuntimeHeartbeatOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 2)
	enqueue(t, client, q.URL, TestJob{N: 1, Mode: "sleep", Seconds: 6}, TestJob{N: 2})
	msgs := awstest.ReceiveN(t, client, q.URL, 2)

	var runs atomic.Int32
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		runs.Add(1)
		time.Sleep(time.Duration(job.Args.Seconds * float64(time.Second)))
		return nil
	}))
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.VisibilityTimeout = 2 * time.Second
	handler := jobs.NewLambdaHandler(w, rc).HandleSQS

	stopThief := thief(client, q.URL, func() bool { return true }) // a second consumer polls all the while
	start := time.Now()
	resp, err := handler(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	elapsed := time.Since(start)
	require.NoError(t, err)
	deleteExcept(t, client, q.URL, msgs, jobstest.FailedIDs(resp))
	stolen, polls := stopThief()
	assert.Empty(t, resp.BatchItemFailures)
	assert.GreaterOrEqual(t, elapsed, 6*time.Second)
	assert.Empty(t, stolen, "no message of the running batch was handed to another consumer")
	assert.GreaterOrEqual(t, polls, 3)
	assert.Equal(t, int32(2), runs.Load(), "each job ran once")
}

// A panic fails only its record, and so does a job whose context deadline passes.
func TestRuntimePanicAndTimeoutOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 30)
	enqueue(t, client, q.URL, TestJob{N: 1, Mode: "panic"}, TestJob{N: 2, Mode: "block"}, TestJob{N: 3})
	msgs := awstest.ReceiveN(t, client, q.URL, 3)
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.JobTimeout = time.Second
	rc.Backoff = fixedBackoff(time.Second)
	resp, err := jobs.NewLambdaHandler(testWorkers(nil), rc).HandleSQS(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	failed := jobstest.FailedIDs(resp)
	assert.ElementsMatch(t, []string{messageIDOf(t, msgs, 1), messageIDOf(t, msgs, 2)}, failed)
	deleteExcept(t, client, q.URL, msgs, failed)
	back := awstest.Receive(t, client, q.URL, 2, 15*time.Second)
	var ns []int
	for _, m := range back {
		ns = append(ns, jobN(t, m))
	}
	assert.ElementsMatch(t, []int{1, 2}, ns, "both failed jobs come back after their backoff")
}

// sendBatch makes a SendMessageBatch call (interceptBatches).
type sendBatch func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)

// interceptBatches is a client option that hands each SendMessageBatch call to fn, which may
// change the input, answer without sending, or change the answer; send makes the call.
func interceptBatches(fn func(batch *sqs.SendMessageBatchInput, send sendBatch) (*sqs.SendMessageBatchOutput, error)) func(*sqs.Options) {
	return func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("jobkit-test-batches",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					batch, ok := in.Parameters.(*sqs.SendMessageBatchInput)
					if !ok {
						return next.HandleInitialize(ctx, in)
					}
					var md middleware.Metadata
					res, err := fn(batch, func(b *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
						in.Parameters = b
						out, m, err := next.HandleInitialize(ctx, in)
						md = m
						res, _ := out.Result.(*sqs.SendMessageBatchOutput)
						return res, err
					})
					return middleware.InitializeOutput{Result: res}, md, err
				}), middleware.After)
		})
	}
}

// countedSQS is awstest.SQS with the client's calls counted.
func countedSQS(t *testing.T) (aws.Config, *sqs.Client, *countCalls) {
	cfg := awstest.Config(t)
	count := &countCalls{}
	return cfg, sqs.NewFromConfig(cfg, count.option), count
}

// countCalls counts the SQS operations a client makes, by name.
type countCalls struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countCalls) option(o *sqs.Options) {
	o.APIOptions = append(o.APIOptions, awstest.OnCall(func(_ string, input any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.calls == nil {
			c.calls = map[string]int{}
		}
		c.calls[fmt.Sprintf("%T", input)]++
	}))
}

func (c *countCalls) n(input any) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[fmt.Sprintf("%T", input)]
}

// EnqueueBatch of 25 jobs makes 3 SendMessageBatch calls, and every job arrives once.
func TestClientEnqueueBatchOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client, count := countedSQS(t)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL})
	require.NoError(t, err)
	var batch []jobs.BatchJob
	for i := 0; i < 25; i++ {
		batch = append(batch, jobs.BatchJob{Args: TestJob{N: i}})
	}
	results, err := c.EnqueueBatch(context.Background(), batch)
	require.NoError(t, err)
	assert.Equal(t, 3, count.n(&sqs.SendMessageBatchInput{}))
	assert.Zero(t, count.n(&sqs.SendMessageInput{}))
	ids := map[string]bool{}
	for _, r := range results {
		require.NoError(t, r.Err)
		require.NotEmpty(t, r.MessageID)
		ids[r.ID] = true
	}
	require.Len(t, ids, 25)
	msgs := awstest.ReceiveN(t, client, q.URL, 25)
	for _, m := range msgs {
		env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
		require.NoError(t, err)
		assert.True(t, ids[env.ID], env.ID)
		delete(ids, env.ID)
	}
	assert.Empty(t, ids, "every job arrived once")
}

// An entry SendMessageBatch reports failed is sent again and succeeds. The failure is real: the
// emulator refuses the entry (its DelaySeconds and an attribute are made invalid on the first call only). SQS calls
// that refusal the sender's fault, which the Client rightly does not retry, so the test marks the
// reported failure as a server fault (as SQS does for InternalError) to drive the retry; the
// retried entry then really reaches the queue. A true sender fault is reported, not retried.
func TestClientRetriesFailedEntryOnSQS(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	var calls atomic.Int32
	var count countCalls
	client := sqs.NewFromConfig(cfg, count.option, interceptBatches(func(batch *sqs.SendMessageBatchInput, send sendBatch) (*sqs.SendMessageBatchOutput, error) {
		call := calls.Add(1)
		copied := *batch
		copied.Entries = append([]sqstypes.SendMessageBatchRequestEntry(nil), batch.Entries...)
		for i, e := range copied.Entries {
			env, _ := jobs.DecodeEnvelope(aws.ToString(e.MessageBody))
			if env.ID == "always" || (env.ID == "once" && call == 1) {
				copied.Entries[i].DelaySeconds = 901 // SQS allows at most 900
				// SQS refuses an attribute without a value too. LocalStack does not
				// check DelaySeconds' range (AWS does: 0 to 900) and moto does not
				// check the empty value: each refuses the entry for one of the two.
				attrs := map[string]sqstypes.MessageAttributeValue{"spoiled": {DataType: aws.String("String"), StringValue: aws.String("")}}
				for k, v := range e.MessageAttributes {
					attrs[k] = v
				}
				copied.Entries[i].MessageAttributes = attrs
			}
		}
		res, err := send(&copied)
		if err == nil && call == 1 {
			for i, f := range res.Failed {
				// Only "once" is retryable: find it by entry id.
				n, _ := strconv.Atoi(aws.ToString(f.Id))
				env, _ := jobs.DecodeEnvelope(aws.ToString(copied.Entries[n].MessageBody))
				if env.ID == "once" {
					res.Failed[i].SenderFault = false
				}
			}
		}
		return res, err
	}))
	c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL, RetryBackoff: 10 * time.Millisecond})
	require.NoError(t, err)
	var batch []jobs.BatchJob
	for i, id := range []string{"a", "once", "b", "always", "c"} {
		batch = append(batch, jobs.BatchJob{Args: TestJob{N: i}, Opts: &jobs.EnqueueOpts{ID: id}})
	}
	results, err := c.EnqueueBatch(context.Background(), batch)
	var be *jobs.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []int{3}, be.Failed, "only the sender-fault entry failed in the end")
	var se *jobs.SendError
	require.ErrorAs(t, results[3].Err, &se)
	assert.True(t, se.SenderFault)
	// SQS names the code InvalidParameterValue; LocalStack gives its exception's name,
	// InvalidParameterValueException.
	assert.Contains(t, []string{"InvalidParameterValue", "InvalidParameterValueException"}, se.Code)
	assert.NoError(t, results[1].Err)
	assert.Equal(t, 2, count.n(&sqs.SendMessageBatchInput{}), "one retry, of the one retryable entry")

	msgs := awstest.Receive(t, client, q.URL, 4, 15*time.Second)
	var got []string
	for _, m := range msgs {
		env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
		require.NoError(t, err)
		got = append(got, env.ID)
	}
	sort.Strings(got)
	assert.Equal(t, []string{"a", "b", "c", "once"}, got, "the retried entry arrived once; the refused one never")
}

// FIFO ordering of enqueued jobs is kept across batch calls: 25 jobs in two groups arrive in
// enqueue order within each group.
func TestClientFIFOOrderOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: true})
	var args []TestJob
	for i := 0; i < 25; i++ {
		args = append(args, TestJob{N: i, Group: []string{"x", "y"}[i%3%2]})
	}
	enqueue(t, client, q.URL, args...)
	got := map[string][]int{}
	deadline := time.Now().Add(30 * time.Second)
	total := 0
	for total < 25 && time.Now().Before(deadline) {
		msgs := awstest.Receive(t, client, q.URL, 10, 2*time.Second)
		for _, m := range msgs {
			g := m.Attributes["MessageGroupId"]
			got[g] = append(got[g], jobN(t, m))
			total++
		}
		deleteExcept(t, client, q.URL, msgs, nil)
	}
	want := map[string][]int{}
	for _, a := range args {
		want[a.Group] = append(want[a.Group], a.N)
	}
	assert.Equal(t, want, got)
}

// A delayed job is not receivable before its delay and is after it.
func TestClientDelayOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL})
	require.NoError(t, err)
	start := time.Now()
	_, err = c.Enqueue(context.Background(), TestJob{N: 1}, &jobs.EnqueueOpts{Delay: 4 * time.Second})
	require.NoError(t, err)
	require.Empty(t, awstest.Receive(t, client, q.URL, 1, 2*time.Second))
	require.Less(t, time.Since(start), 4*time.Second, "the machine is too slow for this check")
	awstest.ReceiveN(t, client, q.URL, 1)
	assert.GreaterOrEqual(t, time.Since(start), 3*time.Second)
}

// Defect 5: a FIFO group keeps its order when an entry fails retryably and is sent again: the
// group's later jobs are not in the same call, so they cannot be enqueued before its retry. The
// emulator reports no per-entry failure on FIFO queues, so the first time "once" is sent it is
// taken out of the call before it reaches the emulator and reported failed with InternalError (a
// server fault, as SQS does); everything else really goes through the emulator, and the order is
// read back by receiving.
func TestClientFIFORetryKeepsGroupOrderOnSQS(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	// A short visibility timeout: a receive the SDK retries after a lost answer hides the group
	// for seconds, not the default 30 s.
	q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: true, VisibilityTimeout: 3})
	var failedOnce atomic.Bool
	client := sqs.NewFromConfig(cfg, interceptBatches(func(batch *sqs.SendMessageBatchInput, send sendBatch) (*sqs.SendMessageBatchOutput, error) {
		copied := *batch
		copied.Entries = nil
		var failed []sqstypes.BatchResultErrorEntry
		for _, e := range batch.Entries {
			if env, _ := jobs.DecodeEnvelope(aws.ToString(e.MessageBody)); env.ID == "once" && failedOnce.CompareAndSwap(false, true) {
				failed = append(failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("injected")})
				continue
			}
			copied.Entries = append(copied.Entries, e)
		}
		if len(copied.Entries) == 0 {
			return &sqs.SendMessageBatchOutput{Failed: failed}, nil
		}
		res, err := send(&copied)
		if err == nil {
			res.Failed = append(res.Failed, failed...)
		}
		return res, err
	}))
	c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL, RetryBackoff: 10 * time.Millisecond})
	require.NoError(t, err)
	var batch []jobs.BatchJob
	for i, id := range []string{"a", "once", "c", "d"} {
		batch = append(batch, jobs.BatchJob{Args: TestJob{N: i}, Opts: &jobs.EnqueueOpts{ID: id, GroupID: "g"}})
	}
	results, err := c.EnqueueBatch(context.Background(), batch)
	require.NoError(t, err)
	for _, r := range results {
		require.NoError(t, r.Err)
	}
	require.True(t, failedOnce.Load(), "the failure was injected")
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < 4 && time.Now().Before(deadline) {
		msgs := awstest.Receive(t, client, q.URL, 1, 2*time.Second)
		for _, m := range msgs {
			env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
			require.NoError(t, err)
			got = append(got, env.ID)
		}
		deleteExcept(t, client, q.URL, msgs, nil)
	}
	assert.Equal(t, []string{"a", "once", "c", "d"}, got, "the group's order")
}

// thief is a second consumer of url: once ready reports true, it polls the queue (1 s long polls)
// until stop, which returns the ids of the messages it was handed and how many receives answered.
func thief(client *sqs.Client, url string, ready func() bool) (stop func() (stolen []string, polls int)) {
	done := make(chan struct{})
	var stolen []string
	var polls int
	var wg sync.WaitGroup
	wg.Go(func() {
		for !ready() {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1})
			if err == nil {
				for _, m := range res.Messages {
					stolen = append(stolen, aws.ToString(m.MessageId))
				}
				polls++
			}
		}
	})
	return func() ([]string, int) {
		close(done)
		wg.Wait()
		return stolen, polls
	}
}
