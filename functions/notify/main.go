// Command notify is the sample stack's notification worker: it runs SendNotification jobs from
// one lane of the Notify queue — the same binary consumes every lane, each lane's function with
// its own queue and its own share of the concurrency (infra's PriorityQueue) — each job sent
// once while its idempotency record lasts.
package main

import (
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

func main() {
	m := setup.FromEnv("notify")
	jobs.AddWorker(m.Workers, &samplejobs.NotifyWorker{Logger: m.Config.Logger})
	m.Start()
}
