package constructs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/jobkit-go/jobkit/scheduler"
)

// Output key prefixes of DelayedJobs: a DelayedJobs with id N outputs what a producer needs to
// build a scheduler.DelayerConfig (Group, RoleARN, DeadLetterARN) as JobkitScheduleGroup<N>,
// JobkitSchedulerRoleArn<N> and JobkitScheduleDlqArn<N>, and its dead-letter queue's URL (to
// read it, or to resolve it offline) as JobkitScheduleDlqUrl<N>.
const (
	OutputScheduleGroupPrefix    = "JobkitScheduleGroup"
	OutputSchedulerRoleArnPrefix = "JobkitSchedulerRoleArn"
	OutputScheduleDLQArnPrefix   = "JobkitScheduleDlqArn"
	OutputScheduleDLQURLPrefix   = "JobkitScheduleDlqUrl"
)

// DelayedJobsProps configures DelayedJobs.
type DelayedJobsProps struct {
	// Queues are the queues delayed jobs are delivered to: the role Scheduler assumes may send
	// to them. More can be added with AddQueue. A FIFO queue needs content-based deduplication
	// (Scheduler sends no deduplication id).
	Queues []awssqs.IQueue
	// DeadLetterQueue receives the delayed jobs Scheduler fails to deliver. It must be a Standard
	// queue. nil creates one (SQS-managed encryption, TLS only, 14-day retention, depth alarm).
	DeadLetterQueue awssqs.IQueue
	// Retry is the delivery retry policy of the one-time schedules; nil is Scheduler's default
	// (185 retries over 24 h).
	Retry *scheduler.RetryPolicy
	// GroupName names the schedule group; "" lets CloudFormation name it.
	GroupName string
	// AlarmActions are added to the created dead-letter queue's depth alarm (e.g. an SNS topic's
	// action). Optional.
	AlarmActions []awscloudwatch.IAlarmAction
}

// DelayedJobs is what the producer needs to delay jobs beyond SQS's 15 minutes with
// scheduler.Delayer: a schedule group for the one-time schedules, the role EventBridge Scheduler
// assumes to send to the job queues (and to the dead-letter queue), and that dead-letter queue.
// GrantProducer gives a producer the right to create and delete schedules in the group and to
// pass the role; Environment is the configuration scheduler.DelayerConfigFromEnv reads. The same
// configuration is in the stack outputs (see OutputScheduleGroupPrefix), for producers outside
// the stack.
//
// The role trusts EventBridge Scheduler only for this account's schedules in this group
// (aws:SourceAccount and aws:SourceArn, the group's ARN as Scheduler presents it), so it serves
// only the delayed jobs' one-time schedules: recurring schedules (Schedule) in another group
// need a role of their own (leave ScheduleProps.Role nil). One role sends to every queue of
// Queues: whoever GrantProducer lets create schedules can already delay a job to any of them,
// so a role per queue would not narrow what a producer can do. Where the producers of two queues
// differ, give each set its own DelayedJobs (group, role and grant).
type DelayedJobs struct {
	constructs.Construct

	// Group holds the one-time schedules.
	Group awsscheduler.ScheduleGroup
	// Role is assumed by EventBridge Scheduler (scheduler.amazonaws.com, for this account's
	// schedules in Group only) to send to the queues and the dead-letter queue.
	Role awsiam.Role
	// DLQ receives undeliverable delayed jobs.
	DLQ awssqs.IQueue
	// DLQDepthAlarm fires when the created dead-letter queue holds a message; nil when the
	// dead-letter queue was given.
	DLQDepthAlarm awscloudwatch.Alarm
	// Retry is the delivery retry policy (nil: Scheduler's default).
	Retry *scheduler.RetryPolicy

	queues []awssqs.IQueue // the queues Role may send to (AddQueue)
}

