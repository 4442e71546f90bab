package devrun_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devrun"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

func envelope(id string) string { return `{"v":1,"id":"` + id + `","kind":"mail.send","args":{}}` }

// mailDeployment is a deployment of one job queue, Mail, and its dead-letter queue.
func mailDeployment(main, dlq awstest.Queue) *deploy.Deployment {
	return &deploy.Deployment{
		Stacks: []deploy.Stack{{Name: "Svc", Outputs: map[string]string{"JobkitQueueMail": main.URL, "JobkitDlqMail": dlq.URL}}},
		Queues: []deploy.Queue{{LogicalID: "MailQueue", URL: main.URL}, {LogicalID: "MailDLQ", URL: dlq.URL}},
	}
}

// The Counter reads the mappings' reports and the runtime's outcome lines, and the queues' depths
// from the emulator: a job deleted after its dead-letter line is dead, not succeeded; a job that
// failed an attempt is retried once however often it failed; a report about another queue counts
// for nothing.
func TestCounterCountsFromTheStacksRecords(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	main := awstest.CreateQueue(t, cfg, "main", nil)
	c := devrun.NewCounter(sqs.NewFromConfig(cfg), mailDeployment(main, dlq))
	require.Equal(t, []devrun.JobQueue{{Name: "Mail", URL: main.URL, DLQURL: dlq.URL}}, c.Queues())

	bodies := []string{envelope("j1"), envelope("j2"), envelope("j3"), envelope("j4")}
	c.OnBatch("fn", esm.BatchReport{QueueURL: main.URL, MessageIDs: []string{"m1", "m2", "m3", "m4"}, Bodies: bodies,
		Verdict: esm.Partial, Deleted: []string{"m1", "m2", "m3"}, Failed: []string{"m4"}})
	c.OnBatch("fn", esm.BatchReport{QueueURL: main.URL, MessageIDs: []string{"m4"}, Bodies: bodies[3:], Verdict: esm.BatchFailed})
	c.OnBatch("fn", esm.BatchReport{QueueURL: main.URL, MessageIDs: []string{"m4"}, Bodies: bodies[3:], Deleted: []string{"m4"}})
	c.OnBatch("fn", esm.BatchReport{QueueURL: "elsewhere", MessageIDs: []string{"x"}, Bodies: []string{envelope("x")}, Deleted: []string{"x"}})
	// j5 was cancelled by an operator: its delivery deleted it unrun.
	c.ReadLine([]byte(`[fn] {"event":"cancelled","job_id":"j5","message_id":"m5"}`))
	c.OnBatch("fn", esm.BatchReport{QueueURL: main.URL, MessageIDs: []string{"m5"}, Bodies: []string{envelope("j5")}, Deleted: []string{"m5"}})
	c.ReadLine([]byte(`[fn] {"event":"dead","job_id":"j3","message_id":"m3","reason":"cancelled"}`))
	c.ReadLine([]byte(`[fn] {"level":"ERROR","msg":"job dead-lettered","job_id":"j1","message_id":"m1","reason":"cancelled"}`))
	// The runtime's dead-letter copy: the message's body.
	_, err := sqs.NewFromConfig(cfg).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq.URL), MessageBody: aws.String(bodies[2])})
	require.NoError(t, err)

	census, err := c.Census(ctx)
	require.NoError(t, err)
	require.Equal(t, devrun.Counts{Succeeded: 3, Cancelled: 1, Retried: 1, Dead: 1}, census.Total)
	require.Equal(t, 5, census.Seen)
	require.Nil(t, census.Tally, "only Settle lists the dead-letter queues")

	census, err = c.Settle(ctx)
	require.NoError(t, err)
	require.Zero(t, census.Lost)
	require.Equal(t, 1, census.Tally.Dead)
	require.Equal(t, 1, census.Tally.Cancelled, "a cancelled job is neither a success nor lost")
	require.Equal(t, "DEV summary: succeeded=3 retried=1 dead=1 lost=0 cancelled=1", census.Summary())
	require.NoError(t, census.LostError())
}

// A job queue's holding queue (its redrive policy's target, read by the redrive recorder's
// mapping) is no job queue; a job queue without a DLQ output reaches its DLQ through it.
func TestJobQueuesLeaveTheHoldingQueueOut(t *testing.T) {
	t.Parallel()
	d := &deploy.Deployment{
		Queues: []deploy.Queue{
			{LogicalID: "MailQueue", URL: "http://q/mail", ARN: "arn:aws:sqs:us-east-1:1:mail", DeadLetterARN: "arn:aws:sqs:us-east-1:1:mail-moved"},
			{LogicalID: "MailMoved", URL: "http://q/mail-moved", ARN: "arn:aws:sqs:us-east-1:1:mail-moved", DeadLetterARN: "arn:aws:sqs:us-east-1:1:mail-dlq"},
			{LogicalID: "MailDLQ", URL: "http://q/mail-dlq", ARN: "arn:aws:sqs:us-east-1:1:mail-dlq"},
		},
		Mappings: []deploy.EventSourceMapping{{QueueURL: "http://q/mail"}, {QueueURL: "http://q/mail-moved"}},
	}
	require.Equal(t, []devrun.JobQueue{{Name: "MailQueue", URL: "http://q/mail", DLQURL: "http://q/mail-dlq"}}, devrun.JobQueues(d))
}
