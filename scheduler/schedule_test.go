package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
)

type nightlyReport struct {
	Team  string `json:"team"`
	Notes string `json:"notes,omitempty"`
}

func (nightlyReport) Kind() string { return "report.nightly" }

type noKind struct{}

func (noKind) Kind() string { return "" }

type unencodable struct{ C chan int }

func (unencodable) Kind() string { return "bad.args" }

func validSchedule() Schedule {
	return Schedule{
		Name:       "nightly-report",
		Expression: "cron(0 2 * * ? *)",
		TimeZone:   "Europe/Berlin",
		Args:       nightlyReport{Team: "ops"},
		Queue:      "reports",
	}
}

func TestScheduleValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, validSchedule().Validate())
	cases := []struct {
		name   string
		mutate func(*Schedule)
		field  string
		reason string
	}{
		{"empty name", func(s *Schedule) { s.Name = "" }, "Name", "1-64"},
		{"bad name chars", func(s *Schedule) { s.Name = "nightly report" }, "Name", "letters"},
		{"name too long", func(s *Schedule) { s.Name = strings.Repeat("a", 65) }, "Name", "1-64"},
		{"bad expression", func(s *Schedule) { s.Expression = "cron(0 2 * * * *)" }, "Expression", "not a valid"},
		{"unknown zone", func(s *Schedule) { s.TimeZone = "Mars/Olympus" }, "TimeZone", "IANA"},
		{"Local is not a zone", func(s *Schedule) { s.TimeZone = "Local" }, "TimeZone", "IANA"},
		{"at in the spring-forward gap", func(s *Schedule) {
			s.Expression, s.TimeZone = "at(2026-03-29T02:30:00)", "Europe/Berlin"
		}, "Expression", "does not exist"},
		{"window not whole minutes", func(s *Schedule) { s.FlexibleWindow = 90 * time.Second }, "FlexibleWindow", "whole minutes"},
		{"window too long", func(s *Schedule) { s.FlexibleWindow = 25 * time.Hour }, "FlexibleWindow", "24h"},
		{"no args", func(s *Schedule) { s.Args = nil }, "Args", "no job args"},
		{"empty kind", func(s *Schedule) { s.Args = noKind{} }, "Args", "empty Kind"},
		{"args not JSON", func(s *Schedule) { s.Args = unencodable{} }, "Args", "JSON"},
		{"no queue", func(s *Schedule) { s.Queue = "" }, "Queue", "no target"},
		{"FIFO without group", func(s *Schedule) { s.Queue = "orders.fifo" }, "GroupID", "FIFO"},
		{"group too long", func(s *Schedule) { s.GroupID = strings.Repeat("g", 129) }, "GroupID", "128"},
		{"FIFO DLQ", func(s *Schedule) { s.DeadLetterQueue = "dead.fifo" }, "DeadLetterQueue", "Standard"},
		{"too many retries", func(s *Schedule) { s.Retry = &RetryPolicy{MaxRetries: 186} }, "Retry.MaxRetries", "0-185"},
		{"negative retries", func(s *Schedule) { s.Retry = &RetryPolicy{MaxRetries: -1} }, "Retry.MaxRetries", "0-185"},
		{"event age too short", func(s *Schedule) { s.Retry = &RetryPolicy{MaxEventAge: 30 * time.Second} }, "Retry.MaxEventAge", "1m and 24h"},
		{"event age too long", func(s *Schedule) { s.Retry = &RetryPolicy{MaxEventAge: 25 * time.Hour} }, "Retry.MaxEventAge", "1m and 24h"},
		{"description too long", func(s *Schedule) { s.Description = strings.Repeat("d", 513) }, "Description", "512"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := validSchedule()
			tc.mutate(&s)
			err := s.Validate()
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "want *ValidationError, got %v", err)
			assert.Equal(t, tc.field, ve.Field)
			assert.Contains(t, err.Error(), tc.reason)
			_, inErr := s.Input()
			assert.Error(t, inErr, "Input validates too")
		})
	}
	s := validSchedule()
	s.Expression = "cron(0 2 * * * *)"
	var ee *ExpressionError
	assert.True(t, errors.As(s.Validate(), &ee), "the expression error is wrapped")
}

