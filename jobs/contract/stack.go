package contract

import (
	"strings"
	"time"
)

// Names of the deployment contract. The CDK constructs (module infra) write them into the
// synthesized stacks; the tools that read a deployed stack (package jobs/inspect and the jobkit
// CLI, the local stack in offline/deploy) look for them. They are declared here, once, and
// every side imports them.
const (
	// DefaultStack is the CloudFormation stack that holds the job queues of jobkit's sample app,
	// and the stack the tools read when told no other.
	DefaultStack = "JobkitState"
)

// RecorderPackage is the import path of the redrive recorder's main package (RedriveRecorder),
// which the infra Worker and ContainerWorker constructs build from the service's module.
const RecorderPackage = "github.com/jobkit-go/jobkit/cmd/jobkit-recorder"

// OutboxPackage is the import path of the outbox forwarder's main package (outbox.Forwarder),
// which the infra OutboxForwarder construct builds from the service's module when its props name
// no Source package.
const OutboxPackage = "github.com/jobkit-go/jobkit/cmd/jobkit-outbox"

// IsImportPath reports whether a package named in SourceMetadataKey (or a GoSource) is an import
// path rather than a folder of the module: its first element holds a dot, as the first element of
// every module path outside the standard library does ("github.com/..."); "./x" and "../x" are
// folders.
func IsImportPath(pkg string) bool {
	if strings.HasPrefix(pkg, "./") || strings.HasPrefix(pkg, "../") || pkg == "." || pkg == ".." {
		return false
	}
	first, _, _ := strings.Cut(pkg, "/")
	return strings.Contains(first, ".")
}

// LaneQueueName is the name of lane lane of the queue with priority lanes named queue (the
// PriorityQueue construct's id): queue followed by the lane with its first letter upper-cased,
// e.g. "Notify" and "critical" give "NotifyCritical", whose URL is the stack output
// OutputQueuePrefix+"NotifyCritical". Lane names are lower-case letters and digits.
func LaneQueueName(queue, lane string) string {
	if lane == "" {
		return queue
	}
	first := lane[0]
	if first >= 'a' && first <= 'z' {
		first -= 'a' - 'A'
	}
	return queue + string(first) + lane[1:]
}

// The claim check's wire format, shared with AWS's SQS extended clients: PayloadPointerClass is
// the first element of a pointer body.
const PayloadPointerClass = "software.amazon.payloadoffloading.PayloadS3Pointer"

// PayloadKeyPrefix begins the key of every claim-checked payload of the queue named queue (its
// name, not its URL): the Client stores a job's payload under its destination queue's prefix,
// a worker's grant covers its own queue's prefix only, and the runtime refuses a pointer outside
// it.
func PayloadKeyPrefix(queue string) string { return queue + "/" }

// The container consumer's bounds (jobs.Consumer), which the ContainerWorker construct checks.
const (
	// DefaultDrainTimeout leaves 5 s of ECS's default 30 s stop timeout for the process to exit.
	DefaultDrainTimeout = 25 * time.Second
	// MinConsumerVisibilityTimeout is the shortest visibility timeout a consumer takes: its
	// heartbeat runs every third of it, and each beat must land before the visibility lapses.
	MinConsumerVisibilityTimeout = 3 * time.Second
	// MaxStopTimeout is the longest stop timeout ECS gives a Fargate task (SIGTERM to SIGKILL).
	MaxStopTimeout = 120 * time.Second
)
