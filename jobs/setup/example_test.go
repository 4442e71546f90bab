package setup_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

// SendEmail is a job: its arguments and the kind that names it on the wire.
type SendEmail struct {
	To string `json:"to"`
}

func (SendEmail) Kind() string { return "email.send" }

// EmailWorker runs SendEmail jobs.
type EmailWorker struct{ Logger *slog.Logger }

func (w *EmailWorker) Work(ctx context.Context, job *jobs.Job[SendEmail]) error {
	w.Logger.InfoContext(ctx, "sending", slog.String("to", job.Args.To))
	return nil
}

// main is the main of a worker function deployed by the Worker construct (the package doc's).
func main() {
	m := setup.FromEnv("email")
	jobs.AddWorker(m.Workers, &EmailWorker{Logger: m.Config.Logger})
	m.Start()
}

// A worker main wired from the environment the Worker construct sets: the runtime's config, the
// AWS clients and the idempotency store come from FromEnv; the main adds its workers and starts,
// on Lambda or as a container worker.
func Example() {
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		main() // only where Lambda runs it
	}
}
