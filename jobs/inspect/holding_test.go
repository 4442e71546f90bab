package inspect_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A job queue whose redrive policy targets a holding queue (the JobQueue construct's, read by the
// redrive recorder) whose own redrive policy targets the DLQ. When the recorder fails too, SQS
// moves the job on from the holding queue, unrecorded: it is known as moved by the redrive policy,
// and the Inspector names the job queue — never the holding queue — as the DLQ's queue: the
// stack-less Resolve, the DLQ's sources, the queue's redrive target, and the redrive, which puts
// the job back on the job queue (native where the endpoint has it, by hand on FIFO queues).
func TestRedriveThroughAHoldingQueue(t *testing.T) {
	t.Parallel()
	awstest.EachQueueType(t, func(t *testing.T, fifo bool) {
		cfg, client := awstest.SQS(t)
		ctx := context.Background()
		dlq := awstest.CreateQueue(t, cfg, "dlq", &awstest.QueueOptions{FIFO: fifo})
		// SQS counts a message's receives on from the queue it came from: the holding queue's
		// maxReceiveCount is above the job queue's.
		moved := awstest.CreateQueue(t, cfg, "moved", &awstest.QueueOptions{FIFO: fifo, DLQ: &dlq, MaxReceiveCount: 2, VisibilityTimeout: 1})
		q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: fifo, DLQ: &moved, MaxReceiveCount: 1, VisibilityTimeout: 1})
		in := &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(envelopeBody("job-1", "email.send", nil))}
		if fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String("g1"), aws.String("job-1")
		}
		_, err := client.SendMessage(ctx, in)
		require.NoError(t, err)
		awstest.DeadLetterByPolicy(t, cfg, q, moved, 1)   // the worker never answers
		awstest.DeadLetterByPolicy(t, cfg, moved, dlq, 1) // nor does the recorder

		insp := inspect.New(cfg)
		target, err := insp.RedriveTarget(ctx, q.URL)
		require.NoError(t, err)
		require.Equal(t, dlq.URL, target, "through the holding queue")
		sources, err := insp.DeadLetterSources(ctx, dlq.URL)
		require.NoError(t, err)
		require.Equal(t, []string{q.URL}, sources, "the job queue behind the holding queue")
		resolved, err := insp.Resolve(ctx, inspect.Target{Stack: "no-such-stack", DLQ: dlq.URL})
		require.NoError(t, err)
		require.Equal(t, []inspect.Queue{{Name: q.Name, URL: q.URL, DLQURL: dlq.URL}}, resolved)

		list := listDead(t, insp, client, dlq.URL, nil, 1)
		require.Len(t, list.Jobs, 1)
		dead := list.Jobs[0]
		require.True(t, dead.ByRedrivePolicy(), "moved by SQS, unrecorded")
		require.Equal(t, "job-1", dead.JobID)
		require.Empty(t, dead.SourceQueue)
		require.Equal(t, inspect.ReasonHint(""), dead.Hint())

		res, err := insp.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{InFlightWait: -1})
		require.NoError(t, err)
		require.Zero(t, res.Remaining)
		got := drain(t, client, q.URL)
		require.Len(t, got, 1, "back on the job queue")
		require.Equal(t, "job-1", got[0].Env.ID)
		v, f := awstest.Counts(t, client, moved.URL)
		require.Zero(t, v+f, "never on the holding queue")
	})
}
