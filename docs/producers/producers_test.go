// Package producers holds jobkit's producers for other languages (python/, typescript/) and the
// tests that hold them, and the Go client, to the published envelope schema
// (docs/envelope.schema.json): every body validates, and the Go sample workers run the jobs.
package producers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/scheduler"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// schemas compiles docs/envelope.schema.json once: the envelope, and the dead-letter attributes.
var schemas = sync.OnceValues(func() ([2]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	f, err := os.Open(filepath.Join("..", "envelope.schema.json"))
	if err != nil {
		return [2]*jsonschema.Schema{}, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return [2]*jsonschema.Schema{}, err
	}
	if err := c.AddResource("envelope.schema.json", doc); err != nil {
		return [2]*jsonschema.Schema{}, err
	}
	env, err := c.Compile("envelope.schema.json")
	if err != nil {
		return [2]*jsonschema.Schema{}, err
	}
	dead, err := c.Compile("envelope.schema.json#/$defs/deadLetterAttributes")
	return [2]*jsonschema.Schema{env, dead}, err
})

// validBody fails the test unless body is an envelope the schema accepts.
func validBody(t *testing.T, body string) {
	t.Helper()
	s, err := schemas()
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	require.NoError(t, err, body)
	assert.NoError(t, s[0].Validate(v), body)
}

// The schema itself: what the runtime refuses, it refuses too.
func TestSchemaRefusesWhatTheRuntimeDeadLetters(t *testing.T) {
	s, err := schemas()
	require.NoError(t, err)
	for name, body := range map[string]string{
		"no version":      `{"id":"a","kind":"k","args":{},"enqueued_at":"2026-11-23T12:00:00Z"}`,
		"version 2":       `{"v":2,"id":"a","kind":"k","args":{},"enqueued_at":"2026-11-23T12:00:00Z"}`,
		"empty id":        `{"v":1,"id":"","kind":"k","args":{},"enqueued_at":"2026-11-23T12:00:00Z"}`,
		"empty kind":      `{"v":1,"id":"a","kind":"","args":{},"enqueued_at":"2026-11-23T12:00:00Z"}`,
		"not an object":   `["v",1]`,
		"bad time":        `{"v":1,"id":"a","kind":"k","args":{},"enqueued_at":"yesterday"}`,
		"bad traceparent": `{"v":1,"id":"a","kind":"k","args":{},"enqueued_at":"2026-11-23T12:00:00Z","trace":"abc"}`,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
		require.NoError(t, err)
		assert.Error(t, s[0].Validate(v), name)
		if name != "bad time" && name != "bad traceparent" && name != "not an object" {
			_, err := jobs.DecodeEnvelope(body)
			var envErr *jobs.EnvelopeError
			assert.ErrorAs(t, err, &envErr, "the runtime dead-letters it too: %s", name)
		}
	}
}

// producerQueues makes the queues the producers send to: a Standard queue, a FIFO queue and a
// dead-letter queue.
func producerQueues(t *testing.T, cfg aws.Config) (std, fifo, dlq awstest.Queue) {
	return awstest.CreateQueue(t, cfg, "std", nil), awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{FIFO: true}),
		awstest.CreateQueue(t, cfg, "dlq", nil)
}

