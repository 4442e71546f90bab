package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/scheduler"
)

// ErrScheduleNotFound: no schedule of that name in that group.
var ErrScheduleNotFound = errors.New("inspect: schedule not found")

// ErrNotAJobSchedule: the schedule's target is not an SQS queue with a jobkit envelope as its
// input, so firing it now cannot send what a tick sends.
var ErrNotAJobSchedule = errors.New("inspect: not a jobkit job schedule (its target is not an SQS queue with a job envelope)")

// SetScheduleState pauses (enabled false) or resumes a schedule of group. EventBridge Scheduler's
// UpdateSchedule replaces a whole schedule, so it reads the schedule and writes it back with only
// its state changed (and a start date already past left out, which Scheduler would refuse).
// changed is false when the schedule was already in that state (nothing is written). A paused
// schedule fires nothing until it is resumed; the ticks it missed are not made up, as on AWS. A
// schedule CloudFormation deployed drifts from its template: the next deployment that updates it
// sets the template's state again.
func (i *Inspector) SetScheduleState(ctx context.Context, group, name string, enabled bool) (changed bool, err error) {
	got, err := i.getSchedule(ctx, group, name)
	if err != nil {
		return false, err
	}
	want := schedtypes.ScheduleStateDisabled
	if enabled {
		want = schedtypes.ScheduleStateEnabled
	}
	if got.State == want {
		return false, nil
	}
	start := got.StartDate
	if start != nil && start.Before(i.now().Add(-time.Minute)) {
		// Scheduler refuses a start date more than 5 minutes past on update; one in the past
		// has done its work (a rate schedule counts from its creation without it).
		start = nil
	}
	_, err = i.sch.UpdateSchedule(ctx, &awsscheduler.UpdateScheduleInput{
		Name: got.Name, GroupName: got.GroupName, State: want,
		ScheduleExpression: got.ScheduleExpression, ScheduleExpressionTimezone: got.ScheduleExpressionTimezone,
		FlexibleTimeWindow: got.FlexibleTimeWindow, Target: got.Target, Description: got.Description,
		StartDate: start, EndDate: got.EndDate, KmsKeyArn: got.KmsKeyArn,
		ActionAfterCompletion: got.ActionAfterCompletion,
	})
	if err != nil {
		return false, fmt.Errorf("inspect: %s schedule %s/%s: %w", map[bool]string{true: "resume", false: "pause"}[enabled], group, name, err)
	}
	return true, nil
}

// FireSchedule sends a schedule's job now, as a tick would: its target input rendered for the
// current time (the job id sched:<name>:<now>), to its target queue, with its FIFO message group
// and, as EventBridge Scheduler, no deduplication id. It returns the job id and message id. The
// schedule itself is unchanged (a paused schedule can be fired too).
func (i *Inspector) FireSchedule(ctx context.Context, group, name string) (jobID, messageID string, err error) {
	got, err := i.getSchedule(ctx, group, name)
	if err != nil {
		return "", "", err
	}
	t := got.Target
	if t == nil || t.Input == nil {
		return "", "", fmt.Errorf("%w: %s/%s", ErrNotAJobSchedule, group, name)
	}
	q, err := awsarn.ParseQueue(aws.ToString(t.Arn))
	if err != nil {
		return "", "", fmt.Errorf("%w: %s/%s targets %s", ErrNotAJobSchedule, group, name, aws.ToString(t.Arn))
	}
	body := scheduler.RenderInput(aws.ToString(t.Input), i.now())
	var env struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(body), &env) != nil || !strings.HasPrefix(env.ID, scheduler.TickIDPrefix) {
		// Not a recurring job's tick: a parked job's one-time schedule, fired now, would deliver
		// the job twice (now and at its time).
		return "", "", fmt.Errorf("%w: %s/%s's input is not a schedule tick's envelope (a parked job's schedule fires at its time; cancel the job instead)", ErrNotAJobSchedule, group, name)
	}
	url, err := i.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Name), QueueOwnerAWSAccountId: aws.String(q.Account)})
	if err != nil {
		return "", "", fmt.Errorf("inspect: fire %s/%s: its queue %s: %w", group, name, q.Name, err)
	}
	entry := sqstypes.SendMessageBatchRequestEntry{Id: aws.String("fire"), MessageBody: aws.String(body)}
	if p := t.SqsParameters; p != nil && p.MessageGroupId != nil {
		entry.MessageGroupId = p.MessageGroupId
	}
	out, err := i.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url.QueueUrl, Entries: []sqstypes.SendMessageBatchRequestEntry{entry}})
	if err == nil && len(out.Failed) > 0 {
		f := out.Failed[0]
		err = fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
	}
	if err != nil {
		return "", "", fmt.Errorf("inspect: fire %s/%s: send to %s: %w", group, name, q.Name, err)
	}
	return env.ID, aws.ToString(out.Successful[0].MessageId), nil
}

