package instrument

import (
	"os"

	"github.com/jobkit-go/jobkit/jobs/setup"
)

// Wire instruments the worker main m: StartLog on stdout outside everything m.Use added so far,
// then, inside the idempotency middleware, FaultMiddleware and effects' count (nil counts
// nothing; see EffectsFromEnv).
func Wire(m *setup.Main, effects *Effects) {
	m.Use(StartLog(os.Stdout))
	m.UseInside(FaultMiddleware(), effects.Middleware())
}
