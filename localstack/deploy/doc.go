// Package deploy puts a synthesized CDK app (the cloud assembly in cdk.out) on the offline
// emulator, so the stack that runs locally is the stack that deploys.
//
// The emulator's own CloudFormation creates what it serves (queues with their redrive policies,
// tables, topics, rules), one stack per assembly stack, with outputs and exports, so cross-stack
// Fn::ImportValue resolves as on AWS. What it ignores or cannot run is done here: time to live
// (UpdateTimeToLive), schedule groups and schedules (the Scheduler API), and the functions and
// their SQS event source mappings, which are resolved — environment, queue URLs and ARNs, batch
// settings — for lambdaruntime and esm, with each function's bootstrap built for this machine from
// the Go package its "jobkit:source" metadata names. IAM, logs, alarms and dashboards are skipped
// (Deployment.Skipped says so).
package deploy
