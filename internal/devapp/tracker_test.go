package devapp_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/internal/devapp"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/schedfire"
)

const base = "https://sqs.us-east-1.amazonaws.com/123456789012/"

// sampleDeployment is the shape of the sample stack's deployment: the queue outputs, the
// functions' environment and the event source mappings.
func sampleDeployment() *deploy.Deployment {
	d := &deploy.Deployment{Region: "us-east-1", AccountID: "123456789012"}
	outputs := map[string]string{}
	for _, name := range []string{"Transcode", "Email", "Ledger"} {
		url := base + name + "Queue"
		if name == "Ledger" {
			url += ".fifo"
		}
		outputs["JobkitQueue"+name] = url
		outputs["JobkitDlq"+name] = url + "-dlq"
		env := map[string]string{contract.EnvMaxAttempts: "5", contract.EnvDLQURL: url + "-dlq"}
		if name != "Transcode" {
			env[contract.EnvIdempotencyTable] = "idem"
		} else {
			env[contract.EnvMaxAttempts] = "3"
		}
		d.Functions = append(d.Functions, deploy.Function{Name: name + "Fn", Env: env})
		d.Mappings = append(d.Mappings, deploy.EventSourceMapping{Function: name + "Fn", QueueURL: url, Enabled: true})
	}
	d.Stacks = []deploy.Stack{{Name: "JobkitState", Outputs: outputs}}
	return d
}

func TestTrackerQueuesAndRoutes(t *testing.T) {
	t.Parallel()
	tr, err := devapp.NewTracker(aws.Config{Region: "us-east-1"}, sampleDeployment())
	require.NoError(t, err)
	var names []string
	for _, q := range tr.Queues() {
		names = append(names, q.Name)
	}
	require.Equal(t, []string{"Email", "Ledger", "Transcode"}, names, "the sample's order")
	qs := tr.Queues()
	require.Equal(t, devapp.Queue{Name: "Ledger", URL: base + "LedgerQueue.fifo", DLQURL: base + "LedgerQueue.fifo-dlq",
		FIFO: true, Function: "LedgerFn", MaxAttempts: 5, IdempotencyTable: "idem"}, qs[1])
	require.Equal(t, 3, qs[2].MaxAttempts)
	require.Empty(t, qs[2].IdempotencyTable)
	require.Equal(t, map[string]string{
		samplejobs.KindSendEmail: base + "EmailQueue", samplejobs.KindEmailBatchDone: base + "EmailQueue",
		samplejobs.KindPostLedger: base + "LedgerQueue.fifo", samplejobs.KindTranscodeVideo: base + "TranscodeQueue",
	}, tr.Routes())

	_, err = devapp.NewTracker(aws.Config{}, &deploy.Deployment{})
	require.Error(t, err, "not a sample stack")
}

// A queue with priority lanes: its lanes follow the sample's queues in lane order, and Lanes gives
// the jobs client's routing from the default lane's URL.
func TestTrackerLanes(t *testing.T) {
	t.Parallel()
	d := sampleDeployment()
	urls := map[string]string{}
	for _, lane := range []string{"bulk", "critical", "default"} {
		name := contract.LaneQueueName(samplejobs.QueueNotify, lane)
		urls[lane] = base + name + "Queue"
		d.Stacks[0].Outputs["JobkitQueue"+name] = urls[lane]
	}
	tr, err := devapp.NewTracker(aws.Config{Region: "us-east-1"}, d)
	require.NoError(t, err)
	var names []string
	for _, q := range tr.Queues() {
		names = append(names, q.Name)
	}
	require.Equal(t, []string{"Email", "Ledger", "Transcode", "NotifyDefault", "NotifyCritical", "NotifyBulk"}, names)
	require.Equal(t, map[string]map[string]string{urls["default"]: urls}, tr.Lanes())
	require.Equal(t, urls["default"], tr.Routes()[samplejobs.KindSendNotification], "without a Priority: the default lane")

	plain, err := devapp.NewTracker(aws.Config{Region: "us-east-1"}, sampleDeployment())
	require.NoError(t, err)
	require.Nil(t, plain.Lanes(), "no lanes deployed")
}

// The tracker reads the functions' output lines, the mappings' reports and the schedules' ticks.
func TestTrackerEffects(t *testing.T) {
	t.Parallel()
	tr, err := devapp.NewTracker(aws.Config{Region: "us-east-1"}, sampleDeployment())
	require.NoError(t, err)
	tr.Add(jobs.EnqueueResult{ID: "e1", Kind: samplejobs.KindSendEmail, QueueURL: base + "EmailQueue"}, samplejobs.SendEmail{To: "a@b"}, "", "")
	tr.Add(jobs.EnqueueResult{ID: "v1", Kind: samplejobs.KindTranscodeVideo, QueueURL: base + "TranscodeQueue"}, samplejobs.TranscodeVideo{}, "", "")
	tr.Add(jobs.EnqueueResult{ID: "x", Err: fmt.Errorf("not sent")}, samplejobs.SendEmail{}, "", "")
	tr.OnFire(schedfire.Firing{Schedule: "s", JobID: "sched:s:t", Kind: samplejobs.KindPostLedger, QueueURL: base + "LedgerQueue.fifo",
		Body: `{"v":1,"id":"sched:s:t","kind":"ledger.post","args":{},"key":"k1"}`})
	tr.OnFire(schedfire.Firing{JobID: "elsewhere", QueueURL: base + "Other"})

	out := tr.Output(nil)
	write := func(s string) {
		_, err := out.Write([]byte(s))
		require.NoError(t, err)
	}
	write(`[EmailFn] {"event":"retried","job_id":"e1","kind":"email.send","attempt":1}` + "\n")
	write(`[EmailFn] {"level":"INFO","msg":"email sent","idempotency_key":"e1"}` + "\n[Transcode")
	write(`Fn] {"msg":"transcode done","job_id":"v1"}` + "\nnot json\n")
	tr.OnBatch("TranscodeFn", esm.BatchReport{Verdict: esm.BatchFailed, Bodies: []string{`{"v":1,"id":"v1","kind":"video.transcode"}`, "junk"}})
	tr.OnBatch("EmailFn", esm.BatchReport{Verdict: esm.Partial, Bodies: []string{`{"v":1,"id":"e1","kind":"email.send"}`}})

	js := tr.Jobs()
	require.Len(t, js, 3)
	require.Equal(t, "Email", js[0].Queue)
	require.Equal(t, "email.send#e1", js[0].IdempotencyKey())
	require.Equal(t, devapp.Effects{FailedAttempts: 1, EmailsSent: 1}, tr.Effects(js[0]))
	require.Equal(t, devapp.Effects{TranscodesDone: 1, BatchFailed: true}, tr.Effects(js[1]))
	require.Equal(t, "ledger.post#k1", js[2].IdempotencyKey(), "a tick's key comes from its envelope")
	require.Equal(t, "s", js[2].Schedule)
	require.Nil(t, js[2].Args)
}
