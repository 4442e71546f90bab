package deploy

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
)

// scheduleGroup creates an AWS::Scheduler::ScheduleGroup with the Scheduler API (the emulator's
// CloudFormation skips the type).
func (dp *deployer) scheduleGroup(ctx context.Context, run *stackRun, id string) error {
	name := run.physical[id]
	if _, err := dp.c.Scheduler.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(name)}); err != nil {
		return &ConfigError{Stack: run.name, LogicalID: id, Reason: "create schedule group " + name + ": " + err.Error()}
	}
	dp.d.ScheduleGroups = append(dp.d.ScheduleGroups, ScheduleGroup{Stack: run.name, LogicalID: id, Name: name})
	return nil
}

// schedule creates an AWS::Scheduler::Schedule with the Scheduler API.
func (dp *deployer) schedule(ctx context.Context, run *stackRun, id string) error {
	props, err := dp.evalProps(run, id)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return &ConfigError{Stack: run.name, LogicalID: id, Reason: fmt.Sprintf(format, args...)}
	}
	str := func(m map[string]any, k string) *string {
		if s, ok := scalarString(m[k]); ok && s != "" {
			return aws.String(s)
		}
		return nil
	}
	in := &scheduler.CreateScheduleInput{
		Name:                       aws.String(run.physical[id]),
		GroupName:                  str(props, "GroupName"),
		ScheduleExpression:         str(props, "ScheduleExpression"),
		ScheduleExpressionTimezone: str(props, "ScheduleExpressionTimezone"),
		Description:                str(props, "Description"),
		KmsKeyArn:                  str(props, "KmsKeyArn"),
	}
	if in.ScheduleExpression == nil {
		return bad("ScheduleExpression is required")
	}
	if s := str(props, "State"); s != nil {
		in.State = schtypes.ScheduleState(*s)
	}
	if s := str(props, "ActionAfterCompletion"); s != nil {
		in.ActionAfterCompletion = schtypes.ActionAfterCompletion(*s)
	}
	for key, dst := range map[string]**time.Time{"StartDate": &in.StartDate, "EndDate": &in.EndDate} {
		if s := str(props, key); s != nil {
			t, err := time.Parse(time.RFC3339, *s)
			if err != nil {
				return bad("%s: %v", key, err)
			}
			*dst = &t
		}
	}
	ftw, _ := props["FlexibleTimeWindow"].(map[string]any)
	in.FlexibleTimeWindow = &schtypes.FlexibleTimeWindow{Mode: schtypes.FlexibleTimeWindowModeOff}
	if m := str(ftw, "Mode"); m != nil {
		in.FlexibleTimeWindow.Mode = schtypes.FlexibleTimeWindowMode(*m)
	}
	if w, err := intProp(ftw, "MaximumWindowInMinutes", 0); err != nil {
		return bad("%v", err)
	} else if w > 0 {
		in.FlexibleTimeWindow.MaximumWindowInMinutes = aws.Int32(int32(w))
	}
	tgt, _ := props["Target"].(map[string]any)
	if tgt == nil {
		return bad("Target is required")
	}
	in.Target = &schtypes.Target{Arn: str(tgt, "Arn"), RoleArn: str(tgt, "RoleArn"), Input: str(tgt, "Input")}
	if in.Target.Arn == nil || in.Target.RoleArn == nil {
		return bad("Target.Arn and Target.RoleArn are required")
	}
	if sp, ok := tgt["SqsParameters"].(map[string]any); ok {
		in.Target.SqsParameters = &schtypes.SqsParameters{MessageGroupId: str(sp, "MessageGroupId")}
	}
	if rp, ok := tgt["RetryPolicy"].(map[string]any); ok {
		p := &schtypes.RetryPolicy{}
		if v, err := intProp(rp, "MaximumEventAgeInSeconds", -1); err != nil {
			return bad("%v", err)
		} else if v >= 0 {
			p.MaximumEventAgeInSeconds = aws.Int32(int32(v))
		}
		if v, err := intProp(rp, "MaximumRetryAttempts", -1); err != nil {
			return bad("%v", err)
		} else if v >= 0 {
			p.MaximumRetryAttempts = aws.Int32(int32(v))
		}
		in.Target.RetryPolicy = p
	}
	if dl, ok := tgt["DeadLetterConfig"].(map[string]any); ok {
		in.Target.DeadLetterConfig = &schtypes.DeadLetterConfig{Arn: str(dl, "Arn")}
	}
	if _, err := dp.c.Scheduler.CreateSchedule(ctx, in); err != nil {
		return bad("create schedule %s: %v", aws.ToString(in.Name), err)
	}
	group := aws.ToString(in.GroupName)
	if group == "" {
		group = "default"
	}
	dp.d.Schedules = append(dp.d.Schedules, Schedule{
		Stack: run.name, LogicalID: id, Name: aws.ToString(in.Name), Group: group,
		Expression: aws.ToString(in.ScheduleExpression), TargetARN: aws.ToString(in.Target.Arn),
	})
	return nil
}
