package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/inspect"
)

func TestNextFireTimes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	got, problem := inspect.NextFireTimes("cron(0 9 ? * MON-FRI *)", "Europe/Paris", time.Time{}, now, 3)
	require.Empty(t, problem)
	require.Equal(t, []time.Time{
		time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC), time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC), time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC),
	}, got)

	// A rate counts from its start: started 09:50, every 15 minutes -> 10:05, 10:20.
	got, problem = inspect.NextFireTimes("rate(15 minutes)", "", time.Date(2026, 11, 23, 9, 50, 0, 0, time.UTC), now, 2)
	require.Empty(t, problem)
	require.Equal(t, []time.Time{time.Date(2026, 11, 23, 10, 5, 0, 0, time.UTC), time.Date(2026, 11, 23, 10, 20, 0, 0, time.UTC)}, got)

	// An at() in the past fires no more.
	got, problem = inspect.NextFireTimes("at(2026-01-01T00:00:00)", "", time.Time{}, now, 3)
	require.Empty(t, problem)
	require.Empty(t, got)

	_, problem = inspect.NextFireTimes("cron(nope)", "", time.Time{}, now, 3)
	require.NotEmpty(t, problem)
	_, problem = inspect.NextFireTimes("rate(1 hour)", "Mars/Olympus", time.Time{}, now, 3)
	require.Contains(t, problem, "Mars/Olympus")
}

// fakeScheduler is a function-typed SchedulerAPI.
type fakeScheduler struct {
	inspect.SchedulerAPI // the calls a test does not make
	list                 func(*awsscheduler.ListSchedulesInput) (*awsscheduler.ListSchedulesOutput, error)
	get                  func(*awsscheduler.GetScheduleInput) (*awsscheduler.GetScheduleOutput, error)
}

func (f fakeScheduler) ListSchedules(_ context.Context, in *awsscheduler.ListSchedulesInput, _ ...func(*awsscheduler.Options)) (*awsscheduler.ListSchedulesOutput, error) {
	return f.list(in)
}

func (f fakeScheduler) GetSchedule(_ context.Context, in *awsscheduler.GetScheduleInput, _ ...func(*awsscheduler.Options)) (*awsscheduler.GetScheduleOutput, error) {
	return f.get(in)
}

func TestSchedulesListsWithNextFireTimes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	stored := map[string]*awsscheduler.GetScheduleOutput{
		"nightly": {ScheduleExpression: aws.String("cron(0 2 * * ? *)"), ScheduleExpressionTimezone: aws.String("UTC"), State: schedtypes.ScheduleStateEnabled},
		"paused":  {ScheduleExpression: aws.String("rate(1 hour)"), State: schedtypes.ScheduleStateDisabled},
		"broken":  {ScheduleExpression: aws.String("cron(61 * * * ? *)"), State: schedtypes.ScheduleStateEnabled},
	}
	in := inspect.New(aws.Config{Region: "us-east-1"}, func(o *inspect.Options) {
		o.Now = func() time.Time { return now }
		o.Scheduler = fakeScheduler{
			list: func(*awsscheduler.ListSchedulesInput) (*awsscheduler.ListSchedulesOutput, error) {
				var out awsscheduler.ListSchedulesOutput
				for _, n := range []string{"paused", "nightly", "broken"} {
					out.Schedules = append(out.Schedules, schedtypes.ScheduleSummary{Name: aws.String(n), GroupName: aws.String("jobs"), State: stored[n].State})
				}
				return &out, nil
			},
			get: func(in *awsscheduler.GetScheduleInput) (*awsscheduler.GetScheduleOutput, error) {
				require.Equal(t, "jobs", aws.ToString(in.GroupName))
				return stored[aws.ToString(in.Name)], nil
			},
		}
	})
	got, err := in.Schedules(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, []string{"broken", "nightly", "paused"}, []string{got[0].Name, got[1].Name, got[2].Name})
	require.NotEmpty(t, got[0].Problem)
	require.Equal(t, time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC), got[1].Next[0])
	require.Len(t, got[1].Next, 3)
	require.Empty(t, got[2].Next, "a disabled schedule does not fire")
	require.Equal(t, "DISABLED", got[2].State)
}
