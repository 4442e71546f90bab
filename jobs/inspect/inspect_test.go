package inspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// createStack deploys a stack with two queue pairs: "Email" names its DLQ in an output, "Ledger"
// (FIFO) only in its RedrivePolicy.
func createStack(t *testing.T, cfn *cloudformation.Client, prefix string) string {
	t.Helper()
	ctx := context.Background()
	name := awstest.Name(t, "stack")
	tpl := map[string]any{
		"Resources": map[string]any{
			"EmailDlq": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"QueueName": prefix + "-email-dlq"}},
			"Email": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{
				"QueueName":     prefix + "-email",
				"RedrivePolicy": map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []string{"EmailDlq", "Arn"}}, "maxReceiveCount": 5},
			}},
			"LedgerDlq": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"QueueName": prefix + "-ledger-dlq.fifo", "FifoQueue": true}},
			"Ledger": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{
				"QueueName": prefix + "-ledger.fifo", "FifoQueue": true,
				"RedrivePolicy": map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []string{"LedgerDlq", "Arn"}}, "maxReceiveCount": 5},
			}},
		},
		"Outputs": map[string]any{
			"JobkitQueueEmail":  map[string]any{"Value": map[string]any{"Ref": "Email"}},
			"JobkitDlqEmail":    map[string]any{"Value": map[string]any{"Ref": "EmailDlq"}},
			"JobkitQueueLedger": map[string]any{"Value": map[string]any{"Ref": "Ledger"}},
			"SomethingElse":     map[string]any{"Value": "ignored"},
		},
	}
	body, err := json.Marshal(tpl)
	require.NoError(t, err)
	_, err = cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(string(body))})
	require.NoError(t, err)
	awstest.Cleanup(t, "stack "+name, func(ctx context.Context) error {
		_, err := cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(name)})
		return err
	})
	w := cloudformation.NewStackCreateCompleteWaiter(cfn, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	require.NoError(t, w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}, time.Minute))
	return name
}

func TestResolveFromStackOutputsAndFlags(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	in := inspect.New(cfg)
	prefix := awstest.Name(t, "q")
	stack := createStack(t, cloudformation.NewFromConfig(cfg), prefix)

	qs, err := in.Resolve(ctx, inspect.Target{Stack: stack})
	require.NoError(t, err)
	require.Len(t, qs, 2)
	require.Equal(t, "Email", qs[0].Name)
	require.Equal(t, prefix+"-email", awsarn.QueueName(qs[0].URL))
	require.Equal(t, prefix+"-email-dlq", awsarn.QueueName(qs[0].DLQURL))
	require.Equal(t, "Ledger", qs[1].Name)
	require.Equal(t, prefix+"-ledger.fifo", awsarn.QueueName(qs[1].URL))
	// No output for the ledger DLQ: found through the RedrivePolicy.
	require.Equal(t, prefix+"-ledger-dlq.fifo", awsarn.QueueName(qs[1].DLQURL))

	// By output name (any case), by queue name, by URL.
	for _, ref := range []string{"email", prefix + "-email", qs[0].URL} {
		got, err := in.Resolve(ctx, inspect.Target{Stack: stack, Queues: []string{ref}})
		require.NoError(t, err, ref)
		require.Equal(t, []inspect.Queue{qs[0]}, got, ref)
	}
	// A DLQ alone: its source queue is found with ListDeadLetterSourceQueues.
	got, err := in.Resolve(ctx, inspect.Target{Stack: "no-such-stack", DLQ: qs[1].DLQURL})
	require.NoError(t, err)
	// (ListDeadLetterSourceQueues answers with the endpoint's own URL spelling.)
	require.Equal(t, awsarn.QueueName(qs[1].URL), awsarn.QueueName(got[0].URL))
	require.Equal(t, qs[1].DLQURL, got[0].DLQURL)

	_, err = in.Resolve(ctx, inspect.Target{Stack: awstest.Name(t, "missing")})
	require.ErrorIs(t, err, inspect.ErrStackNotFound)
	_, err = in.Resolve(ctx, inspect.Target{Stack: stack, Queues: []string{"nope-" + prefix}})
	require.Error(t, err)
}

