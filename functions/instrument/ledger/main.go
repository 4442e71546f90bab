// Command ledger is functions/ledger instrumented for the dev and chaos programs: the same
// LedgerWorker, wrapped with instrument.FaultMiddleware and, when EFFECTS_TABLE is set, the
// effects count, which commits in the posting's own transaction (instrument.Effects).
package main

import (
	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

func main() {
	m := setup.FromEnv("ledger")
	instrument.Wire(m, instrument.EffectsFromEnv(m.DB))
	jobs.AddWorker(m.Workers, &samplejobs.LedgerWorker{Table: m.Env(samplejobs.EnvLedgerTable)})
	m.Start()
}
