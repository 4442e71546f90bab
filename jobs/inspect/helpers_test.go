package inspect_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// deadSpec describes a dead-lettered job as the runtime writes it.
type deadSpec struct {
	ID, Kind, Reason, Error, Source, Group string
	Attempts                               int
	FailedAt                               time.Time
	Body                                   string // overrides the envelope
	NoAttrs                                bool   // as the queue's RedrivePolicy would move it
}

// seedRedrive makes a queue src with its dead-letter queue dlq, and puts n jobs into dlq as
// cancelled jobs of kind "k" from src (ids fmt.Sprintf(idFormat, i)), for a redrive to move.
func seedRedrive(t *testing.T, n int, idFormat string) (aws.Config, *sqs.Client, awstest.Queue, awstest.Queue) {
	t.Helper()
	cfg, client := awstest.SQS(t)
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	specs := make([]deadSpec, n)
	for i := range specs {
		specs[i] = deadSpec{ID: fmt.Sprintf(idFormat, i), Kind: "k", Reason: contract.ReasonCancelled, Source: src.URL}
	}
	seedDead(t, client, dlq.URL, specs)
	return cfg, client, dlq, src
}

func envelopeBody(id, kind string, args any) string {
	raw, _ := json.Marshal(args)
	b, _ := json.Marshal(jobs.Envelope{V: 1, ID: id, Kind: kind, Args: raw, EnqueuedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)})
	return string(b)
}

func strAttr(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// seedDead sends dead jobs to a DLQ with the runtime's attributes, in batches of 10.
func seedDead(t testing.TB, client *sqs.Client, dlqURL string, specs []deadSpec) {
	t.Helper()
	ctx := context.Background()
	fifo := awsarn.IsFIFO(dlqURL)
	for start := 0; start < len(specs); start += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for n, s := range specs[start:min(start+10, len(specs))] {
			body := s.Body
			if body == "" {
				body = envelopeBody(s.ID, s.Kind, map[string]int{"n": start + n})
			}
			e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String("e" + strconv.Itoa(n)), MessageBody: aws.String(body)}
			if !s.NoAttrs {
				failed := s.FailedAt
				if failed.IsZero() {
					failed = time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC)
				}
				e.MessageAttributes = map[string]sqstypes.MessageAttributeValue{
					contract.AttrReason:         strAttr(s.Reason),
					contract.AttrError:          strAttr(s.Error),
					contract.AttrKind:           strAttr(s.Kind),
					contract.AttrJobID:          strAttr(s.ID),
					contract.AttrAttempts:       {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(s.Attempts))},
					contract.AttrFunction:       strAttr("email-worker"),
					contract.AttrFirstFailureAt: strAttr(failed.Add(-time.Minute).Format(time.RFC3339Nano)),
					contract.AttrFailedAt:       strAttr(failed.Format(time.RFC3339Nano)),
					contract.AttrSourceQueue:    strAttr(s.Source),
				}
				// SQS refuses a string attribute with an empty value (LocalStack enforces it; moto
				// does not): leave unset what the spec leaves empty.
				for name, v := range e.MessageAttributes {
					if aws.ToString(v.StringValue) == "" {
						delete(e.MessageAttributes, name)
					}
				}
			}
			if fifo {
				e.MessageGroupId = aws.String(s.Group)
				e.MessageDeduplicationId = aws.String(fmt.Sprintf("%s-%d", s.ID, start+n))
			}
			entries = append(entries, e)
		}
		out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlqURL), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, out.Failed, "%s", failedEntries(out.Failed))
	}
}

func failedEntries(failed []sqstypes.BatchResultErrorEntry) string {
	var b strings.Builder
	for _, f := range failed {
		fmt.Fprintf(&b, "%s: %s %s; ", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return b.String()
}

// received is a message read back by drain.
type received struct {
	Body    string
	GroupID string
	DedupID string
	Env     jobs.Envelope
	Attrs   map[string]sqstypes.MessageAttributeValue
}

// drain takes every message of a queue (awstest.TakeAll), decoded.
func drain(t testing.TB, client *sqs.Client, queueURL string) []received {
	t.Helper()
	var got []received
	for _, m := range awstest.TakeAll(t, client, queueURL) {
		r := received{Body: aws.ToString(m.Body), GroupID: m.Attributes["MessageGroupId"], DedupID: m.Attributes["MessageDeduplicationId"], Attrs: m.MessageAttributes}
		_ = json.Unmarshal([]byte(r.Body), &r.Env)
		got = append(got, r)
	}
	return got
}

// unique counts the distinct envelope ids (bodies, for non-envelopes) among received messages.
// requireRedriven checks a redrive's end: queue to holds n jobs in total messages (duplicates
// the redrive reported included), and the dead-letter queue is empty.
func requireRedriven(t *testing.T, client *sqs.Client, to, dlqURL string, n, total int, msgAndArgs ...any) []received {
	t.Helper()
	got := drain(t, client, to)
	require.Equal(t, n, unique(got))
	require.Len(t, got, total, msgAndArgs...)
	v, f := awstest.Counts(t, client, dlqURL)
	require.Zero(t, v+f, "the dead-letter queue is empty")
	return got
}

func unique(rs []received) int {
	seen := map[string]bool{}
	for _, r := range rs {
		key := r.Env.ID
		key = cmp.Or(key, r.Body)
		seen[key] = true
	}
	return len(seen)
}

// listDead lists a DLQ and, when the listing finds fewer than want jobs while messages it did
// not hold are in flight, waits for those to be visible again and lists once more: a receive
// the SDK retried after its answer was lost (seen on the emulator under load) hides the first
// attempt's messages for their visibility timeout, as it would on SQS.
func listDead(t testing.TB, in *inspect.Inspector, client *sqs.Client, dlqURL string, opts *inspect.ListOptions, want int) *inspect.DeadList {
	t.Helper()
	list, err := in.ListDead(context.Background(), dlqURL, opts)
	require.NoError(t, err)
	if len(list.Jobs) == want {
		return list
	}
	_, inFlight := awstest.Counts(t, client, dlqURL)
	if inFlight == 0 {
		return list // nothing hidden: the shortfall is the listing's own
	}
	t.Logf("listing found %d of %d jobs with %d messages in flight elsewhere: waiting for them", len(list.Jobs), want, inFlight)
	deadline := time.Now().Add(45 * time.Second)
	for inFlight > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		_, inFlight = awstest.Counts(t, client, dlqURL)
	}
	list, err = in.ListDead(context.Background(), dlqURL, opts)
	require.NoError(t, err)
	return list
}
