package schedfire

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/scheduler"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type sendEmail struct {
	To string `json:"to"`
}

func (sendEmail) Kind() string { return "email.send" }

// decodeEnvelope reads a fired job's message as the runtime does.
func decodeEnvelope(t *testing.T, body string) jobs.Envelope {
	t.Helper()
	env, err := jobs.DecodeEnvelope(body)
	require.NoError(t, err, body)
	return env
}

// manualClock is a Clock that moves only when the test says so.
type manualClock struct {
	ch      chan struct{} // a token: whoever holds it may touch the fields
	now     time.Time
	waiters []manualWaiter
	added   chan struct{} // signalled when a waiter is added
}

type manualWaiter struct {
	at time.Time
	ch chan time.Time
}

func newManualClock(now time.Time) *manualClock {
	c := &manualClock{ch: make(chan struct{}, 1), now: now, added: make(chan struct{}, 1000)}
	c.ch <- struct{}{}
	return c
}

func (c *manualClock) lock()   { <-c.ch }
func (c *manualClock) unlock() { c.ch <- struct{}{} }

func (c *manualClock) Now() time.Time {
	c.lock()
	defer c.unlock()
	return c.now
}

func (c *manualClock) After(d time.Duration) <-chan time.Time {
	c.lock()
	defer c.unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, manualWaiter{at: c.now.Add(d), ch: ch})
	c.added <- struct{}{}
	return ch
}

// waitForWaiter blocks until the runner waits on the clock, and returns when it wants to wake.
// The runner is then idle: everything it did before is complete.
func (c *manualClock) waitForWaiter(t *testing.T) time.Time {
	t.Helper()
	select {
	case <-c.added:
	case <-time.After(30 * time.Second):
		t.Fatal("the runner never waited on the clock")
	}
	c.lock()
	defer c.unlock()
	require.Len(t, c.waiters, 1)
	return c.waiters[0].at
}

// set moves the clock to now and wakes the waiters that are due.
func (c *manualClock) set(now time.Time) {
	c.lock()
	defer c.unlock()
	c.now = now
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(now) {
			w.ch <- now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// runLocal starts r.Run and returns a function that stops it and waits for it to return.
func runLocal(t *testing.T, r *Runner) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
}

// drain returns the firings reported so far.
func drain(ch chan Firing) []Firing {
	var out []Firing
	for {
		select {
		case f := <-ch:
			out = append(out, f)
		default:
			return out
		}
	}
}

// The emulators (moto, LocalStack) store schedules but never fire them, unlike AWS: these tests
// check the Runner that fires them in the service's place, against the emulator's Scheduler API
// and queues.

func TestRunnerFiresDeclaredSchedulesOnEmulator(t *testing.T) {
	t.Parallel()
	cfg, sqsClient := awstest.SQS(t)
	queue := awstest.CreateQueue(t, cfg, "reports", nil)
	fifo := awstest.CreateQueue(t, cfg, "orders", &awstest.QueueOptions{FIFO: true, Attributes: contentDedup})

	berlinDaily := scheduler.Schedule{
		Name: "berlin-0230", Expression: "cron(30 2 * * ? *)", TimeZone: "Europe/Berlin",
		Args: nightlyReport{Team: "ops"}, Queue: "reports",
	}
	everyHour := scheduler.Schedule{
		Name: "hourly-fifo", Expression: "rate(1 hour)", Args: sendEmail{To: "ops@example.com"},
		Queue: "orders", GroupID: "ops",
	}
	// Start the evening before Berlin's spring-forward night (2026-03-29, 02:00 CET -> 03:00 CEST).
	start := utc("2026-03-28T20:00:00Z")
	clk := newManualClock(start)
	fired := make(chan Firing, 100)
	r, err := New(Config{
		SQS: sqsClient, Schedules: []scheduler.Schedule{berlinDaily, everyHour},
		Queues: map[string]string{"reports": queue.URL, "orders": fifo.URL},
		Clock:  clk, OnFire: func(f Firing) { fired <- f },
	})
	require.NoError(t, err)
	runLocal(t, r)

	// Step the clock from wake to wake until 01:00 UTC on the 30th, recording what fired when.
	type record struct {
		at time.Time
		f  Firing
	}
	var records []record
	end := utc("2026-03-30T01:00:00Z")
	for {
		wake := clk.waitForWaiter(t)
		for _, f := range drain(fired) {
			require.NoError(t, f.Err)
			records = append(records, record{clk.Now(), f})
		}
		if wake.After(end) {
			break
		}
		clk.set(wake)
	}
	var berlin, hourly []string
	for _, rec := range records {
		assert.True(t, rec.at.Equal(rec.f.ScheduledTime), "%s fired on time", rec.f.JobID)
		if rec.f.Schedule == "berlin-0230" {
			berlin = append(berlin, rec.f.JobID)
		} else {
			hourly = append(hourly, rec.f.JobID)
		}
	}
	// 2026-03-29 02:30 does not exist in Berlin: no tick that night; the next is 02:30 CEST.
	assert.Equal(t, []string{"sched:berlin-0230:2026-03-30T00:30:00Z"}, berlin)
	require.Len(t, hourly, 30, "rate(1 hour) from 20:00 on the 28th to 01:00 on the 30th, first tick at start")
	for i, id := range hourly {
		assert.Equal(t, "sched:hourly-fifo:"+start.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), id)
	}

	// The queues hold exactly those envelopes.
	msgs := awstest.TakeOnly(t, sqsClient, queue.URL, 1)
	env := decodeEnvelope(t, aws.ToString(msgs[0].Body))
	assert.Equal(t, "sched:berlin-0230:2026-03-30T00:30:00Z", env.ID)
	assert.Equal(t, "report.nightly", env.Kind)
	assert.True(t, env.EnqueuedAt.Equal(utc("2026-03-30T00:30:00Z")))
	assert.JSONEq(t, `{"team":"ops"}`, string(env.Args))

	fmsgs := awstest.TakeOnly(t, sqsClient, fifo.URL, 30)
	var ids []string
	for _, m := range fmsgs {
		assert.Equal(t, "ops", m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)])
		env := decodeEnvelope(t, aws.ToString(m.Body))
		assert.Len(t, m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageDeduplicationId)], 64,
			"no deduplication id sent, as from Scheduler: SQS's content hash (SHA-256, hex) stands for it")
		ids = append(ids, env.ID)
	}
	assert.True(t, sort.StringsAreSorted(ids), "one FIFO group keeps the ticks in order")
	assert.Equal(t, "sched:hourly-fifo:2026-03-28T20:00:00Z", ids[0])
}