func TestScheduleInputAndEnvelope(t *testing.T) {
	t.Parallel()
	s := validSchedule()
	s.Args = nightlyReport{Team: "ops", Notes: "<b>&"}
	in, err := s.Input()
	require.NoError(t, err)
	assert.Equal(t,
		`{"v":1,"id":"sched:nightly-report:<aws.scheduler.scheduled-time>","kind":"report.nightly","args":{"team":"ops","notes":"<b>&"},"enqueued_at":"<aws.scheduler.scheduled-time>"}`,
		in)

	tick := time.Date(2026, 11, 22, 2, 0, 0, 0, mustLoad(t, "Europe/Berlin"))
	body, err := s.Envelope(tick)
	require.NoError(t, err)
	var env jobs.Envelope
	require.NoError(t, json.Unmarshal([]byte(body), &env), "a rendered tick is a jobs.Envelope")
	assert.Equal(t, jobs.EnvelopeVersion, env.V)
	assert.Equal(t, "sched:nightly-report:2026-11-22T01:00:00Z", env.ID)
	assert.Equal(t, TickID("nightly-report", tick), env.ID)
	assert.Equal(t, "report.nightly", env.Kind)
	assert.JSONEq(t, `{"team":"ops","notes":"<b>&"}`, string(env.Args))
	assert.True(t, env.EnqueuedAt.Equal(tick), "enqueued_at is the scheduled time")
	assert.Equal(t, env.ID, env.IdempotencyKey())

	again, err := s.Envelope(tick.Add(300 * time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, body, again, "the same tick (sub-second noise aside) renders the same envelope")
	other, err := s.Envelope(tick.Add(24 * time.Hour))
	require.NoError(t, err)
	assert.NotEqual(t, body, other)
}

func TestRenderInput(t *testing.T) {
	t.Parallel()
	tick := time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC)
	assert.Equal(t, "2026-03-08T07:30:00Z|2026-03-08T07:30:00Z",
		RenderInput(ScheduledTimePlaceholder+"|"+ScheduledTimePlaceholder, tick))
	assert.Equal(t, `{"plain":true}`, RenderInput(`{"plain":true}`, tick), "an input without the placeholder is unchanged")
	assert.Equal(t, "2026-03-08T07:30:00Z", FormatScheduledTime(tick.In(mustLoad(t, "America/New_York")).Add(999*time.Millisecond)))
}

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	s := validSchedule() // 02:00 Berlin
	next, ok, err := s.Next(utc("2026-03-28T12:00:00Z"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "2026-03-30T00:00:00Z", next.UTC().Format(time.RFC3339), "02:00 on 2026-03-29 is in the gap: skipped")
	_, _, err = Schedule{Name: "x"}.Next(time.Now())
	assert.Error(t, err)
}

func TestQueueARN(t *testing.T) {
	t.Parallel()
	cases := []struct{ url, region, want string }{
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", "", "arn:aws:sqs:eu-west-1:123456789012:jobs"},
		{"https://sqs.us-east-2.amazonaws.com/123456789012/orders.fifo", "eu-west-1", "arn:aws:sqs:us-east-2:123456789012:orders.fifo"},
		{"https://sqs.cn-north-1.amazonaws.com.cn/123456789012/jobs", "", "arn:aws-cn:sqs:cn-north-1:123456789012:jobs"},
		{"https://sqs.us-gov-west-1.amazonaws.com/123456789012/jobs", "", "arn:aws-us-gov:sqs:us-gov-west-1:123456789012:jobs"},
		{"https://sqs.ap-southeast-2.api.aws/123456789012/jobs", "", "arn:aws:sqs:ap-southeast-2:123456789012:jobs"},
		{"https://eu-central-1.queue.amazonaws.com/123456789012/jobs", "", "arn:aws:sqs:eu-central-1:123456789012:jobs"},
		{"https://queue.amazonaws.com/123456789012/jobs", "", "arn:aws:sqs:us-east-1:123456789012:jobs"},
		{"http://sqs.eu-west-2.localhost.localstack.cloud:4566/000000000000/jobs", "us-east-1", "arn:aws:sqs:eu-west-2:000000000000:jobs"},
		{"http://127.0.0.1:4566/123456789012/jobs", "us-east-1", "arn:aws:sqs:us-east-1:123456789012:jobs"},
		{"http://localhost:4566/000000000000/jobs.fifo/", "eu-west-1", "arn:aws:sqs:eu-west-1:000000000000:jobs.fifo"},
		// LocalStack with SQS_ENDPOINT_STRATEGY=path: the region is in the path.
		{"http://127.0.0.1:4566/queue/eu-west-2/000000000000/jobs", "us-east-1", "arn:aws:sqs:eu-west-2:000000000000:jobs"},
	}
	for _, tc := range cases {
		got, err := QueueARN(tc.url, tc.region)
		require.NoError(t, err, tc.url)
		assert.Equal(t, tc.want, got, tc.url)
	}
	for _, bad := range []struct{ url, region string }{
		{"http://127.0.0.1:4566/123456789012/jobs", ""}, // no region anywhere
		{"http://127.0.0.1:4566/jobs", "us-east-1"},
		{"http://127.0.0.1:4566/acct/jobs", "us-east-1"},
		{"http://127.0.0.1:4566/1/2/3", "us-east-1"},
		{"ftp://127.0.0.1/123/jobs", "us-east-1"},
		{"arn:aws:sqs:us-east-1:123456789012:jobs", "us-east-1"},
		{"http://127.0.0.1:4566/123456789012/jobs", "not a region"},
	} {
		_, err := QueueARN(bad.url, bad.region)
		assert.Error(t, err, bad.url)
	}
}