func TestStatsCountsAndAges(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	q, dlq := awstest.QueueWithDLQ(t, cfg, "main", nil)
	empty := awstest.CreateQueue(t, cfg, "empty", nil)

	for i := range 4 {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(envelopeBody(fmt.Sprint(i), "k", nil))})
		require.NoError(t, err)
	}
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("later"), DelaySeconds: 600})
	require.NoError(t, err)
	// One in flight.
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), VisibilityTimeout: 300})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	seedDead(t, client, dlq.URL, []deadSpec{{ID: "d1", Kind: "k", Reason: contract.ReasonCancelled, Attempts: 1}, {ID: "d2", Kind: "k", Attempts: 1}})
	time.Sleep(1100 * time.Millisecond) // so the sampled age is at least a second

	in := inspect.New(cfg)
	queues := []inspect.Queue{{Name: "main", URL: q.URL, DLQURL: dlq.URL}, {Name: "empty", URL: empty.URL}}

	rep, err := in.Stats(ctx, queues, nil)
	require.NoError(t, err)
	require.Len(t, rep.Queues, 2)
	m := rep.Queues[0]
	require.Equal(t, q.ARN, m.ARN)
	require.Equal(t, int64(3), m.Visible)
	require.Equal(t, int64(1), m.InFlight)
	require.Equal(t, int64(1), m.Delayed)
	// A queue made a moment ago may have no ApproximateAgeOfOldestMessage datapoint yet (SQS
	// publishes it every minute; the emulators every 10 s): the job queue's age is then unknown,
	// the DLQ's sampled.
	require.Contains(t, []inspect.AgeSource{inspect.AgeUnknown, inspect.AgeFromCloudWatch}, m.OldestAgeSource)
	require.Less(t, m.OldestAge, time.Minute)
	if awstest.HasCloudWatch(t) {
		require.Empty(t, rep.Warnings, "CloudWatch answered")
	} else {
		require.NotEmpty(t, rep.Warnings, "CloudWatch did not answer")
	}
	require.NotNil(t, m.DLQ)
	require.Equal(t, int64(2), m.DLQ.Visible)
	require.Contains(t, []inspect.AgeSource{inspect.AgeFromSample, inspect.AgeFromCloudWatch}, m.DLQ.OldestAgeSource)
	if m.DLQ.OldestAgeSource == inspect.AgeFromSample {
		require.GreaterOrEqual(t, m.DLQ.OldestAge, time.Second)
	}
	require.Less(t, m.DLQ.OldestAge, 5*time.Minute)
	require.Equal(t, inspect.AgeFromEmptyQueue, rep.Queues[1].OldestAgeSource)
	require.Nil(t, rep.Queues[1].DLQ)

	// Sampling hands the messages back at once: nothing stays in flight on the DLQ.
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 2, v)
	require.Equal(t, 0, f)

	// AgeSample also samples the job queue, at the cost of one receive per sampled message.
	rep, err = in.Stats(ctx, queues[:1], &inspect.StatsOptions{Age: inspect.AgeSample})
	require.NoError(t, err)
	require.Equal(t, inspect.AgeFromSample, rep.Queues[0].OldestAgeSource)
	require.GreaterOrEqual(t, rep.Queues[0].OldestAge, time.Second)
	v, f = awstest.Counts(t, client, q.URL)
	require.Equal(t, 3, v)
	require.Equal(t, 1, f) // only the one this test holds

	rep, err = in.Stats(ctx, queues[:1], &inspect.StatsOptions{Age: inspect.AgeOff})
	require.NoError(t, err)
	require.Equal(t, inspect.AgeUnknown, rep.Queues[0].OldestAgeSource)
	require.Equal(t, inspect.AgeUnknown, rep.Queues[0].DLQ.OldestAgeSource)
}

