package taskrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/offline/taskrun"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// buildWorker builds testdata/worker for this machine, once per test binary.
var buildWorker = sync.OnceValues(func() (string, error) {
	dir, err := filepathTemp()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "worker")
	return out, lambdaruntime.Build(context.Background(), "testdata/worker", out)
})

// output collects a task's lines.
type output struct{ awstest.SyncBuffer }

// lines returns the lines whose text after the "[name] " prefix begins with word.
func (o *output) lines(word string) []string {
	var out []string
	for _, l := range strings.Split(o.String(), "\n") {
		if i := strings.Index(l, "] "); i >= 0 && strings.HasPrefix(l[i+2:], word+" ") {
			out = append(out, l[i+2:])
		}
	}
	return out
}

func (o *output) count(line string) int {
	n := 0
	word := strings.Fields(line)[0]
	for _, l := range o.lines(word) {
		if l == line || strings.HasPrefix(l, line+" ") {
			n++
		}
	}
	return n
}

// waitFor polls cond every 100 ms, failing after limit (a hang, not a timing assertion).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, limit, 100*time.Millisecond, "gave up waiting for %s", what)
}

type testJob struct {
	N        int     `json:"n"`
	Seconds  float64 `json:"seconds"`
	Stubborn bool    `json:"stubborn,omitempty"`
}

func (testJob) Kind() string { return "taskrun.test" }

// startTask enqueues the jobs on a fresh queue and starts the worker container on it.
func startTask(t *testing.T, vt int, env map[string]string, args ...testJob) (*taskrun.Task, *output, awstest.Queue, awstest.Queue, *sqs.Client) {
	t.Helper()
	bin, err := buildWorker()
	require.NoError(t, err)
	cfg, client := awstest.SQS(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{VisibilityTimeout: vt})
	producer, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL})
	require.NoError(t, err)
	for _, a := range args {
		_, err := producer.Enqueue(context.Background(), a, nil)
		require.NoError(t, err)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	require.NoError(t, err)
	full := map[string]string{
		contract.EnvQueueURL: q.URL, contract.EnvDLQURL: dlq.URL, contract.EnvVisibilityTimeout: fmt.Sprint(vt),
		contract.EnvWorkerName: "test-worker",
	}
	for k, v := range env {
		full[k] = v
	}
	out := &output{}
	task, err := taskrun.Start(taskrun.Options{
		Name: "worker", Binary: bin, Env: full, Region: cfg.Region, Endpoint: awstest.Endpoint(),
		AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken,
		StopTimeout: 10 * time.Second, Output: out,
	})
	require.NoError(t, err)
	t.Cleanup(func() { task.Stop() })
	return task, out, q, dlq, client
}

// A job more than three times as long as its queue's visibility timeout runs once in the
// container process: the heartbeats keep its message, which is deleted when it is done.
func TestTaskLongJobOnSQS(t *testing.T) {
	t.Parallel()
	task, out, q, dlq, client := startTask(t, 3, nil, testJob{N: 1, Seconds: 10})
	waitFor(t, time.Minute, "the job to finish", func() bool { return out.count("done 1") > 0 })
	// Let the consumer delete it, then stop the process as ECS would.
	waitFor(t, 30*time.Second, "the queue to empty", func() bool {
		a, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
		})
		return err == nil && a.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] == "0"
	})
	assert.True(t, task.Stop(), "the idle process exits on SIGTERM before the stop timeout")
	assert.Equal(t, 1, out.count("start 1"), "the job ran once")
	assert.Equal(t, 1, out.count("done 1"))
	assert.Equal(t, 1, task.Starts())
	require.Zero(t, awstest.Depth(t, client, q), "left in %s", q.Name)
	require.Zero(t, awstest.Depth(t, client, dlq), "left in %s", dlq.Name)
}