func TestScheduleNameForJob(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "job-01JD3XK5Q7W0000000000000AB", ScheduleNameForJob("01JD3XK5Q7W0000000000000AB"))
	assert.Equal(t, "job-order_42.retry-1", ScheduleNameForJob("order_42.retry-1"))
	for _, id := range []string{
		"order:42", "order/42", "order 42", "é", "", strings.Repeat("x", 61), strings.Repeat("y", 500),
		"sched:nightly:2026-11-22T01:00:00Z",
	} {
		name := ScheduleNameForJob(id)
		assert.Regexp(t, `^job-[0-9a-zA-Z_.-]+$`, name, id)
		assert.LessOrEqual(t, len(name), 64, id)
		assert.Equal(t, name, ScheduleNameForJob(id), "deterministic")
	}
	assert.Equal(t, "job-"+strings.Repeat("x", 60), ScheduleNameForJob(strings.Repeat("x", 60)), "60 characters still fit")
	assert.NotEqual(t, ScheduleNameForJob("order:42"), ScheduleNameForJob("order/42"), "ids that sanitize alike keep distinct names")
	assert.NotEqual(t, ScheduleNameForJob("order-42"), ScheduleNameForJob("order:42"))
	assert.NotEqual(t, ScheduleNameForJob(strings.Repeat("y", 500)), ScheduleNameForJob(strings.Repeat("y", 501)))
}

func TestDelayerConfigValidation(t *testing.T) {
	t.Parallel()
	role := "arn:aws:iam::123456789012:role/scheduler"
	api := funcScheduler{}
	_, err := NewDelayer(api, DelayerConfig{RoleARN: role, Region: "us-east-1"})
	require.NoError(t, err)
	for name, cfg := range map[string]DelayerConfig{
		"no role":        {},
		"not a role":     {RoleARN: "role/scheduler"},
		"bad group":      {RoleARN: role, Group: "my group"},
		"bad DLQ":        {RoleARN: role, DeadLetterARN: "https://sqs.us-east-1.amazonaws.com/1/dlq"},
		"FIFO DLQ":       {RoleARN: role, DeadLetterARN: "arn:aws:sqs:us-east-1:123456789012:dlq.fifo"},
		"retries":        {RoleARN: role, Retry: &RetryPolicy{MaxRetries: 200}},
		"short max age":  {RoleARN: role, Retry: &RetryPolicy{MaxEventAge: time.Second}},
		"fractional age": {RoleARN: role, Retry: &RetryPolicy{MaxEventAge: 90*time.Second + time.Millisecond}},
	} {
		_, err := NewDelayer(api, cfg)
		var ve *ValidationError
		assert.True(t, errors.As(err, &ve), "%s: want *ValidationError, got %v", name, err)
	}
	_, err = NewDelayer(nil, DelayerConfig{RoleARN: role})
	assert.Error(t, err)
}

func TestDelayerConfigFromEnv(t *testing.T) {
	t.Setenv(EnvScheduleGroup, "delayed")
	t.Setenv(EnvSchedulerRoleARN, "arn:aws:iam::123456789012:role/scheduler")
	t.Setenv(EnvScheduleDLQARN, "arn:aws:sqs:us-east-1:123456789012:scheduler-dlq")
	t.Setenv(EnvScheduleRetries, "3")
	t.Setenv(EnvScheduleMaxAge, "2h")
	cfg, err := DelayerConfigFromEnv()
	require.NoError(t, err)
	assert.Equal(t, DelayerConfig{
		Group: "delayed", RoleARN: "arn:aws:iam::123456789012:role/scheduler",
		DeadLetterARN: "arn:aws:sqs:us-east-1:123456789012:scheduler-dlq",
		Retry:         &RetryPolicy{MaxRetries: 3, MaxEventAge: 2 * time.Hour},
	}, cfg)
	t.Setenv(EnvScheduleMaxAge, "two hours")
	_, err = DelayerConfigFromEnv()
	var ve *ValidationError
	assert.True(t, errors.As(err, &ve))
	assert.Equal(t, EnvScheduleMaxAge, ve.Field)
}

