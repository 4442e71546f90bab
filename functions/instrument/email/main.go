// Command email is functions/email instrumented for the dev and chaos programs: the same
// EmailWorker, wrapped with instrument.FaultMiddleware and, when EFFECTS_TABLE is set, the
// effects count (instrument.Effects), both inside the idempotency middleware; its mail provider
// (instrument.KeyedMailer) honours idempotency keys, as real providers do. Two switches make it
// the sample function for the benchmarks: instrument.EnvNoRateLimit and EnvSampleMailer.
package main

import (
	"os"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

func main() {
	m := setup.FromEnv("email")
	if os.Getenv(instrument.EnvNoRateLimit) != "1" {
		m.Use(ratelimit.Middleware(ratelimit.NewStore(m.DB, m.Table), samplejobs.EmailRateLimits(), nil))
	}
	instrument.Wire(m, instrument.EffectsFromEnv(m.DB))
	// The mail provider honours the idempotency key the worker gives it, as real providers do;
	// the benchmarks send with the sample's own mailer.
	var mailer samplejobs.Mailer = instrument.KeyedMailer{DB: m.DB, Table: m.Table, Next: samplejobs.LogMailer{Logger: m.Config.Logger}}
	if os.Getenv(instrument.EnvSampleMailer) == "1" {
		mailer = samplejobs.LogMailer{Logger: m.Config.Logger}
	}
	jobs.AddWorker(m.Workers, &samplejobs.EmailWorker{Mailer: mailer})
	jobs.AddWorker(m.Workers, &samplejobs.BatchDoneWorker{Logger: m.Config.Logger})
	m.Start()
}
