package zzscratch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/localstack/awstest"
	"github.com/jobkit-go/jobkit/localstack/deploy"
	"github.com/jobkit-go/jobkit/localstack/devstack"
	"github.com/jobkit-go/jobkit/localstack/esm"
)

func TestRealStack(t *testing.T) {
	cfg := awstest.Config(t)
	ctx := context.Background()
	t0 := time.Now()
	d, err := deploy.Deploy(ctx, deploy.NewClients(cfg), &deploy.Options{CDKOut: "../../cdk.out", Prefix: fmt.Sprintf("real%d-", time.Now().Unix()%100000), BuildDir: "/tmp/jkbuild"})
	if d != nil {
		defer d.Destroy(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Log("deploy", time.Since(t0))
	var batches atomic.Int64
	logf, _ := os.Create("/tmp/realstack.log")
	defer logf.Close()
	st, err := devstack.Start(ctx, devstack.Config{AWS: cfg, Deployment: d, Output: logf, Logger: slog.New(slog.NewJSONHandler(logf, nil)),
		OnBatch: func(fn string, rep esm.BatchReport) { batches.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	q := sqs.NewFromConfig(cfg)
	client, err := jobs.NewClient(q, jobs.ClientOptions{Queues: map[string]string{
		samplejobs.KindSendEmail:      d.Queue("EmailQueueA81ECD67").URL,
		samplejobs.KindPostLedger:     d.Queue("LedgerQueue1C2C8303").URL,
		samplejobs.KindTranscodeVideo: d.Queue("TranscodeQueue8729063B").URL,
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		args := samplejobs.SendEmail{To: "u" + strconv.Itoa(i) + "@x", Subject: "hi"}
		if i == 3 {
			args.FailAttempts = 1
		}
		if i == 4 {
			args.Poison = true
		}
		if _, err := client.Enqueue(ctx, args, nil); err != nil {
			t.Fatal(err)
		}
		acct := "acct" + strconv.Itoa(i%3)
		if _, err := client.Enqueue(ctx, samplejobs.PostLedger{Account: acct, PostingID: "p" + strconv.Itoa(i), AmountCents: 100}, &jobs.EnqueueOpts{GroupID: acct}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Enqueue(ctx, samplejobs.TranscodeVideo{VideoID: "v1", Seconds: 2}, nil); err != nil {
		t.Fatal(err)
	}
	count := func(url string) (int, int) {
		out, _ := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
		a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
		b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
		return a, b
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		total := 0
		for _, ql := range []string{"EmailQueueA81ECD67", "LedgerQueue1C2C8303", "TranscodeQueue8729063B"} {
			a, b := count(d.Queue(ql).URL)
			total += a + b
		}
		if total == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, ql := range []string{"EmailQueueA81ECD67", "LedgerQueue1C2C8303", "TranscodeQueue8729063B", "EmailDLQAAAC6D38", "LedgerDLQ16B8ABAC", "TranscodeDLQ723888F5"} {
		a, b := count(d.Queue(ql).URL)
		t.Log(ql, a, b)
	}
	t.Log("stats", st.Stats(), "batches", batches.Load(), "elapsed", time.Since(t0))
	pids := st.PIDs()
	t.Log("pids", pids)
	t1 := time.Now()
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Log("stop", time.Since(t1), st.PIDs())
}