// TestCreateScheduleInput checks the request the Delayer builds (its fields, not AWS behaviour:
// that is the emulator test's job).
func TestCreateScheduleInput(t *testing.T) {
	t.Parallel()
	d, err := NewDelayer(funcScheduler{}, DelayerConfig{
		Group: "delayed", RoleARN: "arn:aws:iam::123456789012:role/scheduler", Region: "eu-west-1",
		DeadLetterARN: "arn:aws:sqs:eu-west-1:123456789012:scheduler-dlq",
		Retry:         &RetryPolicy{MaxRetries: 0, MaxEventAge: time.Hour},
	})
	require.NoError(t, err)
	at := time.Date(2026, 11, 24, 9, 30, 0, 1, mustLoad(t, "Europe/Berlin"))
	in, err := d.CreateScheduleInput(jobs.PreparedJob{
		ID: "01JD", Kind: "email.send", Body: `{"v":1}`, DeliverAt: at,
		QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/mail.fifo", GroupID: "tenant-1",
	})
	require.NoError(t, err)
	assert.Equal(t, "at(2026-11-24T08:30:01)", *in.ScheduleExpression, "UTC, rounded up to the second")
	assert.Equal(t, "UTC", *in.ScheduleExpressionTimezone)
	assert.Equal(t, "job-01JD", *in.Name)
	assert.Equal(t, "delayed", *in.GroupName)
	assert.Equal(t, "DELETE", string(in.ActionAfterCompletion))
	assert.Equal(t, "OFF", string(in.FlexibleTimeWindow.Mode))
	assert.Equal(t, "arn:aws:sqs:eu-west-1:123456789012:mail.fifo", *in.Target.Arn)
	assert.Equal(t, "tenant-1", *in.Target.SqsParameters.MessageGroupId)
	assert.Equal(t, int32(0), *in.Target.RetryPolicy.MaximumRetryAttempts)
	assert.Equal(t, int32(3600), *in.Target.RetryPolicy.MaximumEventAgeInSeconds)

	_, err = d.CreateScheduleInput(jobs.PreparedJob{ID: "x", Body: "{}", DeliverAt: at, QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/mail.fifo"})
	assert.ErrorContains(t, err, "message group id")
	_, err = d.CreateScheduleInput(jobs.PreparedJob{ID: "x", Body: "{}", QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/q"})
	assert.ErrorContains(t, err, "no delivery time")
	_, err = d.CreateScheduleInput(jobs.PreparedJob{ID: "x", Body: "{}", DeliverAt: at, QueueURL: "not a url"})
	assert.ErrorContains(t, err, "no queue ARN")
}

// With the queues of the delayed jobs known (JOBKIT_DELAY_QUEUES, which the DelayedJobs construct
// sets), a job for any other queue — one Scheduler's role cannot send to, or a FIFO queue without
// content-based deduplication, which the construct never lists — is refused before any call.
func TestDelayerRefusesQueuesOutsideItsRole(t *testing.T) {
	t.Setenv(EnvSchedulerRoleARN, "arn:aws:iam::123456789012:role/scheduler")
	t.Setenv(EnvDelayQueues, "arn:aws:sqs:eu-west-1:123456789012:mail, arn:aws:sqs:eu-west-1:123456789012:ledger.fifo")
	cfg, err := DelayerConfigFromEnv()
	require.NoError(t, err)
	require.Equal(t, []string{"arn:aws:sqs:eu-west-1:123456789012:mail", "arn:aws:sqs:eu-west-1:123456789012:ledger.fifo"}, cfg.Queues)
	calls := 0
	d, err := NewDelayer(funcScheduler{create: func(*scheduler.CreateScheduleInput) (*scheduler.CreateScheduleOutput, error) {
		calls++
		return &scheduler.CreateScheduleOutput{}, nil
	}}, cfg)
	require.NoError(t, err)
	at := time.Now().Add(time.Hour)
	err = d.ScheduleJob(context.Background(), jobs.PreparedJob{ID: "j1", Body: "{}", DeliverAt: at,
		QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", GroupID: "g"})
	require.ErrorIs(t, err, ErrNotADelayQueue)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "PreparedJob.QueueURL", ve.Field)
	assert.Zero(t, calls, "refused before any call")
	require.NoError(t, d.ScheduleJob(context.Background(), jobs.PreparedJob{ID: "j2", Body: "{}", DeliverAt: at,
		QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/ledger.fifo", GroupID: "g"}))
	assert.Equal(t, 1, calls)
}

// funcScheduler is a SchedulerAPI for tests that never reach AWS (configuration checks).
type funcScheduler struct {
	create func(*scheduler.CreateScheduleInput) (*scheduler.CreateScheduleOutput, error)
	delete func(*scheduler.DeleteScheduleInput) (*scheduler.DeleteScheduleOutput, error)
}

func (f funcScheduler) CreateSchedule(_ context.Context, in *scheduler.CreateScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	return f.create(in)
}

func (f funcScheduler) DeleteSchedule(_ context.Context, in *scheduler.DeleteScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error) {
	return f.delete(in)
}
