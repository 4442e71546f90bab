package samplejobs

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
)

// KindSendEmail is SendEmail's kind.
const KindSendEmail = "email.send"

// The mail provider accepts EmailRatePerSecond sends a second from the account: the email
// function's jobs take a token from the limiter LimiterMailProvider first.
const (
	LimiterMailProvider = "mail-provider"
	EmailRatePerSecond  = 1000
)

// EmailRateLimits is the email function's rate limit: EmailRatePerSecond SendEmail jobs a second
// across all its environments.
func EmailRateLimits() ratelimit.Rules {
	return ratelimit.Rules{KindSendEmail: {Name: LimiterMailProvider, Limit: ratelimit.PerSecond(EmailRatePerSecond)}}
}

// SendEmail sends one email.
type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body,omitempty"`
}

// Kind implements jobs.JobArgs.
func (SendEmail) Kind() string { return KindSendEmail }

// Email is a message as a Mailer sends it.
type Email struct {
	To, Subject, Body string
	// IdempotencyKey identifies the send: a provider that deduplicates sends takes it.
	IdempotencyKey string
}

// Mailer sends email.
type Mailer interface {
	Send(ctx context.Context, msg Email) error
}

// EmailSentMessage is the message of the log line LogMailer writes per email, with attributes
// to_domain (the recipient's domain: no address in logs), subject and idempotency_key: the
// sample's output, which the offline stack's end-to-end checks read.
const EmailSentMessage = "email sent"

// LogMailer is the sample stack's Mailer: it writes each email as a JSON log line instead of
// sending it, so the sample needs no verified sender.
type LogMailer struct {
	Logger *slog.Logger // nil means slog.Default()
}

// Send implements Mailer.
func (m LogMailer) Send(ctx context.Context, msg Email) error {
	log := m.Logger
	if log == nil {
		log = slog.Default()
	}
	// The recipient is personal data: the line names its domain only.
	_, domain, _ := strings.Cut(msg.To, "@")
	log.LogAttrs(ctx, slog.LevelInfo, EmailSentMessage,
		jobs.LogString("to_domain", domain), jobs.LogString("subject", msg.Subject),
		jobs.LogString("idempotency_key", msg.IdempotencyKey))
	return nil
}

// EmailWorker runs SendEmail jobs. Run it behind idempotency.Middleware so that a job delivered
// twice sends once.
type EmailWorker struct {
	Mailer Mailer
}

// Work implements jobs.Worker.
func (w *EmailWorker) Work(ctx context.Context, job *jobs.Job[SendEmail]) error {
	if !strings.Contains(job.Args.To, "@") {
		// Retrying cannot fix an address.
		return jobs.Cancel(errors.New("samplejobs: invalid recipient " + job.Args.To))
	}
	key := job.Key
	key = cmp.Or(key, job.ID)
	return w.Mailer.Send(ctx, Email{To: job.Args.To, Subject: job.Args.Subject, Body: job.Args.Body, IdempotencyKey: key})
}
