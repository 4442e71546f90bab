package deploy

import (
	"strings"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Where a resource type goes. Every active resource of a template gets one place: the emulator
// creates it, this package creates or runs it, or the offline stack does without it.
const (
	placeEmulator = iota + 1 // created by the emulator's CloudFormation
	placeLocal               // run (functions, event source mappings) or created by this package (schedules)
	placeSkipped             // not needed offline
)

// emulatorTypes are the resource types the emulator's CloudFormation creates (moto and LocalStack
// both serve these). A type not listed here is never sent to it: moto skips what it does not know
// with only a server-log warning while the stack still says CREATE_COMPLETE, so sending it would
// hide the gap instead of reporting it in Deployment.Skipped. (One it takes and then skips anyway,
// such as moto's AWS::SQS::QueuePolicy, is found missing after creation and listed there too.)
var emulatorTypes = map[string]bool{
	"AWS::SQS::Queue": true, "AWS::SQS::QueuePolicy": true, "AWS::DynamoDB::Table": true,
	"AWS::SNS::Topic": true, "AWS::SNS::Subscription": true, "AWS::SNS::TopicPolicy": true,
	"AWS::Events::EventBus": true, "AWS::Events::Rule": true, "AWS::SSM::Parameter": true,
	"AWS::S3::Bucket": true, "AWS::CloudFormation::WaitConditionHandle": true,
}

// isCustom reports whether typ is a custom resource: its provider function creates it
// (CustomResource, run by devstack when the stack starts).
func isCustom(typ string) bool {
	return strings.HasPrefix(typ, "Custom::") || typ == typeCustomResource
}

// The resource types this package looks at by name.
const (
	typeCustomResource = "AWS::CloudFormation::CustomResource"
	typeFunction       = "AWS::Lambda::Function"
	typeESM            = "AWS::Lambda::EventSourceMapping"
	typeScheduleGroup  = "AWS::Scheduler::ScheduleGroup"
	typeSchedule       = "AWS::Scheduler::Schedule"
	typeQueue          = "AWS::SQS::Queue"
	typeTable          = "AWS::DynamoDB::Table"
)

// SourceMetadataKey is the metadata key naming a function's Go main package, relative to the
// module, or by import path (contract.IsImportPath; infra/constructs writes it).
const SourceMetadataKey = contract.SourceMetadataKey

// ModuleMetadataKey is the metadata key naming the directory of a function's Go module, relative
// to the template's directory (infra/constructs writes it).
const ModuleMetadataKey = contract.ModuleMetadataKey

// placeOf says where a resource of type typ goes. Functions and their event source mappings are
// run by lambdaruntime and esm, ECS task definitions' containers as local processes (the emulator runs no Lambda code without Docker); schedule groups
// and schedules are created with the Scheduler API (moto's CloudFormation skips them).
func placeOf(typ string) int {
	switch {
	case emulatorTypes[typ]:
		return placeEmulator
	case typ == typeFunction || typ == typeESM || typ == typeScheduleGroup || typ == typeSchedule || typ == typeTaskDefinition || isCustom(typ):
		return placeLocal
	}
	return placeSkipped
}

// skipReason says, for Deployment.Skipped, why the offline stack does without a resource of type
// typ, so a user reading the list knows what differs from AWS.
func skipReason(typ string) string {
	switch {
	case strings.HasPrefix(typ, "AWS::IAM::"):
		return "IAM is not enforced offline"
	case strings.HasPrefix(typ, "AWS::CloudWatch::"):
		return "CloudWatch is not served offline (metrics are EMF log lines)"
	case strings.HasPrefix(typ, "AWS::Logs::"):
		return "functions log to the terminal offline"
	case strings.HasPrefix(typ, "AWS::KMS::"):
		return "queues and tables are not encrypted offline"
	case strings.HasPrefix(typ, "AWS::ECS::"):
		return "task definitions' containers run as local processes offline; clusters and services are not needed"
	case strings.HasPrefix(typ, "AWS::EC2::"):
		return "networking is the machine's offline"
	case strings.HasPrefix(typ, "AWS::ApplicationAutoScaling::"):
		return "offline runs one process per container, not scaled"
	case typ == "AWS::Lambda::Permission":
		return "invoke permissions are not enforced offline"
	}
	return "not supported offline"
}

// countPlace counts the resources of run in place p, for the "stack deployed" log line.
func countPlace(run *stackRun, p int) int {
	n := 0
	for _, v := range run.place {
		if v == p {
			n++
		}
	}
	return n
}
