package deploy

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The AWS clients enter through the small interfaces below, declared here, by their caller, so a
// test can hand in a fake and so the list of calls this package makes against the emulator is
// written down in one place.

// CloudFormationAPI is the part of the CloudFormation API Deploy and Destroy call: creating and
// deleting the emulator's share of each stack, and reading back its resources, events and exports.
type CloudFormationAPI interface {
	CreateStack(ctx context.Context, in *cloudformation.CreateStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.CreateStackOutput, error)
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	DescribeStackResources(ctx context.Context, in *cloudformation.DescribeStackResourcesInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error)
	DescribeStackEvents(ctx context.Context, in *cloudformation.DescribeStackEventsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error)
	ListExports(ctx context.Context, in *cloudformation.ListExportsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListExportsOutput, error)
	DeleteStack(ctx context.Context, in *cloudformation.DeleteStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DeleteStackOutput, error)
}

// SQSAPI is the part of the SQS API Deploy and Destroy call: queue attributes (ARN, FIFO,
// visibility timeout, redrive policy) for the Deployment, and deletion of retained queues.
type SQSAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	DeleteQueue(ctx context.Context, in *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

// DynamoDBAPI is the part of the DynamoDB API Deploy and Destroy call: a table's ARN, the time to
// live the emulator's CloudFormation ignores, and deletion of retained tables.
type DynamoDBAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

// SchedulerAPI is the part of the EventBridge Scheduler API Deploy and Destroy call: the emulator's
// CloudFormation skips AWS::Scheduler::* resources, so they are created with the API instead.
type SchedulerAPI interface {
	CreateScheduleGroup(ctx context.Context, in *scheduler.CreateScheduleGroupInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleGroupOutput, error)
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
	DeleteScheduleGroup(ctx context.Context, in *scheduler.DeleteScheduleGroupInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleGroupOutput, error)
}

// The SDK's clients satisfy the interfaces (checked at compile time).
var (
	_ CloudFormationAPI = (*cloudformation.Client)(nil)
	_ SQSAPI            = (*sqs.Client)(nil)
	_ DynamoDBAPI       = (*dynamodb.Client)(nil)
	_ SchedulerAPI      = (*scheduler.Client)(nil)
)

// Clients are the AWS clients Deploy uses, all pointed at the same emulator. The Deployment keeps
// them for Destroy.
type Clients struct {
	CloudFormation CloudFormationAPI
	SQS            SQSAPI
	DynamoDB       DynamoDBAPI
	Scheduler      SchedulerAPI
}

// NewClients returns the clients for cfg (whose endpoint is the emulator's).
func NewClients(cfg aws.Config) Clients {
	return Clients{
		CloudFormation: cloudformation.NewFromConfig(cfg),
		SQS:            sqs.NewFromConfig(cfg),
		DynamoDB:       dynamodb.NewFromConfig(cfg),
		Scheduler:      scheduler.NewFromConfig(cfg),
	}
}

// Options configure Deploy. Nil means the defaults.
type Options struct {
	// CDKOut is the cloud assembly directory; default "cdk.out".
	CDKOut string
	// Stacks limits the deployment to these stacks (by name) and what they depend on; default all.
	Stacks []string
	// Prefix is put before every stack name, every export name and every physical name the
	// template sets (a schedule group's Name, a FunctionName), so several deployments of one
	// assembly can share an emulator (tests). Default none.
	Prefix string
	// ModuleDir is where "jobkit:source" paths are relative to for a function whose template
	// has no "jobkit:module" metadata (the constructs write it: the module directory relative to
	// cdk.out); default the parent of CDKOut.
	ModuleDir string
	// BuildDir receives the functions' bootstraps (<BuildDir>/<stack>/<logical id>/bootstrap);
	// default <ModuleDir>/.run/functions.
	BuildDir string
	// SkipBuild leaves Function.Bootstrap empty: resources only.
	SkipBuild bool
	// Sources substitutes the Go package built for a function: it maps a function's
	// SourceMetadataKey path to the package to build instead, both relative to its module (e.g. to
	// run an instrumented build of a function); Function.Source keeps the assembly's path. A key
	// may also be the logical id of a function without that metadata (a Go function of an app
	// jobkit's constructs did not make): its package is then built for this machine from
	// ModuleDir, as if the metadata named it. Default none.
	Sources map[string]string
	// Region of the deployment; default the config's region (or us-east-1).
	Region string
	// AccountID is used in synthesized ARNs until a created queue tells the emulator's own;
	// default 123456789012.
	AccountID string
	// StackTimeout bounds each stack's creation; default 2 minutes.
	StackTimeout time.Duration
	// Logger receives one line per stack and per skipped resource; default discards.
	Logger *slog.Logger
}

// StackExistsError is returned when a stack of the assembly already exists on the emulator.
// CloudFormation refuses CreateStack for a live stack name too; Deploy checks first so the message
// says what to do.
type StackExistsError struct{ Stack string }

// Error says which stack exists and how to clear it.
func (e *StackExistsError) Error() string {
	return "deploy: stack " + e.Stack + " already exists; destroy it (or restart the emulator) first"
}

// StackFailedError is returned when the emulator's CloudFormation does not create a stack.
// Status is the stack status CloudFormation ended in (or CREATE_FAILED, INCOMPLETE, TIMEOUT, set
// here); Reason carries the failed resources' reasons from the stack events when there are any.
type StackFailedError struct {
	Stack, Status, Reason string
}

// Error names the stack, its status and the reason.
func (e *StackFailedError) Error() string {
	return "deploy: stack " + e.Stack + ": " + e.Status + ": " + e.Reason
}

// ConfigError reports a deployment that AWS would refuse, or that this package cannot run.
// LogicalID names the resource (or parameter) at fault.
type ConfigError struct {
	Stack, LogicalID, Reason string
}

// Error names the stack, the resource and the reason.
func (e *ConfigError) Error() string {
	return "deploy: stack " + e.Stack + ": " + e.LogicalID + ": " + e.Reason
}

// Deploy creates the stacks of a cloud assembly on the emulator and resolves what its functions
// need to run. Queues, tables and the other types the emulator's CloudFormation serves are created
// with CreateStack (one stack per assembly stack, exports included, so Fn::ImportValue works as on
// AWS); a table's TimeToLiveSpecification, which the emulator ignores, is applied with
// UpdateTimeToLive; schedule groups and schedules, which it skips, are created with the Scheduler
// API. Functions and event source mappings are resolved (environment, queue URLs and ARNs, batch
// settings) for lambdaruntime and esm, and each function's bootstrap is built for this machine
// from its "jobkit:source" package. IAM, logs, alarms and dashboards are skipped and listed in
// Deployment.Skipped.
//
// On error the stacks created so far are in the returned Deployment (which may be non-nil), so
// Destroy can remove them.
func Deploy(ctx context.Context, clients Clients, opts *Options) (*Deployment, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	cdkOut, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	stacks, err := ReadAssembly(cdkOut)
	if err != nil {
		return nil, err
	}
	stacks, err = selectStacks(stacks, o.Stacks)
	if err != nil {
		return nil, err
	}
	d := &Deployment{Region: o.Region, AccountID: o.AccountID, Prefix: o.Prefix, clients: clients}
	dp := &deployer{c: clients, o: o, log: log, d: d, exports: map[string]string{}}
	// Stacks go one at a time, in dependency order, as the CDK CLI deploys them: a stack's
	// Fn::ImportValue needs the exports of the stacks before it.
	for _, st := range stacks {
		if err := dp.stack(ctx, st); err != nil {
			return d, err
		}
	}
	// Mappings are linked once every stack is up: a mapping may name a function or a queue of a
	// later stack.
	if err := dp.linkMappings(ctx); err != nil {
		return d, err
	}
	if !o.SkipBuild {
		if err := dp.build(ctx, cdkOut); err != nil {
			return d, err
		}
	}
	return d, nil
}

// withDefaults fills in the options left zero and returns the absolute cloud assembly directory.
// The module directory defaults to the parent of cdk.out because that is where `cdk synth` runs
// (cdk.json sits beside cdk.out), and "jobkit:source" paths are relative to it.
func (o *Options) withDefaults() (cdkOut string, err error) {
	o.CDKOut = cmp.Or(o.CDKOut, "cdk.out")
	cdkOut, err = filepath.Abs(o.CDKOut)
	if err != nil {
		return "", fmt.Errorf("deploy: %w", err)
	}
	if o.ModuleDir == "" {
		o.ModuleDir = filepath.Dir(cdkOut)
	}
	if o.BuildDir == "" {
		o.BuildDir = filepath.Join(o.ModuleDir, ".run", "functions")
	}
	o.Region = cmp.Or(o.Region, "us-east-1")
	if o.AccountID == "" {
		// moto's default account (LocalStack's is 000000000000); replaced by the emulator's own
		// as soon as a created queue's ARN names it.
		o.AccountID = "123456789012"
	}
	if o.StackTimeout <= 0 {
		o.StackTimeout = 2 * time.Minute
	}
	return cdkOut, nil
}
