package deploy

import (
	"cmp"
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

// schedule creates an AWS::Scheduler::Schedule with the Scheduler API, its properties resolved
// and mapped one to one onto CreateScheduleInput. Neither moto nor LocalStack fires schedules;
// creating them still matters: the schedule firing loop (schedfire) and the ops CLI read them
// back from the API, as they would on AWS.
func (dp *deployer) schedule(ctx context.Context, run *stackRun, id string) error {
	props, err := dp.evalProps(run, id)
	if err != nil {
		return err
	}
	in, err := scheduleInput(run.physical[id], props)
	if err != nil {
		return &ConfigError{Stack: run.name, LogicalID: id, Reason: err.Error()}
	}
	in.GroupName = dp.prefixedGroup(in.GroupName)
	if _, err := dp.c.Scheduler.CreateSchedule(ctx, in); err != nil {
		return &ConfigError{Stack: run.name, LogicalID: id, Reason: fmt.Sprintf("create schedule %s: %v", aws.ToString(in.Name), err)}
	}
	group := aws.ToString(in.GroupName)
	group = cmp.Or(group, "default")
	dp.d.Schedules = append(dp.d.Schedules, Schedule{
		Stack: run.name, LogicalID: id, Name: aws.ToString(in.Name), Group: group,
		Expression: aws.ToString(in.ScheduleExpression), TargetARN: aws.ToString(in.Target.Arn),
	})
	return nil
}

// prefixedGroup returns the name a schedule's group was created under. The CDK writes a
// generated group name into the schedule as a literal, not a reference; with a prefix, the group
// of that name (in this stack or one deployed before it) was created as <prefix><name>, so the
// schedule follows it.
func (dp *deployer) prefixedGroup(group *string) *string {
	if group == nil {
		return nil
	}
	if name, ok := dp.groups[*group]; ok {
		return aws.String(name)
	}
	return group
}

// optString is m[k] as a string pointer, nil when absent or empty: the SDK's way to leave an
// optional field unset.
func optString(m map[string]any, k string) *string {
	if s, ok := scalarString(m[k]); ok && s != "" {
		return aws.String(s)
	}
	return nil
}

// scheduleInput maps a schedule's resolved properties onto CreateScheduleInput, with the checks
// the Scheduler API makes (an expression and a target are required). The flexible time window
// defaults to OFF, as CloudFormation's does.
func scheduleInput(name string, props map[string]any) (*scheduler.CreateScheduleInput, error) {
	in := &scheduler.CreateScheduleInput{
		Name:                       aws.String(name),
		GroupName:                  optString(props, "GroupName"),
		ScheduleExpression:         optString(props, "ScheduleExpression"),
		ScheduleExpressionTimezone: optString(props, "ScheduleExpressionTimezone"),
		Description:                optString(props, "Description"),
		KmsKeyArn:                  optString(props, "KmsKeyArn"),
	}
	if in.ScheduleExpression == nil {
		return nil, fmt.Errorf("ScheduleExpression is required")
	}
	if s := optString(props, "State"); s != nil {
		in.State = schtypes.ScheduleState(*s)
	}
	if s := optString(props, "ActionAfterCompletion"); s != nil {
		in.ActionAfterCompletion = schtypes.ActionAfterCompletion(*s)
	}
	for key, dst := range map[string]**time.Time{"StartDate": &in.StartDate, "EndDate": &in.EndDate} {
		if s := optString(props, key); s != nil {
			t, err := time.Parse(time.RFC3339, *s)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", key, err)
			}
			*dst = &t
		}
	}
	ftw, _ := props["FlexibleTimeWindow"].(map[string]any)
	in.FlexibleTimeWindow = &schtypes.FlexibleTimeWindow{Mode: schtypes.FlexibleTimeWindowModeOff}
	if m := optString(ftw, "Mode"); m != nil {
		in.FlexibleTimeWindow.Mode = schtypes.FlexibleTimeWindowMode(*m)
	}
	if w, err := intProp(ftw, "MaximumWindowInMinutes", 0); err != nil {
		return nil, err
	} else if w > 0 {
		in.FlexibleTimeWindow.MaximumWindowInMinutes = aws.Int32(int32(w))
	}
	tgt, _ := props["Target"].(map[string]any)
	if tgt == nil {
		return nil, fmt.Errorf("the Target property is required")
	}
	var err error
	if in.Target, err = scheduleTarget(tgt); err != nil {
		return nil, err
	}
	return in, nil
}

// scheduleTarget maps a schedule's Target: the ARN and role (required by the API, though the role
// is not assumed offline), the input (the job envelope), an SQS FIFO target's message group, the
// retry policy and the dead-letter queue. A retry field left out stays unset (-1 is "absent"),
// since 0 is a valid value for both.
func scheduleTarget(tgt map[string]any) (*schtypes.Target, error) {
	t := &schtypes.Target{Arn: optString(tgt, "Arn"), RoleArn: optString(tgt, "RoleArn"), Input: optString(tgt, "Input")}
	if t.Arn == nil || t.RoleArn == nil {
		return nil, fmt.Errorf("Target.Arn and Target.RoleArn are required")
	}
	if sp, ok := tgt["SqsParameters"].(map[string]any); ok {
		t.SqsParameters = &schtypes.SqsParameters{MessageGroupId: optString(sp, "MessageGroupId")}
	}
	if rp, ok := tgt["RetryPolicy"].(map[string]any); ok {
		p := &schtypes.RetryPolicy{}
		if v, err := intProp(rp, "MaximumEventAgeInSeconds", -1); err != nil {
			return nil, err
		} else if v >= 0 {
			p.MaximumEventAgeInSeconds = aws.Int32(int32(v))
		}
		if v, err := intProp(rp, "MaximumRetryAttempts", -1); err != nil {
			return nil, err
		} else if v >= 0 {
			p.MaximumRetryAttempts = aws.Int32(int32(v))
		}
		t.RetryPolicy = p
	}
	if dl, ok := tgt["DeadLetterConfig"].(map[string]any); ok {
		t.DeadLetterConfig = &schtypes.DeadLetterConfig{Arn: optString(dl, "Arn")}
	}
	return t, nil
}
