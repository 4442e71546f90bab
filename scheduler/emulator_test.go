package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type sendEmail struct {
	To string `json:"to"`
}

func (sendEmail) Kind() string { return "email.send" }

func TestDelayerOnEmulator(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	sched, group := awstest.ScheduleGroup(t, cfg)
	queue := awstest.CreateQueue(t, cfg, "jobs", nil)
	fifo := awstest.CreateQueue(t, cfg, "jobs", &awstest.QueueOptions{FIFO: true, Attributes: map[string]string{"ContentBasedDeduplication": "true"}})
	dlq := awstest.CreateQueue(t, cfg, "sched-dlq", nil)
	ctx := context.Background()

	d, err := NewDelayer(sched, DelayerConfig{
		Group: group, RoleARN: awstest.SchedulerRoleARN(t), DeadLetterARN: dlq.ARN,
		Retry: &RetryPolicy{MaxRetries: 5, MaxEventAge: 2 * time.Hour},
	})
	require.NoError(t, err)

	at := time.Now().Add(72 * time.Hour)
	job := jobs.PreparedJob{ID: "01JDELAYEDJOB0000000000001", Kind: "email.send", Body: `{"v":1,"id":"01JDELAYEDJOB0000000000001","kind":"email.send","args":{"to":"a@example.com"},"enqueued_at":"2026-11-21T12:00:00Z"}`, QueueURL: queue.URL, DeliverAt: at}
	require.NoError(t, d.ScheduleJob(ctx, job))

	list := awstest.ListSchedules(t, sched, group)
	require.Len(t, list, 1, "exactly one schedule")
	assert.Equal(t, ScheduleNameForJob(job.ID), aws.ToString(list[0].Name))
	got, err := sched.GetSchedule(ctx, &scheduler.GetScheduleInput{GroupName: aws.String(group), Name: list[0].Name})
	require.NoError(t, err)
	assert.Equal(t, "at("+at.UTC().Add(time.Second-1).Truncate(time.Second).Format(AtLayout)+")", aws.ToString(got.ScheduleExpression))
	assert.Equal(t, "UTC", aws.ToString(got.ScheduleExpressionTimezone))
	assert.Equal(t, types.ActionAfterCompletionDelete, got.ActionAfterCompletion)
	assert.Equal(t, types.FlexibleTimeWindowModeOff, got.FlexibleTimeWindow.Mode)
	assert.Equal(t, group, aws.ToString(got.GroupName))
	require.NotNil(t, got.Target)
	assert.Equal(t, queue.ARN, aws.ToString(got.Target.Arn), "the target is the queue's own ARN")
	assert.Equal(t, awstest.SchedulerRoleARN(t), aws.ToString(got.Target.RoleArn))
	assert.Equal(t, job.Body, aws.ToString(got.Target.Input))
	require.NotNil(t, got.Target.DeadLetterConfig)
	assert.Equal(t, dlq.ARN, aws.ToString(got.Target.DeadLetterConfig.Arn))
	require.NotNil(t, got.Target.RetryPolicy)
	assert.Equal(t, int32(5), aws.ToInt32(got.Target.RetryPolicy.MaximumRetryAttempts))
	assert.Equal(t, int32(7200), aws.ToInt32(got.Target.RetryPolicy.MaximumEventAgeInSeconds))
	assert.Nil(t, got.Target.SqsParameters, "no message group on a Standard queue")

	// Scheduling the same job again is not an error and adds nothing.
	require.NoError(t, d.ScheduleJob(ctx, job))
	assert.Len(t, awstest.ListSchedules(t, sched, group), 1)

	// A FIFO job carries its message group.
	fjob := jobs.PreparedJob{ID: "order:42", Kind: "order.ship", Body: `{"v":1}`, QueueURL: fifo.URL, GroupID: "customer-7", DeliverAt: at}
	require.NoError(t, d.ScheduleJob(ctx, fjob))
	fgot, err := sched.GetSchedule(ctx, &scheduler.GetScheduleInput{GroupName: aws.String(group), Name: aws.String(ScheduleNameForJob(fjob.ID))})
	require.NoError(t, err)
	assert.Equal(t, fifo.ARN, aws.ToString(fgot.Target.Arn))
	require.NotNil(t, fgot.Target.SqsParameters)
	assert.Equal(t, "customer-7", aws.ToString(fgot.Target.SqsParameters.MessageGroupId))

	// Cancel deletes exactly that schedule; cancelling again reports ErrNotFound.
	require.NoError(t, d.CancelJob(ctx, job.ID))
	left := awstest.ListSchedules(t, sched, group)
	require.Len(t, left, 1)
	assert.Equal(t, ScheduleNameForJob(fjob.ID), aws.ToString(left[0].Name))
	err = d.CancelJob(ctx, job.ID)
	assert.ErrorIs(t, err, ErrNotFound)
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, job.ID, nf.JobID)
	require.NoError(t, d.CancelJob(ctx, fjob.ID))
	assert.Empty(t, awstest.ListSchedules(t, sched, group))
}

