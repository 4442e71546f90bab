package deploy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// Deployment is what Deploy created and resolved: everything devstack needs to run the app, and
// what Destroy removes. Its JSON tags let a tool print or save it.
type Deployment struct {
	Region string `json:"region"`
	// AccountID is the emulator's account, as its queue ARNs tell it.
	AccountID string `json:"account_id"`
	// Prefix is Options.Prefix: on every stack, export and explicit physical name.
	Prefix string `json:"prefix,omitempty"`

	Stacks         []Stack              `json:"stacks"`
	Queues         []Queue              `json:"queues"`
	Tables         []Table              `json:"tables"`
	Functions      []Function           `json:"functions"`
	Containers     []Container          `json:"containers"`
	Mappings       []EventSourceMapping `json:"event_source_mappings"`
	ScheduleGroups []ScheduleGroup      `json:"schedule_groups"`
	Schedules      []Schedule           `json:"schedules"`
	Skipped        []Skipped            `json:"skipped"`

	// StreamMappings are the DynamoDB Streams event source mappings.
	StreamMappings []StreamEventSourceMapping `json:"stream_event_source_mappings,omitempty"`
	// CustomResources are the custom resources, in deployment order: devstack has their provider
	// functions create them when the stack starts.
	CustomResources []CustomResource `json:"custom_resources,omitempty"`

	clients Clients // for Destroy
}

// Stack is a stack created on the emulator, with its outputs (as the emulator resolved them) and
// its exports, under their prefixed names.
type Stack struct {
	Name    string            `json:"name"`
	ID      string            `json:"id"`
	Outputs map[string]string `json:"outputs"`
	Exports map[string]string `json:"exports"`
}

// Queue is an SQS queue of the deployment, as the emulator describes it.
type Queue struct {
	Stack             string        `json:"stack"`
	LogicalID         string        `json:"logical_id"`
	Name              string        `json:"name"`
	URL               string        `json:"url"`
	ARN               string        `json:"arn"`
	FIFO              bool          `json:"fifo"`
	VisibilityTimeout time.Duration `json:"visibility_timeout"`
	DeadLetterARN     string        `json:"dead_letter_arn,omitempty"`
	MaxReceiveCount   int           `json:"max_receive_count,omitempty"`
}

// Table is a DynamoDB table of the deployment. TTLAttribute is set when its template enables time
// to live (which Deploy applied itself).
type Table struct {
	Stack        string `json:"stack"`
	LogicalID    string `json:"logical_id"`
	Name         string `json:"name"`
	ARN          string `json:"arn"`
	TTLAttribute string `json:"ttl_attribute,omitempty"`
}

// Function is a Lambda function, resolved for lambdaruntime: what Lambda would read from the
// template, plus the bootstrap built for this machine.
type Function struct {
	Stack     string `json:"stack"`
	LogicalID string `json:"logical_id"`
	Name      string `json:"name"`
	ARN       string `json:"arn"`
	// Source is the "jobkit:source" package the bootstrap is built from ("" if none).
	Source string `json:"source,omitempty"`
	// ModuleDir is the directory of Source's Go module: the "jobkit:module" metadata resolved
	// against the template's directory, else Options.ModuleDir.
	ModuleDir string `json:"module_dir,omitempty"`
	// AssetPath is the synthesized asset directory (for functions without Source).
	AssetPath string `json:"asset_path,omitempty"`
	// Bootstrap is the executable built for this machine; "" when the function cannot run here
	// (Unrunnable says why).
	Bootstrap string `json:"bootstrap"`
	// Unrunnable says why the function cannot run on this machine (another runtime than Go, an
	// asset built for another architecture with no source to build from, a Go package that did
	// not build), and what to do: such
	// a function is listed in Deployment.Skipped, and its event sources are not polled, so their
	// messages wait in their queues.
	Unrunnable string `json:"unrunnable,omitempty"`
	// TaskRoot is the code of an interpreted (Node.js, Python) function: its asset directory,
	// apart from the bootstrap that runs it (lambdaruntime.InterpretedBootstrap).
	TaskRoot      string   `json:"task_root,omitempty"`
	Handler       string   `json:"handler"`
	Runtime       string   `json:"runtime"`
	Architectures []string `json:"architectures,omitempty"`
	// Env is Environment.Variables with every reference resolved: what the function sees.
	Env                 map[string]string `json:"env"`
	Timeout             time.Duration     `json:"timeout"`
	MemoryMB            int               `json:"memory_mb"`
	ReservedConcurrency int               `json:"reserved_concurrency,omitempty"`
}