func TestRunnerDuplicateTickOnEmulator(t *testing.T) {
	t.Parallel()
	cfg, sqsClient := awstest.SQS(t)
	queue := awstest.CreateQueue(t, cfg, "dup", nil)
	fifo := awstest.CreateQueue(t, cfg, "dup", &awstest.QueueOptions{FIFO: true, Attributes: contentDedup})
	r, err := New(Config{SQS: sqsClient, Clock: newManualClock(time.Now())})
	require.NoError(t, err)
	ctx := context.Background()
	tick := utc("2026-11-22T01:00:00Z")

	std := validSchedule()
	std.Queue = queue.URL
	f1, err := r.Send(ctx, std, tick)
	require.NoError(t, err)
	f2, err := r.Send(ctx, std, tick)
	require.NoError(t, err)
	assert.Equal(t, "sched:nightly-report:2026-11-22T01:00:00Z", f1.JobID)
	assert.Equal(t, f1.JobID, f2.JobID, "a duplicate tick has the same envelope id")
	assert.Equal(t, f1.Body, f2.Body)
	msgs := awstest.TakeOnly(t, sqsClient, queue.URL, 2)
	assert.Equal(t, decodeEnvelope(t, aws.ToString(msgs[0].Body)).ID, decodeEnvelope(t, aws.ToString(msgs[1].Body)).ID,
		"a Standard queue holds both; the idempotent worker runs it once")

	ff := validSchedule()
	ff.Queue, ff.GroupID = fifo.URL, "reports"
	for i := 0; i < 2; i++ {
		_, err := r.Send(ctx, ff, tick)
		require.NoError(t, err)
	}
	awstest.TakeOnly(t, sqsClient, fifo.URL, 1) // SQS deduplicates the FIFO duplicate (by its content)
}

// contentDedup is what a FIFO queue needs for EventBridge Scheduler to deliver to it.
var contentDedup = map[string]string{string(sqstypes.QueueAttributeNameContentBasedDeduplication): "true"}