// TestClientLongDelayOnEmulator goes through jobs.Client: a 3-day delay becomes exactly one
// schedule whose input is the job's envelope; a 10-minute delay stays on SQS (DelaySeconds) and
// creates none; cancelling by id deletes the schedule.
func TestClientLongDelayOnEmulator(t *testing.T) {
	t.Parallel()
	cfg, sqsClient := awstest.SQS(t)
	sched, group := awstest.ScheduleGroup(t, cfg)
	queue := awstest.CreateQueue(t, cfg, "jobs", nil)
	dlq := awstest.CreateQueue(t, cfg, "sched-dlq", nil)
	ctx := context.Background()

	d, err := NewDelayer(sched, DelayerConfig{Group: group, RoleARN: awstest.SchedulerRoleARN(t), DeadLetterARN: dlq.ARN})
	require.NoError(t, err)
	client, err := jobs.NewClient(sqsClient, jobs.ClientOptions{DefaultQueueURL: queue.URL, LongDelayer: d})
	require.NoError(t, err)

	res, err := client.Enqueue(ctx, sendEmail{To: "later@example.com"}, &jobs.EnqueueOpts{Delay: 72 * time.Hour})
	require.NoError(t, err)
	assert.True(t, res.Scheduled)
	list := awstest.ListSchedules(t, sched, group)
	require.Len(t, list, 1, "a 3-day delay creates exactly one schedule")
	got, err := sched.GetSchedule(ctx, &scheduler.GetScheduleInput{GroupName: aws.String(group), Name: list[0].Name})
	require.NoError(t, err)
	assert.Equal(t, queue.ARN, aws.ToString(got.Target.Arn))
	assert.Equal(t, awstest.SchedulerRoleARN(t), aws.ToString(got.Target.RoleArn))
	assert.Equal(t, dlq.ARN, aws.ToString(got.Target.DeadLetterConfig.Arn))
	assert.Equal(t, types.ActionAfterCompletionDelete, got.ActionAfterCompletion)
	env, err := jobs.DecodeEnvelope(aws.ToString(got.Target.Input))
	require.NoError(t, err)
	assert.Equal(t, res.ID, env.ID)
	assert.Equal(t, "email.send", env.Kind)
	assert.JSONEq(t, `{"to":"later@example.com"}`, string(env.Args))
	assert.Equal(t, "at("+res.DeliverAt.UTC().Add(time.Second-1).Truncate(time.Second).Format(AtLayout)+")", aws.ToString(got.ScheduleExpression))

	short, err := client.Enqueue(ctx, sendEmail{To: "soon@example.com"}, &jobs.EnqueueOpts{Delay: 10 * time.Minute})
	require.NoError(t, err)
	assert.False(t, short.Scheduled)
	assert.NotEmpty(t, short.MessageID)
	assert.Len(t, awstest.ListSchedules(t, sched, group), 1, "a 10-minute delay creates no schedule")
	attrs, err := sqsClient.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queue.URL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	require.NoError(t, err)
	assert.Equal(t, "1", attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)], "the short delay is an SQS delayed message")

	require.NoError(t, client.CancelDelayed(ctx, res.ID))
	assert.Empty(t, awstest.ListSchedules(t, sched, group), "cancel deletes the schedule")
	assert.ErrorIs(t, client.CancelDelayed(ctx, res.ID), ErrNotFound)
}