// SIGTERM mid-job: the process drains within its budget — a job that stops on its context and a
// job that ignores it are both released with visibility 0 — and exits; the task restarts it, and
// the new process takes both jobs at once (the queue's 60 s visibility timeout never comes into
// it) and finishes each once. Nothing is lost, dead-lettered or finished twice.
func TestTaskSIGTERMMidJobOnSQS(t *testing.T) {
	t.Parallel()
	task, out, q, dlq, client := startTask(t, 60, map[string]string{contract.EnvDrainTimeout: "2s", contract.EnvConcurrency: "2"},
		testJob{N: 1, Seconds: 6}, testJob{N: 2, Seconds: 6, Stubborn: true})
	waitFor(t, time.Minute, "both jobs to start", func() bool { return out.count("start 1") == 1 && out.count("start 2") == 1 })
	first := task.PID()
	require.True(t, task.Signal(syscall.SIGTERM))
	waitFor(t, 2*time.Minute, "both jobs to finish", func() bool { return out.count("done 1") > 0 && out.count("done 2") > 0 })
	waitFor(t, 30*time.Second, "the queue to empty", func() bool {
		a, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
		})
		return err == nil && a.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] == "0"
	})
	assert.True(t, task.Stop())

	assert.Equal(t, 1, out.count("interrupted 1"), "the polite job stopped on its context")
	assert.Equal(t, 1, out.count("done 1"), "job 1 finished once")
	assert.Equal(t, 1, out.count("done 2"), "job 2 finished once")
	assert.Equal(t, 2, task.Starts(), "the process was restarted once")
	for _, n := range []int{1, 2} {
		starts := out.lines("start")
		var pids []string
		for _, l := range starts {
			f := strings.Fields(l)
			if f[1] == fmt.Sprint(n) {
				pids = append(pids, f[2])
			}
		}
		require.Len(t, pids, 2, "job %d: started in the first process and again in the second", n)
		assert.Equal(t, fmt.Sprint(first), pids[0])
		assert.NotEqual(t, pids[0], pids[1])
	}
	require.Zero(t, awstest.Depth(t, client, q), "left in %s", q.Name)
	require.Zero(t, awstest.Depth(t, client, dlq), "left in %s", dlq.Name)
}

// A process that exits is started again after RestartDelay, doubled after each quick exit but
// never past MaxRestartDelay.
func TestTaskRestartDelayIsBounded(t *testing.T) {
	t.Parallel()
	task, err := taskrun.Start(taskrun.Options{
		Name: "Exits", Binary: "/bin/true", RestartDelay: 20 * time.Millisecond, MaxRestartDelay: 20 * time.Millisecond,
		Output: &output{},
	})
	require.NoError(t, err)
	defer task.Stop()
	// Doubling from 20 ms without the bound, the 12th start would come after 41 s.
	waitFor(t, 10*time.Second, "12 starts", func() bool { return task.Starts() >= 12 })
}

// jobs.Start picks its mode from the process's environment, so one main serves both: the same
// worker binary the container tests run as a task is here run by the offline Lambda runtime
// (AWS_LAMBDA_RUNTIME_API set), where it answers the SQS event with its batch response: a main
// that polled its queue instead would never answer, and the invocation would time out. The job
// runs in the invoked process.
func TestWorkerMainServesLambdaToo(t *testing.T) {
	t.Parallel()
	bin, err := buildWorker()
	require.NoError(t, err)
	cfg := awstest.Config(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	out := &output{}
	rt, err := lambdaruntime.New(lambdaruntime.Function{
		Name: "worker", Bootstrap: bin, Timeout: 20 * time.Second,
		Env: map[string]string{contract.EnvQueueURL: q.URL, contract.EnvDLQURL: dlq.URL},
	}, &lambdaruntime.Options{Region: cfg.Region, Endpoint: awstest.Endpoint(), Output: out})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })

	ev := jobstest.Event(jobstest.Message(testJob{N: 7}, &jobstest.MessageOpts{QueueARN: q.ARN}))
	payload, err := json.Marshal(ev)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := rt.Invoke(ctx, payload)
	require.NoError(t, err)
	require.Equal(t, lambdaruntime.Success, res.Outcome, "%+v", res.Error)
	var resp events.SQSEventResponse
	require.NoError(t, json.Unmarshal(res.Payload, &resp), string(res.Payload))
	assert.Empty(t, resp.BatchItemFailures)
	// The function's output is copied as it comes, maybe after the answer: wait for it. The
	// Lambda runtime's output has no task prefix.
	lines := func() []string { return strings.Split(out.String(), "\n") }
	waitFor(t, 30*time.Second, "the job's output", func() bool { return slices.Contains(lines(), "done 7") })
	assert.Contains(t, lines(), fmt.Sprintf("start 7 %d", res.PID), "the job ran in the invoked process")
}
