// Command transcode is functions/transcode instrumented for the dev and chaos programs: the same
// TranscodeWorker behind the same idempotency middleware, wrapped with
// instrument.FaultMiddleware and, when EFFECTS_TABLE is set, the count of each transcode's
// effect, committed with its idempotency record (instrument.Effects).
package main

import (
	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

func main() {
	m := setup.FromEnv("transcode")
	effects := instrument.EffectsFromEnv(m.DB)
	if effects != nil {
		effects.CountStarts = true // the long job must start once
	}
	instrument.Wire(m, effects)
	jobs.AddWorker(m.Workers, &samplejobs.TranscodeWorker{Logger: m.Config.Logger})
	m.Start()
}