// RuntimeFunction returns f as lambdaruntime runs it, with maxInstances environments at most
// (the caller decides: reserved concurrency, a mapping's maximum concurrency, or a local cap).
func (f Function) RuntimeFunction(maxInstances int) lambdaruntime.Function {
	return lambdaruntime.Function{
		Name: f.Name, Bootstrap: f.Bootstrap, Handler: f.Handler, Env: maps.Clone(f.Env), TaskRoot: f.TaskRoot,
		Timeout: f.Timeout, MemoryMB: f.MemoryMB, MaxInstances: maxInstances,
	}
}

// EventSourceMapping is an SQS event source mapping, resolved for esm: Lambda's defaults applied,
// its function's name and its queue's URL looked up.
type EventSourceMapping struct {
	Stack                   string        `json:"stack"`
	LogicalID               string        `json:"logical_id"`
	UUID                    string        `json:"uuid"`
	Function                string        `json:"function"` // the function's name
	QueueARN                string        `json:"queue_arn"`
	QueueURL                string        `json:"queue_url"`
	BatchSize               int           `json:"batch_size"`
	MaximumBatchingWindow   time.Duration `json:"maximum_batching_window"`
	MaximumConcurrency      int           `json:"maximum_concurrency,omitempty"` // 0: not set
	ReportBatchItemFailures bool          `json:"report_batch_item_failures"`
	Enabled                 bool          `json:"enabled"`
}

// StreamEventSourceMapping is a DynamoDB Streams event source mapping, resolved for
// esm.StreamPoller: Lambda's defaults applied, its function's name and its table looked up.
type StreamEventSourceMapping struct {
	Stack     string `json:"stack"`
	LogicalID string `json:"logical_id"`
	UUID      string `json:"uuid"`
	Function  string `json:"function"` // the function's name
	StreamARN string `json:"stream_arn"`
	// Table is the name of the table whose stream it is.
	Table     string `json:"table"`
	BatchSize int    `json:"batch_size"` // default 100
	// StartingPosition is TRIM_HORIZON or LATEST.
	StartingPosition        string        `json:"starting_position"`
	MaximumBatchingWindow   time.Duration `json:"maximum_batching_window"`
	ReportBatchItemFailures bool          `json:"report_batch_item_failures"`
	// MaximumRetryAttempts: -1 (the default) retries until the record expires.
	MaximumRetryAttempts int `json:"maximum_retry_attempts"`
	// MaximumRecordAge: 0 (the default, -1 in the template) keeps a record until it expires.
	MaximumRecordAge      time.Duration `json:"maximum_record_age,omitempty"`
	BisectBatchOnError    bool          `json:"bisect_batch_on_error,omitempty"`
	ParallelizationFactor int           `json:"parallelization_factor"`
	// Filters are FilterCriteria.Filters[].Pattern, as JSON.
	Filters []string `json:"filters,omitempty"`
	// OnFailureARN is DestinationConfig.OnFailure.Destination (an SQS queue or SNS topic), if any.
	OnFailureARN string `json:"on_failure_arn,omitempty"`
	// OnFailureURL is the queue URL of OnFailureARN when it is a queue of the deployment.
	OnFailureURL string `json:"on_failure_url,omitempty"`
	Enabled      bool   `json:"enabled"`
}

// ScheduleGroup is an EventBridge Scheduler schedule group created with the Scheduler API.
type ScheduleGroup struct {
	Stack     string `json:"stack"`
	LogicalID string `json:"logical_id"`
	Name      string `json:"name"`
}

// Schedule is an EventBridge Scheduler schedule created with the Scheduler API.
type Schedule struct {
	Stack      string `json:"stack"`
	LogicalID  string `json:"logical_id"`
	Name       string `json:"name"`
	Group      string `json:"group"`
	Expression string `json:"expression"`
	TargetARN  string `json:"target_arn"`
}

