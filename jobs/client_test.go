package jobs_test

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

type SendEmail struct {
	To   string `json:"to"`
	Body string `json:"body,omitempty"`
}

func (SendEmail) Kind() string { return "email.send" }

type emptyKind struct{}

func (emptyKind) Kind() string { return "" }

// delayer records what a Client hands it.
type delayer struct {
	mu        sync.Mutex
	scheduled []jobs.PreparedJob
	cancelled []string
}

func (d *delayer) ScheduleJob(_ context.Context, job jobs.PreparedJob) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.scheduled = append(d.scheduled, job)
	return nil
}

func (d *delayer) CancelJob(_ context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cancelled = append(d.cancelled, id)
	return nil
}

func newTestClient(t *testing.T, rec *jobstest.Recorder, opts jobs.ClientOptions) *jobs.Client {
	t.Helper()
	opts.DefaultQueueURL = cmp.Or(opts.DefaultQueueURL, jobstest.QueueURL)
	c, err := jobs.NewClient(rec, opts)
	require.NoError(t, err)
	return c
}

func TestClientRefusesBadInputBeforeAnyCall(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	c := newTestClient(t, rec, jobs.ClientOptions{
		Queues:          map[string]string{"email.send": jobstest.QueueURL},
		LongDelayer:     &delayer{},
		MaxMessageSizes: map[string]int{smallQueue: 256 << 10},
	})
	ctx := context.Background()
	big := SendEmail{To: "a@b.c", Body: strings.Repeat("x", jobs.MaxMessageSize)}
	fifo := &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL}
	for name, tc := range map[string]struct {
		args jobs.JobArgs
		opts *jobs.EnqueueOpts
		want error
	}{
		"empty kind":            {emptyKind{}, nil, jobs.ErrEmptyKind},
		"nil args":              {nil, nil, jobs.ErrEmptyKind},
		"too large":             {big, nil, jobs.ErrBodyTooLarge},
		"fifo without group":    {SendEmail{}, fifo, jobs.ErrGroupRequired},
		"dedup on standard":     {SendEmail{}, &jobs.EnqueueOpts{DedupID: "d"}, jobs.ErrDedupOnStandard},
		"negative delay":        {SendEmail{}, &jobs.EnqueueOpts{Delay: -time.Second}, jobs.ErrInvalidDelay},
		"delay and at":          {SendEmail{}, &jobs.EnqueueOpts{Delay: time.Second, At: time.Now().Add(time.Hour)}, jobs.ErrInvalidDelay},
		"delay on fifo":         {SendEmail{}, &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: "g", Delay: time.Minute}, jobs.ErrDelayOnFIFO},
		"args do not encode":    {jobs.RawArgs{KindName: "raw", JSON: []byte("{nope")}, nil, jobs.ErrEncodeArgs},
		"group too long":        {SendEmail{}, &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: strings.Repeat("g", 129)}, jobs.ErrInvalidGroupID},
		"group with a space":    {SendEmail{}, &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: "tenant 1"}, jobs.ErrInvalidGroupID},
		"group not ASCII":       {SendEmail{}, &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: "tenänt"}, jobs.ErrInvalidGroupID},
		"dedup too long":        {SendEmail{}, &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: "g", DedupID: strings.Repeat("d", 129)}, jobs.ErrInvalidDedupID},
		"job id as bad dedup":   {SendEmail{}, &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: "g", ID: "order 7"}, jobs.ErrInvalidDedupID},
		"dedup on long delay":   {SendEmail{}, &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: "g", DedupID: "d", Delay: time.Hour}, jobs.ErrDedupScheduled},
		"over the queue's size": {SendEmail{Body: strings.Repeat("x", 300<<10)}, &jobs.EnqueueOpts{Queue: smallQueue}, jobs.ErrBodyTooLarge},
		"bad trace":             {SendEmail{}, &jobs.EnqueueOpts{Trace: "00-1-2-01"}, jobs.ErrInvalidTrace},
	} {
		_, err := c.Enqueue(ctx, tc.args, tc.opts)
		require.ErrorIs(t, err, tc.want, name)
		var invalid *jobs.InvalidJobError
		require.ErrorAs(t, err, &invalid, name)
	}
	noDelayer := newTestClient(t, rec, jobs.ClientOptions{DefaultQueueURL: jobstest.QueueURL})
	for name, o := range map[string]*jobs.EnqueueOpts{
		"long delay, no delayer": {Delay: 16 * time.Minute},
		"far at, no delayer":     {At: time.Now().Add(24 * time.Hour)},
	} {
		_, err := noDelayer.Enqueue(ctx, SendEmail{}, o)
		require.ErrorIs(t, err, jobs.ErrDelayTooLong, name)
	}
	assert.Empty(t, rec.Sent(), "no AWS call was made")

	// A batch with one bad job sends nothing and says which.
	res, err := c.EnqueueBatch(ctx, []jobs.BatchJob{{Args: SendEmail{To: "a"}}, {Args: emptyKind{}}, {Args: SendEmail{To: "b"}}})
	var be *jobs.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []int{0, 1, 2}, be.Failed)
	assert.ErrorIs(t, res[0].Err, jobs.ErrNotSent)
	assert.ErrorIs(t, res[1].Err, jobs.ErrEmptyKind)
	assert.ErrorIs(t, res[2].Err, jobs.ErrNotSent)
	assert.ErrorIs(t, err, jobs.ErrEmptyKind)
	assert.Empty(t, rec.Batches())
}

