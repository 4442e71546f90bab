package devapp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/internal/devapp"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// e2eWorkload is 300 jobs over the three sample functions: emails and postings that fail two
// attempts before succeeding, that exhaust their attempts, and poison ones; transcodes of 1 s,
// one of 12 s, one failing its first attempt and two poison.
var e2eWorkload = devapp.Workload{
	Emails: 168, EmailRetries: 20, EmailExhausted: 3, EmailPoison: 5, LargeEmails: 2, LargeEmailBytes: 2 << 20,
	Accounts: 10, Postings: 110, PostingRetries: 10, PostingExhausted: 3, PostingPoison: 4,
	Transcodes: 19, TranscodeSeconds: 1, LongTranscodes: 1, LongTranscodeSeconds: 12,
	TranscodeRetries: 1, TranscodePoison: 2,
	RetryAttempts: 2, Seed: 300,
}

// testDisplay logs a progress line every 5 s.
type testDisplay struct {
	t    *testing.T
	last time.Duration
}

func (d *testDisplay) Update(c *devapp.Census, elapsed time.Duration) {
	if elapsed-d.last >= 5*time.Second || c.Full {
		d.last = elapsed
		d.t.Log(devapp.FormatLine(c, elapsed))
	}
}

func (d *testDisplay) Note(text string) { d.t.Log(text) }

// outputLines are the function output lines the checks read, counted per job.
type outputLines struct {
	emailsSent   map[string]int // by idempotency key
	transcodes   map[string]int // by job id
	willRetry    map[string]int // by job id: attempts failed by the fault plan (instrument.ErrInjected)
	ledgerMissed map[string]int // by job id: deliveries that did not run but counted as attempts
	// By job id, the attempts that failed for the fault plan (injected), those that failed
	// otherwise (a retry the emulator caused), and those still going at the invocation's deadline
	// (reported failed: an attempt, unless the run ends in a snooze the ledger records, and it
	// may log its retry too).
	injectedAt, otherAt, abandonedAt map[string]map[int]bool
	deadLettered                     map[string]int // by job id
	orderRefusals                    int
}

func readOutput(t *testing.T, out []byte) outputLines {
	l := outputLines{emailsSent: map[string]int{}, transcodes: map[string]int{}, willRetry: map[string]int{},
		ledgerMissed: map[string]int{}, deadLettered: map[string]int{}, injectedAt: map[string]map[int]bool{}, otherAt: map[string]map[int]bool{}, abandonedAt: map[string]map[int]bool{}}
	mark := func(m map[string]map[int]bool, id string, attempt int) {
		if m[id] == nil {
			m[id] = map[int]bool{}
		}
		m[id][attempt] = true
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "] {"); i >= 0 {
			line = line[i+2:]
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		attempt, _ := m["attempt"].(float64)
		switch str("event") { // the runtime's events (event.Write)
		case string(event.Retried):
			// A retry the plan did not inject is the emulator's doing (LocalStack's DynamoDB
			// answering a burst's first calls after the invocation's deadline): at-least-once
			// delivery, which the checks below still hold to one effect per job.
			if strings.Contains(str("error"), instrument.ErrInjected.Error()) {
				l.willRetry[str("job_id")]++
				mark(l.injectedAt, str("job_id"), int(attempt))
			} else {
				mark(l.otherAt, str("job_id"), int(attempt))
			}
		case string(event.Returned):
			if str("note") == event.NoteAbandoned {
				mark(l.abandonedAt, str("job_id"), int(attempt))
			}
		case string(event.Dead):
			l.deadLettered[str("job_id")]++
		}
		switch str("msg") {
		case samplejobs.EmailSentMessage:
			l.emailsSent[str("idempotency_key")]++
		case samplejobs.TranscodeDoneMessage:
			l.transcodes[str("job_id")]++
		case "delivery ledger: could not record a delivery that did not run; it counts as an attempt":
			// The emulator's DynamoDB did not answer in time: the delivery counts as an attempt
			// (the documented fallback), so the fault plan, which fails attempts by number, may
			// inject one failure fewer.
			l.ledgerMissed[str("job_id")]++
		}
		if strings.Contains(str("error"), "out of order") {
			l.orderRefusals++
		}
	}
	require.NoError(t, sc.Err())
	return l
}

