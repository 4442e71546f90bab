package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
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
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Mail is a job; MailsDone and MailsFailed are its fan-out batch's callbacks.
type Mail struct {
	N int `json:"n"`
}

func (Mail) Kind() string { return "mail.send" }

type MailsDone struct{ state.BatchResult }

func (MailsDone) Kind() string { return "mails.done" }

type MailsFailed struct{ state.BatchResult }

func (MailsFailed) Kind() string { return "mails.failed" }

func TestMain(m *testing.M) { awstest.Main(m) }

// moving is the queues of a job queue whose redrive policy targets a holding queue, as the
// JobQueue construct makes them once a worker consumes it, and a jobkit state table.
type moving struct {
	t                   *testing.T
	cfg                 aws.Config
	sqs                 *sqs.Client
	fifo                bool
	q, moved, dlq, done awstest.Queue
	table               string
	states              *state.Table
}

// movedReceives is the job queue's maxReceiveCount.
const movedReceives = 2

func newMoving(t *testing.T, fifo bool) *moving {
	cfg := awstest.Config(t)
	m := &moving{t: t, cfg: cfg, sqs: sqs.NewFromConfig(cfg), fifo: fifo}
	m.dlq = awstest.CreateQueue(t, cfg, "dlq", &awstest.QueueOptions{FIFO: fifo})
	// Its 12 receives, 5 s apart, outlast the callback lease (30 s) a failed recorder run holds, as
	// the construct's 30 s × (maxReceiveCount + 10) do on AWS.
	m.moved = awstest.CreateQueue(t, cfg, "moved", &awstest.QueueOptions{FIFO: fifo, DLQ: &m.dlq, MaxReceiveCount: movedReceives + 10, VisibilityTimeout: 5})
	m.q = awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: fifo, DLQ: &m.moved, MaxReceiveCount: movedReceives, VisibilityTimeout: 1})
	m.done = awstest.CreateQueue(t, cfg, "done", nil)
	m.table = awstest.CreateTable(t, cfg, "state", idempotency.AttrID, "")
	var err error
	m.states, err = state.New(dynamodb.NewFromConfig(cfg), m.table, &state.Options{SQS: m.sqs, Shards: 2})
	require.NoError(t, err)
	return m
}

// run runs the Go main package in dir as a Lambda function with env, fed by an event source
// mapping on q, until the returned stop is called.
func (m *moving) run(ctx context.Context, name, dir string, env map[string]string, q awstest.Queue) (stop func()) {
	t := m.t
	bootstrap := awstest.Build(t, dir)
	rt, err := lambdaruntime.New(lambdaruntime.Function{Name: name, Bootstrap: bootstrap, Env: env, Timeout: 10 * time.Second},
		&lambdaruntime.Options{Endpoint: awstest.Endpoint(), Output: &testLog{t: t, name: name}})
	require.NoError(t, err)
	return m.feed(ctx, rt, q)
}

// feed runs an event source mapping on q into fn until the returned stop is called.
func (m *moving) feed(ctx context.Context, fn esm.Invoker, q awstest.Queue) (stop func()) {
	p, err := esm.New(m.sqs, fn, esm.Mapping{QueueURL: q.URL, QueueARN: q.ARN, ReportBatchItemFailures: true}, &esm.Options{LongPoll: time.Second})
	require.NoError(m.t, err)
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(pctx) })
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if c, ok := fn.(io.Closer); ok {
				_ = c.Close()
			}
		})
	}
	m.t.Cleanup(stop)
	return stop
}

// depth returns a queue's visible and in-flight messages.
func (m *moving) depth(q awstest.Queue) int {
	out, err := m.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	require.NoError(m.t, err)
	v, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	f, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return v + f
}

