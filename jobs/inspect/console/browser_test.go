package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/scheduler"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// EnvScreenshots names a folder for the browser tests' screenshots (docs/console/ is made this
// way); unset, they go to the test's temporary folder.
const EnvScreenshots = "JOBKIT_CONSOLE_SCREENSHOTS"

// browser returns a headless Chromium context, or fails (under make test) or skips the test
// when there is no Chromium: `make browser` installs the Debian package.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		msg := "no Chromium on PATH: run `make browser` (installs the Debian package chromium)"
		if os.Getenv("JOBKIT_REQUIRE_EMULATOR") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1440, 900),
		chromedp.Flag("hide-scrollbars", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	require.NoError(t, chromedp.Run(ctx), "start Chromium")
	return ctx
}

// screenshot saves the whole page as name.png.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	var png []byte
	require.NoError(t, chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	t.Logf("screenshot %s", filepath.Join(dir, name+".png"))
}

// tableRows reads a table's body as text, cell by cell.
func tableRows(t *testing.T, ctx context.Context, selector string) [][]string {
	t.Helper()
	var rows [][]string
	js := fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(r => Array.from(r.cells).map(c => c.textContent.trim()))`, selector+" tbody tr")
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(js, &rows)))
	return rows
}

// schedule creates a recurring schedule in the default group, deleted when the test ends; start,
// if given, is its start date.
func (f *fixture) schedule(t *testing.T, name, expr, tz string, start ...time.Time) {
	t.Helper()
	sch := awsscheduler.NewFromConfig(f.cfg)
	var startDate *time.Time
	if len(start) > 0 {
		startDate = &start[0]
	}
	_, err := sch.CreateSchedule(context.Background(), &awsscheduler.CreateScheduleInput{
		Name: aws.String(name), ScheduleExpression: aws.String(expr), ScheduleExpressionTimezone: aws.String(tz), StartDate: startDate,
		FlexibleTimeWindow: &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeOff},
		Target: &schedtypes.Target{
			Arn: aws.String(f.queue.ARN), RoleArn: aws.String("arn:aws:iam::000000000000:role/jobkit-scheduler"),
			Input: aws.String(`{"v":1,"id":"sched:` + name + `:<aws.scheduler.scheduled-time>","kind":"report.daily","args":{}}`),
		},
	})
	require.NoError(t, err)
	awstest.Cleanup(t, "schedule "+name, func(ctx context.Context) error {
		_, err := sch.DeleteSchedule(ctx, &awsscheduler.DeleteScheduleInput{Name: aws.String(name)})
		return err
	})
}

// screenshots is where a browser test writes its screenshots: $JOBKIT_CONSOLE_SCREENSHOTS
// (EnvScreenshots) to keep them, else a directory removed with the test.
func screenshots(t *testing.T) string {
	if dir := os.Getenv(EnvScreenshots); dir != "" {
		return dir
	}
	return t.TempDir()
}

// The console in a real browser against the emulator: the page shows the queues and dead jobs,
// refreshes the queue table by itself, redrives a picked dead job (it leaves the DLQ for its
// queue), and shows a job's envelope. Screenshots of each step are saved.
func TestConsoleInABrowser(t *testing.T) {
	f := newFixture(t, Options{Refresh: time.Second})
	ctx := browser(t)
	dir := screenshots(t)
	f.seed(t,
		deadSeed{ID: "01JD3Q7X2V8M4N6P8R0T2V4X6Z", Kind: "email.send", Error: "smtp: 421 4.7.0 try again later"},
		deadSeed{ID: "01JD3Q8B5C7E9G1J3L5N7Q9S1U", Kind: "ledger.post", Error: "account 4711 is closed"},
		deadSeed{ID: "01JD3Q9D8F0H2K4M6P8R0T2W4Y", Kind: "video.transcode", Error: "context deadline exceeded"},
	)
	f.send(t, 4)
	f.schedule(t, awstest.Name(t, "daily-report"), "cron(0 9 ? * MON-FRI *)", "Europe/Paris")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/?queue="+f.queue.Name),
		chromedp.WaitVisible("#dead-jobs"),
	))
	queues := tableRows(t, ctx, "#queues")
	require.Len(t, queues, 1)
	require.Equal(t, []string{f.queue.Name, "4", "0", "0"}, queues[0][:4])
	require.Equal(t, "3", queues[0][5], "DLQ depth")
	dead := tableRows(t, ctx, "#dead-jobs")
	require.Len(t, dead, 3)
	var ids []string
	for _, r := range dead {
		ids = append(ids, r[2])
		require.Equal(t, "attempts_exhausted", r[4])
	}
	require.ElementsMatch(t, []string{"01JD3Q7X2V8M4N6P8R0T2V4X6Z", "01JD3Q8B5C7E9G1J3L5N7Q9S1U", "01JD3Q9D8F0H2K4M6P8R0T2W4Y"}, ids)
	schedules := tableRows(t, ctx, "#schedules")
	require.NotEmpty(t, schedules)
	// The oldest job's age, from CloudWatch (the emulator publishes the AWS/SQS metrics every 10 s),
	// fills in by itself.
	require.NoError(t, chromedp.Run(ctx, chromedp.Poll(
		fmt.Sprintf(`/^\d+(m\d+)?s$/.test(document.querySelector('#queues tr[data-queue=%q] [data-field="oldest_age"]').textContent)`, f.queue.Name),
		nil, chromedp.WithPollingTimeout(40*time.Second))))
	screenshot(t, ctx, dir, "console-dead-jobs")

	// Live: more jobs arrive, and the queue table shows them without a reload.
	f.send(t, 3)
	require.NoError(t, chromedp.Run(ctx, chromedp.Poll(
		fmt.Sprintf(`document.querySelector('#queues tr[data-queue=%q] [data-field="visible"]').textContent === "7"`, f.queue.Name),
		nil, chromedp.WithPollingTimeout(20*time.Second))))

	// Pause the queue from its row, then resume it: the row shows the state, the queue its tag.
	row := fmt.Sprintf(`#queues tr[data-queue=%q]`, f.queue.Name)
	queueState := func(want string) {
		t.Helper()
		require.NoError(t, chromedp.Run(ctx, chromedp.Poll(
			fmt.Sprintf(`document.querySelector('%s [data-field="state"]').textContent === %q`, row, want),
			nil, chromedp.WithPollingTimeout(20*time.Second))))
		_, paused, err := f.server.in.QueuePaused(context.Background(), f.queue.URL)
		require.NoError(t, err)
		require.Equal(t, want == "paused", paused)
	}
	queueState("active")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click(row+" button.queue-op", chromedp.ByQuery)))
	queueState("paused")
	require.NoError(t, chromedp.Run(ctx, chromedp.WaitVisible(row+` button.queue-op[data-op="resume"]`, chromedp.ByQuery)))
	screenshot(t, ctx, dir, "console-queue-paused")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click(row+" button.queue-op", chromedp.ByQuery)))
	queueState("active")

	redriveOne(t, ctx, "01JD3Q8B5C7E9G1J3L5N7Q9S1U")
	require.Len(t, tableRows(t, ctx, "#dead-jobs"), 2)
	require.Equal(t, 2, f.visible(t, f.dlq.URL))
	require.Equal(t, 8, f.visible(t, f.queue.URL), "the redriven job is back in its queue")
	screenshot(t, ctx, dir, "console-after-redrive")

	// A job's envelope.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/?queue="+f.queue.Name+"&job=01JD3Q7X2V8M4N6P8R0T2V4X6Z"),
		chromedp.WaitVisible("#envelope-body"),
	))
	var env string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#envelope-body", &env)))
	require.Contains(t, env, `"kind": "email.send"`)
	screenshot(t, ctx, dir, "console-envelope")

	// Read-only: the same page without a single action.
	ro, err := New(context.Background(), f.server.in, Options{Target: f.server.o.Target, ReadOnly: true})
	require.NoError(t, err)
	hs := newHTTPTest(t, ro)
	var buttons int
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(hs+"/?queue="+f.queue.Name),
		chromedp.WaitVisible("#dead-jobs"),
		chromedp.Evaluate(`document.querySelectorAll("button, input.pick").length`, &buttons),
	))
	require.Zero(t, buttons)
	screenshot(t, ctx, dir, "console-read-only")
}

