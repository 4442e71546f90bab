package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
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
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/scheduler"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type thumb struct {
	Image string `json:"image"`
}

func (thumb) Kind() string { return "image.thumb" }

type thumbsDone struct{ state.BatchResult }

func (thumbsDone) Kind() string { return "image.thumbs_done" }

func TestJobAndBatchShow(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	name := awstest.CreateTable(t, cfg, "state", idempotency.AttrID, "")
	table, err := state.New(dynamodb.NewFromConfig(cfg), name, nil)
	require.NoError(t, err)
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: q.URL, State: table})
	require.NoError(t, err)
	ctx := context.Background()
	res, err := client.Enqueue(ctx, thumb{Image: "a.png"}, nil)
	require.NoError(t, err)

	out, errOut, code := cli(t, "", "job", "show", res.ID, "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "enqueued")
	assert.Contains(t, out, "image.thumb")

	out, errOut, code = cli(t, "", "job", "show", res.ID, "--state-table", name, "--json")
	require.Equal(t, 0, code, errOut)
	var doc jobJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, jobs.StateEnqueued, doc.Job.State)
	assert.Equal(t, res.ID, doc.Job.ID)

	_, errOut, code = cli(t, "", "job", "show", "nope", "--state-table", name)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no state recorded")

	b, err := table.OpenBatch(ctx, client, state.BatchOpts{Callback: thumbsDone{}})
	require.NoError(t, err)
	_, err = b.Add(ctx, []jobs.BatchJob{{Args: thumb{Image: "1"}}, {Args: thumb{Image: "2"}}})
	require.NoError(t, err)
	out, errOut, code = cli(t, "", "batch", "show", b.ID, "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "open")
	assert.Regexp(t, `members\s+2`, out)
	assert.Regexp(t, `pending\s+2`, out)

	out, errOut, code = cli(t, "", "batch", "show", b.ID, "--state-table", name, "--json")
	require.Equal(t, 0, code, errOut)
	var bdoc batchJSON
	require.NoError(t, json.Unmarshal([]byte(out), &bdoc))
	assert.Equal(t, 2, bdoc.Batch.Total)
	assert.Equal(t, "image.thumbs_done", bdoc.Batch.CallbackKind)
}

