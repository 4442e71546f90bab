// Command transcode is the sample stack's long-job worker: it runs TranscodeVideo jobs from the
// Transcode queue, on Lambda or in a container (jobs.Start picks from the environment). While a
// job works, the runtime's heartbeat keeps its message invisible; when the job's context ends
// (the Lambda deadline, or the container's drain on SIGTERM), the job stops and is retried.
package main

import (
	"log/slog"
	"os"

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
	jobs.Start(workers, cfg)
}