func TestListDeadParsesAttributesAndConsumesNothing(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	src := awstest.CreateQueue(t, cfg, "src", nil)

	var specs []deadSpec
	for i := range 23 {
		kind, errText := "email.send", "smtp: connection refused"
		if i%3 == 0 {
			kind, errText = "ledger.post", "ledger: TIMEOUT talking to bank"
		}
		specs = append(specs, deadSpec{ID: fmt.Sprintf("job-%02d", i), Kind: kind, Reason: contract.ReasonAttemptsUsed, Error: errText, Attempts: 5, Source: src.URL})
	}
	specs = append(specs,
		deadSpec{ID: "crash", Kind: "email.send", NoAttrs: true},
		deadSpec{ID: "junk", Body: "not json at all", NoAttrs: true},
	)
	seedDead(t, client, dlq.URL, specs)
	in := inspect.New(cfg)

	list := listDead(t, in, client, dlq.URL, nil, 25)
	require.Equal(t, int64(25), list.Approximate)
	require.Equal(t, 25, list.Scanned)
	require.False(t, list.Truncated)
	require.Len(t, list.Jobs, 25)
	byID := map[string]inspect.DeadJob{}
	for _, j := range list.Jobs {
		byID[j.JobID] = j
	}
	j := byID["job-03"]
	require.Equal(t, "ledger.post", j.Kind)
	require.Equal(t, contract.ReasonAttemptsUsed, j.Reason)
	require.Equal(t, "ledger: TIMEOUT talking to bank", j.Error)
	require.Equal(t, 5, j.Attempts)
	require.Equal(t, "email-worker", j.Function)
	require.Equal(t, src.URL, j.SourceQueue)
	require.Equal(t, time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC), j.FailedAt)
	require.Equal(t, time.Date(2026, 11, 21, 12, 4, 0, 0, time.UTC), j.FirstReceivedAt)
	require.NotNil(t, j.Envelope)
	require.Equal(t, "job-03", j.Envelope.ID)
	require.JSONEq(t, `{"n":3}`, string(j.Envelope.Args))
	require.False(t, j.SentAt.IsZero())
	require.Equal(t, 1, j.ReceiveCount)
	// Moved by a RedrivePolicy: no attributes, kind and id from the envelope.
	c := byID["crash"]
	require.Equal(t, "email.send", c.Kind)
	require.Empty(t, c.Reason)
	require.Zero(t, c.Attempts)
	// Not an envelope at all.
	junk := byID[""]
	require.Nil(t, junk.Envelope)
	require.Equal(t, "not json at all", junk.Body)

	// Everything is visible again right away: the listing consumed nothing.
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 25, v)
	require.Equal(t, 0, f)

	// Filters and limit.
	list = listDead(t, in, client, dlq.URL, &inspect.ListOptions{Filter: inspect.Filter{Kind: "ledger.post"}}, 8)
	require.Len(t, list.Jobs, 8)
	list = listDead(t, in, client, dlq.URL, &inspect.ListOptions{Filter: inspect.Filter{ErrorContains: "timeout"}}, 8)
	require.Len(t, list.Jobs, 8, "case-insensitive")
	list = listDead(t, in, client, dlq.URL, &inspect.ListOptions{Limit: 5}, 5)
	require.Len(t, list.Jobs, 5)
	require.True(t, list.Truncated)
	v, f = awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 25, v)
	require.Equal(t, 0, f)

	// Show by job id and by message id.
	got, err := in.ShowDead(ctx, dlq.URL, "job-07", nil)
	require.NoError(t, err)
	require.Equal(t, "email.send", got.Kind)
	again, err := in.ShowDead(ctx, dlq.URL, got.MessageID, nil)
	require.NoError(t, err)
	require.Equal(t, "job-07", again.JobID)
	_, err = in.ShowDead(ctx, dlq.URL, "no-such-job", nil)
	require.ErrorIs(t, err, inspect.ErrNotFound)
	v, _ = awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 25, v)
}

