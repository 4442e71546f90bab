// Package deploy puts a synthesized CDK app (the cloud assembly in cdk.out) on the offline
// emulator, so the stack that runs locally is the stack that deploys. It reads any CDK app's
// assembly, not only jobkit's sample.
//
// The emulator's own CloudFormation creates what it serves (queues with their redrive policies,
// tables, topics, rules), one stack per assembly stack, with outputs and exports, so cross-stack
// Fn::ImportValue resolves as on AWS. What it ignores or cannot run is done here: time to live
// (UpdateTimeToLive), schedule groups and schedules (the Scheduler API), and the functions and
// their SQS and DynamoDB Streams event source mappings, which are resolved — environment, queue
// URLs and ARNs, stream ARNs, batch settings, filters — for lambdaruntime and esm, with each function's bootstrap built for this machine from
// the Go package its "jobkit:source" metadata names. IAM, logs, alarms and dashboards are skipped
// (Deployment.Skipped says so).
//
// Deploy goes step by step, as the CDK CLI and CloudFormation would:
//  1. read the assembly: manifest.json, each stack's template, the stacks in dependency order
//     (ReadAssembly);
//  2. for each stack, evaluate Conditions and give every resource its place: the emulator's
//     CloudFormation, this package, or skipped;
//  3. rewrite the template for the emulator: only the types it serves, references to the other
//     resources replaced by their values (physical names and ARNs synthesized as AWS forms them),
//     export names prefixed; create the stack and wait for it;
//  4. read back the emulator's physical ids, queue and table attributes, outputs and exports, and
//     apply time to live;
//  5. create schedule groups and schedules, resolve functions and event source mappings, with
//     every intrinsic function evaluated against what now exists;
//  6. once every stack is up, link each mapping to its function and queue (checking the visibility
//     timeout as Lambda does) and build the bootstraps.
//
// Destroy undoes it, last stack first.
package deploy