// Every body the Go client produces validates: plain, with key and trace, a chosen id, a delay,
// a batch over several calls, FIFO, and a delay past 15 minutes (the schedule's target input).
// A dead-lettered copy's attributes validate against $defs/deadLetterAttributes.
func TestGoClientBodiesMatchTheSchema(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	std, fifo, dlq := producerQueues(t, cfg)
	sched := awsscheduler.NewFromConfig(cfg)
	group := awstest.Name(t, "grp")
	_, err := sched.CreateScheduleGroup(context.Background(), &awsscheduler.CreateScheduleGroupInput{Name: aws.String(group)})
	require.NoError(t, err)
	delayer, err := scheduler.NewDelayer(sched, scheduler.DelayerConfig{Group: group, RoleARN: "arn:aws:iam::" + awstest.Account(t) + ":role/jobkit-scheduler"})
	require.NoError(t, err)
	awstest.Cleanup(t, "schedule group "+group, func(ctx context.Context) error {
		out, err := sched.ListSchedules(ctx, &awsscheduler.ListSchedulesInput{GroupName: aws.String(group)})
		if err == nil {
			for _, s := range out.Schedules {
				_, _ = sched.DeleteSchedule(ctx, &awsscheduler.DeleteScheduleInput{GroupName: aws.String(group), Name: s.Name})
			}
		}
		_, err = sched.DeleteScheduleGroup(ctx, &awsscheduler.DeleteScheduleGroupInput{Name: aws.String(group)})
		return err
	})

	c, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: std.URL, LongDelayer: delayer})
	require.NoError(t, err)
	ctx := context.Background()
	email := samplejobs.SendEmail{To: "ada@example.com", Subject: "Grüße <&> \"quoted\"", Body: "line\nbreak"}
	for _, o := range []*jobs.EnqueueOpts{
		nil,
		{Key: "signup:42", Trace: traceparent},
		{ID: "order-7/retry 2"},
		{Delay: 3 * time.Second},
		{GroupID: "g1", Queue: fifo.URL},
	} {
		_, err := c.Enqueue(ctx, email, o)
		require.NoError(t, err)
	}
	var batch []jobs.BatchJob
	for i := range 12 {
		batch = append(batch, jobs.BatchJob{Args: samplejobs.PostLedger{Account: "acct-" + strconv.Itoa(i), AmountCents: int64(i) * 100}})
	}
	results, err := c.EnqueueBatch(ctx, batch)
	require.NoError(t, err)
	for _, r := range results {
		require.NoError(t, r.Err)
	}
	_, err = c.Enqueue(ctx, email, &jobs.EnqueueOpts{Delay: 2 * time.Hour})
	require.NoError(t, err)

	for _, m := range append(awstest.ReceiveN(t, client, std.URL, 4+12), awstest.ReceiveN(t, client, fifo.URL, 1)...) {
		validBody(t, aws.ToString(m.Body))
	}
	out, err := sched.ListSchedules(ctx, &awsscheduler.ListSchedulesInput{GroupName: aws.String(group)})
	require.NoError(t, err)
	require.Len(t, out.Schedules, 1)
	got, err := sched.GetSchedule(ctx, &awsscheduler.GetScheduleInput{GroupName: aws.String(group), Name: out.Schedules[0].Name})
	require.NoError(t, err)
	validBody(t, aws.ToString(got.Target.Input))

	// A dead letter: a cancelled job, through the runtime.
	_, err = c.Enqueue(ctx, email, nil)
	require.NoError(t, err)
	msgs := awstest.ReceiveN(t, client, std.URL, 1)
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[samplejobs.SendEmail](func(context.Context, *jobs.Job[samplejobs.SendEmail]) error {
		return jobs.Cancel(errors.New("mailbox <gone>"))
	}))
	resp, err := jobs.NewLambdaHandler(w, runtimeConfig(client, std.URL, dlq.URL)).HandleSQS(ctx, jobstest.EventFromMessages(std.ARN, msgs))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	dead := awstest.ReceiveN(t, client, dlq.URL, 1)
	attrs := map[string]any{}
	for name, a := range dead[0].MessageAttributes {
		attrs[name] = aws.ToString(a.StringValue)
	}
	s, err := schemas()
	require.NoError(t, err)
	assert.NoError(t, s[1].Validate(attrs), "%v", attrs)
	assert.Equal(t, contract.ReasonCancelled, attrs[contract.AttrReason])
	validBody(t, aws.ToString(dead[0].Body))
}

func runtimeConfig(client *sqs.Client, queueURL, dlqURL string) jobs.Config {
	return jobs.Config{
		QueueURL: queueURL, DLQURL: dlqURL, SQS: client, FunctionName: "producers-test",
		VisibilityTimeout: 30 * time.Second, MaxAttempts: 3,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
}

// producer is one of the other-language producers: the command that sends one job.
type producer struct {
	name string
	cmd  func(args ...string) *exec.Cmd
}

// producers finds the Python and TypeScript producers, built by `make test` (make setup and
// make producers); without them the test fails, naming the make target.
func producers(t *testing.T, cfg aws.Config) []producer {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	python := filepath.Join(root, ".venv", "bin", "python")
	script := filepath.Join(root, "docs", "producers", "python", "jobkit_producer.py")
	cli := filepath.Join(root, "docs", "producers", "typescript", "dist", "cli.js")
	for _, need := range []struct{ path, target string }{{python, "make setup"}, {cli, "make producers"}} {
		if _, err := os.Stat(need.path); err != nil {
			t.Fatalf("%s is missing: run %s (make test does)", need.path, need.target)
		}
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed for the TypeScript producer")
	creds, err := cfg.Credentials.Retrieve(context.Background())
	require.NoError(t, err)
	env := append(os.Environ(), "AWS_ENDPOINT_URL="+awstest.Endpoint(), "AWS_REGION="+cfg.Region,
		"AWS_DEFAULT_REGION="+cfg.Region, "AWS_ACCESS_KEY_ID="+creds.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+creds.SecretAccessKey, "NODE_NO_WARNINGS=1")
	return []producer{
		{"python", func(args ...string) *exec.Cmd {
			c := exec.Command(python, append([]string{script}, args...)...)
			c.Env = env
			return c
		}},
		{"typescript", func(args ...string) *exec.Cmd {
			c := exec.Command(node, append([]string{cli}, args...)...)
			c.Env = env
			return c
		}},
	}
}

// sent is what a producer command prints.
type sent struct {
	ID        string `json:"id"`
	MessageID string `json:"message_id"`
	MessageId string `json:"messageId"`
}

func send(t *testing.T, p producer, args ...string) sent {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := p.cmd(args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s %v: %s", p.name, args, stderr.String())
	var s sent
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s), stdout.String())
	require.NotEmpty(t, s.ID)
	return s
}

// recordingMailer keeps the emails the sample worker sends.
type recordingMailer struct {
	mu   sync.Mutex
	sent []samplejobs.Email
}

func (m *recordingMailer) Send(_ context.Context, e samplejobs.Email) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, e)
	return nil
}