// A FIFO queue without content-based deduplication refuses what Scheduler sends (no
// deduplication id), offline as on AWS: the tick is not delivered and goes to the schedule's
// dead-letter queue with the error.
func TestRunnerFIFOWithoutContentDedupFailsAsOnAWS(t *testing.T) {
	t.Parallel()
	cfg, sqsClient := awstest.SQS(t)
	fifo := awstest.CreateQueue(t, cfg, "nodedup", &awstest.QueueOptions{FIFO: true})
	dlq := awstest.CreateQueue(t, cfg, "schedule-dlq", nil)
	r, err := New(Config{SQS: sqsClient, Clock: newManualClock(time.Now())})
	require.NoError(t, err)
	s := validSchedule()
	s.Queue, s.GroupID, s.DeadLetterQueue = fifo.URL, "reports", dlq.URL
	f, err := r.Send(context.Background(), s, utc("2026-11-22T01:00:00Z"))
	require.Error(t, err)
	require.ErrorContains(t, f.Err, "ContentBasedDeduplication")
	awstest.ExpectEmpty(t, sqsClient, fifo.URL)
	dead := awstest.TakeOnly(t, sqsClient, dlq.URL, 1)
	assert.Equal(t, ReasonUndeliverable, jobstest.DecodeDeadLetter(dead[0]).Reason)
}

func TestRunnerFiresStoredOneTimeSchedulesOnEmulator(t *testing.T) {
	t.Parallel()
	cfg, sqsClient := awstest.SQS(t)
	sched, group := awstest.ScheduleGroup(t, cfg)
	queue := awstest.CreateQueue(t, cfg, "delayed", nil)
	ctx := context.Background()

	start := time.Now().UTC().Truncate(time.Second)
	clk := newManualClock(start)
	d, err := scheduler.NewDelayer(sched, scheduler.DelayerConfig{Group: group, RoleARN: awstest.SchedulerRoleARN(t)})
	require.NoError(t, err)
	client, err := jobs.NewClient(sqsClient, jobs.ClientOptions{DefaultQueueURL: queue.URL, LongDelayer: d, Now: clk.Now})
	require.NoError(t, err)
	var ids []string
	for i := 1; i <= 3; i++ {
		res, err := client.Enqueue(ctx, sendEmail{To: "user" + strconv.Itoa(i) + "@example.com"}, &jobs.EnqueueOpts{Delay: time.Duration(i) * 24 * time.Hour})
		require.NoError(t, err)
		require.True(t, res.Scheduled)
		ids = append(ids, res.ID)
	}
	require.Len(t, awstest.ListSchedules(t, sched, group), 3)

	fired := make(chan Firing, 10)
	r, err := New(Config{
		SQS: sqsClient, Scheduler: sched, Groups: []string{group},
		Clock: clk, PollInterval: time.Hour, OnFire: func(f Firing) { fired <- f },
	})
	require.NoError(t, err)
	runLocal(t, r)

	// Day 1 fires the first job only.
	clk.waitForWaiter(t)
	require.Empty(t, drain(fired), "nothing is due at the start")
	clk.set(start.Add(24*time.Hour + time.Second))
	clk.waitForWaiter(t)
	day1 := drain(fired)
	require.Len(t, day1, 1)
	assert.Equal(t, ids[0], day1[0].JobID)
	assert.Equal(t, group, day1[0].Group)
	msgs := awstest.TakeOnly(t, sqsClient, queue.URL, 1)
	env := decodeEnvelope(t, aws.ToString(msgs[0].Body))
	assert.Equal(t, ids[0], env.ID)
	assert.JSONEq(t, `{"to":"user1@example.com"}`, string(env.Args))
	assert.Len(t, awstest.ListSchedules(t, sched, group), 2, "ActionAfterCompletion DELETE: the fired schedule is gone")

	// The second job is cancelled before it is due: it never fires. The third fires on day 3.
	require.NoError(t, client.CancelDelayed(ctx, ids[1]))
	clk.set(start.Add(72*time.Hour + time.Second))
	clk.waitForWaiter(t)
	rest := drain(fired)
	require.Len(t, rest, 1)
	assert.Equal(t, ids[2], rest[0].JobID)
	msgs = awstest.TakeOnly(t, sqsClient, queue.URL, 1)
	assert.Equal(t, ids[2], decodeEnvelope(t, aws.ToString(msgs[0].Body)).ID)
	assert.Empty(t, awstest.ListSchedules(t, sched, group))
}

