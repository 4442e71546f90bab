// Command email is the sample stack's email worker: it runs SendEmail jobs from the Email queue,
// each at most once per idempotency key while its record lasts (DynamoDB idempotency store;
// JOBKIT_IDEMPOTENCY_EXPIRY, which the Worker construct sets to the queue's and DLQ's retention).
package main

import (
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

func main() {
	m := setup.FromEnv("email")
	// The provider's rate limit first, so a job waiting for a token holds no idempotency claim.
	m.Use(ratelimit.Middleware(ratelimit.NewStore(m.DB, m.Table), samplejobs.EmailRateLimits(), nil))
	jobs.AddWorker(m.Workers, &samplejobs.EmailWorker{Mailer: samplejobs.LogMailer{Logger: m.Config.Logger}})
	jobs.AddWorker(m.Workers, &samplejobs.BatchDoneWorker{Logger: m.Config.Logger})
	m.Start()
}
