package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// cli runs the jobkit command in-process against the test endpoint.
func cli(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	if ep := awstest.Endpoint(); ep != "" {
		args = append([]string{"--endpoint", ep}, args...)
	}
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestMain(m *testing.M) { awstest.Main(m) }

// buildCLI returns the jobkit binary, built once per test binary.
func buildCLI(t *testing.T) string { return awstest.Build(t, ".") }

func envelopeBody(id, kind string, n int) string {
	b, _ := json.Marshal(jobs.Envelope{V: 1, ID: id, Kind: kind, Args: json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`), EnqueuedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)})
	return string(b)
}

func strAttr(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// seedDead puts n dead jobs (ids "<prefix>-<i>") in the DLQ with the runtime's attributes,
// pointing back at source. kindOf picks each job's kind.
func seedDead(t testing.TB, client *sqs.Client, dlqURL, source, prefix string, n int, kindOf func(i int) string) []string {
	return seedDeadFrom(t, client, dlqURL, []string{source}, prefix, n, kindOf)
}

// seedDeadFrom is seedDead with job i coming from sources[i % len(sources)].
func seedDeadFrom(t testing.TB, client *sqs.Client, dlqURL string, sources []string, prefix string, n int, kindOf func(i int) string) []string {
	t.Helper()
	ctx := context.Background()
	v, f := awstest.Counts(t, client, dlqURL)
	before := v + f
	ids := make([]string, n)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	errs := make(chan error, n/10+1)
	for start := 0; start < n; start += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i := start; i < min(start+10, n); i++ {
			id := fmt.Sprintf("%s-%04d", prefix, i)
			ids[i] = id
			kind := kindOf(i)
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
				Id:          aws.String("e" + strconv.Itoa(i-start)),
				MessageBody: aws.String(envelopeBody(id, kind, i)),
				MessageAttributes: map[string]sqstypes.MessageAttributeValue{
					contract.AttrReason:      strAttr(contract.ReasonAttemptsUsed),
					contract.AttrError:       strAttr(fmt.Sprintf("smtp: 421 try again later (job %d)", i)),
					contract.AttrKind:        strAttr(kind),
					contract.AttrJobID:       strAttr(id),
					contract.AttrAttempts:    {DataType: aws.String("Number"), StringValue: aws.String("5")},
					contract.AttrFunction:    strAttr("email-worker"),
					contract.AttrFailedAt:    strAttr("2026-11-21T12:05:00Z"),
					contract.AttrSourceQueue: strAttr(sources[i%len(sources)]),
				},
			})
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlqURL), Entries: entries})
			if err == nil && len(out.Failed) > 0 {
				err = fmt.Errorf("%d entries failed", len(out.Failed))
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	dropSeedCopies(t, client, dlqURL, before+n)
	return ids
}

// dropSeedCopies leaves one message per job in dlqURL, which should hold n. A SendMessageBatch whose answer was lost
// is sent again by the SDK, and a Standard queue keeps both copies (at-least-once): a seeded
// DLQ can hold a batch twice, which the tests must not mistake for the redrive's doing.
func dropSeedCopies(t testing.TB, client *sqs.Client, dlqURL string, n int) {
	t.Helper()
	ctx := context.Background()
	if v, f := awstest.Counts(t, client, dlqURL); v+f == n {
		return
	}
	seen := map[string]bool{}
	var keep []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for empty := 0; empty < 3; {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL),
			MaxNumberOfMessages: 10, VisibilityTimeout: 120, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{contract.AttrJobID}})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageAttributes[contract.AttrJobID].StringValue)
			if seen[id] {
				_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle})
				require.NoError(t, err)
				continue
			}
			seen[id] = true
			keep = append(keep, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(len(keep) % 10)), ReceiptHandle: m.ReceiptHandle})
		}
	}
	for start := 0; start < len(keep); start += 10 {
		_, err := client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(dlqURL), Entries: keep[start:min(start+10, len(keep))]})
		require.NoError(t, err)
	}
	require.Len(t, seen, n, "every seeded job is in the DLQ once")
}

// drainIDs takes every message of a queue (awstest.TakeAll) and counts them by job id: two sends
// of one job count twice.
func drainIDs(t testing.TB, client *sqs.Client, queueURL string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, m := range awstest.TakeAll(t, client, queueURL) {
		var env jobs.Envelope
		require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &env))
		got[env.ID]++
	}
	return got
}

// sourceQueues creates n source queues whose RedrivePolicy targets dlq.
func sourceQueues(t *testing.T, cfg aws.Config, dlq awstest.Queue, n int) []string {
	t.Helper()
	urls := make([]string, n)
	for i := range urls {
		urls[i] = awstest.CreateQueue(t, cfg, fmt.Sprintf("src%d", i), &awstest.QueueOptions{DLQ: &dlq}).URL
	}
	return urls
}

// The stack the commands read defaults to $JOBKIT_STACK (which `jobkit dev` exports), else
// jobkit's sample stack.
func TestStackDefaultsFromTheEnvironment(t *testing.T) {
	t.Setenv(contract.EnvStack, "")
	require.Equal(t, contract.DefaultStack, newRootCmd(&app{}).PersistentFlags().Lookup("stack").DefValue)
	t.Setenv(contract.EnvStack, "dev-Greeter")
	require.Equal(t, "dev-Greeter", newRootCmd(&app{}).PersistentFlags().Lookup("stack").DefValue)
}
