package constructs

import (
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/scheduler"
)

// ScheduleProps configures a Schedule.
type ScheduleProps struct {
	// Schedule is the schedule declared in Go (required): expression, time zone, flexible window,
	// job args, FIFO group, retry policy. It is validated at synth.
	Schedule scheduler.Schedule
	// Queue is the target queue (required): the queue Schedule.Queue names, typically a
	// JobQueue's Queue. A FIFO queue needs Schedule.GroupID and content-based deduplication
	// (Scheduler sends no deduplication id), i.e. JobQueueProps.ContentBasedDeduplication.
	Queue awssqs.IQueue
	// DeadLetterQueue receives the ticks Scheduler fails to deliver. It must be a Standard queue
	// (Scheduler refuses FIFO dead-letter queues), so not a FIFO JobQueue's DLQ. Required when
	// Schedule.DeadLetterQueue names one; nil otherwise means none.
	DeadLetterQueue awssqs.IQueue
	// Role is the role Scheduler assumes to send to the queues; it is granted what it needs. It
	// must trust Scheduler for the schedule's group: DelayedJobs.Role fits only a schedule in
	// DelayedJobs.Group. nil (the usual choice) uses one role per target queue, made by the CDK's
	// SQS target, which trusts Scheduler only for this account's schedules in the schedule's
	// group (aws:SourceAccount, aws:SourceArn) and may only send to that queue (and the
	// dead-letter queue): a recurring schedule's role is not the delayed jobs' role, whose
	// producers differ.
	Role awsiam.IRole
	// Group is the schedule group. nil is the stack's group of recurring schedules
	// (RecurringScheduleGroup), made with the first Schedule of the stack: not the account's
	// default group, so that the role Scheduler assumes for them — trusted for the schedules of
	// their group only — serves no schedule anyone else makes there.
	Group awsscheduler.IScheduleGroup
	// Disabled deploys the schedule turned off.
	Disabled bool
}

// Schedule is a scheduler.Schedule rendered as an EventBridge Scheduler schedule targeting an SQS
// queue (the stable awsscheduler.Schedule and awsschedulertargets.SqsSendMessage): its expression
// and time zone, its flexible window, the tick envelope as input (Scheduler fills in the
// scheduled time), the FIFO message group, the retry policy and the dead-letter queue. The
// CloudFormation name of the schedule is generated; scheduler.Schedule.Name is in the envelope
// ids and the description.
type Schedule struct {
	constructs.Construct

	// Name is scheduler.Schedule.Name.
	Name string
	// Resource is the EventBridge Scheduler schedule.
	Resource awsscheduler.Schedule
	// Input is the target input: the envelope template with <aws.scheduler.scheduled-time>.
	Input string
}

// NewSchedule defines a Schedule. It panics when the declared schedule does not validate or the
// props do not match it (no queue, a FIFO queue without a group id or the reverse, a declared
// dead-letter queue not given, a FIFO dead-letter queue).
func NewSchedule(scope constructs.Construct, id string, props *ScheduleProps) *Schedule {
	if props == nil {
		panic(fmt.Sprintf("jobkit: Schedule %q: nil props", id))
	}
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("jobkit: Schedule %q: ", id) + fmt.Sprintf(format, args...))
	}
	s := props.Schedule
	if err := s.Validate(); err != nil {
		fail("%v", err)
	}
	if props.Queue == nil {
		fail("no target Queue (the queue %q)", s.Queue)
	}
	fifo := props.Queue.Fifo() != nil && *props.Queue.Fifo()
	switch {
	case fifo && s.GroupID == "":
		fail("the target queue is FIFO: the schedule needs a GroupID")
	case !fifo && s.GroupID != "":
		fail("GroupID %q is set but the target queue is not FIFO", s.GroupID)
	case s.DeadLetterQueue != "" && props.DeadLetterQueue == nil:
		fail("the schedule names the dead-letter queue %q: pass it as DeadLetterQueue", s.DeadLetterQueue)
	case props.DeadLetterQueue != nil && props.DeadLetterQueue.Fifo() != nil && *props.DeadLetterQueue.Fifo():
		fail("EventBridge Scheduler needs a Standard dead-letter queue, not a FIFO one")
	case needsSchedulerDedup(props.Queue) != "":
		fail("%s", needsSchedulerDedup(props.Queue))
	}
	input, err := s.Input()
	if err != nil {
		fail("%v", err)
	}

	c := constructs.NewConstruct(scope, jsii.String(id))
	target := &awsschedulertargets.SqsSendMessageProps{
		Input:           awsscheduler.ScheduleTargetInput_FromText(jsii.String(input)),
		DeadLetterQueue: props.DeadLetterQueue,
		Role:            props.Role,
	}
	if s.GroupID != "" {
		target.MessageGroupId = jsii.String(s.GroupID)
	}
	if s.Retry != nil {
		target.RetryAttempts = jsii.Number(s.Retry.MaxRetries)
		target.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(s.Retry.EventAge().Seconds()))
	}
	window := awsscheduler.TimeWindow_Off()
	if s.FlexibleWindow > 0 {
		window = awsscheduler.TimeWindow_Flexible(awscdk.Duration_Minutes(jsii.Number(s.FlexibleWindow / time.Minute)))
	}
	description := s.Description
	if description == "" {
		description = fmt.Sprintf("jobkit schedule %s: %s (%s) -> %s", s.Name, s.Args.Kind(), s.Expression, s.Queue)
		if len(description) > 512 {
			description = description[:512]
		}
	}
	group := props.Group
	if group == nil {
		group = RecurringScheduleGroup(scope)
	}
	res := awsscheduler.NewSchedule(c, jsii.String("Schedule"), &awsscheduler.ScheduleProps{
		Schedule:      awsscheduler.ScheduleExpression_Expression(jsii.String(s.Expression), awscdk.TimeZone_Of(jsii.String(s.TimeZoneName()))),
		Target:        awsschedulertargets.NewSqsSendMessage(props.Queue, target),
		TimeWindow:    window,
		Description:   jsii.String(description),
		Enabled:       jsii.Bool(!props.Disabled),
		ScheduleGroup: group,
	})
	return &Schedule{Construct: c, Name: s.Name, Resource: res, Input: input}
}

// recurringGroups holds each stack's group of recurring schedules, by the stack's address.
var recurringGroups sync.Map

// RecurringScheduleGroup returns the schedule group of the recurring schedules in scope's stack,
// defining it (id JobkitSchedules, a generated name) on first use. A Schedule without a Group
// goes there.
func RecurringScheduleGroup(scope constructs.Construct) awsscheduler.IScheduleGroup {
	stack := awscdk.Stack_Of(scope)
	if g, ok := recurringGroups.Load(*stack.Node().Addr()); ok {
		return g.(awsscheduler.IScheduleGroup)
	}
	g := awsscheduler.NewScheduleGroup(stack, jsii.String("JobkitSchedules"), &awsscheduler.ScheduleGroupProps{})
	recurringGroups.Store(*stack.Node().Addr(), g)
	return g
}
