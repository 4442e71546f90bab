package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
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
)

// runs counts each job's runs and the receive count of its last delivery, and fails the
// jobs it is told to: always, or on their first run only.
type runs struct {
	mu         sync.Mutex
	n          map[int]int
	deliveries map[int]int // the most deliveries (ApproximateReceiveCount) a job was seen with
	attempts   map[int]string
	always     map[int]bool
	once       map[int]bool
}

func newRuns() *runs {
	return &runs{n: map[int]int{}, deliveries: map[int]int{}, attempts: map[int]string{}, always: map[int]bool{}, once: map[int]bool{}}
}

func (r *runs) workers() *jobs.Workers {
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := job.Args.N
		r.n[n]++
		r.attempts[n] = fmt.Sprintf("%d/%d", job.Attempt, job.Deliveries)
		if r.always[n] || (r.once[n] && r.n[n] == 1) {
			return fmt.Errorf("job %d failed", n)
		}
		return nil
	}))
	return w
}

// seen notes the receive counts of a delivery's messages.
func (r *runs) seen(t *testing.T, msgs []sqstypes.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		var d int
		fmt.Sscan(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)], &d)
		n := jobN(t, m)
		r.deliveries[n] = max(r.deliveries[n], d)
	}
}

func (r *runs) ran(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[n]
}

// pump plays the event source mapping: it receives batches of up to 10, hands each to handler —
// or to elsewhere, when it takes the batch (a worker process of its own, which may die) — and
// deletes what the handler did not list, until the queue has been empty for a few polls and holds
// nothing in flight (a receive whose answer was lost keeps its message invisible for the
// visibility timeout: the pump waits for it rather than call the queue drained).
func pump(t *testing.T, client *sqs.Client, q awstest.Queue, r *runs, handler func(context.Context, events.SQSEvent) []string, elsewhere func([]sqstypes.Message) bool) {
	t.Helper()
	ctx := context.Background()
	empty := 0
	for deadline := time.Now().Add(3 * time.Minute); empty < 3; {
		require.True(t, time.Now().Before(deadline), "the queue did not drain")
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			if empty++; empty == 3 && awstest.Depth(t, client, q) > 0 {
				empty = 0
			}
			continue
		}
		empty = 0
		r.seen(t, out.Messages)
		if elsewhere != nil && elsewhere(out.Messages) {
			continue
		}
		deleteExcept(t, client, q.URL, out.Messages, handler(ctx, jobstest.EventFromMessages(q.ARN, out.Messages)))
	}
}

// ledgerConfig is a runtime config for q with a delivery ledger in a fresh idempotency table.
func ledgerConfig(t *testing.T, cfg aws.Config, client *sqs.Client, q, dlq awstest.Queue, attempts, maxReceives int) jobs.Config {
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), awstest.CreateTable(t, cfg, "idem", "id", ""))
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.MaxAttempts, rc.MaxReceiveCount, rc.Backoff, rc.Deliveries = attempts, maxReceives, fixedBackoff(0), store
	return rc
}

func sqsHandler(w *jobs.Workers, rc jobs.Config) func(context.Context, events.SQSEvent) []string {
	h := jobs.NewLambdaHandler(w, rc).HandleSQS
	return func(ctx context.Context, ev events.SQSEvent) []string {
		resp, err := h(ctx, ev)
		if err != nil {
			panic(err)
		}
		return jobstest.FailedIDs(resp)
	}
}

// dead receives the dead-letter queue's messages, by job number.
func dead(t *testing.T, client *sqs.Client, dlq awstest.Queue, n int) map[int]jobstest.DeadLetter {
	t.Helper()
	out := map[int]jobstest.DeadLetter{}
	for _, m := range awstest.Receive(t, client, dlq.URL, n+1, 3*time.Second) {
		out[jobN(t, m)] = jobstest.DecodeDeadLetter(m)
	}
	return out
}

// A FIFO group with 20 queued jobs behind two heads that fail all their attempts, each later job
// failing once: every job but the heads runs and succeeds, the heads are dead-lettered by the
// runtime with their attempts used, and no job reaches the dead-letter queue unrun — though the
// jobs deep in the group are received far more often than attempts (the old FIFO default of
// twice the attempts would have let SQS move them). The queue's redrive is the least the
// Worker construct accepts for batches of 10: contract.MinFIFOMaxReceiveCount(10, 3) = 31.
func TestRuntimeFIFOBacklogNeverDeadLettersUnrunOnSQS(t *testing.T) {
	t.Parallel()
	const attempts = 3
	cfg, client := awstest.SQS(t)
	receives := contract.MinFIFOMaxReceiveCount(10, attempts)
	q, dlq := awstest.QueueWithDLQ(t, cfg, "q", &awstest.QueueOptions{FIFO: true, MaxReceiveCount: receives})
	r := newRuns()
	var backlog []TestJob
	for n := 1; n <= 22; n++ {
		backlog = append(backlog, TestJob{N: n, Group: "g"})
		r.always[n] = n <= 2
		r.once[n] = n > 2
	}
	enqueue(t, client, q.URL, backlog...)

	pump(t, client, q, r, sqsHandler(r.workers(), ledgerConfig(t, cfg, client, q, dlq, attempts, receives)), nil)

	got := dead(t, client, dlq, 2)
	require.Len(t, got, 2, "only the two heads are dead")
	for _, n := range []int{1, 2} {
		assert.Equal(t, contract.ReasonAttemptsUsed, got[n].Reason, "job %d", n)
		assert.Equal(t, attempts, got[n].Attempts, "job %d", n)
		assert.Equal(t, attempts, r.ran(n), "job %d ran all its attempts", n)
	}
	most := 0
	for n := 3; n <= 22; n++ {
		assert.Equal(t, 2, r.ran(n), "job %d failed once, then succeeded", n)
		most = max(most, r.deliveries[n])
	}
	assert.Greater(t, most, 2*attempts, "deep jobs were received more often than twice their attempts")
	assert.LessOrEqual(t, most, receives)
	t.Logf("most receives of a job: %d (redrive after %d)", most, receives)
}

