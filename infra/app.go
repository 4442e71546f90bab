package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// NewCDKApp returns the CDK app the sample stacks are defined on, writing its cloud assembly to
// outdir.
func NewCDKApp(outdir string) awscdk.App {
	return awscdk.NewApp(&awscdk.AppProps{
		Outdir: jsii.String(outdir),
		Context: &map[string]any{
			// Cross-stack references (the workers stack imports the queues and tables) are
			// CloudFormation exports that protect the producer: the behaviour CDK has always had.
			"@aws-cdk/core:defaultCrossStackReferences": "strong",
		},
	})
}

// SampleApp is the sample app's stacks.
type SampleApp struct {
	App     awscdk.App
	State   *StateStack
	Workers *WorkersStack
}

// NewSampleApp defines the sample stacks on app, with the functions built from the Go module at
// moduleDir, and applies the cdk-nag AwsSolutions checks. The constructs encrypt, enforce TLS,
// give every job queue a DLQ and enable PITR. The sample has one suppression, added by
// DelayedJobs on the dead-letter queue it creates for EventBridge Scheduler: AwsSolutions-SQS3,
// scoped to that queue, with its reason (Scheduler sends undeliverable jobs to it directly; it has
// no DLQ of its own). DelayedJobs.GrantProducer adds a second one, AwsSolutions-IAM5 for the
// schedule group's per-job names, on each producer it grants; the sample grants none. Any
// suppression added later must carry its reason too (cdknag.NagSuppressions_AddResourceSuppressions).
func NewSampleApp(app awscdk.App, moduleDir string) *SampleApp {
	s := &SampleApp{App: app}
	s.State = NewStateStack(app, StateStackID, &awscdk.StackProps{
		Description: jsii.String("jobkit sample: job queues, dead-letter queues, idempotency and ledger tables, schedules"),
	})
	s.Workers = NewWorkersStack(app, WorkersStackID, s.State, moduleDir, &awscdk.StackProps{
		Description: jsii.String("jobkit sample: job functions and dashboard"),
	})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
		Verbose: jsii.Bool(true),
		Reports: jsii.Bool(true),
	}), nil)
	return s
}
