package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A job SQS's RedrivePolicy moved to the DLQ (a crash loop) carries no jobkit reason and no time
// of the move: list and show say the time is unknown — never its send time as the move's — and
// what the redrive policy usually means; the redrive's summary says nothing is left behind.
func TestDLQJobMovedByTheRedrivePolicy(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", &awstest.QueueOptions{MaxReceiveCount: 1, VisibilityTimeout: 1})
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src.URL), MessageBody: aws.String(envelopeBody("job-1", "email.send", 1))})
	require.NoError(t, err)
	awstest.DeadLetterByPolicy(t, cfg, src, dlq, 1)

	out, errOut, code := cli(t, "", "dlq", "list", "--dlq", dlq.URL)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^job-1 +email\.send +\(redrive policy\) +0 +unknown +-$`, out)
	require.Regexp(t, `(?m)^why:\n  \(redrive policy\) +received maxReceiveCount times without an answer, moved by SQS unrecorded \(no redrive recorder, or it failed too\): .*; FAILED AT unknown: SQS keeps no time of the move$`, out)

	out, errOut, code = cli(t, "", "dlq", "show", "job-1", "--dlq", dlq.URL)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reason:            (moved by the queue's RedrivePolicy)\n")
	require.Regexp(t, `(?m)^why: +received maxReceiveCount times without an answer, moved by SQS unrecorded \(no redrive recorder, or it failed too\): the function fails before it runs jobs; fix it, then redrive; see docs/operations\.md$`, out)
	require.Regexp(t, `(?m)^dead-lettered at: +unknown \(moved by the queue's redrive policy; sent at 20\d\d-\d\d-\d\dT[\d:.]+Z\)$`, out)
	// The source queue SQS names (DeadLetterQueueSourceArn, which AWS documents; both emulators set it).
	require.Regexp(t, `(?m)^moved from: +`+regexp.QuoteMeta(src.ARN)+`$`, out)

	out, errOut, code = cli(t, "", "dlq", "show", "job-1", "--dlq", dlq.URL, "--json")
	require.Equal(t, 0, code, errOut)
	var show deadShowJSON
	require.NoError(t, json.Unmarshal([]byte(out), &show))
	require.Nil(t, show.Job.DeadLetteredAt, "unknown")
	require.NotNil(t, show.Job.SentAt)
	require.True(t, show.Job.RedrivePolicy)
	require.Equal(t, src.ARN, show.Job.DeadLetterSourceARN)
	require.Contains(t, show.Job.Hint, "maxReceiveCount")

	out, errOut, code = cli(t, "", "dlq", "redrive", "--dlq", dlq.URL, "--progress", "none")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^moved 1 of 1 jobs from \S+ \((native, task \S+|manual)\); 0 still in the dead-letter queue\n`, out)
	require.Len(t, drainIDs(t, client, src.URL), 1)
}

// The summary names each count that is not zero with its reason, then what is still in the DLQ
// and why: here a message another reader holds while the redrive runs.
func TestDLQRedriveSummarySaysWhatIsLeft(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	seedDead(t, client, dlq.URL, src.URL, "s", 2, func(int) string { return "email.send" })
	held, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), MaxNumberOfMessages: 1, VisibilityTimeout: 120, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, held.Messages, 1)

	out, errOut, code := cli(t, "", "dlq", "redrive", "--dlq", dlq.URL, "--progress", "none", "--wait=-1s")
	require.Equal(t, 0, code, errOut)
	if awstest.HasMessageMoveTasks(t) {
		// SQS's move task moves what it can see; the result reads the DLQ afterwards.
		require.Regexp(t, `^moved \d+ of \d+ jobs from \S+ \(native, task \S+\); \d+ still in the dead-letter queue`, out)
		if !regexp.MustCompile(`; 0 still in`).MatchString(out) {
			require.Contains(t, out, " still in the dead-letter queue: the move task did not move them: they were in flight (held by another reader) while it ran")
		}
	} else {
		require.Regexp(t, `^moved 1 of 2 jobs from \S+ \(manual\); 1 in flight on the DLQ, held by another reader or an interrupted run \(run again\); 1 still in the dead-letter queue\n`, out)
	}
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 1, v+f)
	require.Len(t, drainIDs(t, client, src.URL), 1)
}

// A job the queue's redrive policy moved into its holding queue, recorded by the redrive recorder
// (jobs.RedriveRecorder, as its function runs it): given the job queue alone, the CLI finds its
// DLQ through the holding queue; list and show give the reason, the time of the move and the job
// queue as the source; the redrive puts the job back on the job queue, not the holding queue.
func TestDLQJobRecordedByTheRedriveRecorder(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	moved, dlq := awstest.QueueWithDLQ(t, cfg, "moved", &awstest.QueueOptions{MaxReceiveCount: 11})
	src := awstest.CreateQueue(t, cfg, "src", &awstest.QueueOptions{DLQ: &moved, MaxReceiveCount: 1, VisibilityTimeout: 1})
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src.URL), MessageBody: aws.String(envelopeBody("job-1", "email.send", 1))})
	require.NoError(t, err)
	awstest.DeadLetterByPolicy(t, cfg, src, moved, 1)
	start := time.Now()
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(moved.URL), WaitTimeSeconds: 1,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	rec := jobs.NewRedriveRecorder(jobs.RecorderConfig{QueueURL: src.URL, DLQURL: dlq.URL, MaxReceiveCount: 1, FunctionName: "email-worker", SQS: client,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	resp, err := rec.Handle(ctx, jobstest.EventFromMessages(moved.ARN, out.Messages))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	_, err = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(moved.URL), ReceiptHandle: out.Messages[0].ReceiptHandle})
	require.NoError(t, err)

	list, errOut, code := cli(t, "", "dlq", "list", "--queue", src.URL)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^job-1 +email\.send +redrive_policy +0 +20\d\d-\d\d-\d\dT[\d:]+Z +jobs: received 1 times with no outcome reported`, list)
	require.Regexp(t, `(?m)^  redrive_policy +received maxReceiveCount times with no outcome: the function never reached its handler`, list)

	show, errOut, code := cli(t, "", "dlq", "show", "job-1", "--queue", src.URL, "--json")
	require.Equal(t, 0, code, errOut)
	var doc deadShowJSON
	require.NoError(t, json.Unmarshal([]byte(show), &doc))
	require.Equal(t, dlq.URL, doc.Queue)
	require.Equal(t, contract.ReasonRedrivePolicy, doc.Job.Reason)
	require.False(t, doc.Job.RedrivePolicy, "recorded: not moved into the DLQ unnamed")
	require.NotNil(t, doc.Job.DeadLetteredAt)
	require.WithinRange(t, *doc.Job.DeadLetteredAt, start.Add(-time.Second), time.Now())
	require.Equal(t, src.URL, doc.Job.SourceQueue)
	require.Equal(t, "email-worker", doc.Job.Function)

	red, errOut, code := cli(t, "", "dlq", "redrive", "--queue", src.URL, "--progress", "none")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^moved 1 of 1 jobs from \S+ \((native, task \S+|manual)\); 0 still in the dead-letter queue\n`, red)
	require.Equal(t, map[string]int{"job-1": 1}, drainIDs(t, client, src.URL))
	v, f := awstest.Counts(t, client, moved.URL)
	require.Zero(t, v+f, "never the holding queue")
}
