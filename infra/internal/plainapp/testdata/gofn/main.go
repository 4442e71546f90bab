// Command gofn is the Go function of the plain CDK app (package plainapp): for each SQS record it
// writes "go:<body>" to a file of OUT_DIR named by the message id, and reports the body "fail" as
// a batch item failure. It uses aws-lambda-go alone, as a function written without jobkit does.
package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if err := os.WriteFile(filepath.Join(os.Getenv("OUT_DIR"), r.MessageId), []byte("go:"+r.Body), 0o644); err != nil {
				return resp, err
			}
			if r.Body == "fail" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	})
}