// waitDepth waits until q holds n messages.
func (m *moving) waitDepth(q awstest.Queue, n int, within time.Duration, what string) {
	deadline := time.Now().Add(within)
	for m.depth(q) != n {
		require.True(m.t, time.Now().Before(deadline), "%s: %s holds %d messages, not %d", what, q.Name, m.depth(q), n)
		time.Sleep(500 * time.Millisecond)
	}
}

// waitBatchDone waits until the fan-out batch has sent its callbacks.
func (m *moving) waitBatchDone(ctx context.Context, batchID string, within time.Duration) {
	deadline := time.Now().Add(within)
	for {
		info, err := m.states.BatchStatus(ctx, batchID)
		require.NoError(m.t, err)
		if info.Done() {
			return
		}
		require.True(m.t, time.Now().Before(deadline), "batch %s not done within %s: %+v", batchID, within, info)
		time.Sleep(500 * time.Millisecond)
	}
}

// group is the enqueue options of job n: a message group of its own on a FIFO queue.
func (m *moving) group(n int) *jobs.EnqueueOpts {
	if !m.fifo {
		return nil
	}
	return &jobs.EnqueueOpts{GroupID: "g" + strconv.Itoa(n)}
}

// A function that never reaches its handler — a real worker binary that exits at init, run by
// the offline Lambda runtime behind an event source mapping — on a queue whose redrive policy
// targets a holding queue: SQS moves its jobs there after maxReceiveCount receives, and the
// redrive recorder (this package's real binary, fed by its own mapping) records each dead, with
// reason redrive_policy: a fan-out batch member is counted dead, so its batch completes and sends
// its callback and failure callback. Each message reaches the dead-letter queue with the reason,
// the time of the move, the job queue as its source and the worker's name — a body that is no job
// too, with its own attribute — and inspect names the job queue as the DLQ's source: a redrive
// (native where the endpoint has it, by hand on FIFO queues) puts the jobs back on the job queue,
// never on the holding queue, and they run.
func TestRedrivePolicyMovesEndAsJobsOnSQS(t *testing.T) {
	t.Parallel()
	awstest.EachQueueType(t, func(t *testing.T, fifo bool) {
		testMovesEndAsJobs(t, fifo)
	})
}

func testMovesEndAsJobs(t *testing.T, fifo bool) {
	m := newMoving(t, fifo)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ids, batchID, single := m.enqueue(ctx)

	start := time.Now()
	stopWorker := m.run(ctx, "brokenworker", "testdata/brokenworker", nil, m.q)
	stopRecorder := m.run(ctx, "recorder", ".", map[string]string{
		contract.EnvQueueURL: m.q.URL, contract.EnvDLQURL: m.dlq.URL, contract.EnvMaxReceiveCount: strconv.Itoa(movedReceives),
		contract.EnvWorkerName: "brokenworker", contract.EnvStateTable: m.table,
	}, m.moved)
	// Every moved message sent on and the batch done: a recorder run whose callback send failed
	// holds the callback's lease (30 s), and the member's next delivery sends it after that.
	m.waitDepth(m.dlq, 3, 2*time.Minute, "the recorder sends every moved message on")
	m.waitBatchDone(ctx, batchID, 2*time.Minute)
	stopWorker()
	stopRecorder()
	require.Zero(t, m.depth(m.q))
	require.Zero(t, m.depth(m.moved))

	m.checkStates(ctx, ids, batchID)
	m.checkDeadLetters(ctx, ids, start)
	m.redrive(ctx)

	// They run: the jobs succeed, the body that is no job is dead-lettered as such.
	ran := m.runJobs(ctx)
	assert.ElementsMatch(t, []int{1, 2}, ran)
	st, err := m.states.JobStatus(ctx, single)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, st.State)
	m.waitDepth(m.dlq, 1, 30*time.Second, "the runtime dead-letters what is no job")
}

