package samplejobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// The wire format services enqueue: snake_case fields, empty optional ones omitted; fields the
// args do not know are ignored (a newer producer's, or a test harness's).
func TestArgsJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(samplejobs.PostLedger{Account: "acct-1", PostingID: "p-1", AmountCents: 250})
	require.NoError(t, err)
	require.JSONEq(t, `{"account":"acct-1","posting_id":"p-1","amount_cents":250}`, string(b))
	b, err = json.Marshal(samplejobs.SendEmail{To: "a@example.com", Subject: "hi"})
	require.NoError(t, err)
	require.JSONEq(t, `{"to":"a@example.com","subject":"hi"}`, string(b))
	var v samplejobs.TranscodeVideo
	require.NoError(t, json.Unmarshal([]byte(`{"video_id":"v1","seconds":3,"fail_attempts":1}`), &v))
	require.Equal(t, samplejobs.TranscodeVideo{VideoID: "v1", Seconds: 3}, v)

	require.Equal(t, "acct-1", samplejobs.PostLedger{Account: "acct-1"}.GroupID())
	notifyDefault := contract.LaneQueueName(samplejobs.QueueNotify, samplejobs.LaneDefault)
	for kind, queue := range samplejobs.Queues {
		require.NotEmpty(t, kind)
		require.Contains(t, []string{samplejobs.QueueEmail, samplejobs.QueueLedger, samplejobs.QueueTranscode, notifyDefault}, queue)
	}
	require.Len(t, samplejobs.Queues, 5)
	require.Equal(t, "NotifyDefault", notifyDefault)
	b, err = json.Marshal(samplejobs.SendNotification{User: "u1", Text: "hi"})
	require.NoError(t, err)
	require.JSONEq(t, `{"user":"u1","text":"hi"}`, string(b))

	// A batch callback's args: the counts jobs/state sets, and the campaign.
	b, err = json.Marshal(samplejobs.EmailBatchDone{Campaign: "c1"})
	require.NoError(t, err)
	require.JSONEq(t, `{"batch_id":"","total":0,"succeeded":0,"dead":0,"campaign":"c1"}`, string(b))
}

// A notification is a log line naming its user; one without a user is cancelled (retrying cannot
// find one).
func TestNotifyWorker(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := &samplejobs.NotifyWorker{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	require.NoError(t, jobstest.Work(context.Background(), w, samplejobs.SendNotification{User: "u1", Text: "Your sign-in code"}, nil))
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	require.Equal(t, samplejobs.NotificationSentMessage, line["msg"])
	require.Equal(t, "u1", line["user"])
	err := jobstest.Work(context.Background(), w, samplejobs.SendNotification{Text: "x"}, nil)
	var cancel *jobs.CancelError
	require.ErrorAs(t, err, &cancel)
}

func TestBatchDoneWorker(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := &samplejobs.BatchDoneWorker{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	args := samplejobs.EmailBatchDone{Campaign: "c1"}
	args.BatchID, args.Total, args.Succeeded, args.Dead = "b1", 3, 2, 1
	require.NoError(t, jobstest.Work(context.Background(), w, args, nil))
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	require.Equal(t, samplejobs.BatchDoneMessage, line["msg"])
	require.Equal(t, "b1", line["batch_id"])
	require.Equal(t, float64(2), line["succeeded"])
	require.Equal(t, float64(1), line["dead"])
}

type mailerFunc func(ctx context.Context, msg samplejobs.Email) error

func (f mailerFunc) Send(ctx context.Context, msg samplejobs.Email) error { return f(ctx, msg) }

func TestEmailWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var sent []samplejobs.Email
	w := &samplejobs.EmailWorker{Mailer: mailerFunc(func(_ context.Context, msg samplejobs.Email) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, msg)
		return nil
	})}

	require.NoError(t, jobstest.Work(ctx, w, samplejobs.SendEmail{To: "a@example.com", Subject: "hi"}, &jobstest.JobOpts{ID: "job-1"}))
	require.NoError(t, jobstest.Work(ctx, w, samplejobs.SendEmail{To: "b@example.com", Subject: "k"}, &jobstest.JobOpts{ID: "job-2", Key: "order-7"}))
	require.Equal(t, []samplejobs.Email{
		{To: "a@example.com", Subject: "hi", IdempotencyKey: "job-1"},
		{To: "b@example.com", Subject: "k", IdempotencyKey: "order-7"},
	}, sent)

	err := jobstest.Work(ctx, w, samplejobs.SendEmail{To: "nobody", Subject: "x"}, nil)
	var cancel *jobs.CancelError
	require.True(t, errors.As(err, &cancel), "a bad address is not retried: %v", err)
	require.Len(t, sent, 2)

	// A mailer's failure is the job's: retried.
	down := errors.New("smtp down")
	failing := &samplejobs.EmailWorker{Mailer: mailerFunc(func(context.Context, samplejobs.Email) error { return down })}
	err = jobstest.Work(ctx, failing, samplejobs.SendEmail{To: "c@example.com"}, nil)
	require.ErrorIs(t, err, down)
	require.False(t, errors.As(err, &cancel), "a mailer failure is retried")
}

func TestTranscodeWorker(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	w := &samplejobs.TranscodeWorker{Step: time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	require.NoError(t, jobstest.Work(context.Background(), w, samplejobs.TranscodeVideo{VideoID: "v1", Seconds: 20}, &jobstest.JobOpts{ID: "job-v1"}))
	// One progress line at 10 s, then the output line naming the job.
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2, logs.String())
	var done map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &done))
	require.Equal(t, samplejobs.TranscodeDoneMessage, done["msg"])
	require.Equal(t, "job-v1", done["job_id"])
	require.Equal(t, "v1", done["video_id"])
	require.Equal(t, float64(20), done["seconds"])

	// The job stops when its context ends, with a retryable error naming how far it got.
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("deadline of the job")
	cancel(stop)
	slow := &samplejobs.TranscodeWorker{Step: time.Hour}
	err := jobstest.Work(ctx, slow, samplejobs.TranscodeVideo{VideoID: "v2", Seconds: 5}, nil)
	require.ErrorIs(t, err, stop)
	require.Contains(t, err.Error(), "stopped after 0 of 5 s")
	var c *jobs.CancelError
	require.False(t, errors.As(err, &c), "an interrupted transcode is retried")

	err = jobstest.Work(context.Background(), w, samplejobs.TranscodeVideo{Seconds: 1}, nil)
	require.True(t, errors.As(err, &c), "no video id: cancelled")
}