// On a FIFO DLQ a listing sees the head of each message group (what one receive returns, at most
// 10) and hands everything back; the order within a group is the queue's.
func TestListDeadFIFO(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	dlq := awstest.CreateQueue(t, cfg, "dlq", &awstest.QueueOptions{FIFO: true})
	var specs []deadSpec
	for _, g := range []string{"a", "b", "c"} {
		for i := range 3 {
			specs = append(specs, deadSpec{ID: fmt.Sprintf("%s%d", g, i), Kind: "ledger.post", Reason: contract.ReasonCancelled, Group: g, Attempts: 1})
		}
	}
	for i := range 14 { // more than one receive returns
		specs = append(specs, deadSpec{ID: fmt.Sprintf("z%d", i), Kind: "ledger.post", Reason: contract.ReasonCancelled, Group: "z", Attempts: 1})
	}
	seedDead(t, client, dlq.URL, specs)
	list, err := inspect.New(cfg).ListDead(ctx, dlq.URL, nil)
	require.NoError(t, err)
	require.Equal(t, int64(23), list.Approximate)
	require.NotEmpty(t, list.Jobs)
	seen := map[string][]string{}
	for _, j := range list.Jobs {
		seen[j.GroupID] = append(seen[j.GroupID], j.JobID)
	}
	for g, ids := range seen {
		for i, id := range ids {
			require.Equal(t, fmt.Sprintf("%s%d", g, i), id, "group %s in order from its head", g)
		}
	}
	// The messages behind a group's head stay hidden behind it.
	require.LessOrEqual(t, len(seen["z"]), 10)
	require.Less(t, len(list.Jobs), 23)
	t.Logf("FIFO listing saw %d of 23 messages: %v", len(list.Jobs), seen)
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 23, v)
	require.Equal(t, 0, f)
}

func TestRedriveManualWithFilterAndDestinations(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	other := awstest.CreateQueue(t, cfg, "other", nil)

	var specs []deadSpec
	for i := range 30 {
		kind := "email.send"
		if i%2 == 1 {
			kind = "ledger.post"
		}
		s := deadSpec{ID: fmt.Sprintf("j%02d", i), Kind: kind, Reason: contract.ReasonCancelled, Error: "boom", Attempts: 1, Source: src.URL}
		if i >= 25 {
			s.Source = other.URL // not a source of the DLQ: no valid destination
		}
		specs = append(specs, s)
	}
	specs = append(specs, deadSpec{ID: "crash", Kind: "email.send", NoAttrs: true}) // no source attribute
	seedDead(t, client, dlq.URL, specs)
	in := inspect.New(cfg)

	var calls atomic.Int32
	var last inspect.RedriveProgress
	res, err := in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{
		Filter:   inspect.Filter{Kind: "email.send"},
		Progress: func(p inspect.RedriveProgress) { calls.Add(1); last = p },
	})
	require.NoError(t, err)
	require.Equal(t, inspect.RedriveManual, res.Method)
	require.Equal(t, "filters need the manual move", res.FallbackReason)
	require.Equal(t, int64(31), res.Total)
	require.Equal(t, int64(14), res.Moved) // 13 email.send naming src + "crash" via the DLQ's only source
	require.Equal(t, int64(15), res.Skipped)
	require.Equal(t, int64(2), res.NoDestination) // j26, j28 name "other"
	require.Zero(t, res.Failed)
	require.Zero(t, res.Unconfirmed)
	require.Equal(t, 40, res.Window)
	require.Positive(t, calls.Load())
	require.Equal(t, int64(14), last.Moved)

	// (A send that got no clear answer and was made again may have landed twice: the redrive
	// counts those in PossibleDuplicates; on a quiet endpoint there are none.)
	toSrc := drain(t, client, src.URL)
	toOther := drain(t, client, other.URL)
	require.Equal(t, 14, unique(toSrc)) // j00..j24 even, and crash
	require.Empty(t, toOther)
	require.Equal(t, 14+int(res.PossibleDuplicates), len(toSrc))
	for _, r := range append(toSrc, toOther...) {
		require.Equal(t, "email.send", r.Env.Kind)
		for k := range r.Attrs {
			require.NotContains(t, k, "jobkit.", "dead-letter attributes are not carried back")
		}
	}
	// The skipped ones and those without a valid destination are back in the DLQ, visible.
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 17, v)
	require.Equal(t, 0, f)

	// --to sends everything to one queue: the caller's choice is not checked.
	res, err = in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{To: other.URL, Method: inspect.RedriveManual})
	require.NoError(t, err)
	require.Equal(t, int64(17), res.Moved)
	requireRedriven(t, client, other.URL, dlq.URL, 17, 17+int(res.PossibleDuplicates))
}