// enqueue sends the test's three messages to the job queue: job 1, a member of a fan-out batch
// with a callback and a failure callback; job 2, on its own; and a body that is no job, with an
// attribute of its own. It returns the jobs' numbers by id, the batch's id and job 2's id.
func (m *moving) enqueue(ctx context.Context) (ids map[string]int, batchID, single string) {
	t := m.t
	producer, err := jobs.NewClient(m.sqs, jobs.ClientOptions{DefaultQueueURL: m.q.URL, State: m.states,
		Queues: map[string]string{MailsDone{}.Kind(): m.done.URL, MailsFailed{}.Kind(): m.done.URL}})
	require.NoError(t, err)
	batch, err := m.states.OpenBatch(ctx, producer, state.BatchOpts{Callback: MailsDone{}, OnFailure: MailsFailed{}})
	require.NoError(t, err)
	member, err := batch.Add(ctx, []jobs.BatchJob{{Args: Mail{N: 1}, Opts: m.group(1)}})
	require.NoError(t, err)
	require.NoError(t, batch.Close(ctx))
	res, err := producer.Enqueue(ctx, Mail{N: 2}, m.group(2))
	require.NoError(t, err)
	raw := &sqs.SendMessageInput{QueueUrl: aws.String(m.q.URL), MessageBody: aws.String("not a job"),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"origin": {DataType: aws.String("String"), StringValue: aws.String("legacy")}}}
	if m.fifo {
		raw.MessageGroupId, raw.MessageDeduplicationId = aws.String("g3"), aws.String("raw-3")
	}
	_, err = m.sqs.SendMessage(ctx, raw)
	require.NoError(t, err)
	return map[string]int{member[0].ID: 1, res.ID: 2}, batch.ID, res.ID
}

// checkStates checks the job states — dead, with the reason and the receives — and that the
// batch is done, its callback and failure callback sent.
func (m *moving) checkStates(ctx context.Context, ids map[string]int, batchID string) {
	t := m.t
	for id := range ids {
		st, err := m.states.JobStatus(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, jobs.StateDead, st.State, id)
		assert.Equal(t, contract.ReasonRedrivePolicy, st.Reason, id)
		assert.Contains(t, st.LastError, "received 2 times with no outcome reported: moved by the queue's redrive policy", id)
		assert.Equal(t, m.q.URL, st.Queue, id)
	}
	info, err := m.states.BatchStatus(ctx, batchID)
	require.NoError(t, err)
	assert.Equal(t, 1, info.Dead)
	assert.Zero(t, info.Pending)
	assert.True(t, info.Done(), "the batch completed")
	// Each callback once, by id: a send retried after an answer the emulator lost (HTTP 500 from
	// moto) may leave a second message of the same id, which the callback's idempotent worker
	// runs once (package jobs/state's doc).
	seen := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(seen) < 2 && time.Now().Before(deadline); {
		for _, id := range envelopeIDs(t, m.sqs, m.done, 1) {
			seen[id] = true
		}
	}
	assert.Equal(t, map[string]bool{state.CallbackID(batchID): true, state.FailureID(batchID): true}, seen)
}

// checkDeadLetters reads the dead letters back: the reason, a real time of the move (after start),
// the job queue as source, the worker's name; the body that is no job as it was.
func (m *moving) checkDeadLetters(ctx context.Context, ids map[string]int, start time.Time) {
	t := m.t
	list, err := inspect.New(m.cfg).ListDead(ctx, m.dlq.URL, &inspect.ListOptions{Visibility: 5 * time.Second})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 3)
	for _, j := range list.Jobs {
		assert.Equal(t, contract.ReasonRedrivePolicy, j.Reason, j.Body)
		assert.False(t, j.ByRedrivePolicy(), "recorded, not moved unnamed: %s", j.Body)
		assert.Equal(t, inspect.ReasonHint(contract.ReasonRedrivePolicy), j.Hint())
		assert.WithinRange(t, j.DeadLetteredAt, start, time.Now(), j.Body)
		assert.Equal(t, m.q.URL, j.SourceQueue, j.Body)
		assert.Equal(t, "brokenworker", j.Function)
		assert.Contains(t, j.Error, "received 2 times with no outcome reported")
		assert.NotEmpty(t, j.SourceMessageID)
		if n, ok := ids[j.JobID]; ok {
			assert.Equal(t, Mail{}.Kind(), j.Kind)
			if m.fifo {
				assert.Equal(t, "g"+strconv.Itoa(n), j.GroupID)
			}
			continue
		}
		assert.Equal(t, "not a job", j.Body, "sent on as it was")
		assert.Equal(t, "legacy", aws.ToString(j.Attributes["origin"].StringValue), "with its own attributes")
	}
}

