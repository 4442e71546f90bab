// Package offline is jobkit's own emulation of what the emulators in localstack/ store but do not
// run: it puts a CDK app's cloud assembly (cdk.out) on an emulator and runs it on this machine,
// for development and integration tests. It knows nothing of jobkit's sample app: point it at any
// CDK app whose functions are Go, and what runs is what that app's templates say. The packages
// below it do the work; this one holds only this map.
//
// AWS's own behaviour, copied from its documentation:
//   - lambdaruntime runs a function's real bootstrap binary behind a local Lambda Runtime API, one
//     process per execution environment, timeout enforced (loopback guards its server);
//   - esm is the SQS event source mapping that polls a queue and invokes a function, with
//     ReportBatchItemFailures as AWS documents it, and the DynamoDB Streams mapping;
//   - schedfire fires EventBridge Scheduler schedules, which the emulators store but never fire;
//   - taskrun runs an ECS task definition's container as a local process.
//
// Putting an app on it. deploy reads the cloud assembly and creates its stacks on the emulator's
// CloudFormation (what it serves), with the Scheduler API (what it skips), and resolves the
// functions and their mappings; devstack runs a deployment: a lambdaruntime per function, an esm
// poller per mapping, a taskrun per container, schedfire for its schedule groups. devrun runs any
// CDK app until a signal and counts its jobs (tally); cmd/jobkit-dev is that program, which
// `jobkit dev` builds from a service's own module.
//
// offline imports the library, localstack (to find or start an emulator) and its own packages.
package offline