// otherFailures counts job id's attempts that failed for other reasons than the fault plan:
// certain, those that logged a retry the plan did not inject; maybe, those that ran into the
// invocation's deadline and logged nothing else (an attempt, unless the run ended in a snooze
// the delivery ledger recorded). Each attempt so spent makes the plan, which fails attempts by
// number, inject one failure fewer, and a dead job's first run come one attempt later.
func (l outputLines) otherFailures(id string) (certain, maybe int) {
	for a := range l.otherAt[id] {
		if !l.injectedAt[id][a] {
			certain++
		}
	}
	for a := range l.abandonedAt[id] {
		if !l.injectedAt[id][a] && !l.otherAt[id][a] {
			maybe++
		}
	}
	return certain, maybe
}

// drainDLQ receives and deletes every message of a dead-letter queue (the test owns it).
func drainDLQ(t *testing.T, ctx context.Context, q *sqs.Client, url string) []inspect.DeadJob {
	var dead []inspect.DeadJob
	empty := 0
	for empty < 2 {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			dead = append(dead, inspect.ParseDeadJob(m))
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		del, err := q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, del.Failed)
	}
	return dead
}

type ledgerItem struct {
	Account  string   `dynamodbav:"account"`
	Balance  int64    `dynamodbav:"balance"`
	Postings int      `dynamodbav:"postings"`
	Applied  []string `dynamodbav:"applied"`
	LastSeq  int64    `dynamodbav:"last_seq"`
}

