package instrument

import "github.com/jobkit-go/jobkit/jobs/setup"

// Wire instruments the worker main m: inside the idempotency middleware, FaultMiddleware and
// effects' count (nil counts nothing; see EffectsFromEnv). Each real run is reported by the
// runtime itself (event.Started, on the output under the offline stack's JOBKIT_EVENTS).
func Wire(m *setup.Main, effects *Effects) {
	m.UseInside(FaultMiddleware(), effects.Middleware())
}
