package awstest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
)

// SchedulerRoleARN is a role in the endpoint's own account for a test's schedules to name (the
// emulators do not assume it).
func SchedulerRoleARN(tb testing.TB) string {
	return "arn:aws:iam::" + Account(tb) + ":role/jobkit-scheduler"
}

// CreateScheduleGroup creates a schedule group for the test and deletes it, with its schedules,
// when the test ends.
func CreateScheduleGroup(tb testing.TB, client *scheduler.Client) string {
	tb.Helper()
	name := Name(tb, "grp")
	if _, err := client.CreateScheduleGroup(context.Background(), &scheduler.CreateScheduleGroupInput{Name: aws.String(name)}); err != nil {
		tb.Fatalf("awstest: create schedule group %s: %v", name, err)
	}
	Cleanup(tb, "schedule group "+name, func(ctx context.Context) error {
		for _, s := range ListSchedules(tb, client, name) {
			_, _ = client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{GroupName: aws.String(name), Name: s.Name})
		}
		_, err := client.DeleteScheduleGroup(ctx, &scheduler.DeleteScheduleGroupInput{Name: aws.String(name)})
		return err
	})
	return name
}

// ScheduleGroup returns a Scheduler client of cfg and a schedule group of the test's own
// (CreateScheduleGroup).
func ScheduleGroup(tb testing.TB, cfg aws.Config) (*scheduler.Client, string) {
	tb.Helper()
	client := scheduler.NewFromConfig(cfg)
	return client, CreateScheduleGroup(tb, client)
}

// ListSchedules returns every schedule of group, all pages.
func ListSchedules(tb testing.TB, client *scheduler.Client, group string) []types.ScheduleSummary {
	tb.Helper()
	var out []types.ScheduleSummary
	p := scheduler.NewListSchedulesPaginator(client, &scheduler.ListSchedulesInput{GroupName: aws.String(group)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatalf("awstest: list schedules of %s: %v", group, err)
		}
		out = append(out, page.Schedules...)
	}
	return out
}

// CreateSchedule creates schedule name in group as the Schedule construct deploys one: firing
// expression (in UTC), its target queue q with input (a scheduler.Schedule's Input) and, for a
// FIFO queue, message group groupID; opts may set more. The group's cleanup deletes it.
func CreateSchedule(tb testing.TB, client *scheduler.Client, group, name, expression string, q Queue, input, groupID string, opts ...func(*scheduler.CreateScheduleInput)) {
	tb.Helper()
	target := &types.Target{Arn: aws.String(q.ARN), RoleArn: aws.String(SchedulerRoleARN(tb)), Input: aws.String(input)}
	if groupID != "" {
		target.SqsParameters = &types.SqsParameters{MessageGroupId: aws.String(groupID)}
	}
	in := &scheduler.CreateScheduleInput{
		Name: aws.String(name), GroupName: aws.String(group), ScheduleExpression: aws.String(expression),
		FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		Target:             target, State: types.ScheduleStateEnabled,
	}
	for _, o := range opts {
		o(in)
	}
	_, err := client.CreateSchedule(context.Background(), in)
	if err != nil {
		tb.Fatalf("awstest: create schedule %s/%s: %v", group, name, err)
	}
}
