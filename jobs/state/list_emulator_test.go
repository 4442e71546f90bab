package state_test

import (
	"context"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// listIDs lists every job of the queue in state (and kind), a page of limit at a time, and
// returns their ids in the order listed.
func listIDs(t *testing.T, e *env, st jobs.JobState, kind string, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 50, "the listing ends")
		page, err := e.table.List(context.Background(), state.ListOptions{Queue: e.q.URL, State: st, Kind: kind, Limit: limit, Cursor: cursor})
		require.NoError(t, err)
		for i, j := range page.Jobs {
			assert.Equal(t, st, j.State, j.ID)
			if i > 0 {
				assert.False(t, j.Since.After(page.Jobs[i-1].Since), "newest first")
			}
			ids = append(ids, j.ID)
		}
		if page.Next == "" {
			return ids
		}
		cursor = page.Next
	}
}

// deliverOnce hands every message of the queue to the runtime once, deleting what it did not
// list as failed.
func deliverOnce(t *testing.T, e *env, n int) {
	t.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(seen) < n; {
		require.True(t, time.Now().Before(deadline), "%d of %d messages received", len(seen), n)
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 300,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			continue
		}
		resp, err := e.handle(ctx, jobstest.EventFromMessages(e.q.ARN, out.Messages))
		require.NoError(t, err)
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			seen[aws.ToString(m.MessageId)] = true
			if !failed[aws.ToString(m.MessageId)] {
				_, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.q.URL), ReceiptHandle: m.ReceiptHandle})
				require.NoError(t, err)
			}
		}
	}
}

// Jobs are listed by queue, state and kind from the index, newest first and a page at a time,
// each in the state it is in now: a job item that still says enqueued after its run (with the
// idempotency record as its running and succeeded state) is not listed as enqueued.
func TestListJobsByState(t *testing.T) {
	eachFolding(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		send := func(args jobs.JobArgs) string {
			res, err := e.client.Enqueue(ctx, args, nil)
			require.NoError(t, err)
			time.Sleep(2 * time.Millisecond) // apart in the index's order
			return res.ID
		}
		a, b := send(resize{Image: "a.png"}), send(resize{Image: "b.png"})
		flaky := send(resize{Image: "c.png", Fail: "retry"})
		gone := send(resize{Image: "d.png", Fail: "cancel"})
		bad := send(resize{Image: "e.png", Fail: "always"})
		album := send(albumReady{Album: "summer"})

		all := []string{album, bad, gone, flaky, b, a}
		assert.Equal(t, all, listIDs(t, e, jobs.StateEnqueued, "", 0))
		assert.Equal(t, all, listIDs(t, e, jobs.StateEnqueued, "", 4), "two pages")
		assert.Equal(t, all[1:], listIDs(t, e, jobs.StateEnqueued, "image.resize", 1), "by kind, a job a page")

		deliverOnce(t, e, 6)
		assert.Empty(t, listIDs(t, e, jobs.StateEnqueued, "", 0), "no job is enqueued any more")
		// The entries that lagged behind their jobs are gone from the index once listed.
		left, err := dynamodb.NewFromConfig(e.cfg).Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(e.table.Name()), IndexName: aws.String(contract.StateIndex),
			KeyConditionExpression:    aws.String("#k = :k"),
			ExpressionAttributeNames:  map[string]string{"#k": contract.AttrListKey},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":k": &ddbtypes.AttributeValueMemberS{Value: contract.ListKey(e.q.URL, "enqueued")}},
		})
		require.NoError(t, err)
		assert.Zero(t, left.Count, "the enqueued partition is empty")
		assert.ElementsMatch(t, []string{album, b, a}, sortedBySince(t, e, listIDs(t, e, jobs.StateSucceeded, "", 0)), "in the order they succeeded")
		assert.ElementsMatch(t, []string{b, a}, listIDs(t, e, jobs.StateSucceeded, "image.resize", 2))
		assert.ElementsMatch(t, []string{flaky, bad}, listIDs(t, e, jobs.StateRetrying, "", 0))
		assert.Equal(t, []string{gone}, listIDs(t, e, jobs.StateCancelled, "", 0))
		page, err := e.table.List(ctx, state.ListOptions{Queue: e.q.URL, State: jobs.StateRetrying, Limit: 10})
		require.NoError(t, err)
		for _, j := range page.Jobs {
			assert.Equal(t, 1, j.Attempt, "with its attempts")
			assert.NotEmpty(t, j.LastError, "and its last error")
		}

		// While an attempt runs, the job is running, and not retrying.
		row := &jobs.JobRow{ID: flaky, Kind: "image.resize", Attempt: 2, QueueURL: e.q.URL,
			EncodedArgs: []byte(`{"image":"c.png","fail":"retry"}`)}
		var mw jobs.Middleware
		if e.folded {
			mw = idempotency.Middleware(idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(e.cfg), e.table.Name(), listJobs), &idempotency.Config{RecordJobs: true})
		} else {
			mw = e.table.Middleware(nil)
		}
		require.NoError(t, mw(func(ctx context.Context, _ *jobs.JobRow) error {
			assert.Equal(t, []string{flaky}, listIDs(t, e, jobs.StateRunning, "", 0))
			assert.Equal(t, []string{bad}, listIDs(t, e, jobs.StateRetrying, "", 0))
			return nil
		})(ctx, row))
		assert.Empty(t, listIDs(t, e, jobs.StateRunning, "", 0))
		assert.Contains(t, listIDs(t, e, jobs.StateSucceeded, "", 0), flaky)

		// The job that fails every attempt ends dead.
		e.drain(false)
		assert.Equal(t, []string{bad}, listIDs(t, e, jobs.StateDead, "", 0))
		assert.Empty(t, listIDs(t, e, jobs.StateRetrying, "", 0))
	})
}