// A dead job's jobkit.source_queue is data from whoever could send to the DLQ. Redrive sends a
// job only to a queue whose RedrivePolicy targets the DLQ (ListDeadLetterSourceQueues) — at that
// queue's own URL, whatever host the attribute spells — and leaves a job naming any other queue
// in the DLQ, counted as having no valid destination.
func TestRedriveRefusesForgedSourceQueue(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	victim := awstest.CreateQueue(t, cfg, "victim", nil)
	in := inspect.New(cfg)

	// The emulator answers ListDeadLetterSourceQueues as SQS does.
	sources, err := in.DeadLetterSources(ctx, dlq.URL)
	require.NoError(t, err)
	require.Len(t, sources, 1)
	require.Equal(t, awsarn.QueueName(src.URL), awsarn.QueueName(sources[0]))

	u, err := url.Parse(src.URL)
	require.NoError(t, err)
	u.Host = "attacker.invalid:1" // the same queue, spelled with another host
	seedDead(t, client, dlq.URL, []deadSpec{
		{ID: "ok1", Kind: "k", Reason: contract.ReasonCancelled, Source: src.URL},
		{ID: "ok2", Kind: "k", Reason: contract.ReasonCancelled, Source: src.URL},
		{ID: "respelled", Kind: "k", Reason: contract.ReasonCancelled, Source: u.String()},
		{ID: "forged1", Kind: "k", Reason: contract.ReasonCancelled, Source: victim.URL},
		{ID: "forged2", Kind: "k", Reason: contract.ReasonCancelled, Source: victim.URL},
		{ID: "itself", Kind: "k", Reason: contract.ReasonCancelled, Source: dlq.URL},
		{ID: "garbage", Kind: "k", Reason: contract.ReasonCancelled, Source: "not a queue"},
	})

	// Only the manual move reads the attribute: a native move (SQS's StartMessageMoveTask) sends
	// every message to the one destination it is given, whatever the message says.
	res, err := in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveManual})
	require.NoError(t, err)
	require.Equal(t, inspect.RedriveManual, res.Method)
	require.Equal(t, int64(3), res.Moved)
	require.Equal(t, int64(4), res.NoDestination)
	require.Zero(t, res.Skipped)
	require.Zero(t, res.Failed)

	got := drain(t, client, src.URL)
	require.Equal(t, 3, unique(got))
	for _, r := range got {
		require.Contains(t, []string{"ok1", "ok2", "respelled"}, r.Env.ID)
	}
	require.Empty(t, drain(t, client, victim.URL), "nothing reaches a queue the message names on its own")
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 4, v, "refused jobs stay in the DLQ, visible")
	require.Zero(t, f)

	// Sources adds trusted destinations (the deployed stack's queues, say).
	res, err = in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Sources: []string{victim.URL}, Method: inspect.RedriveManual})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Moved)
	require.Equal(t, int64(2), res.NoDestination)
	require.Equal(t, 2, unique(drain(t, client, victim.URL)))
}

