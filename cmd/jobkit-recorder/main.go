// Command jobkit-recorder is the redrive recorder's Lambda function (jobs.RedriveRecorder): the
// infra Worker and ContainerWorker constructs build it from the service's own module, by import
// path, and run it on the holding queue that a job queue's redrive policy moves messages into.
// It records each moved job dead (contract.ReasonRedrivePolicy) in the jobkit state table when
// JOBKIT_STATE_TABLE names one, and sends the message on to the dead-letter queue.
//
// A service module makes it one of its tools, so that go.sum covers what it imports:
//
//	go get -tool github.com/jobkit-go/jobkit/cmd/jobkit-recorder
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/state"
)

func main() {
	cfg, err := jobs.RecorderConfigFromEnv(os.LookupEnv)
	if err != nil {
		fail(err)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fail(err)
	}
	client := sqs.NewFromConfig(awsCfg)
	cfg.SQS, cfg.S3 = client, jobs.NewPayloadS3Client(awsCfg)
	if table := os.Getenv(contract.EnvStateTable); table != "" {
		// Options.SQS sends the callbacks of the fan-out batches whose last member it records.
		opts := &state.Options{SQS: client, ListJobs: os.Getenv(contract.EnvListJobs) == "1"}
		if cfg.States, err = state.New(dynamodb.NewFromConfig(awsCfg), table, opts); err != nil {
			fail(err)
		}
	}
	lambda.Start(jobs.NewRedriveRecorder(cfg).Handle)
}

// fail ends the init phase: Lambda reports it, and SQS's redrive policy keeps the messages safe.
func fail(err error) {
	fmt.Fprintln(os.Stderr, "jobkit-recorder:", err)
	os.Exit(1)
}