// CustomResource is a custom resource (Custom::<Name> or AWS::CloudFormation::CustomResource): the
// request CloudFormation sends its provider, every property resolved.
type CustomResource struct {
	Stack     string `json:"stack"`
	StackID   string `json:"stack_id"`
	LogicalID string `json:"logical_id"`
	Type      string `json:"type"`
	// ServiceToken is the provider: a function's ARN (or an SNS topic's, which offline does not
	// serve).
	ServiceToken string `json:"service_token"`
	// Properties are the ResourceProperties of the request, ServiceToken included.
	Properties map[string]any `json:"properties"`
}

// CustomToken is the value a local resource (a function's environment, another custom resource's
// properties) gets for a custom resource's Ref (attr "") or Fn::GetAtt: the provider answers only
// when the stack starts, so devstack puts the answer in its place then (ReplaceCustomTokens).
func CustomToken(stack, logicalID, attr string) string {
	return customTokenPrefix + stack + ":" + logicalID + ":" + attr + "}}"
}

// customTokenPrefix starts every CustomToken.
const customTokenPrefix = "{{jobkit:custom-resource:"

// ReplaceCustomTokens returns s with the tokens of custom resource (stack, logicalID) replaced by
// its physical id (Ref) and data (Fn::GetAtt).
func ReplaceCustomTokens(s, stack, logicalID, physicalID string, data map[string]string) string {
	prefix := customTokenPrefix + stack + ":" + logicalID + ":"
	if !strings.Contains(s, prefix) {
		return s
	}
	s = strings.ReplaceAll(s, prefix+"}}", physicalID)
	for k, v := range data {
		s = strings.ReplaceAll(s, prefix+k+"}}", v)
	}
	return s
}

// Skipped is a resource the offline stack does without, and why: what differs from AWS.
type Skipped struct {
	Stack     string `json:"stack"`
	LogicalID string `json:"logical_id"`
	Type      string `json:"type"`
	Reason    string `json:"reason"`
}

// Whole returns an error naming every function that cannot run here (Function.Unrunnable), or
// nil: for a program that runs an app only whole (the sample's dev and chaos runs), where a
// skipped function would only show as jobs that never drain.
func (d *Deployment) Whole() error {
	var errs []error
	for _, fn := range d.Functions {
		if fn.Unrunnable != "" {
			errs = append(errs, fmt.Errorf("function %s (%s): %s", fn.LogicalID, fn.Stack, fn.Unrunnable))
		}
	}
	return errors.Join(errs...)
}

// FunctionByName returns the function with this name or ARN, or nil. A mapping's FunctionName
// may be either (or a partial ARN), as Lambda accepts.
func (d *Deployment) FunctionByName(nameOrARN string) *Function {
	for i := range d.Functions {
		f := &d.Functions[i]
		if f.Name == nameOrARN || f.ARN == nameOrARN || strings.HasSuffix(nameOrARN, ":function:"+f.Name) {
			return f
		}
	}
	return nil
}

// QueueByARN returns the queue with this ARN, or nil.
func (d *Deployment) QueueByARN(arn string) *Queue {
	for i := range d.Queues {
		if d.Queues[i].ARN == arn {
			return &d.Queues[i]
		}
	}
	return nil
}

// Queue returns the queue with this logical id (in any stack), or nil.
func (d *Deployment) Queue(logicalID string) *Queue {
	for i := range d.Queues {
		if d.Queues[i].LogicalID == logicalID {
			return &d.Queues[i]
		}
	}
	return nil
}

// StreamMappingsOf returns the DynamoDB Streams event source mappings that invoke the function.
func (d *Deployment) StreamMappingsOf(function string) []StreamEventSourceMapping {
	return slices.DeleteFunc(slices.Clone(d.StreamMappings), func(m StreamEventSourceMapping) bool { return m.Function != function })
}

// MappingsOf returns the event source mappings that invoke the function.
func (d *Deployment) MappingsOf(function string) []EventSourceMapping {
	return slices.DeleteFunc(slices.Clone(d.Mappings), func(m EventSourceMapping) bool { return m.Function != function })
}