// crashChild, when set, makes this test binary a worker process that runs one batch (the SQS
// event in the file it names) with a worker that kills the process when job 1 starts, fails job
// 2's first run (across processes: a file marks it), and prints a line per run.
const crashChild = "JOBS_TEST_CRASH_EVENT"

// child is a batch run in a worker process of its own.
type child struct {
	t      *testing.T
	client *sqs.Client
	q      awstest.Queue
	env    []string
	dir    string // shared by the processes: job 2's mark

	crashes int
	runs    []string // "<n> <attempt>/<deliveries>" per run, in every process
}

// run runs the batch msgs in a worker process. If job 1 kills it (status 137), the messages go back
// as after a killed invocation (their visibility lapses: made 0 here, so the test need not wait);
// if the process answers, what it did not list is deleted, as the event source mapping does.
func (c *child) run(msgs []sqstypes.Message) {
	t := c.t
	ev, err := json.Marshal(jobstest.EventFromMessages(c.q.ARN, msgs))
	require.NoError(t, err)
	path := filepath.Join(c.dir, "event.json")
	require.NoError(t, os.WriteFile(path, ev, 0o600))
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$")
	cmd.Env = append(append(os.Environ(), crashChild+"="+path, "JOBS_TEST_DIR="+c.dir), c.env...)
	out, err := cmd.Output()
	var failed []string
	for _, line := range strings.Split(string(out), "\n") {
		if run, ok := strings.CutPrefix(line, "RAN "); ok {
			c.runs = append(c.runs, run)
		}
		if id, ok := strings.CutPrefix(line, "LISTED "); ok {
			failed = append(failed, id)
		}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 137 {
		c.crashes++
		entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(msgs))
		for i, m := range msgs {
			entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
		}
		_, err := c.client.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(c.q.URL), Entries: entries})
		require.NoError(t, err)
		return
	}
	require.NoError(t, err, "the worker process: %s", out)
	deleteExcept(t, c.client, c.q.URL, msgs, failed)
}

// crashChildMain is the worker process's side of child.run.
func crashChildMain(t *testing.T, attempts, receives int) {
	cfg, client := awstest.SQS(t)
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), os.Getenv("JOBS_TEST_TABLE"))
	rc := runtimeConfig(client, os.Getenv("JOBS_TEST_QUEUE"), os.Getenv("JOBS_TEST_DLQ"))
	rc.MaxAttempts, rc.MaxReceiveCount, rc.Backoff, rc.Deliveries = attempts, receives, fixedBackoff(0), store
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		fmt.Printf("RAN %d %d/%d\n", job.Args.N, job.Attempt, job.Deliveries)
		switch job.Args.N {
		case 1:
			os.Exit(137) // killed mid-job: no answer, no deferred call
		case 2:
			mark := filepath.Join(os.Getenv("JOBS_TEST_DIR"), "job2-failed")
			if _, err := os.Stat(mark); err != nil {
				_ = os.WriteFile(mark, nil, 0o600)
				return errors.New("job 2 failed")
			}
		}
		return nil
	}))
	b, err := os.ReadFile(os.Getenv(crashChild))
	require.NoError(t, err)
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(b, &ev))
	resp, err := jobs.NewLambdaHandler(w, rc).HandleSQS(context.Background(), ev)
	require.NoError(t, err)
	for _, id := range jobstest.FailedIDs(resp) {
		fmt.Printf("LISTED %s\n", id)
	}
	os.Exit(0)
}

// newChild makes the worker processes' setup for q, its DLQ and a ledger table.
func newChild(t *testing.T, cfg aws.Config, q, dlq awstest.Queue) *child {
	table := awstest.CreateTable(t, cfg, "idem", "id", "")
	return &child{
		t: t, client: sqs.NewFromConfig(cfg), q: q, dir: t.TempDir(),
		env: []string{"JOBS_TEST_TABLE=" + table, "JOBS_TEST_QUEUE=" + q.URL, "JOBS_TEST_DLQ=" + dlq.URL},
	}
}