func listJobs(o *idempotency.DynamoDBOptions) { o.ListJobs = true }

// Listing is opt-in: without ListJobs, job states are kept — Status answers — and nothing enters
// the index, whose writes DynamoDB bills apart (the enqueued item, the claim, the completion, a
// failed attempt).
func TestListJobsIsOptIn(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	name := awstest.CreateStateTable(t, cfg)
	db := dynamodb.NewFromConfig(cfg)
	table, err := state.New(db, name, nil)
	require.NoError(t, err)
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: q.URL, State: table})
	require.NoError(t, err)
	ctx := context.Background()
	ok, err := client.Enqueue(ctx, resize{Image: "a.png"}, nil)
	require.NoError(t, err)
	failing, err := client.Enqueue(ctx, resize{Image: "b.png"}, nil)
	require.NoError(t, err)
	run := table.Middleware(&state.MiddlewareOptions{Folded: true})(
		idempotency.Middleware(idempotency.NewDynamoDBStore(db, name), &idempotency.Config{RecordJobs: true})(
			func(context.Context, *jobs.JobRow) error { return nil }))
	require.NoError(t, run(ctx, &jobs.JobRow{ID: ok.ID, Kind: "image.resize", Attempt: 1, QueueURL: q.URL, EncodedArgs: []byte(`{"image":"a.png"}`)}))
	require.NoError(t, table.JobSettled(ctx, &jobs.JobRow{ID: failing.ID, Kind: "image.resize", QueueURL: q.URL},
		jobs.JobStatus{State: jobs.StateRetrying, Attempt: 1, NextAttemptAt: time.Now().Add(time.Minute), LastError: "boom"}))

	st, err := client.Status(ctx, ok.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, st.State)
	st, err = client.Status(ctx, failing.ID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateRetrying, st.State)
	scan, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name)})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(scan.Items), 3, "the job items and the record")
	for _, item := range scan.Items {
		assert.NotContains(t, item, contract.AttrListKey, "no index entry: %v", item[idempotency.AttrID])
		assert.NotContains(t, item, contract.AttrListAt)
	}
	for _, s := range []jobs.JobState{jobs.StateEnqueued, jobs.StateSucceeded, jobs.StateRetrying} {
		page, err := table.List(ctx, state.ListOptions{Queue: q.URL, State: s})
		require.NoError(t, err)
		assert.Empty(t, page.Jobs, s)
	}
}

// sortedBySince returns ids as they are (List's order), after checking it is newest first by
// each job's status.
func sortedBySince(t *testing.T, e *env, ids []string) []string {
	t.Helper()
	var since []time.Time
	for _, id := range ids {
		st, err := e.client.Status(context.Background(), id)
		require.NoError(t, err)
		since = append(since, st.Since)
	}
	assert.True(t, slices.IsSortedFunc(since, func(a, b time.Time) int { return b.Compare(a) }), "newest first: %v", since)
	return ids
}

// List refuses what it cannot use, before any call.
func TestListRefuses(t *testing.T) {
	table, err := state.New(dynamodb.New(dynamodb.Options{Region: "us-east-1"}), "t", nil)
	require.NoError(t, err)
	for _, o := range []state.ListOptions{
		{State: jobs.StateDead},
		{Queue: "q", State: "lost"},
		{Queue: "q", State: jobs.StateDead, Limit: state.MaxListLimit + 1},
		{Queue: "q", State: jobs.StateDead, Cursor: "not-a-cursor"},
		{Queue: "q", State: jobs.StateDead, Cursor: "e30"}, // {}
		{Queue: "q", State: jobs.StateDead, Cursor: base64.RawURLEncoding.EncodeToString( // another listing's
			[]byte(`{"id":"job#1","lst":"q#retrying","lst_at":"1764320000000"}`))},
	} {
		_, err := table.List(context.Background(), o)
		assert.ErrorIs(t, err, state.ErrBadListOptions, "%+v", o)
	}
}
