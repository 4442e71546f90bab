package instrument_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

func TestEffectsFromEnv(t *testing.T) {
	t.Setenv(instrument.EnvEffectsTable, "")
	require.Nil(t, instrument.EffectsFromEnv(nil))
	t.Setenv(instrument.EnvEffectsTable, "effects-1")
	e := instrument.EffectsFromEnv(nil)
	require.NotNil(t, e)
	require.Equal(t, "effects-1", e.Table)
}

// effectsFixture is an idempotency table, a ledger table and an effects table on the emulator,
// and the sample workers wired as the instrumented functions wire them.
type effectsFixture struct {
	db                                         *dynamodb.Client
	idem, ledger                               string
	effects                                    *instrument.Effects
	emailWorkers, ledgerWorkers, transcodeSlow *jobs.Workers
	transcodeWorkers                           *jobs.Workers
}

func newEffectsFixture(t *testing.T) *effectsFixture {
	t.Helper()
	cfg := awstest.Config(t)
	f := &effectsFixture{db: dynamodb.NewFromConfig(cfg)}
	f.idem = awstest.CreateTable(t, cfg, "idem", "id", "")
	f.ledger = awstest.CreateTable(t, cfg, "ledger", samplejobs.LedgerAccountAttr, "")
	f.effects = &instrument.Effects{Table: awstest.CreateTable(t, cfg, "effects", instrument.EffectsIDAttr, ""), DB: f.db}
	store := idempotency.NewDynamoDBStore(f.db, f.idem)
	quiet := slog.New(slog.DiscardHandler)
	f.emailWorkers = jobs.NewWorkers()
	f.emailWorkers.Use(idempotency.Middleware(store, nil), instrument.FaultMiddleware(), f.effects.Middleware())
	jobs.AddWorker(f.emailWorkers, &samplejobs.EmailWorker{Mailer: samplejobs.LogMailer{Logger: quiet}})
	f.ledgerWorkers = jobs.NewWorkers()
	f.ledgerWorkers.Use(idempotency.Middleware(store, nil), instrument.FaultMiddleware(), f.effects.Middleware())
	jobs.AddWorker(f.ledgerWorkers, &samplejobs.LedgerWorker{Table: f.ledger})
	f.transcodeWorkers = jobs.NewWorkers()
	f.transcodeWorkers.Use(instrument.FaultMiddleware(), f.effects.Middleware())
	jobs.AddWorker(f.transcodeWorkers, &samplejobs.TranscodeWorker{Step: time.Millisecond, Logger: quiet})
	f.transcodeSlow = jobs.NewWorkers()
	f.transcodeSlow.Use(instrument.FaultMiddleware(), f.effects.Middleware())
	jobs.AddWorker(f.transcodeSlow, &samplejobs.TranscodeWorker{Step: time.Hour, Logger: quiet})
	return f
}

func (f *effectsFixture) read(t *testing.T) map[string]instrument.EffectCount {
	t.Helper()
	got, err := instrument.ReadEffects(context.Background(), f.db, f.effects.Table)
	require.NoError(t, err)
	return got
}

// An email's effect is counted once per job however often the job is delivered, and not at all
// for an attempt that fails or a poison job. The count commits with the job's idempotency record.
func TestEmailEffectsExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newEffectsFixture(t)
	send := samplejobs.SendEmail{To: "a@example.com", Subject: "s"}
	for attempt := 1; attempt <= 3; attempt++ {
		require.NoError(t, jobstest.Run(ctx, f.emailWorkers, send, &jobstest.JobOpts{ID: "e1", Attempt: attempt}))
	}
	flaky := instrument.WithFaults(samplejobs.SendEmail{To: "b@example.com"}, instrument.Faults{FailAttempts: 1})
	require.ErrorIs(t, jobstest.Run(ctx, f.emailWorkers, flaky, &jobstest.JobOpts{ID: "e2", Attempt: 1}), instrument.ErrInjected)
	require.Equal(t, map[string]instrument.EffectCount{"e1": {Applied: 1}}, f.read(t), "a failed attempt applies nothing")
	require.NoError(t, jobstest.Run(ctx, f.emailWorkers, flaky, &jobstest.JobOpts{ID: "e2", Attempt: 2}))
	poison := instrument.WithFaults(samplejobs.SendEmail{To: "c@example.com"}, instrument.Faults{Poison: true})
	var cancel *jobs.CancelError
	require.True(t, errors.As(jobstest.Run(ctx, f.emailWorkers, poison, &jobstest.JobOpts{ID: "e3"}), &cancel))
	invalid := samplejobs.SendEmail{To: "nobody"}
	require.True(t, errors.As(jobstest.Run(ctx, f.emailWorkers, invalid, &jobstest.JobOpts{ID: "e4"}), &cancel))

	require.Equal(t, map[string]instrument.EffectCount{"e1": {Applied: 1}, "e2": {Applied: 1}}, f.read(t))
}