// redriveOne picks a dead job on the page, clicks Redrive selected, and waits until the job has
// left the dead-job table (the page reloads when the move ends).
func redriveOne(t *testing.T, ctx context.Context, picked string) {
	t.Helper()
	row := fmt.Sprintf(`tr[data-ref=%q]`, picked)
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(row+` input.pick`, chromedp.ByQuery),
		chromedp.Click(`#redrive-selected`, chromedp.ByQuery),
		chromedp.WaitVisible(`#progress-text`, chromedp.ByQuery),
	))
	gone := fmt.Sprintf(`document.readyState === "complete" && !!document.querySelector("#dead-jobs") && !document.querySelector(%q)`, row)
	require.Eventually(t, func() bool {
		var ok bool
		// The page reloads under the check: an error means "not yet".
		return chromedp.Run(ctx, chromedp.Evaluate(gone, &ok)) == nil && ok
	}, 60*time.Second, 300*time.Millisecond, "the redriven job leaves the dead-job table")
}

// send puts n jobs in the fixture's queue.
func (f *fixture) send(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		_, err := f.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl:    aws.String(f.queue.URL),
			MessageBody: aws.String(fmt.Sprintf(`{"v":1,"id":"job-%d-%d","kind":"email.send","args":{}}`, time.Now().UnixNano(), i)),
		})
		require.NoError(t, err)
	}
}

