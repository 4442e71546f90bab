// Command transcode is the sample stack's long-job worker: it runs TranscodeVideo jobs from the
// Transcode queue. While a job works, the runtime's heartbeat keeps its message invisible; when
// the job's context ends, the job stops and is retried.
package main

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
)

func main() {
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		slog.Error("transcode: bad configuration", "err", err)
		os.Exit(1)
	}
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, &samplejobs.TranscodeWorker{Logger: cfg.Logger})
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}