// redrive redrives the DLQ with the Inspector, which follows the holding queue's hop both ways:
// the jobs go back to the job queue, never to the holding queue.
func (m *moving) redrive(ctx context.Context) {
	t := m.t
	in := inspect.New(m.cfg)
	target, err := in.RedriveTarget(ctx, m.q.URL)
	require.NoError(t, err)
	require.Equal(t, m.dlq.URL, target)
	sources, err := in.DeadLetterSources(ctx, m.dlq.URL)
	require.NoError(t, err)
	require.Equal(t, []string{m.q.URL}, sources)
	res, err := in.Redrive(ctx, m.dlq.URL, &inspect.RedriveOptions{InFlightWait: -1})
	require.NoError(t, err)
	if m.fifo {
		require.Equal(t, inspect.RedriveManual, res.Method, "FIFO jobs are always moved by hand")
	}
	t.Logf("redrive: %s, moved %d", res.Method, res.Moved)
	m.waitDepth(m.q, 3, time.Minute, "the redrive puts the jobs back on the job queue")
	require.Zero(t, m.depth(m.moved), "never on the holding queue")
	require.Zero(t, m.depth(m.dlq))
}

// runJobs runs the job queue with a working worker (the runtime in this process) until it is
// empty, and returns the jobs that ran.
func (m *moving) runJobs(ctx context.Context) []int {
	var mu sync.Mutex
	var ran []int
	workers := jobs.NewWorkers()
	workers.Use(m.states.Middleware(nil))
	jobs.AddWorker(workers, jobs.WorkFunc[Mail](func(_ context.Context, job *jobs.Job[Mail]) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, job.Args.N)
		return nil
	}))
	h := jobs.NewLambdaHandler(workers, jobs.Config{QueueURL: m.q.URL, DLQURL: m.dlq.URL, SQS: m.sqs, States: m.states,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	stop := m.feed(ctx, inProcess{h}, m.q)
	m.waitDepth(m.q, 0, time.Minute, "the jobs run")
	stop()
	mu.Lock()
	defer mu.Unlock()
	return ran
}

// inProcess invokes the jobs runtime in this process, as a mapping's function.
type inProcess struct{ h *jobs.LambdaHandler }

func (p inProcess) Invoke(ctx context.Context, payload []byte) (lambdaruntime.Result, error) {
	out, err := p.h.Invoke(ctx, payload)
	return lambdaruntime.Result{Outcome: lambdaruntime.Success, Payload: out}, err
}

// envelopeIDs receives n messages from q and returns their envelope ids.
func envelopeIDs(t *testing.T, client *sqs.Client, q awstest.Queue, n int) []string {
	var ids []string
	for deadline := time.Now().Add(30 * time.Second); len(ids) < n && time.Now().Before(deadline); {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		require.NoError(t, err)
		for _, msg := range out.Messages {
			env, err := jobs.DecodeEnvelope(aws.ToString(msg.Body))
			require.NoError(t, err)
			ids = append(ids, env.ID)
			_, err = client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: msg.ReceiptHandle})
			require.NoError(t, err)
		}
	}
	return ids
}

// testLog writes a function's output to the test log, a line at a time.
type testLog struct {
	t    *testing.T
	name string
	mu   sync.Mutex
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Logf("[%s] %s", l.name, bytes.TrimSpace(p))
	return len(p), nil
}
