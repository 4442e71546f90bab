package samplejobs_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/offline/schedfire"
	"github.com/jobkit-go/jobkit/scheduler"
)

// The declared schedules are valid, each targets the queue of its kind, and a FIFO target has
// the job's message group.
func TestSchedulesDeclared(t *testing.T) {
	t.Parallel()
	require.Len(t, samplejobs.Schedules, 2)
	names := map[string]bool{}
	for _, s := range samplejobs.Schedules {
		require.NoError(t, s.Validate(), s.Name)
		require.False(t, names[s.Name], "schedule %s declared twice", s.Name)
		names[s.Name] = true
		require.Equal(t, samplejobs.Queues[s.Args.Kind()], s.Queue, "%s: the queue of kind %s", s.Name, s.Args.Kind())
		require.Equal(t, samplejobs.QueueScheduleDLQ, s.DeadLetterQueue, s.Name)
		require.NotNil(t, s.Retry, "%s: an explicit retry policy", s.Name)
		if s.Queue == samplejobs.QueueLedger {
			posting, ok := s.Args.(samplejobs.PostLedger)
			require.True(t, ok, s.Name)
			require.Equal(t, posting.GroupID(), s.GroupID, "%s: the account is the message group", s.Name)
		} else {
			require.Empty(t, s.GroupID, "%s: a Standard queue has no message group", s.Name)
		}
		in, err := s.Input()
		require.NoError(t, err)
		require.Contains(t, in, `"id":"sched:`+s.Name+`:`+scheduler.ScheduledTimePlaceholder+`"`)
	}
	// The offline runner takes them as they are (it sends nothing until it runs).
	_, err := schedfire.New(schedfire.Config{SQS: sqs.New(sqs.Options{Region: "us-east-1"}), Schedules: samplejobs.Schedules})
	require.NoError(t, err)
}

func schedule(t *testing.T, name string) scheduler.Schedule {
	t.Helper()
	for _, s := range samplejobs.Schedules {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no schedule %s", name)
	return scheduler.Schedule{}
}

// The digest goes out at 08:00 in Berlin: 07:00 UTC in winter, 06:00 UTC in summer.
func TestDailyDigestFollowsBerlinTime(t *testing.T) {
	t.Parallel()
	s := schedule(t, samplejobs.ScheduleDailyDigest)
	for after, want := range map[string]string{
		"2026-01-15T12:00:00Z": "2026-01-16T07:00:00Z",
		"2026-07-15T12:00:00Z": "2026-07-16T06:00:00Z",
		"2026-03-28T12:00:00Z": "2026-03-29T06:00:00Z", // clocks went forward at 01:00 UTC
		"2026-10-24T12:00:00Z": "2026-10-25T07:00:00Z", // clocks went back at 01:00 UTC
	} {
		from, err := time.Parse(time.RFC3339, after)
		require.NoError(t, err)
		next, ok, err := s.Next(from)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want, next.UTC().Format(time.RFC3339), "after %s", after)
	}
}

// A tick's envelope is a job the sample workers run: the email worker sends the digest with the
// tick id as idempotency key.
func TestScheduleTickRunsAsJob(t *testing.T) {
	t.Parallel()
	tick := time.Date(2026, 1, 16, 7, 0, 0, 0, time.UTC)
	s := schedule(t, samplejobs.ScheduleDailyDigest)
	body, err := s.Envelope(tick)
	require.NoError(t, err)
	var env jobs.Envelope
	require.NoError(t, json.Unmarshal([]byte(body), &env))
	require.Equal(t, jobs.EnvelopeVersion, env.V)
	require.Equal(t, "sched:daily-digest:2026-01-16T07:00:00Z", env.ID)
	require.Equal(t, samplejobs.KindSendEmail, env.Kind)
	require.True(t, tick.Equal(env.EnqueuedAt))

	var mu sync.Mutex
	var sent []samplejobs.Email
	workers := jobs.NewWorkers()
	jobs.AddWorker[samplejobs.SendEmail](workers, &samplejobs.EmailWorker{Mailer: mailerFunc(func(_ context.Context, msg samplejobs.Email) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, msg)
		return nil
	})})
	rec := jobstest.NewRecorder()
	handler := jobs.NewLambdaHandler(workers, jobstest.Config(rec)).HandleSQS
	resp, err := handler(context.Background(), jobstest.Event(jobstest.RawMessage(body, nil)))
	require.NoError(t, err)
	require.Empty(t, jobstest.FailedIDs(resp))
	require.Empty(t, rec.DeadLetters())
	require.Equal(t, []samplejobs.Email{{
		To: samplejobs.DigestRecipient, Subject: "Daily digest", IdempotencyKey: "sched:daily-digest:2026-01-16T07:00:00Z",
	}}, sent)

	// The interest posting's envelope carries the account, which is also its message group.
	interest := schedule(t, samplejobs.ScheduleLedgerInterest)
	body, err = interest.Envelope(tick)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(body), &env))
	var posting samplejobs.PostLedger
	require.NoError(t, json.Unmarshal(env.Args, &posting))
	require.Equal(t, samplejobs.InterestAccount, posting.Account)
	require.Equal(t, interest.GroupID, posting.Account)
	require.True(t, strings.HasPrefix(env.ID, scheduler.TickIDPrefix+samplejobs.ScheduleLedgerInterest+":"))
}
