package deploy

import (
	"strings"
	"time"

	"github.com/jobkit-go/jobkit/localstack/lambdaruntime"
)

// Deployment is what Deploy created and resolved.
type Deployment struct {
	Region    string `json:"region"`
	AccountID string `json:"account_id"`
	Prefix    string `json:"prefix,omitempty"`

	Stacks         []Stack              `json:"stacks"`
	Queues         []Queue              `json:"queues"`
	Tables         []Table              `json:"tables"`
	Functions      []Function           `json:"functions"`
	Mappings       []EventSourceMapping `json:"event_source_mappings"`
	ScheduleGroups []ScheduleGroup      `json:"schedule_groups"`
	Schedules      []Schedule           `json:"schedules"`
	Skipped        []Skipped            `json:"skipped"`

	clients Clients
}

// Stack is a stack created on the emulator.
type Stack struct {
	Name    string            `json:"name"`
	ID      string            `json:"id"`
	Outputs map[string]string `json:"outputs"`
	Exports map[string]string `json:"exports"`
}

// Queue is an SQS queue of the deployment.
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

// Table is a DynamoDB table of the deployment.
type Table struct {
	Stack        string `json:"stack"`
	LogicalID    string `json:"logical_id"`
	Name         string `json:"name"`
	ARN          string `json:"arn"`
	TTLAttribute string `json:"ttl_attribute,omitempty"`
}

// Function is a Lambda function, resolved for lambdaruntime.
type Function struct {
	Stack     string `json:"stack"`
	LogicalID string `json:"logical_id"`
	Name      string `json:"name"`
	ARN       string `json:"arn"`
	// Source is the "jobkit:source" package the bootstrap is built from ("" if none).
	Source string `json:"source,omitempty"`
	// AssetPath is the synthesized asset directory (for functions without Source).
	AssetPath string `json:"asset_path,omitempty"`
	// Bootstrap is the executable built for this machine.
	Bootstrap     string   `json:"bootstrap"`
	Handler       string   `json:"handler"`
	Runtime       string   `json:"runtime"`
	Architectures []string `json:"architectures,omitempty"`
	// Env is Environment.Variables with every reference resolved: what the function sees.
	Env                 map[string]string `json:"env"`
	Timeout             time.Duration     `json:"timeout"`
	MemoryMB            int               `json:"memory_mb"`
	ReservedConcurrency int               `json:"reserved_concurrency,omitempty"`
}

// RuntimeFunction returns f as lambdaruntime runs it, with maxInstances environments at most.
func (f Function) RuntimeFunction(maxInstances int) lambdaruntime.Function {
	return lambdaruntime.Function{
		Name: f.Name, Bootstrap: f.Bootstrap, Handler: f.Handler, Env: f.Env,
		Timeout: f.Timeout, MemoryMB: f.MemoryMB, MaxInstances: maxInstances,
	}
}

// EventSourceMapping is an SQS event source mapping, resolved for esm.
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

// Skipped is a resource the offline stack does without.
type Skipped struct {
	Stack     string `json:"stack"`
	LogicalID string `json:"logical_id"`
	Type      string `json:"type"`
	Reason    string `json:"reason"`
}

// FunctionByName returns the function with this name or ARN, or nil.
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

// MappingsOf returns the event source mappings that invoke the function.
func (d *Deployment) MappingsOf(function string) []EventSourceMapping {
	var out []EventSourceMapping
	for _, m := range d.Mappings {
		if m.Function == function {
			out = append(out, m)
		}
	}
	return out
}
