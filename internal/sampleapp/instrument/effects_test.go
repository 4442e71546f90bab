package samplejobs_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/localstack/awstest"
)

func TestEffectsFromEnv(t *testing.T) {
	t.Setenv(samplejobs.EnvEffectsTable, "")
	require.Nil(t, samplejobs.EffectsFromEnv(nil))
	t.Setenv(samplejobs.EnvEffectsTable, "effects-1")
	e := samplejobs.EffectsFromEnv(nil)
	require.NotNil(t, e)
	require.Equal(t, "effects-1", e.Table)
}

// effectsFixture is an idempotency table, a ledger table and an effects table on the emulator.
type effectsFixture struct {
	db                          *dynamodb.Client
	idem, ledger                string
	effects                     *samplejobs.Effects
	emailWorkers, ledgerWorkers *jobs.Workers
}

func newEffectsFixture(t *testing.T) *effectsFixture {
	t.Helper()
	cfg := awstest.Config(t)
	f := &effectsFixture{db: dynamodb.NewFromConfig(cfg)}
	f.idem = awstest.CreateTable(t, cfg, "idem", "id", "")
	f.ledger = awstest.CreateTable(t, cfg, "ledger", samplejobs.LedgerAccountAttr, "")
	f.effects = &samplejobs.Effects{Table: awstest.CreateTable(t, cfg, "effects", samplejobs.EffectsIDAttr, ""), DB: f.db}
	store := idempotency.NewDynamoDBStore(f.db, f.idem)
	quiet := slog.New(slog.DiscardHandler)
	f.emailWorkers = jobs.NewWorkers()
	f.emailWorkers.Use(idempotency.Middleware(store, nil))
	jobs.AddWorker(f.emailWorkers, &samplejobs.EmailWorker{Mailer: samplejobs.LogMailer{Logger: quiet}, Effects: f.effects})
	f.ledgerWorkers = jobs.NewWorkers()
	f.ledgerWorkers.Use(idempotency.Middleware(store, nil))
	jobs.AddWorker(f.ledgerWorkers, &samplejobs.LedgerWorker{Table: f.ledger, Effects: f.effects})
	return f
}

func (f *effectsFixture) read(t *testing.T) map[string]samplejobs.EffectCount {
	t.Helper()
	got, err := samplejobs.ReadEffects(context.Background(), f.db, f.effects.Table)
	require.NoError(t, err)
	return got
}

// An email's effect is counted once per job however often the job is delivered, and not at all
// for an attempt that fails or a poison job.
func TestEmailEffectsExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newEffectsFixture(t)
	send := samplejobs.SendEmail{To: "a@example.com", Subject: "s"}
	for attempt := 1; attempt <= 3; attempt++ {
		require.NoError(t, jobstest.Run(ctx, f.emailWorkers, send, &jobstest.JobOpts{ID: "e1", Attempt: attempt}))
	}
	flaky := samplejobs.SendEmail{To: "b@example.com", Faults: samplejobs.Faults{FailAttempts: 1}}
	require.ErrorIs(t, jobstest.Run(ctx, f.emailWorkers, flaky, &jobstest.JobOpts{ID: "e2", Attempt: 1}), samplejobs.ErrInjected)
	require.Equal(t, map[string]samplejobs.EffectCount{"e1": {Applied: 1}}, f.read(t), "a failed attempt applies nothing")
	require.NoError(t, jobstest.Run(ctx, f.emailWorkers, flaky, &jobstest.JobOpts{ID: "e2", Attempt: 2}))
	poison := samplejobs.SendEmail{To: "c@example.com", Faults: samplejobs.Faults{Poison: true}}
	var cancel *jobs.CancelError
	require.True(t, errors.As(jobstest.Run(ctx, f.emailWorkers, poison, &jobstest.JobOpts{ID: "e3"}), &cancel))

	require.Equal(t, map[string]samplejobs.EffectCount{"e1": {Applied: 1}, "e2": {Applied: 1}}, f.read(t))
}

// Without the idempotency middleware the effect could apply twice: the worker refuses to run.
func TestEmailEffectsNeedTheMiddleware(t *testing.T) {
	t.Parallel()
	w := &samplejobs.EmailWorker{Mailer: samplejobs.LogMailer{Logger: slog.New(slog.DiscardHandler)}, Effects: &samplejobs.Effects{Table: "t"}}
	err := jobstest.Work(context.Background(), jobs.Worker[samplejobs.SendEmail](w), samplejobs.SendEmail{To: "a@example.com"}, nil)
	var cancel *jobs.CancelError
	require.True(t, errors.As(err, &cancel), "%v", err)
	require.ErrorIs(t, err, idempotency.ErrNoClaim)
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
	require.Equal(t, map[string]samplejobs.EffectCount{"l1": {Applied: 1}, "l2": {Applied: 1}}, f.read(t))
}

// The transcode counts each start of its body, and a finish only when it finished.
func TestTranscodeEffects(t *testing.T) {
	t.Parallel()
	f := newEffectsFixture(t)
	w := &samplejobs.TranscodeWorker{Step: time.Millisecond, Logger: slog.New(slog.DiscardHandler), Effects: f.effects}
	v := samplejobs.TranscodeVideo{VideoID: "v", Seconds: 3}
	require.NoError(t, jobstest.Work(context.Background(), jobs.Worker[samplejobs.TranscodeVideo](w), v, &jobstest.JobOpts{ID: "t1"}))

	ctx, cancel := context.WithCancel(context.Background())
	w2 := &samplejobs.TranscodeWorker{Step: time.Hour, Logger: slog.New(slog.DiscardHandler), Effects: f.effects}
	done := make(chan error, 1)
	go func() {
		done <- jobstest.Work(ctx, jobs.Worker[samplejobs.TranscodeVideo](w2), v, &jobstest.JobOpts{ID: "t2"})
	}()
	require.Eventually(t, func() bool { return f.read(t)["t2"].Started == 1 }, 30*time.Second, 20*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	require.Equal(t, map[string]samplejobs.EffectCount{"t1": {Applied: 1, Started: 1}, "t2": {Started: 1}}, f.read(t))
}