// job cancel and job retry on the emulator: a waiting job is cancelled (again: "already"), a job
// parked in Scheduler loses its schedule, one that is not retrying is not retried; each refusal
// exits 1 and says why.
func TestJobCancelAndRetry(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	q, dlq := awstest.QueueWithDLQ(t, cfg, "q", nil)
	name := awstest.CreateTable(t, cfg, "state", idempotency.AttrID, "")
	table, err := state.New(dynamodb.NewFromConfig(cfg), name, nil)
	require.NoError(t, err)
	sch, group := awstest.ScheduleGroup(t, cfg)
	d, err := scheduler.NewDelayer(sch, scheduler.DelayerConfig{Group: group, RoleARN: awstest.SchedulerRoleARN(t)})
	require.NoError(t, err)
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: q.URL, State: table, LongDelayer: d})
	require.NoError(t, err)
	ctx := context.Background()
	waiting, err := client.Enqueue(ctx, thumb{Image: "a.png"}, nil)
	require.NoError(t, err)
	parked, err := client.Enqueue(ctx, thumb{Image: "b.png"}, &jobs.EnqueueOpts{Delay: 48 * time.Hour})
	require.NoError(t, err)
	require.True(t, parked.Scheduled)
	require.Len(t, awstest.ListSchedules(t, sch, group), 1)

	out, errOut, code := cli(t, "", "job", "cancel", waiting.ID, "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "cancelled: its next delivery deletes it unrun")
	st, err := client.Status(ctx, waiting.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateCancelled, st.State)

	time.Sleep(1100 * time.Millisecond)
	out, errOut, code = cli(t, "", "job", "cancel", waiting.ID, "--state-table", name, "--json")
	require.Equal(t, 0, code, errOut)
	var doc cancelJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.True(t, doc.Already)
	assert.Equal(t, jobs.StateCancelled, doc.Job.State)

	out, errOut, code = cli(t, "", "job", "cancel", parked.ID, "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "its schedule is deleted")
	assert.Empty(t, awstest.ListSchedules(t, sch, group))

	_, errOut, code = cli(t, "", "job", "retry", waiting.ID, "--state-table", name)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not waiting for a retry: job "+waiting.ID+" is cancelled")

	_, errOut, code = cli(t, "", "job", "cancel", "nope", "--state-table", name)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no state recorded")

	// A job retrying after a failure, its next attempt an hour away: retried now.
	flaky, err := client.Enqueue(ctx, thumb{Image: "flaky.png"}, nil)
	require.NoError(t, err)
	w := jobs.NewWorkers()
	w.Use(table.Middleware(nil))
	jobs.AddWorker(w, jobs.WorkFunc[thumb](func(ctx context.Context, job *jobs.Job[thumb]) error { return errors.New("disk full") }))
	sqsClient := sqs.NewFromConfig(cfg)
	handle := jobs.NewLambdaHandler(w, jobs.Config{QueueURL: q.URL, DLQURL: dlq.URL, SQS: sqsClient, MaxAttempts: 3, States: table,
		Backoff: func(int) time.Duration { return time.Hour }, Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).HandleSQS
	msgs := awstest.ReceiveN(t, sqsClient, q.URL, 2) // flaky, and the cancelled job
	resp, err := handle(ctx, jobstest.EventFromMessages(q.ARN, msgs))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1, "flaky fails; the cancelled job is deleted unrun")
	var flakyMsg string
	for _, m := range msgs {
		if aws.ToString(m.MessageId) == resp.BatchItemFailures[0].ItemIdentifier {
			flakyMsg = aws.ToString(m.MessageId)
		} else {
			awstest.Delete(t, sqsClient, q.URL, []sqstypes.Message{m})
		}
	}
	awstest.ExpectEmpty(t, sqsClient, q.URL)
	out, errOut, code = cli(t, "", "job", "retry", flaky.ID, "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "retries now (attempt 1 failed: disk full)")
	again := awstest.ReceiveN(t, sqsClient, q.URL, 1)
	assert.Equal(t, flakyMsg, aws.ToString(again[0].MessageId))
	_, errOut, code = cli(t, "", "job", "retry", flaky.ID, "--state-table", name)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not waiting for a retry")
}

// job show prints a running job's progress, escaped like every job value.
func TestPrintJobShowsProgress(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	printJob(&b, jobs.JobStatus{ID: "j1", State: jobs.StateRunning, Progress: &jobs.Progress{Percent: 42.5, Note: "frames\x1b[2J", At: at}})
	assert.Regexp(t, `progress\s+42\.5% frames\\x1b\[2J \(at 2026-11-27T12:00:00Z\)`, b.String())
}

// job list prints a queue's jobs in one state from the state table's index, a page at a time.
func TestJobList(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	name := awstest.CreateStateTable(t, cfg)
	table, err := state.New(dynamodb.NewFromConfig(cfg), name, &state.Options{ListJobs: true})
	require.NoError(t, err)
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: q.URL, State: table})
	require.NoError(t, err)
	ctx := context.Background()
	var ids []string
	for _, img := range []string{"a.png", "b.png", "c.png"} {
		res, err := client.Enqueue(ctx, thumb{Image: img}, nil)
		require.NoError(t, err)
		ids = append(ids, res.ID)
		time.Sleep(2 * time.Millisecond)
	}
	// The runtime records the first job dead after its last attempt.
	require.NoError(t, table.JobSettled(ctx, &jobs.JobRow{ID: ids[0], Kind: "image.thumb", QueueURL: q.URL},
		jobs.JobStatus{State: jobs.StateDead, Attempt: 3, LastError: "decode: corrupt PNG", Reason: "attempts_exhausted"}))

	out, errOut, code := cli(t, "", "-q", q.URL, "job", "list", "--state", "dead", "--state-table", name)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Regexp(t, `^JOB ID\s+KIND\s+SINCE \(UTC\)\s+ATTEMPT\s+LAST ERROR$`, lines[0])
	assert.Regexp(t, `^`+ids[0]+`\s+image\.thumb\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+3\s+decode: corrupt PNG$`, lines[1])

	// A page at a time, newest first, each naming the cursor of the next until the last.
	var listed []string
	cursor := ""
	for pages := 0; pages == 0 || cursor != ""; pages++ {
		require.Less(t, pages, 5)
		args := []string{"-q", q.URL, "job", "list", "--state", "enqueued", "--limit", "1", "--state-table", name, "--json"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		out, errOut, code = cli(t, "", args...)
		require.Equal(t, 0, code, errOut)
		var doc jobListJSON
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		require.LessOrEqual(t, len(doc.Jobs), 1)
		for _, j := range doc.Jobs {
			listed = append(listed, j.ID)
		}
		cursor = doc.Next
	}
	assert.Equal(t, []string{ids[2], ids[1]}, listed, "the dead job is no longer enqueued")
	out, errOut, code = cli(t, "", "-q", q.URL, "job", "list", "--state", "enqueued", "--limit", "1", "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^more: --cursor [A-Za-z0-9_-]+$`, out)
	out, errOut, code = cli(t, "", "-q", q.URL, "job", "list", "--state", "cancelled", "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "no cancelled jobs on "+q.Name+"\n", out)

	_, errOut, code = cli(t, "", "-q", q.URL, "job", "list", "--state", "lost", "--state-table", name)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `state "lost"`)
}