const smallQueue = "https://sqs.us-east-1.amazonaws.com/000000000000/small"

func TestNewClientNeedsARoute(t *testing.T) {
	t.Parallel()
	_, err := jobs.NewClient(jobstest.NewRecorder(), jobs.ClientOptions{})
	require.Error(t, err)
	_, err = jobs.NewClient(nil, jobs.ClientOptions{DefaultQueueURL: jobstest.QueueURL})
	require.Error(t, err)
	c, err := jobs.NewClient(jobstest.NewRecorder(), jobs.ClientOptions{Queues: map[string]string{"email.send": jobstest.QueueURL}})
	require.NoError(t, err)
	_, err = c.Enqueue(context.Background(), TestJob{}, nil)
	require.ErrorIs(t, err, jobs.ErrNoQueue, "an unrouted kind with no default queue")
}

func TestClientEnqueueEnvelopeAndRouting(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	now := time.Date(2026, 11, 21, 12, 0, 0, 123456789, time.UTC)
	c := newTestClient(t, rec, jobs.ClientOptions{
		Queues: map[string]string{"email.send": jobstest.FIFOQueueURL},
		Now:    func() time.Time { return now },
	})
	res, err := c.Enqueue(context.Background(), SendEmail{To: "a@b.c"}, &jobs.EnqueueOpts{GroupID: "tenant-1", Key: "k", Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	require.NoError(t, err)
	assert.Len(t, res.ID, 26, "a ULID")
	assert.Equal(t, jobstest.FIFOQueueURL, res.QueueURL)
	assert.NotEmpty(t, res.MessageID)
	sent := rec.Sent()
	require.Len(t, sent, 1)
	assert.Equal(t, "tenant-1", aws.ToString(sent[0].MessageGroupId))
	assert.Equal(t, res.ID, aws.ToString(sent[0].MessageDeduplicationId), "dedup defaults to the job id")
	envs := rec.Envelopes(t, jobstest.FIFOQueueURL)
	require.Len(t, envs, 1)
	env := envs[0]
	assert.Equal(t, jobs.EnvelopeVersion, env.V)
	assert.Equal(t, res.ID, env.ID)
	assert.Equal(t, "email.send", env.Kind)
	assert.JSONEq(t, `{"to":"a@b.c"}`, string(env.Args))
	assert.Equal(t, "k", env.Key)
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", env.Trace, "the trace given")
	assert.True(t, now.Truncate(time.Millisecond).Equal(env.EnqueuedAt))

	// Other kinds go to the default queue; RawArgs arrive as their JSON.
	_, err = c.Enqueue(context.Background(), jobs.RawArgs{KindName: "test.job", JSON: []byte(`{"n":4}`)}, &jobs.EnqueueOpts{ID: "fixed", Delay: 1500 * time.Millisecond})
	require.NoError(t, err)
	sent = rec.Sent()
	require.Len(t, sent, 2)
	assert.Equal(t, jobstest.QueueURL, aws.ToString(sent[1].QueueUrl))
	assert.Equal(t, int32(2), sent[1].DelaySeconds, "delays round up to whole seconds")
	assert.Nil(t, sent[1].MessageDeduplicationId)
	std := rec.Envelopes(t, jobstest.QueueURL)
	require.Len(t, std, 1)
	assert.Equal(t, "fixed", std[0].ID)
	assert.JSONEq(t, `{"n":4}`, string(std[0].Args))
	assert.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, std[0].Trace, "no trace given, none in the context: a new one")
	assert.NotEqual(t, jobs.TraceID(env.Trace), jobs.TraceID(std[0].Trace))

	// The context's trace is continued: same trace id and flags, a new parent id.
	ctx := jobs.ContextWithTrace(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	_, err = c.Enqueue(ctx, jobs.RawArgs{KindName: "test.job", JSON: []byte(`{}`)}, nil)
	require.NoError(t, err)
	std = rec.Envelopes(t, jobstest.QueueURL)
	require.Len(t, std, 2)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", jobs.TraceID(std[1].Trace))
	assert.NotEqual(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", std[1].Trace, "a new parent id")
	assert.True(t, strings.HasSuffix(std[1].Trace, "-01"), "the flags kept")
}

func TestClientLongDelaysGoToTheLongDelayer(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	d := &delayer{}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := newTestClient(t, rec, jobs.ClientOptions{LongDelayer: d, Now: func() time.Time { return now }})
	res, err := c.Enqueue(context.Background(), SendEmail{To: "a"}, &jobs.EnqueueOpts{ID: "later", Delay: 2 * time.Hour})
	require.NoError(t, err)
	assert.True(t, res.Scheduled)
	assert.Equal(t, now.Add(2*time.Hour), res.DeliverAt)
	results, err := c.EnqueueBatch(context.Background(), []jobs.BatchJob{
		{Args: SendEmail{To: "b"}, Opts: &jobs.EnqueueOpts{ID: "fifo-later", Queue: jobstest.FIFOQueueURL, GroupID: "g", At: now.Add(48 * time.Hour)}},
		{Args: SendEmail{To: "c"}},
	})
	require.NoError(t, err)
	assert.True(t, results[0].Scheduled)
	assert.False(t, results[1].Scheduled)
	require.Len(t, d.scheduled, 2)
	assert.Equal(t, "later", d.scheduled[0].ID)
	assert.Equal(t, jobstest.QueueURL, d.scheduled[0].QueueURL)
	assert.Equal(t, now.Add(2*time.Hour), d.scheduled[0].DeliverAt)
	env, err := jobs.DecodeEnvelope(d.scheduled[0].Body)
	require.NoError(t, err)
	assert.Equal(t, "later", env.ID)
	assert.Equal(t, "g", d.scheduled[1].GroupID)
	assert.Empty(t, rec.Sent())
	require.Len(t, rec.Batches(), 1)
	assert.Len(t, rec.Batches()[0].Entries, 1)

	require.NoError(t, c.CancelDelayed(context.Background(), "later"))
	assert.Equal(t, []string{"later"}, d.cancelled)
	plain := newTestClient(t, rec, jobs.ClientOptions{})
	assert.ErrorIs(t, plain.CancelDelayed(context.Background(), "x"), jobs.ErrNoLongDelayer)
}

func TestClientBatchesBySizeAndCount(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	c := newTestClient(t, rec, jobs.ClientOptions{})
	// 4 jobs of ~300 KiB (FIFO, 4 groups: a call holds one job of a group): at most 3 fit in
	// 1 MiB; 12 small ones: 10 per call.
	var batch []jobs.BatchJob
	for i := 0; i < 4; i++ {
		batch = append(batch, jobs.BatchJob{Args: SendEmail{Body: strings.Repeat("x", 300<<10)}, Opts: &jobs.EnqueueOpts{Queue: jobstest.FIFOQueueURL, GroupID: "big" + strconv.Itoa(i)}})
	}
	for i := 0; i < 12; i++ {
		batch = append(batch, jobs.BatchJob{Args: SendEmail{To: "a"}})
	}
	results, err := c.EnqueueBatch(context.Background(), batch)
	require.NoError(t, err)
	require.Len(t, results, 16)
	var sizes []int
	for _, b := range rec.Batches() {
		total := 0
		for _, e := range b.Entries {
			total += len(aws.ToString(e.MessageBody))
		}
		assert.LessOrEqual(t, total, jobs.MaxMessageSize)
		assert.LessOrEqual(t, len(b.Entries), 10)
		sizes = append(sizes, len(b.Entries))
	}
	assert.ElementsMatch(t, []int{3, 1, 10, 2}, sizes)
	for _, r := range results {
		assert.NotEmpty(t, r.MessageID)
	}
}

// The retry logic for failed entries, with a function-typed fake standing in for SQS: the order
// of retried entries and the limit on retries do not depend on how SQS behaves. (The emulator
// test TestClientRetriesFailedEntryOnSQS covers a failure SQS really reports.)
func TestClientRetriesOnlyFailedEntriesInOrder(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	calls := 0
	var bodies [][]string
	rec.SendMessageBatchFunc = func(_ context.Context, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		calls++
		var b []string
		out := &sqs.SendMessageBatchOutput{}
		for _, e := range in.Entries {
			env, _ := jobs.DecodeEnvelope(aws.ToString(e.MessageBody))
			b = append(b, env.ID)
			switch {
			case env.ID == "always" || (calls == 1 && (env.ID == "j1" || env.ID == "j3")):
				out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again")})
			case env.ID == "sender":
				out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: true})
			default:
				out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + env.ID)})
			}
		}
		bodies = append(bodies, b)
		return out, nil
	}
	c := newTestClient(t, rec, jobs.ClientOptions{MaxRetries: 2, RetryBackoff: time.Millisecond})
	var batch []jobs.BatchJob
	for _, id := range []string{"j0", "j1", "j2", "j3", "sender", "always"} {
		batch = append(batch, jobs.BatchJob{Args: SendEmail{}, Opts: &jobs.EnqueueOpts{ID: id}})
	}
	results, err := c.EnqueueBatch(context.Background(), batch)
	var be *jobs.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []int{4, 5}, be.Failed)
	assert.Equal(t, [][]string{{"j0", "j1", "j2", "j3", "sender", "always"}, {"j1", "j3", "always"}, {"always"}}, bodies)
	for i := 0; i < 4; i++ {
		assert.NoError(t, results[i].Err)
		assert.Equal(t, "m-"+results[i].ID, results[i].MessageID)
	}
	var se *jobs.SendError
	require.ErrorAs(t, results[4].Err, &se)
	assert.True(t, se.SenderFault)
	require.ErrorAs(t, results[5].Err, &se)
	assert.Equal(t, "InternalError", se.Code)
	assert.False(t, se.SenderFault)
}

