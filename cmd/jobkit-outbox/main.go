// Command jobkit-outbox is the outbox forwarder's Lambda function (outbox.Forwarder) on the jobkit
// state table's stream: the infra OutboxForwarder construct builds it from the service's own
// module, by import path, when its props name no Source package, so a service sends jobs from
// its DynamoDB transactions (package outbox) without writing a forwarder of its own.
//
// A service module makes it one of its tools, so that go.sum covers what it imports:
//
//	go get -tool github.com/jobkit-go/jobkit/cmd/jobkit-outbox
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/jobkit-go/jobkit/jobs/outbox"
)

func main() {
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fail(err)
	}
	cfg, err := outbox.ForwarderConfigFromEnv(awsCfg)
	if err != nil {
		fail(err)
	}
	fw, err := outbox.NewForwarder(cfg)
	if err != nil {
		fail(err)
	}
	lambda.Start(fw.Handle)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "jobkit-outbox:", err)
	os.Exit(1)
}
