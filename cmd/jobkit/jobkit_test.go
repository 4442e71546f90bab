package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

func TestHelpHasExamples(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"queues", "--help"}, {"dlq", "--help"}, {"dlq", "list", "--help"}, {"dlq", "show", "--help"},
		{"dlq", "redrive", "--help"}, {"dlq", "purge", "--help"}, {"enqueue", "--help"}, {"console", "--help"},
	} {
		var out, errOut strings.Builder
		code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
		require.Equal(t, 0, code, args)
		require.Contains(t, out.String(), "Examples:", args)
		require.Contains(t, out.String(), "jobkit ", args)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"queues", "extra"}, {"queues", "--age", "sometimes"}, {"dlq", "show"}, {"enqueue"},
		{"enqueue", "k", "--args", "{not json"}, {"queues", "--no-such-flag"}, {"nope"}, {"dlq", "nope"},
		{"dlq", "redrive", "--method", "teleport"}, {"enqueue", "k", "--file", "x.ndjson"},
		{"console", "--addr", "nowhere"}, {"console", "extra"},
	} {
		var out, errOut strings.Builder
		code := run(context.Background(), append([]string{"--endpoint", "http://127.0.0.1:1"}, args...), strings.NewReader(""), &out, &errOut)
		require.Equal(t, exitUsage, code, "%v: %s", args, errOut.String())
		require.Contains(t, errOut.String(), "jobkit: ")
	}
}

// createStack deploys a stack whose outputs name one queue pair, as the infra stack does.
func createStack(t *testing.T, cfg aws.Config) (stack, queueURL, dlqURL string) {
	t.Helper()
	ctx := context.Background()
	cfn := cloudformation.NewFromConfig(cfg)
	stack = awstest.Name(t, "stack")
	prefix := awstest.Name(t, "q")
	tpl, _ := json.Marshal(map[string]any{
		"Resources": map[string]any{
			"Dlq": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"QueueName": prefix + "-dlq"}},
			"Q": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{
				"QueueName":     prefix,
				"RedrivePolicy": map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []string{"Dlq", "Arn"}}, "maxReceiveCount": 5},
			}},
		},
		"Outputs": map[string]any{
			contract.OutputQueuePrefix + "Email": map[string]any{"Value": map[string]any{"Ref": "Q"}},
			contract.OutputDLQPrefix + "Email":   map[string]any{"Value": map[string]any{"Ref": "Dlq"}},
		},
	})
	_, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(stack), TemplateBody: aws.String(string(tpl))})
	require.NoError(t, err)
	awstest.Cleanup(t, "stack", func(ctx context.Context) error {
		_, err := cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stack)})
		return err
	})
	w := cloudformation.NewStackCreateCompleteWaiter(cfn, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	require.NoError(t, w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)}, time.Minute))
	client := sqs.NewFromConfig(cfg)
	q, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(prefix)})
	require.NoError(t, err)
	d, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(prefix + "-dlq")})
	require.NoError(t, err)
	return stack, aws.ToString(q.QueueUrl), aws.ToString(d.QueueUrl)
}