// A posting's effect is counted in the posting's own transaction: a redelivery adds nothing, and
// a posting the ledger refuses (out of order) counts nothing.
func TestLedgerEffectsInTheTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newEffectsFixture(t)
	post := func(jobID, posting string, seq int64, attempt int) error {
		p := samplejobs.PostLedger{Account: "acct-e", PostingID: posting, AmountCents: 5, Seq: seq}
		return jobstest.Run(ctx, f.ledgerWorkers, p, &jobstest.JobOpts{ID: jobID, GroupID: p.Account, Attempt: attempt})
	}
	require.NoError(t, post("l1", "p1", 1, 1))
	require.NoError(t, post("l1", "p1", 1, 2))
	require.NoError(t, post("l2", "p2", 2, 1))
	var ooo *samplejobs.OutOfOrderError
	require.True(t, errors.As(post("l0", "p0", 1, 1), &ooo))
	require.Equal(t, map[string]instrument.EffectCount{"l1": {Applied: 1}, "l2": {Applied: 1}}, f.read(t))
}

// Injected failures on a posting leave no trace and the retry applies; poison is cancelled.
func TestLedgerFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newEffectsFixture(t)
	p := instrument.WithFaults(samplejobs.PostLedger{Account: "acct-f", PostingID: "p1", AmountCents: 500}, instrument.Faults{FailAttempts: 2})
	for attempt := 1; attempt <= 2; attempt++ {
		err := jobstest.Run(ctx, f.ledgerWorkers, p, &jobstest.JobOpts{ID: "f1", GroupID: "acct-f", Attempt: attempt})
		require.ErrorIs(t, err, instrument.ErrInjected)
		var cancel *jobs.CancelError
		require.False(t, errors.As(err, &cancel), "an injected failure is retryable")
	}
	require.NoError(t, jobstest.Run(ctx, f.ledgerWorkers, p, &jobstest.JobOpts{ID: "f1", GroupID: "acct-f", Attempt: 3}))
	poison := instrument.WithFaults(samplejobs.PostLedger{Account: "acct-f", PostingID: "p2", AmountCents: 1}, instrument.Faults{Poison: true})
	err := jobstest.Run(ctx, f.ledgerWorkers, poison, &jobstest.JobOpts{ID: "f2", GroupID: "acct-f"})
	require.ErrorIs(t, err, instrument.ErrPoison)
	require.Equal(t, map[string]instrument.EffectCount{"f1": {Applied: 1}}, f.read(t))
}

// The transcode (no idempotency) counts each start of its body, and a finish only when it
// finished.
func TestTranscodeEffects(t *testing.T) {
	t.Parallel()
	f := newEffectsFixture(t)
	v := samplejobs.TranscodeVideo{VideoID: "v", Seconds: 3}
	require.NoError(t, jobstest.Run(context.Background(), f.transcodeWorkers, v, &jobstest.JobOpts{ID: "t1"}))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- jobstest.Run(ctx, f.transcodeSlow, v, &jobstest.JobOpts{ID: "t2"})
	}()
	require.Eventually(t, func() bool { return f.read(t)["t2"].Started == 1 }, 30*time.Second, 20*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	flaky := instrument.WithFaults(v, instrument.Faults{FailAttempts: 1})
	require.ErrorIs(t, jobstest.Run(context.Background(), f.transcodeWorkers, flaky, &jobstest.JobOpts{ID: "t3"}), instrument.ErrInjected)

	require.Equal(t, map[string]instrument.EffectCount{"t1": {Applied: 1, Started: 1}, "t2": {Started: 1}}, f.read(t),
		"an injected failure happens before the body starts")
}