// NewDelayedJobs defines DelayedJobs. id must be alphanumeric (it names the outputs). It panics
// on a FIFO dead-letter queue or an invalid retry policy.
func NewDelayedJobs(scope constructs.Construct, id string, props *DelayedJobsProps) *DelayedJobs {
	p := DelayedJobsProps{}
	if props != nil {
		p = *props
	}
	if err := p.validate(id); err != nil {
		panic(fmt.Sprintf("jobkit: DelayedJobs %q: %v", id, err))
	}

	c := constructs.NewConstruct(scope, jsii.String(id))
	d := &DelayedJobs{Construct: c, Retry: p.Retry}
	groupProps := &awsscheduler.ScheduleGroupProps{}
	if p.GroupName != "" {
		groupProps.ScheduleGroupName = jsii.String(p.GroupName)
	}
	d.Group = awsscheduler.NewScheduleGroup(c, jsii.String("Group"), groupProps)
	d.Role = newSchedulerRole(c, "Role", "EventBridge Scheduler sends jobkit delayed jobs to their queues", d.Group.ScheduleGroupArn())
	d.DLQ = p.DeadLetterQueue
	if d.DLQ == nil {
		d.DLQ, d.DLQDepthAlarm = newScheduleDLQ(c, id, p.AlarmActions)
	}
	d.DLQ.Grant(d.Role, jsii.String("sqs:SendMessage"))
	for _, q := range p.Queues {
		d.AddQueue(q)
	}
	d.addOutputs(id)
	return d
}

// validate returns why the props (or id) cannot describe DelayedJobs, or nil.
func (p DelayedJobsProps) validate(id string) error {
	if !namePattern.MatchString(id) {
		return fmt.Errorf("id must be alphanumeric and start with a letter (it names the outputs %s<id>, %s<id>, %s<id> and %s<id>)",
			OutputScheduleGroupPrefix, OutputSchedulerRoleArnPrefix, OutputScheduleDLQArnPrefix, OutputScheduleDLQURLPrefix)
	}
	if p.DeadLetterQueue != nil && p.DeadLetterQueue.Fifo() != nil && *p.DeadLetterQueue.Fifo() {
		return fmt.Errorf("EventBridge Scheduler needs a Standard dead-letter queue, not a FIFO one")
	}
	if p.Retry != nil {
		probe := scheduler.Schedule{Name: "probe", Expression: "rate(1 day)", Args: probeArgs{}, Queue: "q", Retry: p.Retry}
		if err := probe.Validate(); err != nil {
			return fmt.Errorf("retry policy: %w", err)
		}
	}
	return nil
}

// newSchedulerRole defines a role EventBridge Scheduler may assume only for this account's
// schedules in the group whose ARN is groupArn: EventBridge Scheduler presents the schedule
// group's ARN (arn:<partition>:scheduler:<region>:<account>:schedule-group/<group>) as
// aws:SourceArn, so the condition keeps schedules of other groups — and other accounts, the
// confused deputy — from using it.
func newSchedulerRole(scope constructs.Construct, id, description string, groupArn *string) awsiam.Role {
	stack := awscdk.Stack_Of(scope)
	return awsiam.NewRole(scope, jsii.String(id), &awsiam.RoleProps{
		Description: jsii.String(description),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{
				"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
				"ArnEquals":    map[string]any{"aws:SourceArn": groupArn},
			},
		}),
	})
}

// newScheduleDLQ defines a Standard dead-letter queue for undeliverable scheduled jobs
// (encrypted, TLS only, the longest retention) with a depth alarm.
func newScheduleDLQ(scope constructs.Construct, id string, actions []awscloudwatch.IAlarmAction) (awssqs.Queue, awscloudwatch.Alarm) {
	q := awssqs.NewQueue(scope, jsii.String("DLQ"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: cdkDuration(DLQRetentionPeriod),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(q, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SQS3"),
		Reason: jsii.String("EventBridge Scheduler's dead-letter queue: Scheduler sends undeliverable delayed jobs to it directly, not through a redrive policy"),
	}}, nil)
	alarm := newAlarm(scope, "DLQDepthAlarm", fmt.Sprintf("jobkit %s: delayed jobs EventBridge Scheduler could not deliver", id),
		q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(1)),
			Statistic: jsii.String("Maximum"),
		}), 0, actions)
	return q, alarm
}

// addOutputs exports what a producer outside the stack needs (see OutputScheduleGroupPrefix).
func (d *DelayedJobs) addOutputs(id string) {
	for _, o := range []struct {
		name, prefix, description string
		value                     *string
	}{
		{"GroupName", OutputScheduleGroupPrefix, "schedule group of delayed jobs", d.Group.ScheduleGroupName()},
		{"RoleArn", OutputSchedulerRoleArnPrefix, "role EventBridge Scheduler assumes to send jobs to their queues", d.Role.RoleArn()},
		{"DLQArn", OutputScheduleDLQArnPrefix, "dead-letter queue ARN of undeliverable scheduled jobs", d.DLQ.QueueArn()},
		{"DLQUrl", OutputScheduleDLQURLPrefix, "dead-letter queue URL of undeliverable scheduled jobs", d.DLQ.QueueUrl()},
	} {
		out := awscdk.NewCfnOutput(d.Construct, jsii.String(o.name), &awscdk.CfnOutputProps{
			Value:       o.value,
			Description: jsii.String(fmt.Sprintf("jobkit %s %s", id, o.description)),
		})
		out.OverrideLogicalId(jsii.String(o.prefix + id))
	}
}