// DeleteJobSchedule deletes the one-time schedule that holds job id parked by a Delayer (a delay
// beyond SQS's 15 minutes), in whatever group it is. deleted is false when there is none.
func (i *Inspector) DeleteJobSchedule(ctx context.Context, id string) (deleted bool, err error) {
	name := scheduler.ScheduleNameForJob(id)
	p := awsscheduler.NewListSchedulesPaginator(i.sch, &awsscheduler.ListSchedulesInput{NamePrefix: aws.String(name)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return deleted, fmt.Errorf("inspect: find the schedule of job %s: %w", id, err)
		}
		for _, s := range page.Schedules {
			if aws.ToString(s.Name) != name {
				continue
			}
			_, err := i.sch.DeleteSchedule(ctx, &awsscheduler.DeleteScheduleInput{Name: s.Name, GroupName: s.GroupName})
			var nf *schedtypes.ResourceNotFoundException
			if err != nil && !errors.As(err, &nf) {
				return deleted, fmt.Errorf("inspect: delete schedule %s/%s of job %s: %w", aws.ToString(s.GroupName), name, id, err)
			}
			deleted = deleted || err == nil
		}
	}
	return deleted, nil
}

func (i *Inspector) getSchedule(ctx context.Context, group, name string) (*awsscheduler.GetScheduleOutput, error) {
	if name == "" {
		return nil, errors.New("inspect: empty schedule name")
	}
	in := &awsscheduler.GetScheduleInput{Name: aws.String(name)}
	if group != "" {
		in.GroupName = aws.String(group)
	}
	got, err := i.sch.GetSchedule(ctx, in)
	var nf *schedtypes.ResourceNotFoundException
	if errors.As(err, &nf) {
		return nil, fmt.Errorf("%w: %s/%s", ErrScheduleNotFound, groupOrDefault(group), name)
	}
	if err != nil {
		return nil, fmt.Errorf("inspect: schedule %s/%s: %w", groupOrDefault(group), name, err)
	}
	return got, nil
}

func groupOrDefault(g string) string {
	if g == "" {
		return "default"
	}
	return g
}

// tickJob reads the job a schedule's target input sends: the name declared in Go (the id's
// sched:<name>: part) and the kind; empty for another input.
func tickJob(input string) (name, kind string) {
	var env struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
	}
	if json.Unmarshal([]byte(input), &env) != nil || !strings.HasPrefix(env.ID, scheduler.TickIDPrefix) {
		return "", ""
	}
	rest := strings.TrimPrefix(env.ID, scheduler.TickIDPrefix)
	if i := strings.LastIndex(rest, ":"+scheduler.ScheduledTimePlaceholder); i >= 0 {
		rest = rest[:i]
	}
	return rest, env.Kind
}

// ParkedJobs returns a jobs.LongDelayer for a Client that operates on jobs (ClientOptions with
// State and no queues, as the CLI and the console make one): its CancelJob deletes a parked
// job's schedule in whatever group holds it (DeleteJobSchedule), so Client.Cancel removes it. It
// parks no job: ScheduleJob fails.
func (i *Inspector) ParkedJobs() jobs.LongDelayer { return parkedJobs{i} }

type parkedJobs struct{ in *Inspector }

func (p parkedJobs) ScheduleJob(context.Context, jobs.PreparedJob) error {
	return errors.New("inspect: ParkedJobs parks no job: use a scheduler.Delayer")
}

func (p parkedJobs) CancelJob(ctx context.Context, id string) error {
	deleted, err := p.in.DeleteJobSchedule(ctx, id)
	if err == nil && !deleted {
		err = fmt.Errorf("%w: %s", jobs.ErrNoSchedule, id)
	}
	return err
}