// A crash loop on a FIFO queue: job 1 kills its worker process whenever it runs (a real
// process, killed mid-job). Each run on a redelivery leaves a start mark in the ledger that only
// a run that reports takes back; once job 1's first run and 3 more have died, the next delivery
// dead-letters it without running it (ReasonNoOutcome). The jobs behind it — delivered with it
// every time, never run, never marked — are not taken for it: job 2 fails once and is retried on
// its second attempt (its receives behind job 1 are not charged), then succeeds; job 3 succeeds.
func TestRuntimeFIFOCrashLoopIsDeadLetteredAloneOnSQS(t *testing.T) {
	const attempts = 3
	receives := contract.MinFIFOMaxReceiveCount(10, attempts)
	if os.Getenv(crashChild) != "" {
		crashChildMain(t, attempts, receives)
		return
	}
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := awstest.QueueWithDLQ(t, cfg, "q", &awstest.QueueOptions{FIFO: true, MaxReceiveCount: receives})
	c := newChild(t, cfg, q, dlq)
	enqueue(t, client, q.URL, TestJob{N: 1, Group: "g"}, TestJob{N: 2, Group: "g"}, TestJob{N: 3, Group: "g"})
	// Every batch runs in a worker process of its own.
	pump(t, client, q, newRuns(), nil, func(msgs []sqstypes.Message) bool { c.run(msgs); return true })

	assert.Equal(t, attempts+1, c.crashes, "its first delivery and one per attempt on redeliveries")
	got := dead(t, client, dlq, 1)
	require.Len(t, got, 1, "only the crash loop is dead")
	assert.Equal(t, contract.ReasonNoOutcome, got[1].Reason)
	assert.Contains(t, got[1].Error, "4 runs started without reporting an outcome")
	assert.Equal(t, []string{"1 1/1", "1 2/2", "1 3/3", "1 4/4", "2 1/5", "2 2/6", "3 1/6"}, c.runs,
		"job 1 never runs after its 4th death; job 2's first attempt is on its 5th delivery, its second on its 6th")
}

// A crash loop on a Standard queue, delivered with four other jobs every time (a killed batch
// comes back whole): job 1 kills its worker process whenever it runs. Once a run has died, its
// job runs alone, after the others: the jobs delivered with it all succeed and none is dead;
// job 1 alone is dead-lettered as no_outcome.
func TestRuntimeCrashLoopRunsAloneOnSQS(t *testing.T) {
	const attempts = 3
	receives := attempts + 8
	if os.Getenv(crashChild) != "" {
		crashChildMain(t, attempts, receives)
		return
	}
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := awstest.QueueWithDLQ(t, cfg, "q", &awstest.QueueOptions{MaxReceiveCount: receives})
	c := newChild(t, cfg, q, dlq)
	enqueue(t, client, q.URL, TestJob{N: 1}, TestJob{N: 3}, TestJob{N: 4}, TestJob{N: 5}, TestJob{N: 6})
	pump(t, client, q, newRuns(), nil, func(msgs []sqstypes.Message) bool { c.run(msgs); return true })

	got := dead(t, client, dlq, 5)
	require.Len(t, got, 1, "only the crash loop is dead: %v", got)
	assert.Equal(t, contract.ReasonNoOutcome, got[1].Reason)
	ran := map[string]bool{}
	for _, run := range c.runs {
		ran[strings.Fields(run)[0]] = true
	}
	for _, n := range []string{"3", "4", "5", "6"} {
		assert.True(t, ran[n], "job %s ran", n)
	}
	t.Logf("crashes: %d; runs: %v", c.crashes, c.runs)
}

// A job snoozed on every delivery is received again and again without an attempt charged; on
// the last receive the queue's redrive policy allows, the runtime dead-letters it itself without
// running it (ReasonReceiveLimit) rather than let SQS move it with no reason.
func TestRuntimeDeadLettersAtTheReceiveLimitOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := awstest.QueueWithDLQ(t, cfg, "q", &awstest.QueueOptions{MaxReceiveCount: 4})
	enqueue(t, client, q.URL, TestJob{N: 1, Mode: "snooze"})
	rc := ledgerConfig(t, cfg, client, q, dlq, 2, 4)
	var attempts []int
	w := testWorkers(nil)
	w.Use(func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			attempts = append(attempts, row.Attempt)
			return next(ctx, row)
		}
	})
	pump(t, client, q, newRuns(), sqsHandler(w, rc), nil)

	assert.Equal(t, []int{1, 1, 1}, attempts, "three snoozes, none charged as an attempt; the fourth, last receive is not run")
	got := dead(t, client, dlq, 1)
	require.Len(t, got, 1)
	assert.Equal(t, contract.ReasonReceiveLimit, got[1].Reason)
	assert.Contains(t, got[1].Error, "received 4 times, the queue's maxReceiveCount of 4, after 0 attempts")
}