// The synthesized sample stack runs offline end to end: 300 jobs with injected transient
// failures and poison jobs over the three functions. Every job either succeeded exactly once
// (its idempotency record, its side effect: the email line, the ledger posting, the transcode
// output) or is in its dead-letter queue with the reason its fault implies; every account's
// postings applied in order; nothing is lost; no function process outlives the run.
//
// Unlike AWS, neither emulator runs the functions (moto runs no Lambda code, LocalStack's Lambda
// needs Docker) nor fires Scheduler schedules: the offline Lambda runtime, event source mappings
// and schedule runner (lambdaruntime, esm, schedfire) do, against the emulator's queues and tables.
func TestEndToEnd(t *testing.T) {
	cfg := awstest.Config(t)
	ctx := context.Background()
	root, err := devapp.ModuleRoot(".")
	require.NoError(t, err)
	prefix := awstest.Prefix("e2e")

	out := &awstest.SyncBuffer{}
	t.Cleanup(func() {
		// On failure, keep the functions' output for a look.
		if !t.Failed() {
			return
		}
		if f, err := os.CreateTemp("", "jobkit-e2e-*.log"); err == nil {
			_, _ = f.Write(out.Bytes())
			_ = f.Close()
			t.Logf("the functions' output is in %s", f.Name())
		}
	})
	// The outbox's jobs go through the state table's stream: on LocalStack, whose stream records
	// came late or not at all alongside other stream readers (docs/emulators.md), the run leaves
	// them out and says so; on moto they are part of it.
	outboxDemo := devapp.OutboxDemo{Accounts: 3}
	if awstest.Emulator() == awstest.EmulatorLocalStack {
		outboxDemo = devapp.OutboxDemo{}
		t.Log("LocalStack: no outbox jobs in this run (stream records late or missing, docs/emulators.md)")
	}
	// The bound on the drain: LocalStack's DynamoDB answering past an invocation's deadline under
	// load leaves the messages of that batch invisible until their visibility timeout (a minute)
	// ends, and a FIFO group can meet that several times in a row.
	timeout := 4 * time.Minute
	if awstest.Emulator() == awstest.EmulatorLocalStack {
		timeout = 7 * time.Minute
	}
	start := time.Now()
	res, err := devapp.Run(ctx, devapp.Config{
		AWS: cfg, Root: root, Prefix: prefix, Workload: e2eWorkload,
		Once: true, Timeout: timeout, Display: &testDisplay{t: t},
		FunctionOutput: out, Keep: true, BuildDir: t.TempDir(), OutboxDemo: outboxDemo,
	})
	if res != nil && res.Deployment != nil {
		t.Cleanup(func() { _ = res.Deployment.Destroy(context.Background()) })
	}
	require.NoError(t, err, "function output tail:\n%s", tail(out.Bytes(), 40))
	t.Logf("run: %s, stack up %s (synthesized: %v); %s", time.Since(start).Round(100*time.Millisecond),
		res.Elapsed.Round(100*time.Millisecond), res.Synthesized, res.Summary)
	require.Empty(t, res.LeftBehind, "function processes outlived the run")
	require.True(t, res.Drained, "every job succeeded or was dead-lettered")
	require.Zero(t, res.Lost)
	// The outbox: each account's welcome email forwarded from the state table's stream (its item
	// deleted) and run.
	require.Len(t, res.Outbox.JobIDs, outboxDemo.Accounts)
	require.Zero(t, res.Outbox.Left, "outbox items the forwarder did not send")
	if outboxDemo.Accounts > 0 {
		require.Positive(t, res.Outbox.Filtered, "the state table's other writes never invoked the forwarder")
	}
	for _, id := range res.Outbox.JobIDs {
		require.True(t, res.Census.Succeeded[id], "outbox job %s ran", id)
	}

	d, tr := res.Deployment, res.Tracker
	queues := map[string]devapp.Queue{}
	for _, q := range tr.Queues() {
		queues[q.Name] = q
	}
	for _, name := range []string{samplejobs.QueueEmail, samplejobs.QueueLedger, samplejobs.QueueTranscode} {
		require.Contains(t, queues, name)
	}
	db, q := dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)

	// The raw records.
	records := map[string]string{} // idempotency key -> status
	var ledger []ledgerItem
	for _, tbl := range d.Tables {
		p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			require.NoError(t, err)
			for _, item := range page.Items {
				if _, ok := item[samplejobs.LedgerAccountAttr]; ok {
					var li ledgerItem
					require.NoError(t, attributevalue.UnmarshalMap(item, &li))
					ledger = append(ledger, li)
					continue
				}
				if _, ok := item[idempotency.AttrNotRun]; ok {
					continue // the delivery ledger's count of deliveries that ran no job, not a job record
				}
				var rec struct{ ID, Status string }
				require.NoError(t, attributevalue.UnmarshalMap(item, &rec))
				records[rec.ID] = rec.Status
			}
		}
	}
	dead := map[string][]inspect.DeadJob{}
	ndead := 0
	for _, qu := range queues {
		depth, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(qu.URL),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		require.NoError(t, err)
		for _, a := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed} {
			require.Equal(t, "0", depth.Attributes[string(a)], "%s %s", qu.Name, a)
		}
		for _, j := range drainDLQ(t, ctx, q, qu.DLQURL) {
			dead[j.JobID] = append(dead[j.JobID], j)
			ndead++
		}
	}
	lines := readOutput(t, out.Bytes())
	require.Zero(t, lines.orderRefusals, "no posting arrived out of order")

	// Every job, against what its faults imply.
	var (
		tracked                       = tr.Jobs()
		wantSucceeded, wantDead, nRet int
		minRet                        int // jobs that must have failed an attempt
		retriedApart                  []string
		enqueued                      int
		postings                      = map[string][]samplejobs.PostLedger{} // account -> applied, in seq order
	)
	for _, j := range tracked {
		qu := queues[j.Queue]
		if j.Args == nil { // a schedule's tick: it must have succeeded too
			require.Equal(t, "COMPLETED", records[j.IdempotencyKey()], "tick %s", j.ID)
			wantSucceeded++
			continue
		}
		enqueued++
		f := j.Faults
		outcome, reason := devapp.Expect(f, qu.MaxAttempts)
		otherCertain, otherMaybe := lines.otherFailures(j.ID)
		spentMaybe := lines.ledgerMissed[j.ID] + otherCertain + otherMaybe // attempts the plan may not have had
		retried := lines.willRetry[j.ID]+len(lines.otherAt[j.ID]) > 0
		if retried {
			nRet++
		}
		if e := tr.Effects(j); retried != (e.FailedAttempts > 0 || e.BatchFailed) {
			retriedApart = append(retriedApart, fmt.Sprintf("%s (output: %v, the run's count: %+v)", j.ID, retried, e))
		}
		if f.FailAttempts > spentMaybe && !qu.FIFO {
			minRet++
		}
		id := fmt.Sprintf("%s %s %+v", j.Kind, j.ID, j.Args)
		switch outcome {
		case devapp.Succeeds:
			wantSucceeded++
			require.Empty(t, dead[j.ID], "%s: not dead-lettered", id)
			if qu.FIFO {
				// A posting behind a failing one of its account is handed back unrun with it,
				// and every delivery counts as an attempt: it may start past its failing ones.
				require.LessOrEqual(t, lines.willRetry[j.ID], f.FailAttempts, "%s: failed attempts", id)
			} else {
				// Exact, but for the deliveries the ledger could not record and the attempts
				// that failed for the emulator's reasons (each makes every later run one attempt
				// further on).
				require.LessOrEqual(t, lines.willRetry[j.ID], f.FailAttempts, "%s: failed attempts", id)
				require.GreaterOrEqual(t, lines.willRetry[j.ID], f.FailAttempts-spentMaybe, "%s: failed attempts", id)
			}
			switch a := j.Args.(type) {
			case samplejobs.SendEmail:
				require.Equal(t, "COMPLETED", records[j.IdempotencyKey()], id)
				require.Equal(t, 1, lines.emailsSent[j.ID], "%s: sent exactly once", id)
			case samplejobs.PostLedger:
				require.Equal(t, "COMPLETED", records[j.IdempotencyKey()], id)
				postings[a.Account] = append(postings[a.Account], a)
			case samplejobs.TranscodeVideo:
				require.Equal(t, 1, lines.transcodes[j.ID], "%s: transcoded exactly once", id)
			}
		case devapp.DeadLettered:
			wantDead++
			require.Len(t, dead[j.ID], 1, "%s: in its dead-letter queue once", id)
			dj := dead[j.ID][0]
			require.Equal(t, reason, dj.Reason, id)
			require.Equal(t, j.Kind, dj.Kind, id)
			require.Equal(t, qu.URL, dj.SourceQueue, id)
			require.Equal(t, qu.Function, dj.Function, id)
			// The attempt the job first ran at: one after each attempt that failed because of the
			// emulator, and perhaps one after each run that ran into the deadline and each
			// not-run delivery the ledger could not record (the write may have been applied
			// though its answer came too late), so it is a range.
			first := 1 + otherCertain
			firstLatest := first + otherMaybe + lines.ledgerMissed[j.ID]
			if qu.FIFO {
				first = dj.Attempts - lines.willRetry[j.ID]
				firstLatest = first
				require.GreaterOrEqual(t, first, 1, id)
			}
			if reason == contract.ReasonAttemptsUsed {
				require.GreaterOrEqual(t, dj.Attempts, max(qu.MaxAttempts, first), id)
				require.LessOrEqual(t, dj.Attempts, max(qu.MaxAttempts, firstLatest), id)
				require.Contains(t, dj.Error, instrument.ErrInjected.Error(), id)
			} else {
				require.GreaterOrEqual(t, dj.Attempts, first, id)
				require.LessOrEqual(t, dj.Attempts, firstLatest, id)
				require.Zero(t, lines.willRetry[j.ID], id)
				require.Contains(t, dj.Error, instrument.ErrPoison.Error(), id)
			}
			require.NotContains(t, records, j.IdempotencyKey(), "%s: no idempotency record left", id)
			require.Zero(t, lines.emailsSent[j.ID]+lines.transcodes[j.ID], "%s: no side effect", id)
			require.Equal(t, 1, lines.deadLettered[j.ID], id)
		}
	}
	require.Equal(t, e2eWorkload.Size()+outboxDemo.Accounts, enqueued, "the workload's jobs and the outbox's")
	require.Equal(t, 300, e2eWorkload.Size())
	require.Equal(t, wantDead, ndead, "the dead-letter queues hold the dead jobs and nothing else")
	for key, status := range records {
		if strings.HasPrefix(key, idempotency.NotRunKeyPrefix) {
			continue // the runtime's count of deliveries that ran no job (jobs.Config.Deliveries)
		}
		if strings.HasPrefix(key, state.PrefixJob) || strings.HasPrefix(key, state.PrefixUnique) || strings.HasPrefix(key, state.PrefixBatch) {
			continue // job states (jobs/state) in the same table: the email function keeps them
		}
		if strings.HasPrefix(key, ratelimit.KeyPrefix) {
			continue // the mail provider's rate-limit bucket (the email function's limit)
		}
		if strings.HasPrefix(key, instrument.MailKeyPrefix) {
			continue // the mail provider's record of the idempotency keys it accepted
		}
		require.Equal(t, "COMPLETED", status, "record %s left in progress", key)
	}

	// The ledger: every account's postings applied once each, in order, and its balance is their sum.
	byAccount := map[string]ledgerItem{}
	for _, li := range ledger {
		byAccount[li.Account] = li
	}
	for account, ps := range postings {
		sort.Slice(ps, func(i, k int) bool { return ps[i].Seq < ps[k].Seq })
		var want []string
		var sum int64
		for _, p := range ps {
			want = append(want, p.PostingID)
			sum += p.AmountCents
		}
		li, ok := byAccount[account]
		require.True(t, ok, account)
		require.Equal(t, want, li.Applied, "%s: postings applied once each, in order", account)
		require.Equal(t, sum, li.Balance, account)
		require.Equal(t, len(want), li.Postings, account)
		require.Equal(t, ps[len(ps)-1].Seq, li.LastSeq, account)
	}
	require.Len(t, postings, e2eWorkload.Accounts)

	// The run's own summary agrees with the records.
	require.Equal(t, devapp.Summary{Succeeded: wantSucceeded, Retried: nRet, Dead: wantDead}, res.Summary,
		"retried by the output but not by the run's count, or the other way: %v", retriedApart)
	require.GreaterOrEqual(t, nRet, minRet)
	require.Greater(t, minRet, 0)
	require.Greater(t, wantDead, 0)

	// The large emails went through S3 (claim checks), ran, and left no object behind.
	require.Len(t, res.LargeJobs, e2eWorkload.LargeEmails)
	for _, id := range res.LargeJobs {
		require.Equal(t, "COMPLETED", records[samplejobs.KindSendEmail+"#"+id], "large job %s", id)
	}
	var bucket string
	for _, st := range d.Stacks {
		for k, v := range st.Outputs {
			if strings.HasPrefix(k, contract.OutputPayloadBucketPrefix) {
				bucket = v
			}
		}
	}
	require.NotEmpty(t, bucket, "the sample stack has a payload bucket")
	left, err := jobs.NewPayloadS3Client(cfg).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	require.Empty(t, left.Contents, "every large job's object was deleted after it succeeded")
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
