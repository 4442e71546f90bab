package samplejobs

import (
	"context"
	"log/slog"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// KindEmailBatchDone is EmailBatchDone's kind.
const KindEmailBatchDone = "email.batch_done"

// EmailBatchDone is the callback of a fan-out batch of emails (a campaign): jobs/state enqueues
// it once every email of the batch has been sent or has died, with the counts.
type EmailBatchDone struct {
	state.BatchResult
	Campaign string `json:"campaign"`
}

// Kind implements jobs.JobArgs.
func (EmailBatchDone) Kind() string { return KindEmailBatchDone }

// BatchDoneMessage is the message of the log line BatchDoneWorker writes per callback run, with
// attributes batch_id, campaign, total, succeeded and dead: what the offline stack's checks read.
const BatchDoneMessage = "email batch done"

// BatchDoneWorker runs EmailBatchDone jobs: it reports the campaign's outcome in a log line.
type BatchDoneWorker struct {
	Logger *slog.Logger // nil means slog.Default()
}

// Work implements jobs.Worker.
func (w *BatchDoneWorker) Work(ctx context.Context, job *jobs.Job[EmailBatchDone]) error {
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	a := job.Args
	log.LogAttrs(ctx, slog.LevelInfo, BatchDoneMessage, jobs.LogString("batch_id", a.BatchID),
		jobs.LogString("campaign", a.Campaign), slog.Int("total", a.Total), slog.Int("succeeded", a.Succeeded), slog.Int("dead", a.Dead))
	return nil
}