// probeArgs stands in for job args when only a retry policy is validated.
type probeArgs struct{}

func (probeArgs) Kind() string { return "probe" }

// AddQueue lets Scheduler send delayed jobs to q (sqs:SendMessage, and KMS use when q has a key).
// It panics on a FIFO JobQueue without content-based deduplication: Scheduler sends no
// deduplication id, so SQS would refuse every delayed job.
func (d *DelayedJobs) AddQueue(q awssqs.IQueue) {
	if reason := needsSchedulerDedup(q); reason != "" {
		panic("jobkit: DelayedJobs: " + reason)
	}
	d.queues = append(d.queues, q)
	q.Grant(d.Role, jsii.String("sqs:SendMessage"))
	if key := q.EncryptionMasterKey(); key != nil {
		key.Grant(d.Role, jsii.String("kms:Decrypt"), jsii.String("kms:GenerateDataKey*"))
	}
}

// ScheduleArnPattern returns the ARN of every schedule in the group (.../schedule/<group>/*).
func (d *DelayedJobs) ScheduleArnPattern() *string {
	return awscdk.Stack_Of(d.Construct).FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("scheduler"),
		Resource:     jsii.String("schedule"),
		ResourceName: jsii.String(*d.Group.ScheduleGroupName() + "/*"),
	})
}

// GrantProducer lets grantee (a producer's function or role) create and delete the one-time
// schedules of the group and pass the role to EventBridge Scheduler — and nothing else. The
// schedule names are per job, so the resource is the group's schedules (.../schedule/<group>/*);
// the cdk-nag AwsSolutions-IAM5 finding for exactly that resource is suppressed on the grantee's
// principal, with that reason.
func (d *DelayedJobs) GrantProducer(grantee awsiam.IGrantable) {
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("scheduler:CreateSchedule", "scheduler:DeleteSchedule"),
		ResourceArns: jsii.Strings(*d.ScheduleArnPattern()),
	})
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("iam:PassRole"),
		ResourceArns: jsii.Strings(*d.Role.RoleArn()),
		Conditions: &map[string]*map[string]any{
			"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"},
		},
	})
	if principal, ok := grantee.GrantPrincipal().(constructs.IConstruct); ok {
		group := regexp.QuoteMeta(*d.Group.ScheduleGroupName())
		cdknag.NagSuppressions_AddResourceSuppressions(principal, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("jobkit delayed jobs: one schedule per job, named after the job id, in this schedule group only"),
			AppliesTo: &[]any{&cdknag.RegexAppliesTo{
				Regex: jsii.String(`/^Resource::arn:<AWS::Partition>:scheduler:[^:]+:[^:]+:schedule\/` + strings.ReplaceAll(group, "/", `\/`) + `\/\*$/`),
			}},
		}}, jsii.Bool(true))
	}
}

// Environment returns the producer's configuration, read by scheduler.DelayerConfigFromEnv:
// the group name, the role ARN, the dead-letter queue ARN, the queues the role may send to (the
// Delayer refuses others before any call) and the retry policy. Call it once every queue is
// added.
func (d *DelayedJobs) Environment() map[string]*string {
	env := map[string]*string{
		scheduler.EnvScheduleGroup:    d.Group.ScheduleGroupName(),
		scheduler.EnvSchedulerRoleARN: d.Role.RoleArn(),
		scheduler.EnvScheduleDLQARN:   d.DLQ.QueueArn(),
	}
	if len(d.queues) > 0 {
		arns := make([]*string, len(d.queues))
		for i, q := range d.queues {
			arns[i] = q.QueueArn()
		}
		env[scheduler.EnvDelayQueues] = awscdk.Fn_Join(jsii.String(","), &arns)
	}
	if d.Retry != nil {
		env[scheduler.EnvScheduleRetries] = jsii.String(strconv.Itoa(d.Retry.MaxRetries))
		env[scheduler.EnvScheduleMaxAge] = jsii.String(d.Retry.EventAge().String())
	}
	return env
}
