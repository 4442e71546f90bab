// Command notify is functions/notify instrumented for the dev and chaos programs: the same
// NotifyWorker, wrapped with instrument.FaultMiddleware and, when
// EFFECTS_TABLE is set, the effects count (instrument.Effects), both inside the idempotency
// middleware.
package main

import (
	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

func main() {
	m := setup.FromEnv("notify")
	instrument.Wire(m, instrument.EffectsFromEnv(m.DB))
	jobs.AddWorker(m.Workers, &samplejobs.NotifyWorker{Logger: m.Config.Logger})
	m.Start()
}