func TestClientFIFOGroupStopsAfterAFailure(t *testing.T) {
	t.Parallel()
	rec := jobstest.NewRecorder()
	rec.SendMessageBatchFunc = func(_ context.Context, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		out := &sqs.SendMessageBatchOutput{}
		for _, e := range in.Entries {
			env, _ := jobs.DecodeEnvelope(aws.ToString(e.MessageBody))
			if env.ID == "a2" {
				out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: true})
				continue
			}
			out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + env.ID)})
		}
		return out, nil
	}
	c := newTestClient(t, rec, jobs.ClientOptions{})
	var batch []jobs.BatchJob
	for i := 0; i < 12; i++ { // a0..a11 alternate with b0..: 24 jobs, 3 calls
		for _, g := range []string{"a", "b"} {
			batch = append(batch, jobs.BatchJob{Args: SendEmail{}, Opts: &jobs.EnqueueOpts{ID: g + strconv.Itoa(i), GroupID: g, Queue: jobstest.FIFOQueueURL}})
		}
	}
	results, err := c.EnqueueBatch(context.Background(), batch)
	require.Error(t, err)
	for i, r := range results {
		switch {
		case r.ID == "a2":
			var se *jobs.SendError
			assert.ErrorAs(t, r.Err, &se)
		case strings.HasPrefix(r.ID, "a") && i > 4: // a3 and later come in later calls: not sent
			assert.ErrorIs(t, r.Err, jobs.ErrGroupFailed, r.ID)
		default:
			assert.NoError(t, r.Err, r.ID)
		}
	}
	var sentA []string
	for _, b := range rec.Batches() {
		for _, e := range b.Entries {
			if aws.ToString(e.MessageGroupId) == "a" {
				sentA = append(sentA, aws.ToString(e.MessageDeduplicationId))
			}
		}
	}
	assert.Equal(t, []string{"a0", "a1", "a2"}, sentA, "one job of a group per call; nothing of a after a2")
}
