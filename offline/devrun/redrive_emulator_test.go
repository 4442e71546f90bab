package devrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/offline/devrun"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Mail is a test job: Poison cancels it on every run.
type Mail struct {
	Poison bool `json:"poison"`
}

func (Mail) Kind() string { return "mail.send" }

// inProcess invokes the jobs runtime in this process, as the mapping's function.
type inProcess func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

func (h inProcess) Invoke(ctx context.Context, payload []byte) (lambdaruntime.Result, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return lambdaruntime.Result{}, err
	}
	resp, err := h(ctx, ev)
	if err != nil {
		return lambdaruntime.Result{}, err
	}
	out, err := json.Marshal(resp)
	return lambdaruntime.Result{Outcome: lambdaruntime.Success, Payload: out}, err
}

// lines hands each whole line written to read, as devstack hands a function's output.
type lines struct {
	mu   sync.Mutex
	read func([]byte)
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range bytes.Split(p, []byte("\n")) {
		if len(line) > 0 {
			l.read(append([]byte("[mail] "), line...))
		}
	}
	return len(p), nil
}

// The case a run on moto found: a poison job is dead-lettered by the runtime, redriven by an
// operator (Inspector.Redrive, the manual move the emulator needs), fails again and is back in the
// dead-letter queue. It is one dead job — before, counted by message, it was also one lost job and
// the run exited 1. Should its dead-letter message then go, it is lost, and named.
func TestCounterRedrivenJobDeadAgainIsDead(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	main, dlq := awstest.QueueWithDLQ(t, cfg, "main", &awstest.QueueOptions{MaxReceiveCount: 5})
	counter := devrun.NewCounter(client, mailDeployment(main, dlq))

	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[Mail](func(_ context.Context, job *jobs.Job[Mail]) error {
		if job.Args.Poison {
			return jobs.Cancel(errors.New("poison pill"))
		}
		return nil
	}))
	handler := jobs.NewLambdaHandler(workers, jobs.Config{
		QueueURL: main.URL, DLQURL: dlq.URL, SQS: client, FunctionName: "mail", Metrics: io.Discard,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), OnEvent: event.Write(&lines{read: counter.ReadLine}),
	}).HandleSQS
	poller, err := esm.New(client, inProcess(handler), esm.Mapping{QueueURL: main.URL, QueueARN: main.ARN, ReportBatchItemFailures: true},
		&esm.Options{OnBatch: func(rep esm.BatchReport) { counter.OnBatch("mail", rep) }, LongPoll: time.Second})
	require.NoError(t, err)
	// drain runs batches until the queue holds nothing (PollOnce waits for a first message until
	// its context ends).
	drain := func() {
		for {
			pctx, stop := context.WithTimeout(ctx, 2*time.Second)
			poller.PollOnce(pctx)
			stop()
			a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(main.URL),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
			require.NoError(t, err)
			if a.Attributes["ApproximateNumberOfMessages"] == "0" && a.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" {
				return
			}
		}
	}
	for _, j := range []struct {
		id   string
		args Mail
	}{{"poison-1", Mail{Poison: true}}, {"fine-1", Mail{}}} {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(main.URL),
			MessageBody: aws.String(jobstest.Body(j.args, &jobstest.MessageOpts{ID: j.id}))})
		require.NoError(t, err)
	}
	drain()

	res, err := inspect.New(cfg).Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveManual, Sources: []string{main.URL}, InFlightWait: -1})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Moved, "the poison job went back to its queue")
	drain()

	census, err := counter.Settle(ctx)
	require.NoError(t, err)
	require.Equal(t, "DEV summary: succeeded=1 retried=0 dead=1 lost=0 cancelled=0", census.Summary())
	require.Equal(t, 2, census.Seen, "the redriven job is the same job")
	require.NoError(t, census.LostError())

	// The dead-letter message goes (a purge, a consumer that is not jobkit's): now it is lost.
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	_, err = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq.URL), ReceiptHandle: out.Messages[0].ReceiptHandle})
	require.NoError(t, err)
	census, err = counter.Settle(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, census.Lost)
	require.Equal(t, []string{"poison-1 (mail.send, Mail): dead-lettered on attempt 1 (cancelled), last error: jobs: cancelled: poison pill"}, census.LostLines())
	require.EqualError(t, census.LostError(), "1 job(s) lost: poison-1 (mail.send, Mail): dead-lettered on attempt 1 (cancelled), last error: jobs: cancelled: poison pill")
}
