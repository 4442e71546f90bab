package jobs_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// jsonLines parses the JSON lines written to b so far.
func jsonLines(t *testing.T, b *awstest.SyncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		out = append(out, m)
	}
	return out
}

// One trace, followed from the enqueue (the producer's context) to the worker's context and log
// lines and the batch's metrics line, through a dead letter and a redrive, and on to a job the
// worker enqueues.
func TestTraceFromEnqueueToWorkerThroughARedriveOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 0)
	children := awstest.CreateQueue(t, cfg, "children", nil)
	producer, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.URL})
	require.NoError(t, err)
	childClient, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: children.URL})
	require.NoError(t, err)

	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	res, err := producer.Enqueue(jobs.ContextWithTrace(context.Background(), parent), TestJob{N: 1}, nil)
	require.NoError(t, err)

	var fail bool
	var seen []string // TraceFromContext in the worker, per run
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		seen = append(seen, jobs.TraceFromContext(ctx))
		job.Logger().Info("working")
		if fail {
			return jobs.Cancel(errors.New("not yet"))
		}
		_, err := childClient.Enqueue(ctx, TestJob{N: 2}, nil)
		return err
	}))
	logs, metrics := &awstest.SyncBuffer{}, &awstest.SyncBuffer{}
	rc := runtimeConfig(client, q.URL, dlq.URL)
	rc.Logger, rc.Metrics = slog.New(slog.NewJSONHandler(logs, nil)), metrics
	run := func() {
		msgs := awstest.ReceiveN(t, client, q.URL, 1)
		resp, err := jobs.NewLambdaHandler(w, rc).HandleSQS(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		deleteExcept(t, client, q.URL, msgs, nil)
	}

	fail = true
	run() // dead-lettered
	in := inspect.New(cfg)
	moved, err := in.Redrive(context.Background(), dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveManual, Source: q.URL})
	require.NoError(t, err)
	require.Equal(t, int64(1), moved.Moved)
	fail = false
	run() // redriven, succeeds, enqueues a child

	require.Len(t, seen, 2)
	for _, tp := range seen {
		assert.Equal(t, traceID, jobs.TraceID(tp), "the job's context carries the producer's trace")
	}
	var working, dead int
	for _, l := range jsonLines(t, logs) {
		if l["job_id"] != res.ID {
			continue
		}
		assert.Equal(t, traceID, l["trace_id"], "every line about the job has its trace id: %v", l)
		switch l["msg"] {
		case "working":
			working++
		case "job dead-lettered":
			dead++
		}
	}
	assert.Equal(t, 2, working, "the worker's own lines, before and after the redrive")
	assert.Equal(t, 1, dead)
	emf := jsonLines(t, metrics)
	require.Len(t, emf, 2)
	for _, l := range emf {
		assert.Equal(t, []any{traceID}, l["trace_ids"], "the metrics line lists the trace")
	}

	child := awstest.ReceiveN(t, client, children.URL, 1)
	env, err := jobs.DecodeEnvelope(aws.ToString(child[0].Body))
	require.NoError(t, err)
	assert.Equal(t, traceID, jobs.TraceID(env.Trace), "a job enqueued from a job continues its trace")
}

// A message without a trace in its envelope (another producer, or an EventBridge target) that
// SQS gives an AWSTraceHeader: the job runs in the X-Ray trace.
func TestTraceFromAWSTraceHeaderOnSQS(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q, dlq := runtimeQueues(t, cfg, 0)
	body := `{"v":1,"id":"no-trace","kind":"test.job","args":{"n":1},"enqueued_at":"2026-11-23T12:00:00Z"}`
	_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(q.URL), MessageBody: aws.String(body),
		MessageSystemAttributes: map[string]sqstypes.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")},
		},
	})
	require.NoError(t, err)
	msgs := awstest.ReceiveN(t, client, q.URL, 1)
	require.Contains(t, msgs[0].Attributes, "AWSTraceHeader", "the emulator passes the header")

	var got string
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		got = jobs.TraceFromContext(ctx)
		return nil
	}))
	ev := jobstest.EventFromMessages(q.ARN, msgs)
	resp, err := jobs.NewLambdaHandler(w, runtimeConfig(client, q.URL, dlq.URL)).HandleSQS(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", got, "typed handler")

	got = ""
	payload, err := json.Marshal(ev)
	require.NoError(t, err)
	out, err := jobs.NewLambdaHandler(w, runtimeConfig(client, q.URL, dlq.URL)).Invoke(context.Background(), payload)
	require.NoError(t, err)
	assert.JSONEq(t, `{"batchItemFailures":[]}`, string(out))
	assert.Equal(t, "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", got, "raw handler")
}
