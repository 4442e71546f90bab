package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/scheduler"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type nightlyReport struct {
	Day string `json:"day"`
}

func (nightlyReport) Kind() string { return "report.nightly" }

// createSchedule creates schedule s in group under name, as the Schedule construct deploys it.
func createSchedule(t *testing.T, sch *awsscheduler.Client, group, name string, s scheduler.Schedule, q awstest.Queue) {
	t.Helper()
	input, err := s.Input()
	require.NoError(t, err)
	awstest.CreateSchedule(t, sch, group, name, s.Expression, q, input, s.GroupID, func(in *awsscheduler.CreateScheduleInput) {
		in.ScheduleExpressionTimezone, in.Description = aws.String("Europe/Berlin"), aws.String("nightly report")
	})
}

// Pause, resume and fire a recurring schedule, listed by the name declared in Go: the pause
// changes the state alone, a repeat changes nothing, and firing sends the tick's envelope for
// now to the target queue (with its FIFO group), as Scheduler would.
func TestScheduleOperations(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	sch, group := awstest.ScheduleGroup(t, cfg)
	q := awstest.CreateQueue(t, cfg, "reports", nil)
	fifo := awstest.CreateQueue(t, cfg, "reports", &awstest.QueueOptions{FIFO: true, Attributes: map[string]string{"ContentBasedDeduplication": "true"}})
	createSchedule(t, sch, group, "Shop-NightlySchedule9B3C5FAF", scheduler.Schedule{Name: "nightly-report", Expression: "cron(0 2 * * ? *)", Args: nightlyReport{Day: "today"}, Queue: q.URL}, q)
	createSchedule(t, sch, group, "Shop-FifoSchedule1A2B3C4D", scheduler.Schedule{Name: "fifo-report", Expression: "rate(1 hour)", Args: nightlyReport{}, Queue: fifo.URL, GroupID: "reports"}, fifo)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	in := inspect.New(cfg, func(o *inspect.Options) { o.Now = func() time.Time { return now } })
	ctx := context.Background()

	list, err := in.Schedules(ctx, &inspect.ScheduleOptions{Group: group})
	require.NoError(t, err)
	require.Len(t, list, 2)
	byName := map[string]inspect.ScheduleInfo{}
	for _, s := range list {
		byName[s.JobName] = s
	}
	require.Contains(t, byName, "nightly-report")
	assert.Equal(t, "Shop-NightlySchedule9B3C5FAF", byName["nightly-report"].Name)
	assert.Equal(t, "report.nightly", byName["nightly-report"].Kind)

	before, err := sch.GetSchedule(ctx, &awsscheduler.GetScheduleInput{GroupName: aws.String(group), Name: aws.String("Shop-NightlySchedule9B3C5FAF")})
	require.NoError(t, err)
	changed, err := in.SetScheduleState(ctx, group, "Shop-NightlySchedule9B3C5FAF", false)
	require.NoError(t, err)
	assert.True(t, changed)
	paused, err := sch.GetSchedule(ctx, &awsscheduler.GetScheduleInput{GroupName: aws.String(group), Name: aws.String("Shop-NightlySchedule9B3C5FAF")})
	require.NoError(t, err)
	assert.Equal(t, schedtypes.ScheduleStateDisabled, paused.State)
	for _, same := range []struct{ a, b *string }{
		{before.ScheduleExpression, paused.ScheduleExpression}, {before.ScheduleExpressionTimezone, paused.ScheduleExpressionTimezone},
		{before.Description, paused.Description}, {before.Target.Input, paused.Target.Input}, {before.Target.Arn, paused.Target.Arn},
		{before.Target.RoleArn, paused.Target.RoleArn},
	} {
		assert.Equal(t, aws.ToString(same.a), aws.ToString(same.b), "only the state changes")
	}
	changed, err = in.SetScheduleState(ctx, group, "Shop-NightlySchedule9B3C5FAF", false)
	require.NoError(t, err)
	assert.False(t, changed, "already paused")
	list, err = in.Schedules(ctx, &inspect.ScheduleOptions{Group: group})
	require.NoError(t, err)
	for _, s := range list {
		if s.JobName == "nightly-report" {
			assert.Equal(t, "DISABLED", s.State)
			assert.Empty(t, s.Next, "a paused schedule fires nothing")
		}
	}

	// Fired while paused: one tick now, the schedule unchanged.
	id, msgID, err := in.FireSchedule(ctx, group, "Shop-NightlySchedule9B3C5FAF")
	require.NoError(t, err)
	assert.Equal(t, scheduler.TickID("nightly-report", now), id)
	got := awstest.Take(t, client, q.URL, 1)
	assert.Equal(t, msgID, aws.ToString(got[0].MessageId))
	env, err := jobs.DecodeEnvelope(aws.ToString(got[0].Body))
	require.NoError(t, err)
	assert.Equal(t, id, env.ID)
	assert.Equal(t, "report.nightly", env.Kind)
	assert.JSONEq(t, `{"day":"today"}`, string(env.Args))
	assert.Equal(t, now, env.EnqueuedAt.UTC())

	changed, err = in.SetScheduleState(ctx, group, "Shop-NightlySchedule9B3C5FAF", true)
	require.NoError(t, err)
	assert.True(t, changed)
	resumed, err := sch.GetSchedule(ctx, &awsscheduler.GetScheduleInput{GroupName: aws.String(group), Name: aws.String("Shop-NightlySchedule9B3C5FAF")})
	require.NoError(t, err)
	assert.Equal(t, schedtypes.ScheduleStateEnabled, resumed.State)

	// A FIFO target gets the schedule's message group.
	_, _, err = in.FireSchedule(ctx, group, "Shop-FifoSchedule1A2B3C4D")
	require.NoError(t, err)
	got = awstest.Take(t, client, fifo.URL, 1)
	assert.Equal(t, "reports", got[0].Attributes["MessageGroupId"])

	_, err = in.SetScheduleState(ctx, group, "no-such-schedule", true)
	assert.ErrorIs(t, err, inspect.ErrScheduleNotFound)
	_, _, err = in.FireSchedule(ctx, group, "no-such-schedule")
	assert.ErrorIs(t, err, inspect.ErrScheduleNotFound)
}

// DeleteJobSchedule finds a parked job's one-time schedule in whatever group holds it.
func TestDeleteJobSchedule(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	sch, group := awstest.ScheduleGroup(t, cfg)
	q := awstest.CreateQueue(t, cfg, "later", nil)
	d, err := scheduler.NewDelayer(sch, scheduler.DelayerConfig{Group: group, RoleARN: awstest.SchedulerRoleARN(t)})
	require.NoError(t, err)
	ctx := context.Background()
	id := "01JPARKEDJOB00000000000001"
	require.NoError(t, d.ScheduleJob(ctx, jobs.PreparedJob{ID: id, Kind: "report.nightly", Body: `{"v":1}`, QueueURL: q.URL, DeliverAt: time.Now().Add(48 * time.Hour)}))
	in := inspect.New(cfg)
	deleted, err := in.DeleteJobSchedule(ctx, id)
	require.NoError(t, err)
	assert.True(t, deleted)
	assert.Empty(t, awstest.ListSchedules(t, sch, group))
	deleted, err = in.DeleteJobSchedule(ctx, id)
	require.NoError(t, err)
	assert.False(t, deleted, "nothing left to delete")
}