func TestRedriveNativeUnsupportedFallsBack(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	seedDead(t, client, dlq.URL, []deadSpec{{ID: "a", Kind: "k", Reason: contract.ReasonCancelled, Source: src.URL}})
	in := inspect.New(cfg)
	if awstest.HasMessageMoveTasks(t) {
		// AWS (and LocalStack) implement StartMessageMoveTask; moto does not. Where the endpoint
		// has it, the test stands in an endpoint without it: the action answers HTTP 501.
		in = inspect.New(cfg, func(o *inspect.Options) {
			o.SQS = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
				next := o.HTTPClient
				if next == nil {
					next = awshttp.NewBuildableClient()
				}
				o.HTTPClient = &withoutActionHTTP{next: next, target: "AmazonSQS.StartMessageMoveTask"}
			})
		})
	}

	_, err := in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveNative})
	require.ErrorIs(t, err, inspect.ErrNativeUnsupported)
	v, _ := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 1, v, "a failed native start moves nothing")

	res, err := in.Redrive(ctx, dlq.URL, nil)
	require.NoError(t, err)
	require.Equal(t, inspect.RedriveManual, res.Method)
	require.Contains(t, res.FallbackReason, "StartMessageMoveTask")
	require.Equal(t, int64(1), res.Moved)
	require.Len(t, drain(t, client, src.URL), 1+int(res.PossibleDuplicates))
}

// withoutActionHTTP passes requests to the endpoint, except those of one action (an X-Amz-Target),
// which it answers as an endpoint that does not implement the action: HTTP 501, no AWS error.
type withoutActionHTTP struct {
	next   aws.HTTPClient
	target string
}

func (w *withoutActionHTTP) Do(r *http.Request) (*http.Response, error) {
	if r.Header.Get("X-Amz-Target") != w.target {
		return w.next.Do(r)
	}
	return &http.Response{
		StatusCode: http.StatusNotImplemented, Status: "501 Not Implemented", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader("not implemented")), Request: r,
	}, nil
}

// FIFO: the redriven messages keep their group and order, and carry a deduplication id that is
// not the job id (the producer's), so SQS does not drop them as repeats of the original enqueue.
func TestRedriveFIFOKeepsGroupsAndOrder(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", &awstest.QueueOptions{FIFO: true})

	// The original enqueue of job "g1-0" used the job id as its deduplication id, a moment ago.
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src.URL), MessageBody: aws.String(envelopeBody("g1-0", "ledger.post", nil)),
		MessageGroupId: aws.String("g1"), MessageDeduplicationId: aws.String("g1-0")})
	require.NoError(t, err)
	require.Len(t, drain(t, client, src.URL), 1) // ... and it was consumed (then dead-lettered)

	var specs []deadSpec
	for _, g := range []string{"g1", "g2", "g3"} {
		for i := range 12 {
			specs = append(specs, deadSpec{ID: fmt.Sprintf("%s-%d", g, i), Kind: "ledger.post", Reason: contract.ReasonCancelled, Group: g, Attempts: 1, Source: src.URL})
		}
	}
	seedDead(t, client, dlq.URL, specs)
	// The group keeping and the deduplication id are the manual move's (a native move is SQS's).
	res, err := inspect.New(cfg).Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveManual, Concurrency: 3})
	require.NoError(t, err)
	require.Equal(t, int64(36), res.Moved)

	got := drain(t, client, src.URL)
	require.Len(t, got, 36, "none dropped as a duplicate of its original enqueue")
	order := map[string][]string{}
	for _, r := range got {
		order[r.GroupID] = append(order[r.GroupID], r.Env.ID)
		require.NotEqual(t, r.Env.ID, r.DedupID)
	}
	for _, g := range []string{"g1", "g2", "g3"} {
		want := make([]string, 12)
		for i := range want {
			want[i] = fmt.Sprintf("%s-%d", g, i)
		}
		require.Equal(t, want, order[g])
	}
}

// faultySQS wraps the real client and fails the first DeleteMessageBatch: the messages were sent
// but stay in the DLQ. The run must delete them when they come back, not send them again.
type faultySQS struct {
	inspect.SQSAPI
	failed atomic.Bool
}

func (f *faultySQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if f.failed.CompareAndSwap(false, true) {
		return nil, errors.New("injected: connection reset")
	}
	return f.SQSAPI.DeleteMessageBatch(ctx, in, optFns...)
}