func newHTTPTest(t *testing.T, s *Server) string {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return hs.URL
}

// The job status panel in a real browser: a job that succeeded with a result, and one waiting
// for its retry, looked up by id through the form, from the job state table on the emulator.
func TestJobStatusInABrowser(t *testing.T) {
	cfg := awstest.Config(t)
	name := awstest.CreateStateTable(t, cfg)
	db := dynamodb.NewFromConfig(cfg)
	table, err := state.New(db, name, &state.Options{ListJobs: true})
	require.NoError(t, err)
	f := newFixture(t, Options{States: table, StateTable: name})
	client, err := jobs.NewClient(f.sqs, jobs.ClientOptions{DefaultQueueURL: f.queue.URL, State: table})
	require.NoError(t, err)
	bg := context.Background()
	done, err := client.Enqueue(bg, statusJob{Image: "cat.png"}, nil)
	require.NoError(t, err)
	flaky, err := client.Enqueue(bg, statusJob{Image: "dog.png"}, nil)
	require.NoError(t, err)

	// The first runs and succeeds through the middleware a worker uses; the second fails once.
	run := table.Middleware(&state.MiddlewareOptions{Folded: true})(
		idempotency.Middleware(idempotency.NewDynamoDBStore(db, name, listJobs), &idempotency.Config{RecordJobs: true})(
			func(ctx context.Context, row *jobs.JobRow) error {
				return jobs.SetResult(ctx, map[string]any{"thumbnail": "cat.small.png", "bytes": 18234})
			}))
	require.NoError(t, run(bg, &jobs.JobRow{ID: done.ID, Kind: "image.resize", Attempt: 1, QueueURL: f.queue.URL, EncodedArgs: []byte(`{"image":"cat.png"}`)}))
	require.NoError(t, table.JobSettled(bg, &jobs.JobRow{ID: flaky.ID, Kind: "image.resize", QueueURL: f.queue.URL}, jobs.JobStatus{
		State: jobs.StateRetrying, Attempt: 1, NextAttemptAt: time.Now().Add(40 * time.Second), LastError: "s3: SlowDown: <script>alert(1)</script>",
	}))

	ctx := browser(t)
	dir := screenshots(t)
	fields := func() map[string]string {
		var m map[string]string
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(
			`Object.fromEntries(Array.from(document.querySelectorAll("#job-status td")).map(c => [c.dataset.field, c.textContent.trim()]))`, &m)))
		return m
	}
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/"),
		chromedp.WaitVisible("#status-form"),
		chromedp.SendKeys("#status-id", done.ID, chromedp.ByQuery),
		chromedp.Click("#status-lookup", chromedp.ByQuery),
		chromedp.WaitVisible("#job-status"),
	))
	got := fields()
	require.Equal(t, "succeeded", got["state"])
	require.Equal(t, done.ID, got["id"])
	require.Equal(t, "1", got["attempt"])
	require.JSONEq(t, `{"thumbnail":"cat.small.png","bytes":18234}`, got["result"])
	screenshot(t, ctx, dir, "console-job-status")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/?status="+flaky.ID),
		chromedp.WaitVisible("#job-status"),
	))
	got = fields()
	require.Equal(t, "retrying", got["state"])
	require.Equal(t, "s3: SlowDown: <script>alert(1)</script>", got["last_error"], "job data shows as text")
	require.NotEmpty(t, got["next_attempt_at"])
	var scripts int
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("#job-status script").length`, &scripts)))
	require.Zero(t, scripts)
	screenshot(t, ctx, dir, "console-job-status-retrying")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/?status=no-such-job"),
		chromedp.WaitVisible("#status"),
	))
	var msg string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#status", &msg)))
	require.Contains(t, msg, "no state recorded")

	// The queue's jobs by state (the state table's index): retrying first, then a tab away the
	// one that succeeded; a job's id opens its status.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/?queue="+f.queue.Name+"#jobs"),
		chromedp.WaitVisible("#job-list"),
	))
	rows := tableRows(t, ctx, "#job-list")
	require.Len(t, rows, 1)
	require.Equal(t, []string{flaky.ID, "image.resize", "retrying"}, rows[0][:3])
	require.Equal(t, "1", rows[0][4], "its attempt")
	require.Equal(t, "s3: SlowDown: <script>alert(1)</script>", rows[0][5], "its last error, as text")
	screenshot(t, ctx, dir, "console-jobs-by-state")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`#job-states a[data-state="succeeded"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#job-states a.current[data-state="succeeded"]`, chromedp.ByQuery),
	))
	rows = tableRows(t, ctx, "#job-list")
	require.Len(t, rows, 1)
	require.Equal(t, []string{done.ID, "image.resize", "succeeded"}, rows[0][:3])
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/?queue="+f.queue.Name+"&jobs=succeeded&kind=video.encode#jobs"),
		chromedp.WaitVisible("#job-list"),
	))
	rows = tableRows(t, ctx, "#job-list")
	require.Equal(t, [][]string{{"no succeeded jobs of kind video.encode"}}, rows)
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/?queue="+f.queue.Name+"&jobs=succeeded#jobs"),
		chromedp.WaitVisible("#job-list"),
		chromedp.Click(`#job-list a`, chromedp.ByQuery),
		chromedp.WaitVisible("#job-status"),
	))
	require.Equal(t, done.ID, fields()["id"])
}