func TestQueuesCommand(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	stack, q, dlq := createStack(t, cfg)
	for i := range 3 {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String(envelopeBody(strconv.Itoa(i), "k", i))})
		require.NoError(t, err)
	}
	seedDead(t, client, dlq, q, "d", 2, func(int) string { return "email.send" })

	// From the stack's outputs, as JSON.
	out, errOut, code := cli(t, "", "--stack", stack, "queues", "--json")
	require.Equal(t, 0, code, errOut)
	var doc queuesJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, 1, doc.Version)
	require.Len(t, doc.Queues, 1)
	e := doc.Queues[0]
	require.Equal(t, "Email", e.Name)
	require.Equal(t, int64(3), e.Visible)
	require.Zero(t, e.InFlight)
	// A queue made a moment ago may have no CloudWatch datapoint yet (SQS publishes the age every
	// minute, the emulators every 10 s): the job queue's age is then unknown, the DLQ's sampled.
	require.Contains(t, []string{"", "cloudwatch"}, e.OldestAgeSource)
	require.Equal(t, e.OldestAgeSource == "", e.OldestAgeSeconds == nil, "an age exactly when it is known")
	require.NotNil(t, e.DLQ)
	require.Equal(t, int64(2), e.DLQ.Visible)
	require.Contains(t, []string{"sample", "cloudwatch"}, e.DLQ.OldestAgeSource)
	require.NotNil(t, e.DLQ.OldestAgeSeconds)
	if awstest.HasCloudWatch(t) {
		require.Empty(t, doc.Warnings, "CloudWatch answered, with no datapoint")
	} else {
		require.NotEmpty(t, doc.Warnings, "CloudWatch did not answer")
	}
	// The raw document has every documented key, null where unknown.
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	q0 := raw["queues"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "url", "fifo", "visible", "in_flight", "delayed", "oldest_age_seconds", "oldest_age_source", "paused", "paused_since", "dlq"} {
		require.Contains(t, q0, k)
	}
	require.False(t, e.Paused)

	// From a flag, as a table, with sampled ages.
	out, _, code = cli(t, "", "queues", "-q", q, "--age", "sample")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	require.Regexp(t, `^QUEUE\s+TYPE\s+STATE\s+VISIBLE\s+IN FLIGHT\s+DELAYED\s+OLDEST\s+DLQ\s+DLQ IN FLIGHT\s+DLQ OLDEST$`, lines[0])
	require.Regexp(t, `^\S+\s+standard\s+active\s+3\s+0\s+0\s+≥\d+s\s+2\s+0\s+≥\d+s$`, lines[1])

	// Pause by the stack's name for the queue; a second pause says it changed nothing.
	out, errOut, code = cli(t, "", "--stack", stack, "queues", "pause", "Email")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "queue Email paused (0 event source mappings disabled)\n", out)
	out, _, code = cli(t, "", "--stack", stack, "queues", "pause", "Email", "--json")
	require.Equal(t, 0, code)
	var act queueActionJSON
	require.NoError(t, json.Unmarshal([]byte(out), &act))
	require.Equal(t, queueActionJSON{Version: 1, Name: "Email", URL: e.URL, Action: "paused", Changed: false, Mappings: []string{}}, act)
	out, _, code = cli(t, "", "--stack", stack, "queues", "--age", "off")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^Email\s+standard\s+paused\s+3\s`, out)
	out, _, code = cli(t, "", "--stack", stack, "queues", "--age", "off", "--json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.True(t, doc.Queues[0].Paused)
	require.NotNil(t, doc.Queues[0].PausedSince)
	out, _, code = cli(t, "", "--stack", stack, "queues", "resume", q)
	require.Equal(t, 0, code)
	require.Equal(t, "queue Email resumed (0 event source mappings enabled)\n", out)
	out, _, code = cli(t, "", "--stack", stack, "queues", "resume", "Email")
	require.Equal(t, 0, code)
	require.Equal(t, "queue Email: already resumed, nothing changed\n", out)

	// A stack that does not exist says what to do.
	_, errOut, code = cli(t, "", "--stack", awstest.Name(t, "missing"), "queues")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "stack not found")
	require.Contains(t, errOut, "--queue")
}

func TestDLQListAndShowCommands(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	stack, q, dlq := createStack(t, cfg)
	ids := seedDead(t, client, dlq, q, "job", 12, func(i int) string {
		if i%4 == 0 {
			return "ledger.post"
		}
		return "email.send"
	})

	out, errOut, code := cli(t, "", "--stack", stack, "dlq", "list", "--json")
	require.Equal(t, 0, code, errOut)
	var doc deadListJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, 1, doc.Version)
	require.Equal(t, awsarn.QueueName(dlq), awsarn.QueueName(doc.Queue))
	require.Equal(t, int64(12), doc.ApproximateCount)
	require.False(t, doc.Truncated)
	require.Len(t, doc.Jobs, 12)
	got := map[string]deadJobJSON{}
	for _, j := range doc.Jobs {
		got[j.JobID] = j
	}
	for _, id := range ids {
		require.Contains(t, got, id)
	}
	j := got[ids[4]]
	require.Equal(t, "ledger.post", j.Kind)
	require.Equal(t, contract.ReasonAttemptsUsed, j.Reason)
	require.Equal(t, "smtp: 421 try again later (job 4)", j.Error)
	require.Equal(t, 5, j.Attempts)
	require.Equal(t, "email-worker", j.Function)
	require.Equal(t, q, j.SourceQueue)
	require.NotNil(t, j.FailedAt)
	require.Equal(t, "2026-11-21T12:05:00Z", j.FailedAt.Format(time.RFC3339))
	require.Nil(t, j.FirstReceivedAt)
	require.NotEmpty(t, j.MessageID)

	// Filters, table output.
	out, _, code = cli(t, "", "dlq", "list", "--dlq", dlq, "--kind", "ledger.post")
	require.Equal(t, 0, code)
	require.Contains(t, out, "JOB ID")
	require.Equal(t, 3, strings.Count(out, "ledger.post"))
	require.Contains(t, out, "3 shown, 12 scanned")
	out, _, code = cli(t, "", "dlq", "list", "--dlq", dlq, "--error", "(JOB 7)")
	require.Equal(t, 0, code)
	require.Contains(t, out, ids[7])
	require.Contains(t, out, "1 shown")

	// Show, as JSON and as text.
	out, errOut, code = cli(t, "", "--stack", stack, "dlq", "show", ids[3], "--json")
	require.Equal(t, 0, code, errOut)
	var show deadShowJSON
	require.NoError(t, json.Unmarshal([]byte(out), &show))
	require.Equal(t, ids[3], show.Job.JobID)
	require.Equal(t, "email.send", show.Job.Kind)
	require.JSONEq(t, envelopeBody(ids[3], "email.send", 3), show.Job.Body)
	var env jobs.Envelope
	require.NoError(t, json.Unmarshal(show.Job.Envelope, &env))
	require.JSONEq(t, `{"n":3}`, string(env.Args))
	out, _, code = cli(t, "", "--stack", stack, "dlq", "show", ids[3])
	require.Equal(t, 0, code)
	require.Contains(t, out, "attempts_exhausted")
	require.Contains(t, out, `"n": 3`)
	_, errOut, code = cli(t, "", "--stack", stack, "dlq", "show", "nope")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "not found")

	// Nothing was consumed.
	v, f := awstest.Counts(t, client, dlq)
	require.Equal(t, 12, v)
	require.Zero(t, f)
}

func TestDLQPurgeCommandAsksFirst(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	src := awstest.CreateQueue(t, cfg, "src", nil)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	seedDead(t, client, dlq.URL, src.URL, "p", 5, func(int) string { return "k" })

	out, errOut, code := cli(t, "n\n", "dlq", "purge", "--dlq", dlq.URL)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "Purge about 5 messages")
	require.Contains(t, errOut, "purge cancelled")
	require.Empty(t, out)
	_, _, code = cli(t, "", "dlq", "purge", "--dlq", dlq.URL) // no answer at all
	require.Equal(t, exitError, code)
	v, _ := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 5, v)

	out, _, code = cli(t, "yes\n", "dlq", "purge", "--dlq", dlq.URL)
	require.Equal(t, 0, code)
	require.Contains(t, out, "purged")
	require.Eventually(t, func() bool { v, f := awstest.Counts(t, client, dlq.URL); return v+f == 0 }, time.Minute, 200*time.Millisecond)

	// --yes skips the question.
	other := awstest.CreateQueue(t, cfg, "dlq2", nil)
	seedDead(t, client, other.URL, src.URL, "p", 2, func(int) string { return "k" })
	out, errOut, code = cli(t, "", "dlq", "purge", "--dlq", other.URL, "--yes")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "Purge about")
	require.Contains(t, out, "about 2 messages")
}

// Redrive of 1,000 dead jobs from a queue's DLQ back to the queue (named with -q: its DLQ comes
// from its RedrivePolicy): all 1,000 arrive, once each, and none is left in the DLQ.
func TestDLQRedrive1000(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	ids := seedDead(t, client, dlq.URL, src.URL, "r", 1000, func(int) string { return "email.send" })

	start := time.Now()
	out, errOut, code := cli(t, "", "dlq", "redrive", "-q", src.URL)
	elapsed := time.Since(start)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "moved 1000 of 1000 jobs")
	method := "manual"
	if awstest.HasMessageMoveTasks(t) {
		// Where SQS has message move tasks (AWS, LocalStack; not moto), --method auto uses one.
		method = "native"
		require.Contains(t, out, "(native, task ")
		require.NotContains(t, out, "manual move because")
		require.Regexp(t, `(?m)^redrive: \d+/1000 \(\d+%\) moved \(native\)$`, errOut)
	} else {
		require.Contains(t, out, "(manual)")
		require.Contains(t, out, "manual move because")
		// Not a terminal: plain progress lines, one per 10%.
		require.Regexp(t, `(?m)^redrive: \d+/1000 \(\d+%\) moved \(manual\)$`, errOut)
		require.GreaterOrEqual(t, strings.Count(errOut, "redrive: "), 5)
	}
	require.Contains(t, errOut, "redrive: 1000/1000 (100%)")

	possible := 0
	require.Contains(t, out, "; 0 still in the dead-letter queue\n")
	if m := regexp.MustCompile(`; (\d+) possible duplicates`).FindStringSubmatch(out); m != nil {
		possible, _ = strconv.Atoi(m[1])
	}
	got := drainIDs(t, client, src.URL)
	require.Len(t, got, 1000)
	extra := 0
	for _, id := range ids {
		require.GreaterOrEqual(t, got[id], 1, id)
		extra += got[id] - 1
	}
	// A send that got no clear answer and was made again may land twice; the redrive says so.
	require.LessOrEqual(t, extra, possible, "duplicates only where the redrive reports possible ones")
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Zero(t, v+f, "nothing left in the DLQ")
	t.Logf("redrive of 1000 jobs (%s): %s", method, elapsed.Round(time.Millisecond))
}

// A redrive killed outright (SIGKILL) halfway and run again moves every job: none lost, none left
// in the DLQ, and no more duplicates than the in-flight window (10 per batch × 4 workers). The DLQ
// is shared by 10 source queues: each job goes back to the queue in its jobkit.source_queue.
func TestDLQRedriveKilledMidwayAndRunAgain(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	bin := buildCLI(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	sources := sourceQueues(t, cfg, dlq, 10)
	ids := seedDeadFrom(t, client, dlq.URL, sources, "k", 1000, func(int) string { return "email.send" })
	const concurrency, window = 4, 40

	// The window and the rerun's wait for in-flight messages are the manual move's.
	args := []string{"--endpoint", awstest.Endpoint(), "dlq", "redrive", "--dlq", dlq.URL, "--progress", "plain",
		"--method", "manual", "--concurrency", strconv.Itoa(concurrency), "--visibility", "10s"}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	progress := regexp.MustCompile(`^redrive: (\d+)/(\d+)`)
	killedAt := -1
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := progress.FindStringSubmatch(sc.Text()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n >= 300 {
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				killedAt = n
				break
			}
		}
	}
	werr := cmd.Wait()
	require.Error(t, werr, "the first run was killed")
	require.GreaterOrEqual(t, killedAt, 300)
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Positive(t, v+f, "killed midway: jobs remain in the DLQ")
	t.Logf("killed at %d moved; DLQ then: %d visible, %d in flight", killedAt, v, f)

	// Run again to completion: it waits for the killed run's in-flight messages to come back.
	start := time.Now()
	out, err := exec.Command(bin, append(args, "--json")...).Output()
	require.NoError(t, err)
	var res redriveJSON
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, window, res.Window)
	require.Zero(t, res.LeftInFlight)
	t.Logf("second run: moved %d in %s", res.Moved, time.Since(start).Round(time.Millisecond))

	got := map[string]int{}
	for q, u := range sources {
		for id, n := range drainIDs(t, client, u) {
			got[id] += n
			i, err := strconv.Atoi(strings.TrimPrefix(id, "k-"))
			require.NoError(t, err)
			require.Equal(t, i%len(sources), q, "job %s went back to the queue it came from", id)
		}
	}
	// A job still in the DLQ is not lost: say so before counting.
	v, f = awstest.Counts(t, client, dlq.URL)
	require.Zero(t, v+f, "nothing left in the DLQ")
	dups := 0
	for _, id := range ids {
		require.GreaterOrEqual(t, got[id], 1, "job %s lost", id)
		require.LessOrEqual(t, got[id], 2, "job %s sent more than twice", id)
		dups += got[id] - 1
	}
	require.Len(t, got, 1000, "only the original ids")
	// The killed run can leave at most the window sent and not deleted; sends without a clear
	// answer that were made again (reported by the second run) may add to it.
	require.LessOrEqual(t, dups, window+int(res.PossibleDuplicates), "duplicates bounded by the in-flight window")
	t.Logf("after kill + rerun: 1000/1000 present, %d duplicates (window %d, possible duplicates reported by the rerun %d)", dups, window, res.PossibleDuplicates)
}

func TestEnqueueCommand(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	fifo := awstest.CreateQueue(t, cfg, "f", &awstest.QueueOptions{FIFO: true})

	out, errOut, code := cli(t, "", "enqueue", "email.send", "--args", `{"to":"a@example.com"}`, "--id", "job-1", "--queue", q.URL)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "enqueued email.send job job-1 to "+q.Name)
	_, _, code = cli(t, "", "enqueue", "email.send", "--queue", q.URL, "--delay", "10m")
	require.Equal(t, 0, code)
	got := drainIDs(t, client, q.URL)
	require.Equal(t, map[string]int{"job-1": 1}, got, "the delayed job is not visible yet")
	attrs, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	require.NoError(t, err)
	require.Equal(t, "1", attrs.Attributes["ApproximateNumberOfMessagesDelayed"])

	// FIFO without a group: a typed error, nothing sent.
	_, errOut, code = cli(t, "", "enqueue", "ledger.post", "--queue", fifo.URL)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "message group id")
	out, errOut, code = cli(t, "", "enqueue", "ledger.post", "--queue", fifo.URL, "--group", "acct-1", "--args", `{"cents":5}`)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "enqueued ledger.post")
	v, _ := awstest.Counts(t, client, fifo.URL)
	require.Equal(t, 1, v)
}

func writeJobs(t *testing.T, n int, line func(i int) string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.ndjson")
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i))
		b.WriteByte('\n')
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

// Bulk enqueue of 10,000 jobs into one queue, with plain progress lines (stderr is not a terminal).
func TestEnqueueFile10000PlainProgress(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q := awstest.CreateQueue(t, cfg, "bulk", nil)
	const total = 10000
	file := writeJobs(t, total, func(i int) string {
		return fmt.Sprintf(`{"kind":"email.send","id":"bulk-%05d","args":{"n":%d}}`, i, i)
	})

	start := time.Now()
	out, errOut, code := cli(t, "", "enqueue", "--file", file, "--queue", q.URL)
	elapsed := time.Since(start)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "enqueued 10000 of 10000 jobs (0 failed)")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	require.GreaterOrEqual(t, len(lines), 11)
	for _, l := range lines {
		require.Regexp(t, `^enqueue: \d+/10000 \(\d+%\) enqueued$`, l)
	}
	require.Equal(t, "enqueue: 10000/10000 (100%) enqueued", lines[len(lines)-1])
	require.NotContains(t, errOut, "\r", "no bar redraws")

	// A SendMessageBatch whose response is lost is retried by the SDK, and a Standard queue keeps
	// both copies (at-least-once): the queue holds every job, possibly a batch twice.
	v, f := awstest.Counts(t, client, q.URL)
	require.GreaterOrEqual(t, v+f, total)
	t.Logf("bulk enqueue of %d jobs: %s (%.0f jobs/s)", total, elapsed.Round(time.Millisecond), total/elapsed.Seconds())
}

// Each line of a file may name its queue (URL or name); the rest go to --queue.
func TestEnqueueFileRoutesLinesToTheirQueue(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	a := awstest.CreateQueue(t, cfg, "a", nil)
	b := awstest.CreateQueue(t, cfg, "b", nil)
	f := awstest.CreateQueue(t, cfg, "f", &awstest.QueueOptions{FIFO: true})
	file := writeJobs(t, 6, func(i int) string {
		switch i % 3 {
		case 0:
			return fmt.Sprintf(`{"kind":"k","id":"a%d"}`, i)
		case 1:
			return fmt.Sprintf(`{"kind":"k","id":"b%d","queue":%q}`, i, b.Name) // by name
		}
		return fmt.Sprintf(`{"kind":"k","id":"f%d","queue":%q,"group":"g"}`, i, f.URL)
	})
	out, errOut, code := cli(t, "", "enqueue", "--file", file, "--queue", a.URL, "--progress", "none")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "enqueued 6 of 6 jobs")
	require.Empty(t, errOut)
	require.Equal(t, map[string]int{"a0": 1, "a3": 1}, drainIDs(t, client, a.URL))
	require.Equal(t, map[string]int{"b1": 1, "b4": 1}, drainIDs(t, client, b.URL))
	require.Equal(t, map[string]int{"f2": 1, "f5": 1}, drainIDs(t, client, f.URL))
}

func TestEnqueueFileBadLineSendsNothing(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	q := awstest.CreateQueue(t, cfg, "bad", nil)
	file := writeJobs(t, 50, func(i int) string {
		switch i {
		case 2:
			return `{"kind":"","args":{}}`
		case 30:
			return `{"kind":"k","delay":"soon"}`
		case 40:
			return `not json`
		}
		return fmt.Sprintf(`{"kind":"k","args":{"n":%d}}`, i)
	})
	_, errOut, code := cli(t, "", "enqueue", "--file", file, "--queue", q.URL)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "nothing enqueued")
	require.Contains(t, errOut, "line 3:")
	require.Contains(t, errOut, "line 31:")
	require.Contains(t, errOut, "line 41:")
	v, _ := awstest.Counts(t, client, q.URL)
	require.Zero(t, v)
}

// On a terminal (a pty from script(1)) bulk enqueue draws a progress bar instead of lines.
func TestEnqueueFileProgressBarOnTTY(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("JOBKIT_REQUIRE_EMULATOR") == "1" { // under make test: no silent skip
			t.Fatal("script(1) not installed (Debian package bsdutils): no pty to test the bar with")
		}
		t.Skip("script(1) not installed: no pty to test the bar with")
	}
	cfg, client := awstest.SQS(t)
	bin := buildCLI(t)
	q := awstest.CreateQueue(t, cfg, "tty", nil)
	file := writeJobs(t, 300, func(i int) string { return fmt.Sprintf(`{"kind":"k","args":{"n":%d}}`, i) })

	command := strings.Join([]string{bin, "--endpoint", awstest.Endpoint(), "enqueue", "--file", file, "--queue", q.URL}, " ")
	out, err := exec.Command(script, "-qfec", command, "/dev/null").CombinedOutput()
	require.NoError(t, err, "%s", out)
	s := string(out)
	require.Contains(t, s, "enqueued 300 of 300 jobs")
	require.Contains(t, s, "\r", "the bar redraws in place")
	require.Contains(t, s, "300/300")
	require.Regexp(t, `100% \|█+\|`, s)
	require.NotRegexp(t, `(?m)^enqueue: \d+/300 \(`, s, "no plain lines on a terminal")
	v, _ := awstest.Counts(t, client, q.URL)
	require.Equal(t, 300, v)
}

// A dead job whose jobkit.source_queue names a queue that is not a source of the DLQ stays in the
// DLQ and is reported; --to, the operator's own choice, still moves it.
func TestDLQRedriveRefusesForgedSourceQueue(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	stack, q, dlq := createStack(t, cfg)
	victim := awstest.CreateQueue(t, cfg, "victim", nil)
	seedDeadFrom(t, client, dlq, []string{q, victim.URL}, "f", 6, func(int) string { return "email.send" })

	// Only the manual move reads jobkit.source_queue: a native move (SQS's message move task) sends
	// every message to the one destination it is given.
	out, errOut, code := cli(t, "", "--stack", stack, "dlq", "redrive", "--method", "manual", "--progress", "none")
	require.Equal(t, exitError, code, "jobs left behind: the redrive did not do all it was asked (%s)", errOut)
	require.Contains(t, errOut, "3 with no valid destination")
	require.Contains(t, out, "moved 3 of 6 jobs")
	require.Contains(t, out, "; 3 with no valid destination (")
	require.NotContains(t, out, "not selected", "counts that are zero are not named")
	require.Contains(t, out, "; 3 still in the dead-letter queue\n")
	require.Empty(t, drainIDs(t, client, victim.URL))
	require.Len(t, drainIDs(t, client, q), 3)
	v, f := awstest.Counts(t, client, dlq)
	require.Equal(t, 3, v)
	require.Zero(t, f)

	out, errOut, code = cli(t, "", "--stack", stack, "dlq", "redrive", "--to", victim.URL, "--progress", "none", "--json")
	require.Equal(t, 0, code, errOut)
	var doc redriveJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, int64(3), doc.Moved)
	require.Zero(t, doc.NoDestination)
	require.Len(t, drainIDs(t, client, victim.URL), 3)
}

// Dead jobs carry data from whoever could send a message. The human-readable output shows it with
// every control character escaped and each field capped; --json keeps the full values.
func TestDLQOutputEscapesHostileJobData(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	longKind := "k" + strings.Repeat("K", 19999)
	attrs := func(id, kind, errText string) map[string]sqstypes.MessageAttributeValue {
		return map[string]sqstypes.MessageAttributeValue{
			contract.AttrJobID: strAttr(id), contract.AttrKind: strAttr(kind), contract.AttrError: strAttr(errText),
			contract.AttrReason: strAttr(contract.ReasonCancelled),
		}
	}
	// SQS refuses a raw ESC in a body or attribute, but "\u001b" in the JSON envelope decodes to
	// one; CR and C1 controls (U+009B, a one-character CSI) pass raw.
	entries := []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("esc"), MessageBody: aws.String(`{"v":1,"id":"esc\u001b]0;pwned\u0007","kind":"k\u001b[2J","args":{"a":"\u001b[31m\u009b"}}`)},
		{Id: aws.String("cr"), MessageBody: aws.String(envelopeBody("cr", "k", 1)), MessageAttributes: attrs("cr", "k", "boom\rFORGED-ROW   ok")},
		{Id: aws.String("c1"), MessageBody: aws.String(envelopeBody("c1", "k", 2)), MessageAttributes: attrs("c1\u009b2J", "k\u0085", "\u009b31mred")},
		{Id: aws.String("long"), MessageBody: aws.String(envelopeBody("long", "k", 3)), MessageAttributes: attrs("long", longKind, strings.Repeat("E", 5000))},
		{Id: aws.String("body"), MessageBody: aws.String("not json\r\u009b\u202eevil")},
	}
	out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq.URL), Entries: entries})
	require.NoError(t, err)
	require.Empty(t, out.Failed)

	clean := func(what, s string) {
		t.Helper()
		for _, r := range s {
			require.False(t, (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || r == 0x202e, "%s: raw %U reaches the terminal", what, r)
		}
	}
	stdout, stderr, code := cli(t, "", "dlq", "list", "--dlq", dlq.URL)
	require.Equal(t, 0, code, stderr)
	clean("dlq list", stdout+stderr)
	require.Less(t, len(stdout), 2000, "a 5-row table stays small:\n%s", stdout)
	// Header, 5 rows, summary, and the hints of the two reasons shown (cancelled, redrive policy).
	require.Len(t, strings.Split(strings.TrimSpace(stdout), "\n"), 10)
	require.Contains(t, stdout, `esc\x1b]0;pwned\x07`)
	require.Contains(t, stdout, `k\x1b[2J`)
	require.Contains(t, stdout, `c1\u009b2J`)
	require.Contains(t, stdout, `\u009b31mred`)
	require.Contains(t, stdout, "k"+strings.Repeat("K", kindWidth-2)+"…")
	require.Regexp(t, `(?m)^cr +k +cancelled +0 +\S+ +boom FORGED-ROW ok$`, stdout) // one row, CR folded

	// show: the envelope and a body that is not one are escaped too.
	stdout, stderr, code = cli(t, "", "dlq", "show", "esc\x1b]0;pwned\x07", "--dlq", dlq.URL)
	require.Equal(t, 0, code, stderr)
	clean("dlq show", stdout+stderr)
	require.Contains(t, stdout, `job id:            esc\x1b]0;pwned\x07`)
	require.Contains(t, stdout, `"a": "\u001b[31m\u009b"`)
	stdout, stderr, code = cli(t, "", "dlq", "show", "cr", "--dlq", dlq.URL)
	require.Equal(t, 0, code, stderr)
	clean("dlq show", stdout+stderr)
	require.Contains(t, stdout, "error:\n  boom\\rFORGED-ROW   ok\n")
	list, _, _ := cli(t, "", "dlq", "list", "--dlq", dlq.URL, "--json")
	var doc deadListJSON
	require.NoError(t, json.Unmarshal([]byte(list), &doc))
	var bodyID string
	for _, j := range doc.Jobs {
		if j.JobID == "" {
			bodyID = j.MessageID
		}
	}
	stdout, stderr, code = cli(t, "", "dlq", "show", bodyID, "--dlq", dlq.URL)
	require.Equal(t, 0, code, stderr)
	clean("dlq show", stdout+stderr)
	require.Contains(t, stdout, "body (not a jobkit envelope):\n  not json\\r\\u009b\\u202eevil\n")

	// An error quoting job data is escaped as well.
	_, stderr, code = cli(t, "", "dlq", "show", "nope\u009b2J\r", "--dlq", dlq.URL)
	require.Equal(t, exitError, code)
	clean("error", stderr)

	// --json has the full values, as they are.
	kinds := map[string]bool{}
	for _, j := range doc.Jobs {
		kinds[j.Kind] = true
	}
	require.True(t, kinds[longKind])
	require.True(t, kinds["k\u001b[2J"])
	require.True(t, kinds["k\u0085"])
}

// --json output escapes C1 controls and bidirectional overrides, which a terminal would obey,
// and decodes to the same values.
func TestWriteJSONEscapesTerminalControls(t *testing.T) {
	t.Parallel()
	hostile := "kind\u009b2J\u202eexe.txt\u2066x\u2069"
	var buf bytes.Buffer
	require.NoError(t, writeJSON(&buf, map[string]string{"kind": hostile}))
	for _, r := range []rune{0x9b, 0x202e, 0x2066, 0x2069} {
		require.NotContains(t, buf.String(), string(r))
	}
	require.Contains(t, buf.String(), `\u009b`)
	require.Contains(t, buf.String(), `\u202e`)
	var back map[string]string
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, hostile, back["kind"])
}