func TestRunnerDeadLettersUndeliverableTicksOnEmulator(t *testing.T) {
	t.Parallel()
	cfg, sqsClient := awstest.SQS(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	gone := awstest.CreateQueue(t, cfg, "gone", nil)
	_, err := sqsClient.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(gone.URL)})
	require.NoError(t, err)

	s := validSchedule()
	s.Queue, s.DeadLetterQueue = gone.URL, "dlq"
	r, err := New(Config{SQS: sqsClient, Queues: map[string]string{"dlq": dlq.URL}})
	require.NoError(t, err)
	f, err := r.Send(context.Background(), s, utc("2026-11-22T01:00:00Z"))
	require.Error(t, err)
	assert.Equal(t, f.Err, err)
	msgs := awstest.TakeOnly(t, sqsClient, dlq.URL, 1)
	assert.Equal(t, f.Body, aws.ToString(msgs[0].Body), "the tick's body, unchanged")
	attr := func(name string) string { return aws.ToString(msgs[0].MessageAttributes[name].StringValue) }
	assert.Equal(t, ReasonUndeliverable, attr(contract.AttrReason))
	assert.Equal(t, "sched:nightly-report:2026-11-22T01:00:00Z", attr(contract.AttrJobID))
	assert.Equal(t, "report.nightly", attr(contract.AttrKind))
	assert.Equal(t, gone.URL, attr(contract.AttrSourceQueue))
	assert.Contains(t, attr(contract.AttrError), "send tick of nightly-report")
}

type nightlyReport struct {
	Team  string `json:"team"`
	Notes string `json:"notes,omitempty"`
}

func (nightlyReport) Kind() string { return "report.nightly" }
func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func validSchedule() scheduler.Schedule {
	return scheduler.Schedule{
		Name:       "nightly-report",
		Expression: "cron(0 2 * * ? *)",
		TimeZone:   "Europe/Berlin",
		Args:       nightlyReport{Team: "ops"},
		Queue:      "reports",
	}
}

// A stored recurring schedule paused after it started firing fires no more, offline as on AWS;
// resumed, it fires from its next tick on, the tick it missed not made up.
func TestRunnerHonoursPausedStoredSchedulesOnEmulator(t *testing.T) {
	t.Parallel()
	cfg, sqsClient := awstest.SQS(t)
	sched, group := awstest.ScheduleGroup(t, cfg)
	queue := awstest.CreateQueue(t, cfg, "hourly", nil)
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Second)
	input, err := scheduler.Schedule{Name: "hourly-digest", Expression: "cron(0 * * * ? *)", Args: sendEmail{To: "ops@example.com"}, Queue: queue.URL}.Input()
	require.NoError(t, err)
	awstest.CreateSchedule(t, sched, group, "hourly", "cron(0 * * * ? *)", queue, input, "")
	in := inspect.New(cfg)
	hour := start.Truncate(time.Hour)

	clk := newManualClock(start)
	fired := make(chan Firing, 10)
	r, err := New(Config{SQS: sqsClient, Scheduler: sched, Groups: []string{group}, Clock: clk, PollInterval: 10 * time.Minute, OnFire: func(f Firing) { fired <- f }})
	require.NoError(t, err)
	runLocal(t, r)
	clk.waitForWaiter(t)

	clk.set(hour.Add(time.Hour + time.Second))
	clk.waitForWaiter(t)
	first := drain(fired)
	require.Len(t, first, 1)
	assert.Equal(t, scheduler.TickID("hourly-digest", hour.Add(time.Hour)), first[0].JobID)

	changed, err := in.SetScheduleState(ctx, group, "hourly", false)
	require.NoError(t, err)
	require.True(t, changed)
	clk.set(hour.Add(2*time.Hour + time.Second))
	clk.waitForWaiter(t)
	assert.Empty(t, drain(fired), "paused: no tick")

	changed, err = in.SetScheduleState(ctx, group, "hourly", true)
	require.NoError(t, err)
	require.True(t, changed)
	clk.set(hour.Add(2*time.Hour + 30*time.Minute))
	clk.waitForWaiter(t)
	assert.Empty(t, drain(fired), "resumed: the missed tick is not made up")
	clk.set(hour.Add(3*time.Hour + time.Second))
	clk.waitForWaiter(t)
	third := drain(fired)
	require.Len(t, third, 1)
	assert.Equal(t, scheduler.TickID("hourly-digest", hour.Add(3*time.Hour)), third[0].JobID)
	assert.Len(t, awstest.TakeOnly(t, sqsClient, queue.URL, 2), 2, "two ticks sent in all")
}
