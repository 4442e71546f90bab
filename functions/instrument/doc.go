// Package instrument wraps the sample workers (functions/samplejobs) for the programs that
// exercise the sample stack — the `make dev` driver (internal/devapp) and the chaos run
// (internal/chaos) — without anything in the samples themselves:
//
//   - Faults: fault instructions a producer adds to a job's args JSON (WithFaults), which the
//     FaultMiddleware reads back from the raw args and turns into failures (a retryable error for
//     the first attempts, a cancellation, or a first attempt that returns after its deadline).
//     The samples' args ignore unknown JSON fields, so the workers never see them.
//   - Effects: a DynamoDB table counting, per job id, how many times the job's effect was
//     committed and how many times its body started, from real state, so that a fault-injection
//     run can prove every job's effect happened exactly once (Effects.Middleware, ReadEffects).
//
// The instrumented function binaries beside it (functions/instrument/<name>) wire both around the sample
// workers; Binaries maps each sample function's package to its instrumented one, for
// deploy.Options.Sources.
package instrument

// Binaries maps each sample function's Go package (its "jobkit:source" in the cloud assembly)
// to the package of its instrumented binary, both relative to the repository root.
var Binaries = map[string]string{
	"functions/email":     "functions/instrument/email",
	"functions/ledger":    "functions/instrument/ledger",
	"functions/transcode": "functions/instrument/transcode",
	"functions/notify":    "functions/instrument/notify",
}