type statusJob struct {
	Image string `json:"image"`
}

func (statusJob) Kind() string { return "image.resize" }

// The job and schedule actions in a real browser: a waiting job cancelled from its status panel
// (its state becomes cancelled, the buttons go), a job waiting out an hour's backoff retried now
// (its message is visible at once), a schedule paused (Resume then shows) and fired now (its job
// arrives on the queue).
func TestJobAndScheduleActionsInABrowser(t *testing.T) {
	cfg := awstest.Config(t)
	name := awstest.CreateTable(t, cfg, "state", idempotency.AttrID, "")
	table, err := state.New(dynamodb.NewFromConfig(cfg), name, nil)
	require.NoError(t, err)
	ops, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{State: table})
	require.NoError(t, err)
	f := newFixture(t, Options{States: table, StateTable: name, Jobs: ops})
	client, err := jobs.NewClient(f.sqs, jobs.ClientOptions{DefaultQueueURL: f.queue.URL, State: table})
	require.NoError(t, err)
	bg := context.Background()
	flaky, err := client.Enqueue(bg, statusJob{Image: "dog.png"}, nil)
	require.NoError(t, err)
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[statusJob](func(context.Context, *jobs.Job[statusJob]) error { return errors.New("s3: SlowDown") }))
	handle := jobs.NewLambdaHandler(w, jobs.Config{QueueURL: f.queue.URL, DLQURL: f.dlq.URL, SQS: f.sqs, MaxAttempts: 3, States: table,
		Backoff: func(int) time.Duration { return time.Hour }, Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}).HandleSQS
	_, err = handle(bg, jobstest.EventFromMessages(f.queue.ARN, awstest.ReceiveN(t, f.sqs, f.queue.URL, 1)))
	require.NoError(t, err)
	waiting, err := client.Enqueue(bg, statusJob{Image: "cat.png"}, nil)
	require.NoError(t, err)
	schedule := awstest.Name(t, "nightly")
	// An hourly schedule that started 4 minutes ago (Scheduler takes a start date up to 5 minutes
	// back): its first tick, at its start, is its last for the next 56 minutes.
	start := time.Now().Add(-4 * time.Minute).Truncate(time.Second)
	f.schedule(t, schedule, "rate(1 hour)", "Europe/Paris", start)
	// That tick's job, as Scheduler would have sent it (its id names the tick), enqueued.
	last, ok := inspect.LastFireTime("rate(1 hour)", "Europe/Paris", start, time.Now())
	require.True(t, ok)
	require.Equal(t, start.UTC(), last)
	ticks, err := jobs.NewClient(f.sqs, jobs.ClientOptions{DefaultQueueURL: awstest.CreateQueue(t, cfg, "ticks", nil).URL, State: table})
	require.NoError(t, err)
	_, err = ticks.Enqueue(bg, statusJob{Image: "report.png"}, &jobs.EnqueueOpts{ID: scheduler.TickID(schedule, last)})
	require.NoError(t, err)

	ctx := browser(t)
	dir := screenshots(t)
	state := func() string {
		var s string
		require.NoError(t, chromedp.Run(ctx, chromedp.Text(`#job-status td[data-field="state"]`, &s, chromedp.ByQuery)))
		return s
	}
	reloaded := func(check string) {
		t.Helper()
		require.Eventually(t, func() bool {
			var ok bool
			return chromedp.Run(ctx, chromedp.Evaluate(`document.readyState === "complete" && (`+check+`)`, &ok)) == nil && ok
		}, 30*time.Second, 200*time.Millisecond, check)
	}

	// Cancel a waiting job.
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(f.http.URL+"/?status="+waiting.ID), chromedp.WaitVisible("#job-cancel")))
	require.Equal(t, "enqueued", state())
	screenshot(t, ctx, dir, "console-job-actions")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#job-cancel", chromedp.ByQuery)))
	reloaded(`!document.querySelector("#job-cancel") && document.querySelector('#job-status td[data-field="state"]').textContent.trim() === "cancelled"`)
	st, err := client.Status(bg, waiting.ID)
	require.NoError(t, err)
	require.Equal(t, jobs.StateCancelled, st.State)

	// Retry a job now.
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(f.http.URL+"/?status="+flaky.ID), chromedp.WaitVisible("#job-retry")))
	require.Equal(t, "retrying", state())
	// The page reloads once the retry is done: a mark set on this page before the click is gone
	// then, and the job's message was made visible before the receives below.
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.jkBeforeRetry = true`, nil)))
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#job-retry", chromedp.ByQuery)))
	reloaded(`!!document.querySelector("#job-status") && !window.jkBeforeRetry`)
	// The retried job, and the cancelled one's message. Its backoff was an hour, so receiving it
	// within a minute shows the retry; a loaded LocalStack took more than 20 s to hand it back.
	visible := map[string]bool{}
	for deadline := time.Now().Add(time.Minute); len(visible) < 2 && time.Now().Before(deadline); {
		for _, m := range awstest.Receive(t, f.sqs, f.queue.URL, 2, 5*time.Second) {
			env, err := jobs.DecodeEnvelope(aws.ToString(m.Body))
			require.NoError(t, err)
			visible[env.ID] = true
		}
	}
	require.Equal(t, map[string]bool{flaky.ID: true, waiting.ID: true}, visible, "the retried job is visible again, long before its hour of backoff")

	// Pause, then fire, a schedule.
	row := fmt.Sprintf(`#schedules tr[data-name=%q]`, schedule)
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(f.http.URL+"/"), chromedp.WaitVisible(row+` button[data-op="pause"]`)))
	var cells []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelector(`+fmt.Sprintf("%q", row)+`).cells).map(c => c.textContent.trim())`, &cells)))
	require.Equal(t, schedule, cells[0], "listed by the name declared in Go")
	require.Equal(t, "report.daily", cells[1])
	require.Equal(t, "ENABLED", cells[4])
	require.Contains(t, cells[5], last.UTC().Format("2006-01-02 15:04"), "the last run")
	require.Contains(t, cells[5], "enqueued", "and how it went: its tick job's state")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click(row+` button[data-op="pause"]`, chromedp.ByQuery)))
	reloaded(`!!document.querySelector(` + fmt.Sprintf("%q", row+` button[data-op="resume"]`) + `)`)
	screenshot(t, ctx, dir, "console-schedules")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click(row+` button[data-op="fire"]`, chromedp.ByQuery)))
	// The row says what the fire did once its request is answered (before the page reloads).
	var said string
	require.Eventually(t, func() bool {
		return chromedp.Run(ctx, chromedp.Evaluate(`(document.querySelector(`+fmt.Sprintf("%q", row+` .row-actions`)+`) || {}).textContent || ""`, &said)) == nil &&
			(strings.Contains(said, "fired") || strings.Contains(said, "failed"))
	}, 30*time.Second, 100*time.Millisecond, "the fire's answer on the page")
	require.Contains(t, said, "fired: job sched:"+schedule+":")
	// The tick is on the queue: a loaded LocalStack can take longer than a receive's 20 s.
	var fired []sqstypes.Message
	for deadline := time.Now().Add(time.Minute); len(fired) == 0 && time.Now().Before(deadline); {
		fired = awstest.Receive(t, f.sqs, f.queue.URL, 1, 5*time.Second)
	}
	require.Len(t, fired, 1, "the fired schedule's tick")
	env, err := jobs.DecodeEnvelope(aws.ToString(fired[0].Body))
	require.NoError(t, err)
	require.Equal(t, "report.daily", env.Kind)
	require.Contains(t, env.ID, "sched:"+schedule+":")
}

// The overview's charts in a real browser: jobs succeeded, retried and dead per minute over the
// last hour, a chart for the queue and one per kind, read from CloudWatch (the emulator's, with
// the metrics the runtime publishes: namespace Jobkit, dimensions Queue and Queue+Kind).
func TestThroughputChartsInABrowser(t *testing.T) {
	f := newFixture(t, Options{Refresh: time.Second})
	ctx := browser(t)
	dir := screenshots(t)
	queue := awsarn.QueueName(f.queue.URL)
	cw := inspect.NewCloudWatch(f.cfg)
	now := time.Now().Truncate(time.Minute)
	put := func(kind string, minutesAgo int, metric string, v float64) {
		for _, dims := range [][]cwtypes.Dimension{
			{{Name: aws.String(contract.DimensionQueue), Value: aws.String(queue)}},
			{{Name: aws.String(contract.DimensionQueue), Value: aws.String(queue)}, {Name: aws.String(contract.DimensionKind), Value: aws.String(kind)}},
		} {
			_, err := cw.PutMetricData(context.Background(), &cloudwatch.PutMetricDataInput{
				Namespace: aws.String(contract.MetricNamespace),
				MetricData: []cwtypes.MetricDatum{{MetricName: aws.String(metric), Dimensions: dims, Value: aws.Float64(v),
					Timestamp: aws.Time(now.Add(-time.Duration(minutesAgo)*time.Minute + 10*time.Second)), Unit: cwtypes.StandardUnitCount}},
			})
			require.NoError(t, err)
		}
	}
	// Two kinds over the last half hour: a steady stream of emails, a burst of ledger postings
	// with retries and one dead.
	var succeeded, retried int
	for m := 30; m >= 1; m-- {
		put("email.send", m, contract.MetricSucceeded, float64(10+m%7))
		succeeded += 10 + m%7
	}
	for m := 12; m >= 8; m-- {
		put("ledger.post", m, contract.MetricSucceeded, 25)
		put("ledger.post", m, contract.MetricRetried, 4)
		succeeded, retried = succeeded+25, retried+4
	}
	put("ledger.post", 9, contract.MetricDead, 1)

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(f.http.URL+"/"),
		chromedp.WaitVisible("#charts .chart"),
	))
	var charts []map[string]string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll("#charts .chart")).map(c => ({
		queue: c.dataset.queue, kind: c.dataset.kind || "", sums: c.querySelector(".chart-sums").textContent,
		lines: String(c.querySelectorAll("polyline").length)}))`, &charts)))
	require.Len(t, charts, 3, "the queue, then each kind")
	require.Equal(t, f.queue.Name, charts[0]["queue"])
	require.Equal(t, "", charts[0]["kind"])
	require.Equal(t, fmt.Sprintf("%d succeeded · %d retried · 1 dead", succeeded, retried), charts[0]["sums"])
	require.Equal(t, "email.send", charts[1]["kind"])
	require.Equal(t, "ledger.post", charts[2]["kind"])
	require.Equal(t, "125 succeeded · 20 retried · 1 dead", charts[2]["sums"])
	for _, c := range charts {
		require.Equal(t, "3", c["lines"], "succeeded, retried and dead")
	}
	screenshot(t, ctx, dir, "console-throughput")
}

// listJobs keeps the store's running and succeeded jobs listed (idempotency.DynamoDBOptions).
func listJobs(o *idempotency.DynamoDBOptions) { o.ListJobs = true }