func TestRedriveSendsOncePerRunWhenADeleteFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, client, dlq, src := seedRedrive(t, 20, "j%d")
	in := inspect.New(cfg, func(o *inspect.Options) { o.SQS = &faultySQS{SQSAPI: client} })

	res, err := in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveManual, Concurrency: 1, Visibility: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, int64(20), res.Moved)
	require.Zero(t, res.Unconfirmed)
	requireRedriven(t, client, src.URL, dlq.URL, 20, 20+int(res.PossibleDuplicates), "the batch whose delete failed was not sent again")
}

func TestPurge(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	seedDead(t, client, dlq.URL, []deadSpec{{ID: "a", Kind: "k"}, {ID: "b", Kind: "k"}, {ID: "c", Kind: "k"}})
	n, err := inspect.New(cfg).Purge(ctx, dlq.URL)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Eventually(t, func() bool { v, f := awstest.Counts(t, client, dlq.URL); return v+f == 0 }, 60*time.Second, 200*time.Millisecond)
	// SQS allows one purge of a queue every 60 s: a second one at once is refused, typed.
	_, err = inspect.New(cfg).Purge(ctx, dlq.URL)
	require.ErrorIs(t, err, inspect.ErrPurgeInProgress)
}

func TestRedriveDeduplicationID(t *testing.T) {
	t.Parallel()
	id := inspect.RedriveDeduplicationID("01JD3Q7X2V", "7c9e6679-7425-40de-944b-e07fc1f90ae7")
	require.Equal(t, "01JD3Q7X2V:redrive:7c9e6679-7425-40de-944b-e07fc1f90ae7", id)
	long := inspect.RedriveDeduplicationID(string(make([]byte, 200)), "m")
	require.LessOrEqual(t, len(long), 128)
	require.Equal(t, long, inspect.RedriveDeduplicationID(string(make([]byte, 200)), "m"))
	require.NotEqual(t, long, inspect.RedriveDeduplicationID(string(make([]byte, 200)), "n"))
	require.Regexp(t, `^redrive-[0-9a-f]{64}$`, inspect.RedriveDeduplicationID("with space", "m"))
}

// A job that fails again while the redrive runs comes back to the DLQ as a new message: the run
// leaves it there instead of moving it again (no loop). Here the "worker" is the progress callback,
// which dead-letters the first batch again as soon as it has been moved.
func TestRedriveLeavesJobsThatComeBackDuringTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, client, dlq, src := seedRedrive(t, 20, "j%02d")

	// The callback runs on a redrive goroutine: no require in it, errors are checked afterwards.
	bounced := 0
	var bounceErr error
	res, err := inspect.New(cfg).Redrive(ctx, dlq.URL, &inspect.RedriveOptions{
		Method:      inspect.RedriveManual,
		Concurrency: 1,
		Progress: func(p inspect.RedriveProgress) {
			if bounced > 0 || p.Moved == 0 || bounceErr != nil {
				return
			}
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src.URL), MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1})
			if err != nil {
				bounceErr = err
				return
			}
			var entries []sqstypes.SendMessageBatchRequestEntry
			for n, m := range out.Messages {
				var env jobs.Envelope
				_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &env)
				entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
					Id: aws.String(strconv.Itoa(n)), MessageBody: m.Body,
					MessageAttributes: map[string]sqstypes.MessageAttributeValue{
						contract.AttrJobID: strAttr(env.ID), contract.AttrReason: strAttr(contract.ReasonCancelled), contract.AttrSourceQueue: strAttr(src.URL),
					},
				})
			}
			if len(entries) == 0 {
				bounceErr = errors.New("nothing to bounce")
				return
			}
			if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq.URL), Entries: entries}); err != nil {
				bounceErr = err
				return
			}
			bounced = len(entries)
		},
	})
	require.NoError(t, err)
	require.NoError(t, bounceErr)
	require.Equal(t, 10, bounced)
	require.Equal(t, int64(20), res.Moved, "each original moved once")
	require.Equal(t, int64(10), res.Returned, "the jobs that failed again stay in the DLQ")
	v, f := awstest.Counts(t, client, dlq.URL)
	require.Equal(t, 10, v, "handed back at the end")
	require.Zero(t, f)
}

