// Package inspect is jobkit's admin API: queue statistics, dead-lettered jobs (list, show,
// redrive, purge), schedules with their next fire times and the discovery of a deployment's
// queues. The jobkit CLI is a thin layer over
// an [Inspector]; services and tests can use it directly.
//
// Nothing here consumes a job by looking at it. Listing the dead-letter queue receives messages
// with a short visibility timeout and hands them back with ChangeMessageVisibility 0 when done;
// redrive moves messages with a send-then-delete protocol that never loses one (see
// [Inspector.Redrive]).
package inspect

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
)

// SQSAPI is the part of the SQS client the Inspector calls.
type SQSAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	PurgeQueue(ctx context.Context, in *sqs.PurgeQueueInput, optFns ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
	// A queue's pause (SetQueuePaused).
	ListQueueTags(ctx context.Context, in *sqs.ListQueueTagsInput, optFns ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
	TagQueue(ctx context.Context, in *sqs.TagQueueInput, optFns ...func(*sqs.Options)) (*sqs.TagQueueOutput, error)
	UntagQueue(ctx context.Context, in *sqs.UntagQueueInput, optFns ...func(*sqs.Options)) (*sqs.UntagQueueOutput, error)
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// LambdaAPI is the part of the Lambda client the Inspector calls: a queue's event source mappings,
// which SetQueuePaused disables and enables.
type LambdaAPI interface {
	ListEventSourceMappings(ctx context.Context, in *lambda.ListEventSourceMappingsInput, optFns ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error)
	UpdateEventSourceMapping(ctx context.Context, in *lambda.UpdateEventSourceMappingInput, optFns ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error)
}

// CloudFormationAPI is the part of the CloudFormation client the Inspector calls.
type CloudFormationAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// CloudWatchAPI is the part of the CloudWatch client the Inspector calls.
type CloudWatchAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
	ListMetrics(ctx context.Context, in *cloudwatch.ListMetricsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.ListMetricsOutput, error)
}

// SchedulerAPI is the part of the EventBridge Scheduler client the Inspector calls.
type SchedulerAPI interface {
	ListSchedules(ctx context.Context, in *awsscheduler.ListSchedulesInput, optFns ...func(*awsscheduler.Options)) (*awsscheduler.ListSchedulesOutput, error)
	GetSchedule(ctx context.Context, in *awsscheduler.GetScheduleInput, optFns ...func(*awsscheduler.Options)) (*awsscheduler.GetScheduleOutput, error)
	UpdateSchedule(ctx context.Context, in *awsscheduler.UpdateScheduleInput, optFns ...func(*awsscheduler.Options)) (*awsscheduler.UpdateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *awsscheduler.DeleteScheduleInput, optFns ...func(*awsscheduler.Options)) (*awsscheduler.DeleteScheduleOutput, error)
}

var (
	_ SQSAPI            = (*sqs.Client)(nil)
	_ CloudFormationAPI = (*cloudformation.Client)(nil)
	_ CloudWatchAPI     = (*cloudwatch.Client)(nil)
	_ SchedulerAPI      = (*awsscheduler.Client)(nil)
	_ LambdaAPI         = (*lambda.Client)(nil)
)

// Errors an Inspector returns; match them with errors.Is.
var (
	// ErrNotFound: no dead job with the asked id in the dead-letter queue.
	ErrNotFound = errors.New("inspect: not found")
	// ErrStackNotFound: the CloudFormation stack does not exist.
	ErrStackNotFound = errors.New("inspect: stack not found")
	// ErrNoQueues: nothing names a queue (no flags, no stack outputs).
	ErrNoQueues = errors.New("inspect: no queues")
	// ErrNoDLQ: the queue has no dead-letter queue (no RedrivePolicy, no stack output).
	ErrNoDLQ = errors.New("inspect: no dead-letter queue")
	// ErrPurgeInProgress: SQS allows one purge of a queue every 60 seconds.
	ErrPurgeInProgress = errors.New("inspect: a purge of this queue is already in progress (SQS allows one every 60 s)")
)

// Options configures an Inspector. Clients left nil are made from the aws.Config given to New.
type Options struct {
	SQS            SQSAPI
	CloudFormation CloudFormationAPI
	CloudWatch     CloudWatchAPI
	Scheduler      SchedulerAPI
	Lambda         LambdaAPI

	// Now returns the current time (tests); nil means time.Now.
	Now func() time.Time
}

// Inspector does jobkit's admin work against SQS, CloudFormation and CloudWatch.
// It is safe for concurrent use.
type Inspector struct {
	sqs SQSAPI
	cfn CloudFormationAPI
	cw  CloudWatchAPI
	sch SchedulerAPI
	lam LambdaAPI
	now func() time.Time
}

// NewCloudWatch returns a CloudWatch client of cfg. With a custom endpoint (cfg.BaseEndpoint: an
// emulator), it speaks CloudWatch's Query protocol, which CloudWatch still serves and the emulators
// speak (moto no other: the SDK's default, RPC v2 CBOR, gets an HTTP 404 there); on AWS, the
// SDK's default.
func NewCloudWatch(cfg aws.Config, optFns ...func(*cloudwatch.Options)) *cloudwatch.Client {
	if cfg.BaseEndpoint != nil {
		optFns = append([]func(*cloudwatch.Options){func(o *cloudwatch.Options) {
			o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801)
		}}, optFns...)
	}
	return cloudwatch.NewFromConfig(cfg, optFns...)
}

// New returns an Inspector whose clients are made from cfg, unless optFns set them.
func New(cfg aws.Config, optFns ...func(*Options)) *Inspector {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.SQS == nil {
		o.SQS = sqs.NewFromConfig(cfg)
	}
	if o.CloudFormation == nil {
		o.CloudFormation = cloudformation.NewFromConfig(cfg)
	}
	if o.CloudWatch == nil {
		// One retry at most: an endpoint without CloudWatch must not slow every stats call down.
		o.CloudWatch = NewCloudWatch(cfg, func(co *cloudwatch.Options) { co.RetryMaxAttempts = 2 })
	}
	if o.Scheduler == nil {
		o.Scheduler = awsscheduler.NewFromConfig(cfg)
	}
	if o.Lambda == nil {
		o.Lambda = lambda.NewFromConfig(cfg)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Inspector{sqs: o.SQS, cfn: o.CloudFormation, cw: o.CloudWatch, sch: o.Scheduler, lam: o.Lambda, now: o.Now}
}
