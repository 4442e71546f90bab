package jobs

import "strings"

// Names of the deployment contract. The CDK constructs (module infra) write them into the
// synthesized stacks; the tools that read a deployed stack (package jobs/inspect and the jobkit
// CLI, the local stack in localstack/deploy) look for them. They are declared here, once, and
// every side imports them.
const (
	// DefaultStack is the CloudFormation stack that holds the job queues of jobkit's sample app,
	// and the stack the tools read when told no other.
	DefaultStack = "JobkitState"

	// OutputQueuePrefix and OutputDLQPrefix prefix the stack outputs that name a deployment's
	// queues: an output JobkitQueue<Name> holds the URL of job queue <Name>, and JobkitDlq<Name>
	// the URL of its dead-letter queue.
	OutputQueuePrefix = "JobkitQueue"
	OutputDLQPrefix   = "JobkitDlq"

	// OutputStateTable is the stack output that holds the name of the jobkit state table (the
	// table the IdempotencyTable construct deploys: idempotency records, job states, unique keys,
	// batches), read by the CLI's job and batch verbs and the console.
	OutputStateTable = "JobkitStateTable"

	// OutputPayloadBucketPrefix prefixes the stack output that names a bucket of claim-checked
	// job payloads: JobkitPayloadBucket<Name> holds the name of the PayloadBucket construct
	// <Name>, for producers to set Payloads.Bucket (see Payloads).
	OutputPayloadBucketPrefix = "JobkitPayloadBucket"

	// SourceMetadataKey is the CloudFormation metadata key on a worker's AWS::Lambda::Function
	// that names its Go main package relative to the module root (e.g. "functions/email"), or by
	// import path for a package of a module it requires (IsImportPath; e.g. RecorderPackage), so a
	// tool that reads the template (the local stack) can build the same source.
	SourceMetadataKey = "jobkit:source"

	// ModuleMetadataKey is the CloudFormation metadata key on a worker's AWS::Lambda::Function
	// that names the directory of the Go module its SourceMetadataKey package belongs to,
	// slash-separated and relative to the directory of the template (the cloud assembly, cdk.out),
	// so a tool that reads the assembly finds the sources wherever the CDK app ran.
	ModuleMetadataKey = "jobkit:module"
)

// RecorderPackage is the import path of the redrive recorder's main package (RedriveRecorder),
// which the infra Worker and ContainerWorker constructs build from the service's module.
const RecorderPackage = "github.com/jobkit-go/jobkit/cmd/jobkit-recorder"

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