// A job dead-lettered twice before the redrive (two DLQ messages, one job id) is moved twice:
// only copies that arrive during the run are held back.
func TestRedriveMovesOlderDuplicatesOfAJob(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx := context.Background()
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	seedDead(t, client, dlq.URL, []deadSpec{
		{ID: "twice", Kind: "k", Reason: contract.ReasonCancelled, Source: src.URL},
		{ID: "twice", Kind: "k", Reason: contract.ReasonCancelled, Source: src.URL},
	})
	time.Sleep(6 * time.Second) // older than the run by more than the clock-skew allowance (5 s)
	res, err := inspect.New(cfg).Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveManual, Concurrency: 1})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Moved)
	require.Zero(t, res.Returned)
	require.Len(t, drain(t, client, src.URL), 2+int(res.PossibleDuplicates))
}

// lostAnswerSQS carries out the first SendMessageBatch and then reports a connection error, as
// when the answer is lost on the way back.
type lostAnswerSQS struct {
	inspect.SQSAPI
	lost atomic.Bool
}

func (l *lostAnswerSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := l.SQSAPI.SendMessageBatch(ctx, in, optFns...)
	if err == nil && l.lost.CompareAndSwap(false, true) {
		return nil, errors.New("read tcp: connection reset by peer")
	}
	return out, err
}

// lostBodyHTTP passes requests to the endpoint and, for the first SendMessageBatch, loses the
// body of its answer: the 200 arrives, then reading it fails as it does when the connection is
// closed under the reader. aws-sdk-go-v2 retries such a call, so the endpoint carries it out twice.
type lostBodyHTTP struct {
	next aws.HTTPClient
	lost atomic.Bool
}

func (l *lostBodyHTTP) Do(r *http.Request) (*http.Response, error) {
	resp, err := l.next.Do(r)
	if err != nil || r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessageBatch" || !l.lost.CompareAndSwap(false, true) {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(iotest.ErrReader(&net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}))
	return resp, nil
}

// A 200 whose body is lost is an ambiguous answer too: the SDK sends again, the endpoint holds the
// batch twice, and the redrive reports it.
func TestRedriveReportsPossibleDuplicatesAfterA200WithoutBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, client, dlq, src := seedRedrive(t, 10, "j%d")
	lossy := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		next := o.HTTPClient
		if next == nil {
			next = awshttp.NewBuildableClient()
		}
		o.HTTPClient = &lostBodyHTTP{next: next}
	})
	in := inspect.New(cfg, func(o *inspect.Options) { o.SQS = lossy })

	res, err := in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveManual, Concurrency: 1})
	require.NoError(t, err)
	require.Equal(t, int64(10), res.Moved)
	require.Zero(t, res.Failed, "the SDK's retry sent it")
	require.Equal(t, int64(10), res.PossibleDuplicates)
	requireRedriven(t, client, src.URL, dlq.URL, 10, 20, "each twice: exactly what was reported")
}

// A send whose answer is lost is ambiguous: the run cannot know the messages went through, sends
// them again when they come back, and reports them as possible duplicates.
func TestRedriveReportsPossibleDuplicatesAfterALostAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, client, dlq, src := seedRedrive(t, 10, "j%d")
	in := inspect.New(cfg, func(o *inspect.Options) { o.SQS = &lostAnswerSQS{SQSAPI: client} })

	res, err := in.Redrive(ctx, dlq.URL, &inspect.RedriveOptions{Method: inspect.RedriveManual, Concurrency: 1, Visibility: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, int64(10), res.Moved)
	require.Zero(t, res.Failed, "sent on the second try")
	require.Equal(t, int64(10), res.PossibleDuplicates)
	requireRedriven(t, client, src.URL, dlq.URL, 10, 20, "each twice: exactly what was reported")
}
