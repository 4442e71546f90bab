package samplejobs

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jobkit-go/jobkit/jobs"
)

// KindSendNotification is SendNotification's kind.
const KindSendNotification = "notify.send"

// The Notify queue has priority lanes (infra's PriorityQueue): a producer picks one with
// jobs.EnqueueOpts.Priority — LaneCritical for what a user waits on (a sign-in code), LaneBulk
// for what nobody waits on (a weekly digest); without a Priority a job goes to LaneDefault. Each
// lane is a queue of its own with its own consumers, so a flood of bulk cannot delay critical.
const (
	LaneDefault  = "default"
	LaneCritical = "critical"
	LaneBulk     = "bulk"
)

// NotifyLanes are the Notify queue's lanes, the default lane first.
var NotifyLanes = []string{LaneDefault, LaneCritical, LaneBulk}

// SendNotification sends a short notification to a user's devices.
type SendNotification struct {
	User string `json:"user"`
	Text string `json:"text"`
}

// Kind implements jobs.JobArgs.
func (SendNotification) Kind() string { return KindSendNotification }

// NotificationSentMessage is the message of the log line NotifyWorker writes per notification,
// with the attribute user.
const NotificationSentMessage = "notification sent"

// NotifyWorker runs SendNotification jobs: the sample writes each as a log line instead of
// calling a push service. Run it behind idempotency.Middleware so a job delivered twice sends
// once.
type NotifyWorker struct {
	Logger *slog.Logger // nil means slog.Default()
}

// Work implements jobs.Worker.
func (w *NotifyWorker) Work(ctx context.Context, job *jobs.Job[SendNotification]) error {
	if job.Args.User == "" {
		return jobs.Cancel(errors.New("samplejobs: notification without a user"))
	}
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	log.LogAttrs(ctx, slog.LevelInfo, NotificationSentMessage, jobs.LogString("user", job.Args.User))
	return nil
}