// Jobs sent from Python (boto3) and TypeScript (AWS SDK v3) to a Standard and a FIFO queue
// validate against the schema, and the Go sample worker runs every one of them: the ids, keys
// and traces the producers chose reach the job. Bad input fails in each producer before any
// AWS call, with exit status 2 and the reason.
func TestOtherLanguageProducersRunOnTheGoWorkers(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	std, fifo, dlq := producerQueues(t, cfg)

	type want struct{ producer, subject, key, trace string }
	wants := map[string]want{} // by job id
	for _, p := range producers(t, cfg) {
		for _, refused := range [][]string{
			{"--queue-url", std.URL, "--kind", "", "--args", "{}"},
			{"--queue-url", fifo.URL, "--kind", samplejobs.KindSendEmail, "--args", "{}"},
			{"--queue-url", std.URL, "--kind", samplejobs.KindSendEmail, "--args", "{}", "--trace", "not-a-trace"},
			{"--queue-url", std.URL, "--kind", samplejobs.KindSendEmail, "--args", "{}", "--delay-seconds", "901"},
		} {
			var stderr bytes.Buffer
			cmd := p.cmd(refused...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%s %v", p.name, refused)
			assert.Equal(t, 2, exit.ExitCode(), "%s %v: %s", p.name, refused, stderr.String())
			assert.Contains(t, stderr.String(), "jobkit: ", p.name)
		}

		subject := "from " + p.name + ": Grüße <b>&</b> \"quoted\""
		args := func(subject string) string {
			b, _ := json.Marshal(samplejobs.SendEmail{To: "ada@example.com", Subject: subject})
			return string(b)
		}
		s := send(t, p, "--queue-url", std.URL, "--kind", samplejobs.KindSendEmail, "--args", args(subject))
		wants[s.ID] = want{p.name, subject, "", ""}
		s = send(t, p, "--queue-url", std.URL, "--kind", samplejobs.KindSendEmail, "--args", args(subject+" keyed"),
			"--key", "welcome:"+p.name, "--trace", traceparent, "--id", "custom-"+p.name)
		require.Equal(t, "custom-"+p.name, s.ID)
		wants[s.ID] = want{p.name, subject + " keyed", "welcome:" + p.name, traceparent}
		s = send(t, p, "--queue-url", fifo.URL, "--kind", samplejobs.KindSendEmail, "--args", args(subject+" fifo"),
			"--group-id", "tenant-1")
		wants[s.ID] = want{p.name, subject + " fifo", "", ""}
	}

	mailer := &recordingMailer{}
	w := jobs.NewWorkers()
	seen := map[string]jobs.JobRow{}
	var mu sync.Mutex
	w.Use(func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			mu.Lock()
			seen[row.ID] = *row
			mu.Unlock()
			return next(ctx, row)
		}
	})
	jobs.AddWorker(w, &samplejobs.EmailWorker{Mailer: mailer})
	for _, q := range []awstest.Queue{std, fifo} {
		n := 4
		if q.URL == fifo.URL {
			n = 2
		}
		msgs := awstest.ReceiveN(t, client, q.URL, n)
		for _, m := range msgs {
			validBody(t, aws.ToString(m.Body))
		}
		resp, err := jobs.NewLambdaHandler(w, runtimeConfig(client, q.URL, dlq.URL)).HandleSQS(context.Background(), jobstest.EventFromMessages(q.ARN, msgs))
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures, "every job ran")
	}
	assert.Empty(t, receiveAllOrNone(t, client, dlq.URL), "nothing dead-lettered")

	require.Len(t, mailer.sent, len(wants))
	subjects := map[string]string{}
	for _, e := range mailer.sent {
		subjects[e.IdempotencyKey] = e.Subject
	}
	for id, wt := range wants {
		row, ok := seen[id]
		require.True(t, ok, "job %s from %s ran", id, wt.producer)
		assert.Equal(t, samplejobs.KindSendEmail, row.Kind)
		assert.Equal(t, wt.key, row.Key, "key of %s", id)
		assert.Equal(t, wt.trace, row.Trace, "trace of %s", id)
		assert.WithinDuration(t, time.Now(), row.EnqueuedAt, time.Minute, "enqueued_at of %s", id)
		key := wt.key
		if key == "" {
			key = id // the id is the key when the producer set none
		}
		assert.Equal(t, wt.subject, subjects[key], fmt.Sprintf("the worker got %s's args", wt.producer))
	}
}

// receiveAllOrNone returns what one short receive finds.
func receiveAllOrNone(t *testing.T, client *sqs.Client, url string) []sqstypes.Message {
	t.Helper()
	res, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	require.NoError(t, err)
	return res.Messages
}
