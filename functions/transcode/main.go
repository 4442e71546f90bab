// Command transcode is the sample stack's long-job worker: it runs TranscodeVideo jobs from the
// Transcode queue, on Lambda or in a container (jobs.Start picks from the environment). While a
// job works, the runtime's heartbeat keeps its message invisible; when the job's context ends
// (the Lambda deadline, or the container's drain on SIGTERM), the job stops and is retried.
//
// Jobs run behind idempotency.Middleware: a task killed after a transcode finished and before its
// message was deleted does not transcode again. In a container the claim holds the key for the
// queue's visibility timeout and is renewed while the job runs (jobctx.KeepAlive), so a job whose
// task died is taken again when its message comes back, not hours later.
package main

import (
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

func main() {
	m := setup.FromEnv("transcode")
	jobs.AddWorker(m.Workers, &samplejobs.TranscodeWorker{Logger: m.Config.Logger})
	m.Start()
}
